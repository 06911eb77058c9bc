/*
 * cq_after_f timers come due on time even when the firer's thread does not run when its sleep
 * ends. A firer's thread woken on time can wait for a CPU for a whole slice of every thread of
 * its priority in front of it; beside busy CPUs and a pool full of low-priority tasks, timers
 * onto the high queue came 100-700 ms late (1 run in 25), because the reactor, woken on time
 * itself, left every window to a firer that was "running". The test makes the firer's thread
 * oversleep by two seconds (its futex wait is intercepted), and checks that the timers due
 * meanwhile fire long before it wakes: the reactor fires them.
 *
 * System calls are intercepted with the linker's --wrap (the line below is read by CMake):
 */
// link-wrap: cq__futex_wait
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cq_test.h"

/* The runtime's own (events/source_internal.h, platform/parker_internal.h), reached through
 * the static library: the firer's futex word, and the wait it sleeps in. */
struct cq__deadline;
_Atomic uint32_t *cq__after_firer_word(void);

#define OVERSLEEP_NS 2000000000ll

static atomic_int oversleeps; /* firer sleeps still to stretch */
static atomic_int stretched;  /* sleeps being stretched or stretched */

int __real_cq__futex_wait(_Atomic uint32_t *word, uint32_t expected, const struct cq__deadline *d);
int __wrap_cq__futex_wait(_Atomic uint32_t *word, uint32_t expected, const struct cq__deadline *d);
int __wrap_cq__futex_wait(_Atomic uint32_t *word, uint32_t expected, const struct cq__deadline *d)
{
    int r = __real_cq__futex_wait(word, expected, d);
    if (word == cq__after_firer_word() && d != NULL && atomic_load(&oversleeps) > 0 &&
        atomic_fetch_sub(&oversleeps, 1) > 0) {
        /* woken (on time or early), then not run for two seconds */
        atomic_fetch_add(&stretched, 1);
        struct timespec ts = {OVERSLEEP_NS / 1000000000ll, OVERSLEEP_NS % 1000000000ll};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
    return r;
}

enum { TIMERS = 8 };
static int64_t due_ns[TIMERS], late_ns[TIMERS];
static cq_semaphore_t all_fired;
static atomic_int fired;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void on_timer(void *context)
{
    size_t i = (size_t)(uintptr_t)context;
    late_ns[i] = now_ns() - due_ns[i];
    if (atomic_fetch_add(&fired, 1) + 1 == TIMERS) {
        cq_semaphore_signal(all_fired);
    }
}

/* Timers 5 ms apart, 50 ms out: between two of them the firer sleeps (and oversleeps).
 * Returns whether the firer's sleep was stretched; if it was, checks that no timer waited
 * for it. */
static bool timers_fire_while_the_firer_oversleeps(void)
{
    all_fired = cq_semaphore_create(0);
    atomic_store(&fired, 0);
    atomic_store(&oversleeps, 1);
    cq_queue_t high = cq_get_global_queue(CQ_QUEUE_PRIORITY_HIGH, 0);
    int64_t start = now_ns();
    for (size_t i = 0; i < TIMERS; i++) {
        int64_t delay = 50000000ll + (int64_t)i * 5000000ll;
        due_ns[i] = start + delay;
        cq_after_f(cq_time(CQ_TIME_NOW, delay - (now_ns() - start)), high, (void *)(uintptr_t)i,
                   on_timer);
    }
    CHECK(cq_semaphore_wait(all_fired, cq_test_deadline()) == 0);
    cq_release(all_fired);
    int64_t worst = 0;
    for (size_t i = 0; i < TIMERS; i++) {
        worst = late_ns[i] > worst ? late_ns[i] : worst;
    }
    int n = atomic_load(&stretched);
    printf("  firer sleeps stretched: %d; latest timer %.3f ms late\n", n, (double)worst / 1e6);
    if (n == 0) {
        /* The firer never slept between two of the timers: on a busy machine its thread can
         * wait for a CPU past all eight (beside three CPU hogs: 1 run in 4 without the warm-up
         * below, 3 runs in 200 with it). The scenario did not happen; the caller tries again. */
        atomic_store(&oversleeps, 0);
        return false;
    }
    /* No timer waited for the stretch (this attempt's, or one that began as the attempt before
     * gave up): half of it is far beyond any scheduling delay of the reactor. */
    CHECK(n >= 1);
    CHECK(worst < OVERSLEEP_NS / 2);
    return true;
}

static void signal_semaphore(void *semaphore)
{
    cq_semaphore_signal(semaphore);
}

static void test_timers_fire_while_the_firer_oversleeps(void)
{
    /* The firer's thread exists and sleeps before the timers that count are armed. */
    cq_semaphore_t warm = cq_semaphore_create(0);
    cq_after_f(cq_time(CQ_TIME_NOW, 1000000), cq_get_global_queue(CQ_QUEUE_PRIORITY_HIGH, 0),
               warm, signal_semaphore);
    CHECK(cq_semaphore_wait(warm, cq_test_deadline()) == 0);
    cq_release(warm);
    bool happened = false;
    for (int attempt = 0; attempt < 20 && !happened; attempt++) {
        happened = timers_fire_while_the_firer_oversleeps();
    }
    /* The stretch happened (else the test showed nothing). */
    CHECK(happened);
}

int main(void)
{
    RUN(test_timers_fire_while_the_firer_oversleeps);
    TEST_MAIN_END();
}
