/*
 * cq-soak: keeps the runtime busy for minutes with a mix of everything, and checks that it
 * holds up: every task counted exactly once, throughput steady, resident memory flat.
 *
 *   cq-soak [SECONDS] [--interval SECONDS] [--smoke]   (default 300 s, a line every 10 s)
 *
 * Each round, from two application threads at once (and from inside tasks):
 *   - 20k tasks onto the global queues (all four priorities) in a group;
 *   - 64 serial queues x 200 tasks, FIFO-checked, some queues retargeted at a concurrent queue,
 *     suspended and resumed, a barrier on the concurrent one; queues created and released
 *     every round;
 *   - a fork-join fib(18) with group waits inside tasks;
 *   - apply of 100k iterations;
 *   - a semaphore ping-pong between two tasks;
 *   - 200 after_f timers 0-2 ms out, a DATA_ADD source merged 10k times, a repeating timer
 *     source created, fired and cancelled.
 * Every interval prints tasks per second (tasks, source handlers and after_f functions that ran;
 * apply iterations and semaphore round trips are checked but not counted) and the resident set
 * size. At the
 * end: the throughput range and the RSS growth from the first interval to the last. Then a burst
 * phase: 1M tasks queued at once on the global queue (behind blockers holding every worker),
 * then 1M after_f timers 0-200 ms out, each followed by 1 s of idling, after which the RSS must
 * be back within 10 MB of its figure before the burst (docs/design.md, "Giving memory back").
 * Exit status 1 if a count was wrong, the RSS grew by more than 10 % (after the first interval,
 * which includes warm-up) or a burst's memory did not come back. With --smoke (the few seconds
 * ctest runs) the RSS is printed, not judged: a run that short is still warming up on a busy
 * machine, so only the counts decide; its bursts are 100k and it does not idle after them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cqueuecore.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_long tasks_run;     /* every unit of work counted once */
static atomic_int errors;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long rss_kib(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2) {
            resident = 0;
        }
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

#define FAIL(...)                                                                               \
    do {                                                                                        \
        fprintf(stderr, "cq-soak: " __VA_ARGS__);                                               \
        fputc('\n', stderr);                                                                    \
        atomic_fetch_add(&errors, 1);                                                           \
    } while (0)

static void count_task(void *ctx)
{
    atomic_fetch_add((atomic_long *)ctx, 1);
    atomic_fetch_add_explicit(&tasks_run, 1, memory_order_relaxed);
}

static void noop(void *ctx)
{
    (void)ctx;
}

/* ---- global queues ---------------------------------------------------------------------------- */

static void round_global(void)
{
    atomic_long n = 0;
    cq_group_t g = cq_group_create();
    static const intptr_t prios[] = {CQ_QUEUE_PRIORITY_HIGH, CQ_QUEUE_PRIORITY_DEFAULT,
                                     CQ_QUEUE_PRIORITY_LOW, CQ_QUEUE_PRIORITY_BACKGROUND};
    for (int i = 0; i < 20000; i++) {
        cq_group_async_f(g, cq_get_global_queue(prios[i & 3], 0), &n, count_task);
    }
    cq_group_wait(g, CQ_TIME_FOREVER);
    if (atomic_load(&n) != 20000) {
        FAIL("global: %ld of 20000 tasks ran", atomic_load(&n));
    }
    cq_release(g);
}

/* ---- serial queues: FIFO, retargeting, suspension, barriers ------------------------------ */

struct fifo_queue {
    cq_queue_t q;
    long next, expected;
    long ids[200];
};

static void fifo_task(void *ctx)
{
    long *id = ctx;
    struct fifo_queue *f = (struct fifo_queue *)((char *)(id - *id) - offsetof(struct fifo_queue, ids));
    if (*id != f->next) {
        FAIL("serial queue ran task %ld when %ld was next", *id, f->next);
    }
    f->next = *id + 1;
    atomic_fetch_add_explicit(&tasks_run, 1, memory_order_relaxed);
}

static void barrier_task(void *ctx)
{
    atomic_fetch_add((atomic_long *)ctx, 1);
    atomic_fetch_add_explicit(&tasks_run, 1, memory_order_relaxed);
}

static void round_serial(void)
{
    enum { QUEUES = 64, TASKS = 200 };
    static __thread struct fifo_queue fq[QUEUES];
    cq_queue_t conc = cq_queue_create("soak.concurrent", CQ_QUEUE_CONCURRENT);
    for (int i = 0; i < QUEUES; i++) {
        fq[i].q = cq_queue_create("soak.serial", NULL);
        fq[i].next = 0;
        if (i % 4 == 0) {
            cq_set_target_queue(fq[i].q, conc);
        }
        if (i % 8 == 1) {
            cq_suspend(fq[i].q);
        }
    }
    atomic_long barriers = 0;
    for (long t = 0; t < TASKS; t++) {
        for (int i = 0; i < QUEUES; i++) {
            fq[i].ids[t] = t;
            cq_async_f(fq[i].q, &fq[i].ids[t], fifo_task);
        }
        if (t == TASKS / 2) {
            cq_barrier_async_f(conc, &barriers, barrier_task);
        }
    }
    for (int i = 0; i < QUEUES; i++) {
        if (i % 8 == 1) {
            cq_resume(fq[i].q);
        }
    }
    for (int i = 0; i < QUEUES; i++) {
        cq_sync_f(fq[i].q, NULL, noop);
        if (fq[i].next != TASKS) {
            FAIL("serial queue %d ran %ld of %d tasks", i, fq[i].next, TASKS);
        }
        cq_release(fq[i].q);
    }
    cq_barrier_sync_f(conc, NULL, noop);
    if (atomic_load(&barriers) != 1) {
        FAIL("barrier ran %ld times", atomic_load(&barriers));
    }
    cq_release(conc);
}

/* ---- fork-join, apply, semaphores ---------------------------------------------------------- */

struct fib {
    int n;
    long result;
};

static void fib_task(void *ctx)
{
    struct fib *f = ctx;
    atomic_fetch_add_explicit(&tasks_run, 1, memory_order_relaxed);
    if (f->n < 10) {
        long a = 0, b = 1;
        for (int i = 0; i < f->n; i++) {
            long c = a + b;
            a = b;
            b = c;
        }
        f->result = a;
        return;
    }
    struct fib x = {f->n - 1, 0}, y = {f->n - 2, 0};
    cq_group_t g = cq_group_create();
    cq_group_async_f(g, cq_get_global_queue(0, 0), &x, fib_task);
    cq_group_async_f(g, cq_get_global_queue(0, 0), &y, fib_task);
    cq_group_wait(g, CQ_TIME_FOREVER);
    cq_release(g);
    f->result = x.result + y.result;
}

static void apply_body(void *ctx, size_t i)
{
    unsigned char *bytes = ctx;
    bytes[i]++;
}

struct pingpong {
    cq_semaphore_t ping, pong;
    cq_group_t done;
};

static void pinger(void *ctx)
{
    struct pingpong *p = ctx;
    for (int i = 0; i < 1000; i++) {
        cq_semaphore_signal(p->ping);
        cq_semaphore_wait(p->pong, CQ_TIME_FOREVER);
    }
    atomic_fetch_add_explicit(&tasks_run, 2, memory_order_relaxed); /* the two tasks */
}

static void ponger(void *ctx)
{
    struct pingpong *p = ctx;
    for (int i = 0; i < 1000; i++) {
        cq_semaphore_wait(p->ping, CQ_TIME_FOREVER);
        cq_semaphore_signal(p->pong);
    }
}

static void round_waits(void)
{
    struct fib root = {18, 0};
    cq_group_t g = cq_group_create();
    cq_group_async_f(g, cq_get_global_queue(0, 0), &root, fib_task);
    cq_group_wait(g, CQ_TIME_FOREVER);
    if (root.result != 2584) {
        FAIL("fib(18) = %ld", root.result);
    }

    enum { N = 100000 };
    unsigned char *bytes = calloc(N, 1);
    cq_apply_f(N, cq_get_global_queue(0, 0), bytes, apply_body);
    for (size_t i = 0; i < N; i++) {
        if (bytes[i] != 1) {
            FAIL("apply: iteration %zu ran %d times", i, bytes[i]);
            break;
        }
    }
    free(bytes);

    struct pingpong p = {cq_semaphore_create(0), cq_semaphore_create(0), g};
    cq_group_async_f(g, cq_get_global_queue(0, 0), &p, ponger);
    cq_group_async_f(g, cq_get_global_queue(0, 0), &p, pinger);
    cq_group_wait(g, CQ_TIME_FOREVER);
    cq_release(p.ping);
    cq_release(p.pong);
    cq_release(g);
}

/* ---- timers and sources ------------------------------------------------------------------- */

struct source_round {
    cq_source_t data, timer;
    atomic_long merged_seen, ticks;
    cq_semaphore_t all_merged, ticked, canceled;
};

static void data_event(void *ctx)
{
    struct source_round *r = ctx;
    long seen = atomic_fetch_add(&r->merged_seen, (long)cq_source_get_data(r->data)) +
                (long)cq_source_get_data(r->data);
    atomic_fetch_add_explicit(&tasks_run, 1, memory_order_relaxed);
    if (seen == 10000) {
        cq_semaphore_signal(r->all_merged);
    }
}

static void timer_event(void *ctx)
{
    struct source_round *r = ctx;
    atomic_fetch_add_explicit(&tasks_run, 1, memory_order_relaxed);
    if (atomic_fetch_add(&r->ticks, 1) == 4) {
        cq_semaphore_signal(r->ticked);
    }
}

static void source_canceled(void *ctx)
{
    cq_semaphore_signal(((struct source_round *)ctx)->canceled);
}

static void leave_group(void *ctx)
{
    cq_group_leave(ctx);
    atomic_fetch_add_explicit(&tasks_run, 1, memory_order_relaxed);
}

static void round_sources(void)
{
    cq_group_t g = cq_group_create();
    for (int i = 0; i < 200; i++) {
        cq_group_enter(g);
    }
    for (int i = 0; i < 200; i++) {
        cq_after_f(cq_time(CQ_TIME_NOW, (int64_t)(i % 20) * 100000), cq_get_global_queue(0, 0),
                   g, leave_group);
    }
    cq_group_wait(g, CQ_TIME_FOREVER);
    cq_release(g);

    struct source_round r = {0};
    r.all_merged = cq_semaphore_create(0);
    r.ticked = cq_semaphore_create(0);
    r.canceled = cq_semaphore_create(0);
    r.data = cq_source_create(CQ_SOURCE_TYPE_DATA_ADD, 0, 0, NULL);
    r.timer = cq_source_create(CQ_SOURCE_TYPE_TIMER, 0, 0, NULL);
    cq_set_context(r.data, &r);
    cq_set_context(r.timer, &r);
    cq_source_set_event_handler_f(r.data, data_event);
    cq_source_set_cancel_handler_f(r.data, source_canceled);
    cq_source_set_event_handler_f(r.timer, timer_event);
    cq_source_set_cancel_handler_f(r.timer, source_canceled);
    cq_source_set_timer(r.timer, CQ_TIME_NOW, 500000, 0);
    cq_resume(r.data);
    cq_resume(r.timer);
    for (int i = 0; i < 10000; i++) {
        cq_source_merge_data(r.data, 1);
    }
    cq_semaphore_wait(r.all_merged, CQ_TIME_FOREVER);
    cq_semaphore_wait(r.ticked, CQ_TIME_FOREVER);
    cq_source_cancel(r.data);
    cq_source_cancel(r.timer);
    cq_semaphore_wait(r.canceled, CQ_TIME_FOREVER);
    cq_semaphore_wait(r.canceled, CQ_TIME_FOREVER);
    if (atomic_load(&r.merged_seen) != 10000) {
        FAIL("DATA_ADD total %ld, expected 10000", atomic_load(&r.merged_seen));
    }
    cq_release(r.data);
    cq_release(r.timer);
    cq_release(r.all_merged);
    cq_release(r.ticked);
    cq_release(r.canceled);
}

/* ---- bursts: memory given back afterwards ------------------------------------------------ */

struct blockers {
    cq_semaphore_t started;
    atomic_bool release;
};

/* Holds a worker without sleeping (a sleeping task would be replaced by another thread, which
 * would run the burst while it is being queued). */
static void blocker(void *ctx)
{
    struct blockers *b = ctx;
    cq_semaphore_signal(b->started);
    while (!atomic_load(&b->release)) {
        sched_yield();
    }
}

static void burst_tasks(long n)
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
        cq_semaphore_wait(b.started, CQ_TIME_FOREVER);
    }
    atomic_long ran = 0;
    for (long i = 0; i < n; i++) {
        cq_group_async_f(g, q, &ran, count_task);
    }
    atomic_store(&b.release, true);
    cq_group_wait(g, CQ_TIME_FOREVER);
    if (atomic_load(&ran) != n) {
        FAIL("burst: %ld of %ld tasks ran", atomic_load(&ran), n);
    }
    cq_release(g);
    cq_release(b.started);
}

struct timer_burst {
    cq_group_t group;
    atomic_long fired;
};

static void timer_fired(void *ctx)
{
    struct timer_burst *t = ctx;
    atomic_fetch_add_explicit(&t->fired, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&tasks_run, 1, memory_order_relaxed);
    cq_group_leave(t->group);
}

static void burst_timers(long n)
{
    struct timer_burst t = {cq_group_create(), 0};
    uint64_t seed = 0x50a4;
    cq_time_t start = cq_time(CQ_TIME_NOW, 0);
    for (long i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        cq_group_enter(t.group);
        cq_after_f(cq_time(start, (int64_t)((seed >> 33) % 200000) * 1000),
                   cq_get_global_queue(0, 0), &t, timer_fired);
    }
    cq_group_wait(t.group, CQ_TIME_FOREVER);
    if (atomic_load(&t.fired) != n) {
        FAIL("burst: %ld of %ld timers fired", atomic_load(&t.fired), n);
    }
    cq_release(t.group);
}

/* Runs a burst, idles `idle` seconds; returns how much bigger (KiB) the RSS is than before. */
static long burst(const char *what, void (*run)(long), long n, double idle)
{
    long before = rss_kib();
    run(n);
    long done = rss_kib();
    struct timespec ts = {(time_t)idle, (long)((idle - (long)idle) * 1e9)};
    nanosleep(&ts, NULL);
    long after = rss_kib();
    printf("burst of %ld %s: RSS %ld KiB before, %ld KiB when done, %ld KiB after %.0f s idle "
           "(%+ld KiB)\n",
           n, what, before, done, after, idle, after - before);
    fflush(stdout);
    return after - before;
}

/* ---- driver ----------------------------------------------------------------------------------- */

static atomic_bool stop;

static void *driver(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        round_global();
        round_serial();
        round_waits();
        round_sources();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    double seconds = 300, interval = 10;
    bool smoke = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--interval") == 0 && i + 1 < argc) {
            interval = atof(argv[++i]);
        } else if (strcmp(argv[i], "--smoke") == 0) {
            smoke = true;
        } else {
            seconds = atof(argv[i]);
        }
    }
    if (seconds <= 0 || interval <= 0) {
        fprintf(stderr, "usage: cq-soak [SECONDS] [--interval SECONDS] [--smoke]\n");
        return 2;
    }
    enum { DRIVERS = 2 };
    pthread_t threads[DRIVERS];
    for (int i = 0; i < DRIVERS; i++) {
        pthread_create(&threads[i], NULL, driver, NULL);
    }
    printf("%8s %14s %10s %8s\n", "time s", "tasks/s", "RSS KiB", "threads");
    uint64_t start = now_ns(), last = start;
    long last_tasks = 0, first_rss = 0, rss = 0;
    double min_rate = 1e18, max_rate = 0;
    int intervals = 0;
    while ((now_ns() - start) / 1e9 < seconds) {
        struct timespec ts = {(time_t)interval, (long)((interval - (long)interval) * 1e9)};
        nanosleep(&ts, NULL);
        uint64_t t = now_ns();
        long n = atomic_load(&tasks_run);
        double rate = (double)(n - last_tasks) / ((double)(t - last) / 1e9);
        rss = rss_kib();
        struct cq_runtime_info info;
        cq_runtime_get_info(&info);
        printf("%8.0f %14.0f %10ld %8u\n", (double)(t - start) / 1e9, rate, rss, info.threads);
        fflush(stdout);
        if (intervals++ == 0) {
            first_rss = rss;
        } else {
            min_rate = rate < min_rate ? rate : min_rate;
            max_rate = rate > max_rate ? rate : max_rate;
        }
        last = t;
        last_tasks = n;
    }
    atomic_store(&stop, true);
    for (int i = 0; i < DRIVERS; i++) {
        pthread_join(threads[i], NULL);
    }
    long total_tasks = atomic_load(&tasks_run);
    double total_s = (double)(now_ns() - start) / 1e9;
    /* The burst phase (in --smoke: smaller, no idling, nothing judged). */
    long burst_n = smoke ? 100000 : 1000000;
    double burst_idle = smoke ? 0 : 1;
    long kept_tasks = burst("tasks", burst_tasks, burst_n, burst_idle);
    long kept_timers = burst("after_f timers", burst_timers, burst_n, burst_idle);
    double growth = first_rss ? 100.0 * (double)(rss - first_rss) / (double)first_rss : 0;
    printf("%ld tasks in %.0f s; after the first interval: %.0f to %.0f tasks/s; RSS %ld KiB "
           "after the first interval, %ld KiB at the end (%+.1f %%); %d errors\n",
           total_tasks, total_s,
           intervals > 1 ? min_rate : 0, max_rate, first_rss, rss, growth,
           atomic_load(&errors));
    /* Under a sanitizer, RSS holds its quarantine and shadow memory, which grow for minutes:
     * the figure is printed, only the counts decide (leaks are LeakSanitizer's). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    const bool rss_checked = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    const bool rss_checked = false;
#else
    const bool rss_checked = true;
#endif
#else
    const bool rss_checked = true;
#endif
    bool kept = kept_tasks > 10 * 1024 || kept_timers > 10 * 1024;
    if (rss_checked && !smoke && kept) {
        printf("a burst's memory did not come back within 1 s of idling (limit: 10 MB)\n");
    }
    if (atomic_load(&errors) != 0 || (rss_checked && !smoke && intervals > 2 && growth > 10.0) ||
        (rss_checked && !smoke && kept)) {
        printf("FAILED\n");
        return 1;
    }
    return 0;
}
