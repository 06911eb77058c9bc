/*
 * Memory is given back after a burst (docs/design.md, "Giving memory back"):
 *   - 1M tasks queued at once on the global queue (behind blockers that hold every worker),
 *     then run: once the process is idle, its resident set returns to within 10 MB of its size
 *     before the burst;
 *   - the same for 1M cq_after_f timers 0-200 ms out;
 *   - once it has given memory back, the runtime sleeps: no thread wakes up.
 * There is no event for "memory returned", so the RSS is polled with short sleeps, with a
 * generous deadline (30 s) that only a runtime that keeps its memory runs into. Under ASan or
 * TSan the resident set holds shadow memory and quarantine: the bursts run (every task and
 * timer counted once) but the RSS is printed, not judged.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cq_test.h"

#include <sched.h>
#include <sys/wait.h>

/* ThreadSanitizer refuses new threads in a child of a multi-threaded process unless told
 * otherwise (test_fork_after_burst's child starts the runtime's; read only by TSan builds). */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "die_after_fork=0";
}

#define RSS_CHECKED CQ_TEST_RSS_MEANINGFUL

#define BURST (RSS_CHECKED ? 1000000 : 100000)
#define SLACK_KIB (10 * 1024) /* "within 10 MB of before" */
#define RETURN_PATIENCE_NS (30 * 1000000000ull)

/* Polls the RSS until it is at most `limit` KiB, or the patience runs out; returns the last
 * figure and stores how long it took. */
static long rss_settle(long limit, double *seconds)
{
    uint64_t start = cq_test_now_ns();
    long rss = cq_test_rss_kib();
    while (RSS_CHECKED && rss > limit && cq_test_now_ns() - start < RETURN_PATIENCE_NS) {
        struct timespec d = {0, 20 * 1000000};
        nanosleep(&d, NULL);
        rss = cq_test_rss_kib();
    }
    *seconds = (double)(cq_test_now_ns() - start) / 1e9;
    return rss;
}

static void report(const char *what, long before, long peak, long after, double seconds)
{
    fprintf(stderr,
            "   %d %s: RSS before %ld KiB, peak %ld KiB (+%ld), after %ld KiB (%+ld) "
            "%.2f s after the burst ended%s\n",
            BURST, what, before, peak, peak - before, after, after - before, seconds,
            RSS_CHECKED ? "" : " (sanitizer: not judged)");
    if (RSS_CHECKED) {
        CHECK(peak - before > 32 * 1024); /* the burst really used memory */
        CHECK(after <= before + SLACK_KIB);
    }
}

static void count(void *ctx)
{
    atomic_fetch_add_explicit((atomic_long *)ctx, 1, memory_order_relaxed);
}

static void leave(void *ctx)
{
    cq_group_leave(ctx);
}

/* Warm-up: the pool's threads, the reactor and the per-thread caches exist before the first
 * figure is taken, so "before" is the steady footprint of a process that used the runtime. */
static void test_warm_up(void)
{
    atomic_long n = 0;
    cq_group_t g = cq_group_create();
    for (int i = 0; i < 10000; i++) {
        cq_group_async_f(g, cq_get_global_queue(0, 0), &n, count);
    }
    cq_group_enter(g);
    cq_after_f(cq_time(CQ_TIME_NOW, 1000000), cq_get_global_queue(0, 0), g, leave);
    WAIT_GROUP(g);
    CHECK_EQ(atomic_load(&n), 10000);
    cq_release(g);
}

/* ---- a burst of tasks ------------------------------------------------------------------- */

struct blockers {
    cq_semaphore_t started;
    atomic_bool release;
};

/* Holds a worker without blocking in the kernel or the runtime (either would make the pool
 * hand the CPU to another thread, which would run the burst while it is being queued). */
static void blocker(void *ctx)
{
    struct blockers *b = ctx;
    cq_semaphore_signal(b->started);
    while (!atomic_load(&b->release)) {
        sched_yield();
    }
}

/* BURST tasks queued behind blockers holding every worker, then run; returns the RSS at the
 * burst's peak (everything queued). */
static long task_burst(void)
{
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    struct blockers b = {cq_semaphore_create(0), false};
    cq_group_t g = cq_group_create();
    cq_queue_t q = cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0);
    for (uint32_t i = 0; i < info.workers; i++) {
        cq_group_async_f(g, q, &b, blocker);
    }
    for (uint32_t i = 0; i < info.workers; i++) {
        WAIT_SEMA(b.started);
    }
    atomic_long n = 0;
    for (int i = 0; i < BURST; i++) {
        cq_group_async_f(g, q, &n, count);
    }
    long peak = cq_test_rss_kib();
    atomic_store(&b.release, true);
    WAIT_GROUP(g);
    CHECK_EQ(atomic_load(&n), BURST);
    cq_release(g);
    cq_release(b.started);
    return peak;
}

static void test_task_burst(void)
{
    long before = cq_test_rss_kib();
    long peak = task_burst();
    double seconds = 0;
    long after = rss_settle(before + SLACK_KIB, &seconds);
    report("tasks", before, peak, after, seconds);
}

/* A process that forks right after a burst (a pre-forking server's start-up): the child, which
 * uses the runtime, gives the memory back too. Its trimmer is its own, started by its first
 * request; a trim the parent had due at the fork was lost, and the child's bursts, which reuse
 * the inherited tasks, never asked for one (it kept 10-28 MB for good). */
static void test_fork_after_burst(void)
{
    long before = cq_test_rss_kib();
    long peak = task_burst();
    fflush(stderr);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        long child_peak = task_burst(); /* counts checked inside; a failed CHECK shows below */
        double seconds = 0;
        long after = rss_settle(before + SLACK_KIB, &seconds);
        fprintf(stderr,
                "   child: a burst of its own, peak %ld KiB, after %ld KiB (%+ld) %.2f s later\n",
                child_peak, after, after - before, seconds);
        _exit(test_failures == 0 && (!RSS_CHECKED || after <= before + SLACK_KIB) ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    double seconds = 0;
    long after = rss_settle(before + SLACK_KIB, &seconds);
    report("tasks, then a fork", before, peak, after, seconds);
}

/* ---- a burst of timers ------------------------------------------------------------------ */

struct timer_burst {
    atomic_long fired;
    cq_group_t group;
};

static void timer_fired(void *ctx)
{
    struct timer_burst *t = ctx;
    atomic_fetch_add_explicit(&t->fired, 1, memory_order_relaxed);
    cq_group_leave(t->group);
}

static void test_timer_burst(void)
{
    long before = cq_test_rss_kib();
    struct timer_burst t = {0, cq_group_create()};
    uint64_t seed = 0x5eed;
    cq_time_t start = cq_time(CQ_TIME_NOW, 0);
    long peak = before;
    for (int i = 0; i < BURST; i++) {
        cq_group_enter(t.group);
        /* Due a second after the burst began, spread over 200 ms: all still pending when the
         * burst ends, even on a busy machine (a deadline already passed is an async, which would
         * not leave the timers' memory behind) */
        cq_after_f(cq_time(start, 1000000000ll + (int64_t)below(&seed, 200000) * 1000),
                   cq_get_global_queue(0, 0), &t, timer_fired);
        if (i % 65536 == 0) {
            long r = cq_test_rss_kib();
            peak = r > peak ? r : peak;
        }
    }
    long r = cq_test_rss_kib();
    peak = r > peak ? r : peak;
    WAIT_GROUP(t.group);
    CHECK_EQ(atomic_load(&t.fired), BURST);
    double seconds = 0;
    long after = rss_settle(before + SLACK_KIB, &seconds);
    report("after_f timers", before, peak, after, seconds);
    cq_release(t.group);
}

/* ---- then the runtime sleeps ------------------------------------------------------------- */

static void test_then_no_wakeups(void)
{
    /* The trimmer gives memory back half a second after the last activity, once; a second
     * later an idle process sees no wake-ups at all, periodic or otherwise. */
    cq_semaphore_t s = cq_semaphore_create(0);
    cq_semaphore_wait(s, cq_time(CQ_TIME_NOW, 1000 * 1000000ll));
    long before = cq_test_runtime_thread_switches();
    cq_semaphore_wait(s, cq_time(CQ_TIME_NOW, 500 * 1000000ll));
    long after = cq_test_runtime_thread_switches();
    fprintf(stderr, "   runtime thread wake-ups while idle for 0.5 s: %ld; RSS then %ld KiB\n",
            after - before, cq_test_rss_kib());
    CHECK_EQ(after - before, 0);
    cq_release(s);
}

int main(void)
{
    RUN(test_warm_up);
    RUN(test_task_burst);
    RUN(test_fork_after_burst);
    RUN(test_timer_burst);
    RUN(test_then_no_wakeups);
    TEST_MAIN_END();
}
