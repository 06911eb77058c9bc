/*
 * cq_apply_f: every index exactly once, nested applies (32x32x32) with an exact count, serial
 * queues run the iterations one after another in order, applies from inside tasks, and an
 * apply that completes while every worker is blocked.
 */
#include "cq_test.h"

static void mark(void *ctx, size_t i)
{
    atomic_fetch_add(&((atomic_uchar *)ctx)[i], 1);
}

static void test_each_index_once(void)
{
    size_t sizes[] = {1, 2, 3, 7, 64, 1000, 100003};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        atomic_uchar *seen = calloc(n, 1);
        cq_apply_f(n, cq_get_global_queue(0, 0), seen, mark);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) {
            bad += atomic_load(&seen[i]) != 1;
        }
        CHECK_EQ(bad, 0);
        free(seen);
    }
    cq_apply_f(0, cq_get_global_queue(0, 0), NULL, mark); /* nothing to do */
}

/* ---- nested 32 x 32 x 32 ------------------------------------------------------------- */

static atomic_long nested_total;

static void level3(void *ctx, size_t i)
{
    (void)ctx;
    (void)i;
    atomic_fetch_add(&nested_total, 1);
}

static void level2(void *ctx, size_t i)
{
    (void)i;
    cq_apply_f(32, cq_get_global_queue(0, 0), ctx, level3);
}

static void level1(void *ctx, size_t i)
{
    (void)i;
    cq_apply_f(32, cq_get_global_queue(0, 0), ctx, level2);
}

static void test_nested(void)
{
    cq_apply_f(32, cq_get_global_queue(0, 0), NULL, level1);
    CHECK_EQ(atomic_load(&nested_total), 32 * 32 * 32);
}

/* An apply inside an apply that already spreads over every worker runs on the calling thread:
 * each pushed a helper task that found nothing left when it ran, long after, holding ~240
 * bytes until then (400k outer iterations grew the process by ~100 MB, libdispatch's by
 * nothing). Checked by the RSS right after the outer apply returns (not under sanitizers,
 * whose allocators keep memory). */
static atomic_long wide_total;

static void wide_inner(void *ctx, size_t i)
{
    (void)ctx;
    (void)i;
    atomic_fetch_add_explicit(&wide_total, 1, memory_order_relaxed);
}

static void wide_outer(void *ctx, size_t i)
{
    (void)i;
    cq_apply_f(4, cq_get_global_queue(0, 0), ctx, wide_inner);
}

static void test_nested_in_wide_apply(void)
{
    long before = cq_test_rss_kib();
    cq_apply_f(400000, cq_get_global_queue(0, 0), NULL, wide_outer);
    long grown = cq_test_rss_kib() - before;
    fprintf(stderr, "   RSS grew by %ld KiB\n", grown);
    CHECK_EQ(atomic_load(&wide_total), 4 * 400000);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    CHECK(grown < 20 * 1024);
#endif
}

/* ---- serial queue: in order, one at a time, on the queue -------------------------------- */

struct serial_check {
    cq_queue_t q;
    size_t next;
    size_t bad;
    atomic_int active;
    atomic_int overlap;
};

static void serial_iter(void *ctx, size_t i)
{
    struct serial_check *s = ctx;
    if (atomic_fetch_add(&s->active, 1) != 0) {
        atomic_fetch_add(&s->overlap, 1);
    }
    if (i != s->next || !cq_queue_is_current(s->q)) {
        s->bad++;
    }
    s->next = i + 1;
    atomic_fetch_sub(&s->active, 1);
}

static void test_serial_queue(void)
{
    struct serial_check s = {cq_queue_create("apply-serial", NULL), 0, 0, 0, 0};
    cq_apply_f(10000, s.q, &s, serial_iter);
    CHECK_EQ(s.next, 10000);
    CHECK_EQ(s.bad, 0);
    CHECK_EQ(atomic_load(&s.overlap), 0);
    /* A concurrent queue targeting a serial one is serial too. */
    cq_queue_t c = cq_queue_create("apply-c-on-serial", CQ_QUEUE_CONCURRENT);
    cq_set_target_queue(c, s.q);
    s.next = 0;
    cq_apply_f(5000, c, &s, serial_iter);
    CHECK_EQ(s.next, 5000);
    CHECK_EQ(atomic_load(&s.overlap), 0);
    cq_release(c);
    cq_release(s.q);
}

/* ---- custom concurrent queue: iterations run on it --------------------------------------- */

struct on_queue {
    cq_queue_t q;
    atomic_long off_queue;
    atomic_long count;
};

static void on_queue_iter(void *ctx, size_t i)
{
    (void)i;
    struct on_queue *o = ctx;
    if (!cq_queue_is_current(o->q)) {
        atomic_fetch_add(&o->off_queue, 1);
    }
    atomic_fetch_add(&o->count, 1);
}

static void test_concurrent_queue(void)
{
    struct on_queue o = {cq_queue_create("apply-conc", CQ_QUEUE_CONCURRENT), 0, 0};
    cq_apply_f(20000, o.q, &o, on_queue_iter);
    CHECK_EQ(atomic_load(&o.count), 20000);
    CHECK_EQ(atomic_load(&o.off_queue), 0);
    cq_release(o.q);
}

/* ---- apply from inside tasks ----------------------------------------------------------- */

static atomic_long from_tasks;

static void count_iter(void *ctx, size_t i)
{
    (void)ctx;
    (void)i;
    atomic_fetch_add(&from_tasks, 1);
}

static void task_applies(void *ctx)
{
    (void)ctx;
    cq_apply_f(1000, cq_get_global_queue(0, 0), NULL, count_iter);
}

static void test_apply_in_tasks(void)
{
    cq_group_t g = cq_group_create();
    for (int i = 0; i < 16; i++) {
        cq_group_async_f(g, cq_get_global_queue(0, 0), NULL, task_applies);
    }
    WAIT_GROUP(g);
    CHECK_EQ(atomic_load(&from_tasks), 16000);
    cq_release(g);
}

/* ---- every worker blocked: the caller runs every chunk itself --------------------------- */

struct blocker {
    cq_semaphore_t started, gate;
};

static void block_worker(void *ctx)
{
    struct blocker *b = ctx;
    cq_semaphore_signal(b->started);
    cq_semaphore_wait(b->gate, cq_test_deadline());
}

static void test_apply_with_blocked_workers(void)
{
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    struct blocker b = {cq_semaphore_create(0), cq_semaphore_create(0)};
    cq_group_t g = cq_group_create();
    for (uint32_t i = 0; i < info.workers * 4; i++) {
        cq_group_async_f(g, cq_get_global_queue(0, 0), &b, block_worker);
    }
    /* Every worker has taken a blocker before the apply starts (the rest may run on spare
     * threads or wait: no more than `workers` are sure to start). */
    for (uint32_t i = 0; i < info.workers; i++) {
        WAIT_SEMA(b.started);
    }
    atomic_uchar *seen = calloc(50000, 1);
    cq_apply_f(50000, cq_get_global_queue(0, 0), seen, mark);
    size_t bad = 0;
    for (size_t i = 0; i < 50000; i++) {
        bad += atomic_load(&seen[i]) != 1;
    }
    CHECK_EQ(bad, 0);
    for (uint32_t i = 0; i < info.workers * 4; i++) {
        cq_semaphore_signal(b.gate);
    }
    WAIT_GROUP(g);
    free(seen);
    cq_release(g);
    cq_release(b.started);
    cq_release(b.gate);
}

/* cq_apply_ranges_f: the ranges cover [0, n) exactly once, on the global queue and (as one
 * range) on a serial queue. */
struct ranges_check {
    atomic_uchar *seen;
    atomic_int calls;
    atomic_int empty;
};

static void mark_range(void *ctx, size_t start, size_t end)
{
    struct ranges_check *r = ctx;
    atomic_fetch_add(&r->calls, 1);
    if (start >= end) {
        atomic_fetch_add(&r->empty, 1);
    }
    for (size_t i = start; i < end; i++) {
        atomic_fetch_add(&r->seen[i], 1);
    }
}

/* Iterations that wait for later ones: iteration i (i < WAITERS) waits on a semaphore that
 * iteration i + 1 signals, and every iteration counts itself. Iterations go out in chunks, so
 * a waiting iteration's successor was often behind it on the same thread: 64 iterations on 2
 * CPUs (chunks of 2) hung for ever (libdispatch, one iteration at a time, returns). The wait
 * now hands the rest of its chunk to another thread. */
#define WAITERS 8

struct waiting_iterations {
    cq_semaphore_t next_ran[WAITERS];
    atomic_int ran;
    atomic_int bad_waits;
};

static void wait_for_next(void *ctx, size_t i)
{
    struct waiting_iterations *w = ctx;
    if (i >= 1 && i <= WAITERS) {
        cq_semaphore_signal(w->next_ran[i - 1]); /* iteration i - 1 may go on */
    }
    if (i < WAITERS && cq_semaphore_wait(w->next_ran[i], cq_test_deadline()) != 0) {
        atomic_fetch_add(&w->bad_waits, 1);
    }
    atomic_fetch_add(&w->ran, 1);
}

static void test_iterations_that_wait_for_later_ones(void)
{
    static const size_t counts[] = {64, 1000, 100000};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        struct waiting_iterations w = {.ran = 0};
        for (int k = 0; k < WAITERS; k++) {
            w.next_ran[k] = cq_semaphore_create(0);
        }
        cq_apply_f(counts[c], cq_get_global_queue(0, 0), &w, wait_for_next);
        CHECK_EQ(atomic_load(&w.ran), (int)counts[c]);
        CHECK_EQ(atomic_load(&w.bad_waits), 0);
        for (int k = 0; k < WAITERS; k++) {
            cq_release(w.next_ran[k]);
        }
    }
}

static void test_ranges(void)
{
    enum { N = 100003 };
    struct ranges_check r = {.seen = calloc(N, sizeof(atomic_uchar))};
    REQUIRE(r.seen != NULL);
    cq_apply_ranges_f(N, cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), &r, mark_range);
    int wrong = 0;
    for (size_t i = 0; i < N; i++) {
        wrong += atomic_load(&r.seen[i]) != 1;
        atomic_store(&r.seen[i], 0);
    }
    CHECK_EQ(wrong, 0);
    CHECK_EQ(atomic_load(&r.empty), 0);
    CHECK(atomic_load(&r.calls) >= 1);
    fprintf(stderr, "   %d ranges on the global queue\n", atomic_load(&r.calls));
    atomic_store(&r.calls, 0);
    cq_queue_t serial = cq_queue_create("ranges", NULL);
    cq_apply_ranges_f(N, serial, &r, mark_range);
    for (size_t i = 0; i < N; i++) {
        wrong += atomic_load(&r.seen[i]) != 1;
    }
    CHECK_EQ(wrong, 0);
    CHECK_EQ(atomic_load(&r.calls), 1); /* one range: it runs as a sync onto the queue */
    cq_release(serial);
    free(r.seen);
}

int main(void)
{
    RUN(test_nested_in_wide_apply); /* first: the RSS has not grown yet */
    RUN(test_each_index_once);
    RUN(test_nested);
    RUN(test_serial_queue);
    RUN(test_concurrent_queue);
    RUN(test_apply_in_tasks);
    RUN(test_apply_with_blocked_workers);
    RUN(test_ranges);
    RUN(test_iterations_that_wait_for_later_ones);
    TEST_MAIN_END();
}
