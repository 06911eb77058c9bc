#define _GNU_SOURCE
#include "core_round_trip.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#define STOP (-1L)

struct bounce {
    /* 2i+1: round i's ping (the peer answers 2i+2); STOP: the peer returns at once */
    _Alignas(64) _Atomic long value;
    long rounds;
    int cpu;
    _Atomic int ready; /* 1 once the peer is pinned, -1 if it could not be */
};

static bool pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

static void *peer(void *arg)
{
    struct bounce *b = arg;
    /* release: pairs with the main thread's acquire load of ready */
    atomic_store_explicit(&b->ready, pin(b->cpu) ? 1 : -1, memory_order_release);
    for (long i = 0; i < b->rounds; i++) {
        /* acquire/release: the counter is the only shared data; the orderings keep each
         * hand-over a real round trip of the line (pairs with the main thread's accesses) */
        long seen;
        while ((seen = atomic_load_explicit(&b->value, memory_order_acquire)) != 2 * i + 1) {
            if (seen == STOP) {
                return NULL;
            }
        }
        atomic_store_explicit(&b->value, 2 * i + 2, memory_order_release);
    }
    return NULL;
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

double core_round_trip_ns(long rounds)
{
    cpu_set_t allowed, saved;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 ||
        pthread_getaffinity_np(pthread_self(), sizeof saved, &saved) != 0) {
        return -1;
    }
    int cpus[2], found = 0;
    for (int c = 0; c < CPU_SETSIZE && found < 2; c++) {
        if (CPU_ISSET(c, &allowed)) {
            cpus[found++] = c;
        }
    }
    if (found < 2 || rounds <= 0) {
        return -1;
    }
    static struct bounce b; /* one probe at a time (the benchmarks call it from one thread) */
    atomic_init(&b.value, 0);
    atomic_init(&b.ready, 0);
    b.rounds = rounds;
    b.cpu = cpus[1];
    pthread_t thread;
    if (pthread_create(&thread, NULL, peer, &b) != 0) {
        return -1;
    }
    bool pinned = pin(cpus[0]);
    int ready;
    /* acquire: pairs with the peer's release store of ready */
    while ((ready = atomic_load_explicit(&b.ready, memory_order_acquire)) == 0) {
    }
    double result = -1;
    if (pinned && ready == 1) {
        double t0 = now_ns();
        for (long i = 0; i < rounds; i++) {
            /* pairs with the peer's acquire load and release store */
            atomic_store_explicit(&b.value, 2 * i + 1, memory_order_release);
            while (atomic_load_explicit(&b.value, memory_order_acquire) != 2 * i + 2) {
            }
        }
        result = (now_ns() - t0) / (double)rounds;
    } else {
        /* Not pinned apart: both could share one CPU, where each spin lasts a time slice.
         * release: pairs with the peer's acquire loads */
        atomic_store_explicit(&b.value, STOP, memory_order_release);
    }
    pthread_join(thread, NULL);
    pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
    return result;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double core_round_trip_median_ns(void)
{
    double probes[5];
    for (int i = 0; i < 5; i++) {
        probes[i] = core_round_trip_ns(2000);
        if (probes[i] < 0) {
            return -1;
        }
    }
    qsort(probes, 5, sizeof probes[0], by_value);
    return probes[2];
}
