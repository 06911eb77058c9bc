/*
 * Concurrent queues: tasks run in parallel; barriers run alone, after everything before them and
 * before everything after them (checked with counters); barrier_sync; non-barrier sync runs
 * alongside other tasks; global queues treat a barrier as a plain task.
 */
#include <pthread.h>

#include "cq_test.h"

static void noop(void *ctx)
{
    (void)ctx;
}

/* ---- parallelism: two tasks of one concurrent queue meet each other ---------------------- */

static void test_tasks_run_in_parallel(void)
{
    cq_queue_t q = cq_queue_create("conc", CQ_QUEUE_CONCURRENT);
    CHECK_EQ(cq_test_meeting_count(q, q, false), 2);
    cq_release(q);
}

/* ---- barrier exclusion ------------------------------------------------------------------- */

#define ROUNDS 200
#define PER_ROUND 200

struct excl {
    atomic_int active;        /* non-barrier tasks running now */
    atomic_int in_barrier;    /* barriers running now */
    atomic_long finished;     /* non-barrier tasks finished */
    atomic_long started_after; /* tasks that started while a barrier ran */
    atomic_long violations;
    long barrier_seen[ROUNDS];
};

static struct excl ex;

static void excl_task(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&ex.active, 1);
    if (atomic_load(&ex.in_barrier) != 0) {
        atomic_fetch_add(&ex.violations, 1);
    }
    for (volatile int i = 0; i < 50; i++) {
    }
    if (atomic_load(&ex.in_barrier) != 0) {
        atomic_fetch_add(&ex.violations, 1);
    }
    atomic_fetch_add(&ex.finished, 1);
    atomic_fetch_sub(&ex.active, 1);
}

static void excl_barrier(void *ctx)
{
    long round = (long)ctx;
    if (atomic_fetch_add(&ex.in_barrier, 1) != 0 || atomic_load(&ex.active) != 0) {
        atomic_fetch_add(&ex.violations, 1);
    }
    /* Every task submitted before this barrier has finished; none after it has started. */
    ex.barrier_seen[round] = atomic_load(&ex.finished);
    for (volatile int i = 0; i < 200; i++) {
    }
    if (atomic_load(&ex.active) != 0) {
        atomic_fetch_add(&ex.violations, 1);
    }
    atomic_fetch_sub(&ex.in_barrier, 1);
}

static void test_barrier_exclusion(void)
{
    cq_queue_t q = cq_queue_create("barrier", CQ_QUEUE_CONCURRENT);
    for (long r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < PER_ROUND; i++) {
            cq_async_f(q, NULL, excl_task);
        }
        cq_barrier_async_f(q, (void *)r, excl_barrier);
    }
    cq_barrier_sync_f(q, NULL, noop);
    CHECK_EQ(atomic_load(&ex.violations), 0);
    CHECK_EQ(atomic_load(&ex.finished), (long)ROUNDS * PER_ROUND);
    for (long r = 0; r < ROUNDS; r++) {
        CHECK_EQ(ex.barrier_seen[r], (r + 1) * PER_ROUND);
    }
    cq_release(q);
}

/* ---- barrier exclusion with producers on several threads --------------------------------- */

static cq_queue_t mp_q;

static void *mp_producer(void *arg)
{
    (void)arg;
    for (int r = 0; r < 50; r++) {
        for (int i = 0; i < 100; i++) {
            cq_async_f(mp_q, NULL, excl_task);
        }
        cq_barrier_async_f(mp_q, (void *)(long)0, excl_barrier);
        if (r % 10 == 0) {
            cq_barrier_sync_f(mp_q, (void *)(long)0, excl_barrier);
        }
    }
    return NULL;
}

static void test_barrier_exclusion_many_producers(void)
{
    memset(&ex, 0, sizeof ex);
    mp_q = cq_queue_create("barrier-mp", CQ_QUEUE_CONCURRENT);
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        pthread_create(&th[i], NULL, mp_producer, NULL);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
    }
    cq_barrier_sync_f(mp_q, NULL, noop);
    CHECK_EQ(atomic_load(&ex.violations), 0);
    CHECK_EQ(atomic_load(&ex.finished), 4 * 50 * 100);
    cq_release(mp_q);
}

/* ---- a non-barrier sync runs while other tasks of the queue run --------------------------- */

struct sync_meet {
    cq_semaphore_t task_running, sync_ran;
    atomic_int ok;
};

static void blocker(void *ctx)
{
    struct sync_meet *m = ctx;
    cq_semaphore_signal(m->task_running);
    if (cq_semaphore_wait(m->sync_ran, cq_test_deadline()) == 0) {
        atomic_fetch_add(&m->ok, 1);
    }
}

static void in_sync(void *ctx)
{
    struct sync_meet *m = ctx;
    cq_semaphore_signal(m->sync_ran);
    atomic_fetch_add(&m->ok, 1);
}

static void test_sync_runs_alongside(void)
{
    cq_queue_t q = cq_queue_create("sync-alongside", CQ_QUEUE_CONCURRENT);
    struct sync_meet m = {cq_semaphore_create(0), cq_semaphore_create(0), 0};
    cq_group_t g = cq_group_create();
    cq_group_async_f(g, q, &m, blocker);
    WAIT_SEMA(m.task_running);
    cq_sync_f(q, &m, in_sync); /* would deadlock if sync waited for the running task */
    WAIT_GROUP(g);
    CHECK_EQ(atomic_load(&m.ok), 2);
    cq_release(g);
    cq_release(q);
    cq_release(m.task_running);
    cq_release(m.sync_ran);
}

/* ---- barrier_sync waits for earlier tasks and holds later ones ---------------------------- */

static atomic_int later_started;

static void slow_task(void *ctx)
{
    cq_semaphore_t s = ctx;
    cq_semaphore_wait(s, cq_test_deadline());
}

static void later_task(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&later_started, 1);
}

struct bsync {
    atomic_int *finished_before;
    int seen;
};

static void count_task(void *ctx)
{
    atomic_fetch_add((atomic_int *)ctx, 1);
}

static void read_count(void *ctx)
{
    struct bsync *b = ctx;
    b->seen = atomic_load(b->finished_before);
}

static void release_slow(void *ctx)
{
    cq_semaphore_signal(ctx);
}

static void test_barrier_sync_ordering(void)
{
    cq_queue_t q = cq_queue_create("bsync", CQ_QUEUE_CONCURRENT);
    atomic_int finished = 0;
    cq_semaphore_t gate = cq_semaphore_create(0);
    cq_async_f(q, gate, slow_task); /* holds the barrier back until released */
    for (int i = 0; i < 100; i++) {
        cq_async_f(q, &finished, count_task);
    }
    /* Release the slow task from outside the queue, a little later. */
    cq_async_f(cq_get_global_queue(0, 0), gate, release_slow);
    struct bsync b = {&finished, -1};
    cq_barrier_sync_f(q, &b, read_count);
    CHECK_EQ(b.seen, 100);
    cq_async_f(q, NULL, later_task);
    cq_barrier_sync_f(q, NULL, noop);
    CHECK_EQ(atomic_load(&later_started), 1);
    cq_release(q);
    cq_release(gate);
}

/* ---- a barrier on a global queue is a plain task: two of them meet each other ----------- */

static void test_global_barrier_is_plain(void)
{
    cq_queue_t g = cq_get_global_queue(0, 0);
    CHECK_EQ(cq_test_meeting_count(g, g, true), 2); /* both ran at the same time */
}

/* ---- a concurrent queue targeting a serial queue becomes serial ---------------------------- */

static atomic_int ser_active, ser_overlap;

static void serialised_task(void *ctx)
{
    (void)ctx;
    if (atomic_fetch_add(&ser_active, 1) != 0) {
        atomic_fetch_add(&ser_overlap, 1);
    }
    for (volatile int i = 0; i < 100; i++) {
    }
    atomic_fetch_sub(&ser_active, 1);
}

static void test_concurrent_targeting_serial(void)
{
    cq_queue_t s = cq_queue_create("serial-target", NULL);
    cq_queue_t c = cq_queue_create("conc-on-serial", CQ_QUEUE_CONCURRENT);
    cq_set_target_queue(c, s);
    cq_group_t g = cq_group_create();
    for (int i = 0; i < 20000; i++) {
        cq_group_async_f(g, c, NULL, serialised_task);
    }
    WAIT_GROUP(g);
    CHECK_EQ(atomic_load(&ser_overlap), 0);
    cq_release(g);
    cq_release(c);
    cq_release(s);
}

int main(void)
{
    RUN(test_tasks_run_in_parallel);
    RUN(test_barrier_exclusion);
    RUN(test_barrier_exclusion_many_producers);
    RUN(test_sync_runs_alongside);
    RUN(test_barrier_sync_ordering);
    RUN(test_global_barrier_is_plain);
    RUN(test_concurrent_targeting_serial);
    TEST_MAIN_END();
}
