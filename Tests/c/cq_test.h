/*
 * A tiny harness for the C tests. Each test_*.c file is its own executable and its own ctest
 * (with a timeout), so a hang or crash names the file. Checks never depend on timing: waits
 * are on events (groups, semaphores) with generous timeouts that only fire when something is
 * genuinely lost.
 */
#ifndef CQ_TEST_H
#define CQ_TEST_H

#include "../common/test_check.h"
#include <cqueuecore.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* splitmix64: the stress tests' repeatable randomness (one state per thread, seeded from the
 * printed seed). */
static inline uint64_t next_random(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A number in [0, n). */
static inline uint32_t below(uint64_t *s, uint32_t n)
{
    return (uint32_t)(next_random(s) % n);
}

/* Generous: only a lost task or wake-up makes a wait this long. */
/* Whether the resident set size says anything about the runtime's memory: not under
 * AddressSanitizer (its quarantine holds freed memory back) or ThreadSanitizer (its shadow). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CQ_TEST_RSS_MEANINGFUL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CQ_TEST_RSS_MEANINGFUL 0
#else
#define CQ_TEST_RSS_MEANINGFUL 1
#endif
#else
#define CQ_TEST_RSS_MEANINGFUL 1
#endif

/* Built with a sanitizer (CQ_TEST_SANITIZED: AddressSanitizer or ThreadSanitizer;
 * CQ_TEST_TSAN: ThreadSanitizer): for the cases they cannot run or judge. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CQ_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CQ_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define CQ_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CQ_TEST_TSAN 1
#endif
#endif

#define CQ_TEST_PATIENCE_NS (60ll * 1000000000ll)

static inline cq_time_t cq_test_deadline(void)
{
    return cq_time(CQ_TIME_NOW, CQ_TEST_PATIENCE_NS);
}

/*
 * A bounded observation window, only for the few negatives that no event can prove at a
 * definite point ("a suspended queue runs nothing": nothing shows "never"). Where an event
 * exists (a later task of the same serial queue, a sync, a barrier, a cancel handler, the
 * positive event itself recording what it saw), wait on it instead. A window can only miss a
 * bug that shows late, never fail because the machine is slow; a positive check must follow
 * it (after the resume, the work does run).
 */
#define CQ_TEST_WINDOW_NS (20ll * 1000000ll)

static inline void cq_test_observe_window(void)
{
    struct timespec ts = {0, (long)CQ_TEST_WINDOW_NS};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Waits for a group; fails the test (fatally) if it never empties. */
#define WAIT_GROUP(g) REQUIRE(cq_group_wait((g), cq_test_deadline()) == 0)
#define WAIT_SEMA(s) REQUIRE(cq_semaphore_wait((s), cq_test_deadline()) == 0)

/*
 * Runs one task on `a` and one on `b` (as barriers if `barrier`); each signals the other and
 * waits for the other's signal. Returns how many met: 2 only if the two tasks ran at the same
 * time (run one after the other, the first one's wait times out).
 */
struct cq_test_meeting {
    cq_semaphore_t to_a, to_b, done;
    atomic_int met;
};

static void cq_test_meet_side_a(void *ctx)
{
    struct cq_test_meeting *m = ctx;
    cq_semaphore_signal(m->to_b);
    if (cq_semaphore_wait(m->to_a, cq_time(CQ_TIME_NOW, CQ_TEST_PATIENCE_NS)) == 0) {
        atomic_fetch_add(&m->met, 1);
    }
    cq_semaphore_signal(m->done);
}

static void cq_test_meet_side_b(void *ctx)
{
    struct cq_test_meeting *m = ctx;
    cq_semaphore_signal(m->to_a);
    if (cq_semaphore_wait(m->to_b, cq_time(CQ_TIME_NOW, CQ_TEST_PATIENCE_NS)) == 0) {
        atomic_fetch_add(&m->met, 1);
    }
    cq_semaphore_signal(m->done);
}

static inline int cq_test_meeting_count(cq_queue_t a, cq_queue_t b, bool barrier)
{
    struct cq_test_meeting m = {cq_semaphore_create(0), cq_semaphore_create(0),
                                cq_semaphore_create(0), 0};
    (barrier ? cq_barrier_async_f : cq_async_f)(a, &m, cq_test_meet_side_a);
    (barrier ? cq_barrier_async_f : cq_async_f)(b, &m, cq_test_meet_side_b);
    for (int i = 0; i < 2; i++) {
        REQUIRE(cq_semaphore_wait(m.done, cq_time(CQ_TIME_NOW, 2 * CQ_TEST_PATIENCE_NS)) == 0);
    }
    cq_release(m.to_a);
    cq_release(m.to_b);
    cq_release(m.done);
    return atomic_load(&m.met);
}

static inline uint64_t cq_test_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The process's resident set, in KiB (/proc/self/statm). */
static inline long cq_test_rss_kib(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    REQUIRE(f != NULL);
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) {
        resident = 0;
    }
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Voluntary context switches of the runtime's threads (named "cq-..."): every sleep of a
 * worker, spare, the monitor or the reactor adds one, so a difference of 0 over an interval
 * means none of them woke up. */
static inline long cq_test_runtime_thread_switches(void)
{
    long total = 0;
    DIR *d = opendir("/proc/self/task");
    REQUIRE(d != NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }
        char path[300], line[256], name[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL) {
            continue;
        }
        long switches = 0;
        while (fgets(line, sizeof line, f)) {
            sscanf(line, "Name: %63s", name);
            sscanf(line, "voluntary_ctxt_switches: %ld", &switches);
        }
        fclose(f);
        if (strncmp(name, "cq-", 3) == 0) {
            total += switches;
        }
    }
    closedir(d);
    return total;
}

/* The threads alive now whose name starts with `prefix`. */
static inline int cq_test_thread_count_named(const char *prefix)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    REQUIRE(d != NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }
        char path[300], name[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL) {
            continue;
        }
        if (fgets(name, sizeof name, f) && strncmp(name, prefix, strlen(prefix)) == 0) {
            n++;
        }
        fclose(f);
    }
    closedir(d);
    return n;
}

/* The runtime's threads alive now (named "cq-...": workers, spares, monitor, reactor). */
static inline int cq_test_runtime_thread_count(void)
{
    return cq_test_thread_count_named("cq-");
}

/* Spins until the calling thread has used `ns` of CPU time (not wall time: a loaded machine
 * only makes it take longer). */
static inline void cq_test_burn_cpu_ns(uint64_t ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    uint64_t end = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + ns;
    for (;;) {
        for (volatile int i = 0; i < 1000; i++) {
        }
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        if ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec >= end) {
            return;
        }
    }
}

#endif /* CQ_TEST_H */
