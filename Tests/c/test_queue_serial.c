/*
 * Serial queues: FIFO start order, one task at a time, per-producer order with many producers,
 * and different serial queues running in parallel.
 */
#include <pthread.h>

#include "cq_test.h"

static void noop(void *ctx)
{
    (void)ctx;
}

/* ---- FIFO and exclusion ------------------------------------------------------------------- */

#define FIFO_N 200000

struct fifo {
    long next;        /* only touched on the queue: a data race here would be caught by TSan */
    long out_of_order;
    atomic_int active;
    atomic_int overlaps;
};

static void fifo_task(void *ctx)
{
    struct fifo *f = *(struct fifo **)ctx;
    long i = (long)((void **)ctx)[1];
    if (atomic_fetch_add(&f->active, 1) != 0) {
        atomic_fetch_add(&f->overlaps, 1);
    }
    if (i != f->next) {
        f->out_of_order++;
    }
    f->next = i + 1;
    atomic_fetch_sub(&f->active, 1);
    free(ctx);
}

static void test_fifo_and_exclusion(void)
{
    cq_queue_t q = cq_queue_create("fifo", CQ_QUEUE_SERIAL);
    REQUIRE(q != NULL);
    struct fifo f = {0};
    for (long i = 0; i < FIFO_N; i++) {
        void **ctx = malloc(2 * sizeof(void *));
        ctx[0] = &f;
        ctx[1] = (void *)i;
        cq_async_f(q, ctx, fifo_task);
    }
    cq_sync_f(q, NULL, noop);
    CHECK_EQ(f.next, FIFO_N);
    CHECK_EQ(f.out_of_order, 0);
    CHECK_EQ(atomic_load(&f.overlaps), 0);
    cq_release(q);
}

/* ---- many producers: each producer's tasks start in its own order ------------------------ */

#define PRODUCERS 8
#define PER_PRODUCER 50000

struct producer_state {
    long last[PRODUCERS];
    long bad;
    long total;
};

static struct producer_state pstate;
static cq_queue_t pqueue;

static void producer_task(void *ctx)
{
    uintptr_t v = (uintptr_t)ctx;
    unsigned p = (unsigned)(v >> 32);
    long seq = (long)(v & 0xffffffffu);
    if (seq != pstate.last[p] + 1) {
        pstate.bad++;
    }
    pstate.last[p] = seq;
    pstate.total++;
}

static void *producer_thread(void *arg)
{
    uintptr_t p = (uintptr_t)arg;
    for (uintptr_t i = 0; i < PER_PRODUCER; i++) {
        cq_async_f(pqueue, (void *)((p << 32) | i), producer_task);
    }
    return NULL;
}

static void test_many_producers_order(void)
{
    pqueue = cq_queue_create("producers", NULL);
    for (int p = 0; p < PRODUCERS; p++) {
        pstate.last[p] = -1;
    }
    pthread_t th[PRODUCERS];
    for (uintptr_t p = 0; p < PRODUCERS; p++) {
        pthread_create(&th[p], NULL, producer_thread, (void *)p);
    }
    for (int p = 0; p < PRODUCERS; p++) {
        pthread_join(th[p], NULL);
    }
    cq_sync_f(pqueue, NULL, noop);
    CHECK_EQ(pstate.total, PRODUCERS * PER_PRODUCER);
    CHECK_EQ(pstate.bad, 0);
    for (int p = 0; p < PRODUCERS; p++) {
        CHECK_EQ(pstate.last[p], PER_PRODUCER - 1);
    }
    cq_release(pqueue);
}

/* ---- different serial queues run in parallel --------------------------------------------- */

static void test_serial_queues_in_parallel(void)
{
    cq_queue_t a = cq_queue_create("a", NULL), b = cq_queue_create("b", NULL);
    CHECK_EQ(cq_test_meeting_count(a, b, false), 2);
    cq_release(a);
    cq_release(b);
}

/* ---- a task submitted from a task of the same queue runs after it ------------------------- */

static int order_log[4];
static int order_len;
static cq_queue_t self_q;

static void log_3(void *ctx)
{
    (void)ctx;
    order_log[order_len++] = 3;
}

static void log_1_then_submit(void *ctx)
{
    (void)ctx;
    order_log[order_len++] = 1;
    cq_async_f(self_q, NULL, log_3);
    order_log[order_len++] = 2; /* still before log_3: one task at a time */
}

static void test_submit_to_self(void)
{
    self_q = cq_queue_create("self", NULL);
    cq_async_f(self_q, NULL, log_1_then_submit);
    cq_sync_f(self_q, NULL, noop); /* runs after log_1_then_submit */
    cq_sync_f(self_q, NULL, noop); /* runs after log_3, queued before this sync */
    CHECK_EQ(order_len, 3);
    CHECK_EQ(order_log[0], 1);
    CHECK_EQ(order_log[1], 2);
    CHECK_EQ(order_log[2], 3);
    cq_release(self_q);
}

/* ---- queues drained in bounded batches: busy queues do not starve another ----------------- */

static atomic_int flood_ran;
static atomic_bool stop_flood;

struct flood {
    cq_queue_t q;
    atomic_bool started;
    cq_semaphore_t started_sema; /* signalled once per flood queue, on its first task */
};

static void flood_task(void *ctx)
{
    struct flood *f = ctx;
    if (!atomic_exchange(&f->started, true)) {
        cq_semaphore_signal(f->started_sema);
    }
    atomic_fetch_add(&flood_ran, 1);
    if (!atomic_load(&stop_flood)) {
        cq_async_f(f->q, f, flood_task); /* keeps its queue busy until stopped */
    }
}

static void stop_task(void *ctx)
{
    atomic_store(&stop_flood, true);
    cq_semaphore_signal(ctx);
}

static void test_no_starvation_between_queues(void)
{
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    /* One never-empty queue per worker: the other queue only runs if drains yield. */
    enum { MAXQ = 16 };
    struct flood floods[MAXQ];
    cq_semaphore_t started = cq_semaphore_create(0);
    uint32_t n = info.workers < MAXQ ? info.workers : MAXQ;
    for (uint32_t i = 0; i < n; i++) {
        floods[i].q = cq_queue_create("flood", NULL);
        atomic_init(&floods[i].started, false);
        floods[i].started_sema = started;
        cq_async_f(floods[i].q, &floods[i], flood_task);
    }
    /* Every flood is running before the other queue gets its task: it cannot slip in first. */
    for (uint32_t i = 0; i < n; i++) {
        WAIT_SEMA(started);
    }
    cq_queue_t other = cq_queue_create("other", NULL);
    cq_semaphore_t done = cq_semaphore_create(0);
    cq_async_f(other, done, stop_task);
    WAIT_SEMA(done); /* the check: it ran while every flood kept its queue busy */
    for (uint32_t i = 0; i < n; i++) {
        cq_sync_f(floods[i].q, NULL, noop);
        cq_release(floods[i].q);
    }
    CHECK(atomic_load(&flood_ran) >= (int)n);
    cq_release(other);
    cq_release(done);
    cq_release(started);
}

int main(void)
{
    RUN(test_fifo_and_exclusion);
    RUN(test_many_producers_order);
    RUN(test_serial_queues_in_parallel);
    RUN(test_submit_to_self);
    RUN(test_no_starvation_between_queues);
    TEST_MAIN_END();
}
