/*
 * Giving memory back while work starts again: with CQ_TRIM_DELAY_MS=1 the trimmer gives task
 * arenas back after every short pause, so its trims overlap new bursts (tasks queued from
 * application threads and from tasks, serial queues, cq_after_f bursts that grow and shrink the
 * timer heaps). Every task and timer must still run exactly once, and the memory of a burst must
 * still go back afterwards. The pauses are random; the checks do not depend on how the trims
 * and the bursts happen to interleave.
 */
#include "cq_test.h"

#include <pthread.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RSS_CHECKED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RSS_CHECKED 0
#else
#define RSS_CHECKED 1
#endif
#else
#define RSS_CHECKED 1
#endif

/* Under a sanitizer: fewer rounds and smaller task bursts (timer bursts stay big enough to
 * grow the heaps past the trim threshold). */
#define ROUNDS (RSS_CHECKED ? 25 : 6)
#define TASK_SCALE (RSS_CHECKED ? 1 : 4)

/* A line of /proc/self/status ("Threads:", "RssAnon:", ...) as a number, -1 if absent. */
static long status_field(const char *name)
{
    char line[256];
    long v = -1;
    size_t len = strlen(name);
    FILE *f = fopen("/proc/self/status", "r");
    REQUIRE(f != NULL);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, name, len) == 0) {
            v = atol(line + len);
            break;
        }
    }
    fclose(f);
    return v;
}

/* The RSS once it is back within 10 MB of `before`, or after 30 s (no event says the memory
 * went back: poll, generously); under a sanitizer, at once. */
static long rss_back_to(long before)
{
    uint64_t start = cq_test_now_ns();
    long rss = cq_test_rss_kib();
    while (RSS_CHECKED && rss > before + 10 * 1024 &&
           cq_test_now_ns() - start < 30 * 1000000000ull) {
        struct timespec d = {0, 20 * 1000000};
        nanosleep(&d, NULL);
        rss = cq_test_rss_kib();
    }
    return rss;
}

static void count(void *ctx)
{
    atomic_fetch_add_explicit((atomic_long *)ctx, 1, memory_order_relaxed);
}

static void noop(void *ctx)
{
    (void)ctx;
}

struct round {
    cq_group_t group;
    atomic_long *ran;
    int n;
};

/* A task that queues n tasks itself (from a worker: its own run queue, then the inject queue). */
static void fan_out(void *ctx)
{
    struct round *r = ctx;
    for (int i = 0; i < r->n; i++) {
        cq_group_async_f(r->group, cq_get_global_queue(0, 0), r->ran, count);
    }
}

static void timer_fired(void *ctx)
{
    struct round *r = ctx;
    atomic_fetch_add_explicit(r->ran, 1, memory_order_relaxed);
    cq_group_leave(r->group);
}

struct producer {
    uint64_t seed;
    long submitted;
    atomic_long ran;
};

static void *produce(void *arg)
{
    struct producer *p = arg;
    cq_queue_t serial = cq_queue_create("trim-race", NULL);
    for (int round = 0; round < ROUNDS; round++) {
        struct round r = {cq_group_create(), &p->ran, 0};
        int n = (20000 + (int)below(&p->seed, 200000)) / TASK_SCALE;
        switch (below(&p->seed, 4)) {
        case 0: /* straight from this thread (the inject queue) */
            for (int i = 0; i < n; i++) {
                cq_group_async_f(r.group, cq_get_global_queue(0, 0), &p->ran, count);
            }
            break;
        case 1: /* one serial queue */
            for (int i = 0; i < n; i++) {
                cq_group_async_f(r.group, serial, &p->ran, count);
            }
            break;
        case 2: { /* from tasks */
            struct round fan[8];
            n = 8 * (n / 8);
            for (int i = 0; i < 8; i++) {
                fan[i] = (struct round){r.group, &p->ran, n / 8};
                cq_group_async_f(r.group, cq_get_global_queue(0, 0), &fan[i], fan_out);
            }
            WAIT_GROUP(r.group); /* fan[] lives on this stack */
            break;
        }
        default: /* timers 0-5 ms out: the heaps grow past the trim threshold, then shrink */
            n = 70000 + (int)below(&p->seed, 30000);
            for (int i = 0; i < n; i++) {
                cq_group_enter(r.group);
                cq_after_f(cq_time(CQ_TIME_NOW, (int64_t)below(&p->seed, 5000000)),
                           cq_get_global_queue(0, 0), &r, timer_fired);
            }
            break;
        }
        WAIT_GROUP(r.group);
        p->submitted += n;
        cq_release(r.group);
        /* A pause of 0-8 ms: the trimmer (1 ms delay) often starts giving memory back in it,
         * and the next round starts allocating while it does. */
        struct timespec d = {0, (long)below(&p->seed, 8000000)};
        nanosleep(&d, NULL);
    }
    cq_sync_f(serial, NULL, noop);
    cq_release(serial);
    return NULL;
}

/* The library's count of trims run (scheduler/task.c; the tests link it statically). */
uint64_t cq__trim_count(void);

/* Tasks queued behind a suspended queue fill whole arenas; the growth asks for a trim, which
 * runs while every one of them is in use (none is free for it to count). Once they have run,
 * the arenas must still go back: the trim must not have decided that nothing more would come.
 * It did, and the arenas stayed for good (300k tasks: +19 MB) when the last trim of a burst ran
 * while all its tasks were queued or in threads' caches, which a busy machine makes likely. */
static void test_arenas_in_use_during_a_trim_go_back(void)
{
    enum { HELD = 300000 / TASK_SCALE };
    long before = cq_test_rss_kib();
    uint64_t trims = cq__trim_count();
    cq_queue_t q = cq_queue_create("trim-held", NULL);
    cq_suspend(q);
    cq_group_t g = cq_group_create();
    atomic_long ran = 0;
    for (int i = 0; i < HELD; i++) {
        cq_group_async_f(g, q, &ran, count);
    }
    /* The trim the growth asked for (1 ms after the last allocation) */
    uint64_t start = cq_test_now_ns();
    while (cq__trim_count() == trims && cq_test_now_ns() - start < 60 * 1000000000ull) {
        struct timespec d = {0, 1000000};
        nanosleep(&d, NULL);
    }
    REQUIRE(cq__trim_count() > trims);
    long held = cq_test_rss_kib();
    cq_resume(q);
    WAIT_GROUP(g);
    CHECK_EQ(atomic_load(&ran), HELD);
    cq_release(g);
    cq_release(q);
    long rss = rss_back_to(before);
    fprintf(stderr,
            "   %d tasks held through a trim: RSS before %ld KiB, held %ld KiB, after %ld KiB%s\n",
            (int)HELD, before, held, rss, RSS_CHECKED ? "" : " (sanitizer: not judged)");
    if (RSS_CHECKED) {
        CHECK(rss <= before + 10 * 1024);
    }
}

static void leave_group(void *ctx)
{
    cq_group_leave(ctx);
}

static void test_trims_overlap_bursts(void)
{
    enum { PRODUCERS = 2 };
    /* The runtime's own threads, reactor and tables exist before the baseline: the check is
     * about what the bursts leave behind, not about starting the runtime. */
    cq_group_t warm = cq_group_create();
    for (int i = 0; i < 64; i++) {
        cq_group_async_f(warm, cq_get_global_queue(0, 0), NULL, noop);
    }
    cq_group_enter(warm);
    cq_after_f(cq_time(CQ_TIME_NOW, 1000000), cq_get_global_queue(0, 0), warm, leave_group);
    WAIT_GROUP(warm);
    cq_release(warm);
    long before = cq_test_rss_kib();
    pthread_t threads[PRODUCERS];
    struct producer p[PRODUCERS];
    for (int i = 0; i < PRODUCERS; i++) {
        p[i] = (struct producer){.seed = 0x7217 + (uint64_t)i};
        REQUIRE(pthread_create(&threads[i], NULL, produce, &p[i]) == 0);
    }
    long total = 0;
    for (int i = 0; i < PRODUCERS; i++) {
        pthread_join(threads[i], NULL);
        CHECK_EQ(atomic_load(&p[i].ran), p[i].submitted);
        total += p[i].submitted;
    }
    /* And the memory still goes back at the end. */
    long rss = rss_back_to(before);
    fprintf(stderr,
            "   %ld tasks and timers in %d rounds; RSS before %ld KiB, after %ld KiB (anonymous "
            "%ld KiB, %ld threads; peak %ld KiB)%s\n",
            total, PRODUCERS * ROUNDS, before, rss, status_field("RssAnon:"),
            status_field("Threads:"), status_field("VmHWM:"),
            RSS_CHECKED ? "" : " (sanitizer: not judged)");
    if (RSS_CHECKED) {
        CHECK(rss <= before + 10 * 1024);
    }
}

int main(void)
{
    setenv("CQ_TRIM_DELAY_MS", "1", 1); /* read when the trimmer starts */
    RUN(test_arenas_in_use_during_a_trim_go_back);
    RUN(test_trims_overlap_bursts);
    TEST_MAIN_END();
}
