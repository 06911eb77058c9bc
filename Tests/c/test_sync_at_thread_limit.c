/*
 * Syncs that wait for one another at the thread limit. When every thread waits in a sync onto
 * the same queue, nothing may depend on a free worker to let the next waiter in: a sync that
 * leaves hands the queue to the waiters itself (a serial queue's next waiter; a concurrent
 * queue's readers, then its next barrier sync), a barrier sync waiting for readers is handed
 * the queue by the last reader, and a waiter whose push finds the queue just let go takes it.
 * Before, each of these put the queue on its target for a worker's drain, and at the limit no
 * worker came: readers and writers through sync and barrier sync hung on every run (11 of 300
 * tasks done), tasks taking turns at a serial queue in some runs.
 *
 * A sync that finds its queue due for a drain that has not started (tasks that queue work with
 * cq_async_f, then wait for the queue with cq_sync_f) runs the work ahead of it itself rather
 * than wait for a worker to drain it: with 400 such tasks, every thread up to the limit (255)
 * waited for that drain and none was left to run it (4 of 4 runs hung).
 *
 * With a limit of 8 threads (2 workers): readers and writers of a concurrent queue, a serial
 * queue used as a lock, and tasks that queue work on a serial queue and then sync onto it.
 */
#include "cq_test.h"

#define RW_TASKS 300
#define LOCK_TASKS 2000
#define LOCK_ROUNDS 3

static void spin_us(long us)
{
    uint64_t end = cq_test_now_ns() + (uint64_t)us * 1000u;
    while (cq_test_now_ns() < end) {
    }
}

/* ---- readers and writers -------------------------------------------------------------------- */

static cq_queue_t rw_q;
static atomic_long readers, writers, bad, reads, writes;

static void read_section(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&readers, 1);
    if (atomic_load(&writers) != 0) {
        atomic_fetch_add(&bad, 1);
    }
    spin_us(100);
    atomic_fetch_add(&reads, 1);
    atomic_fetch_sub(&readers, 1);
}

static void write_section(void *ctx)
{
    (void)ctx;
    if (atomic_fetch_add(&writers, 1) != 0 || atomic_load(&readers) != 0) {
        atomic_fetch_add(&bad, 1);
    }
    spin_us(100);
    atomic_fetch_add(&writes, 1);
    atomic_fetch_sub(&writers, 1);
}

static void rw_task(void *ctx)
{
    if ((intptr_t)ctx % 10 == 0) {
        cq_barrier_sync_f(rw_q, NULL, write_section);
    } else {
        cq_sync_f(rw_q, NULL, read_section);
    }
}

static void test_readers_and_writers(void)
{
    rw_q = cq_queue_create("rw", CQ_QUEUE_CONCURRENT);
    cq_group_t g = cq_group_create();
    for (intptr_t i = 0; i < RW_TASKS; i++) {
        cq_group_async_f(g, cq_get_global_queue(0, 0), (void *)i, rw_task);
    }
    WAIT_GROUP(g);
    CHECK_EQ(atomic_load(&writes), RW_TASKS / 10);
    CHECK_EQ(atomic_load(&reads), RW_TASKS - RW_TASKS / 10);
    CHECK_EQ(atomic_load(&bad), 0);
    cq_release(g);
    cq_release(rw_q);
}

/* ---- a serial queue as a lock --------------------------------------------------------------- */

static cq_queue_t lock_q;
static long lock_counter; /* only touched on lock_q */

static void locked(void *ctx)
{
    (void)ctx;
    spin_us(10);
    lock_counter++;
}

static void lock_task(void *ctx)
{
    (void)ctx;
    cq_sync_f(lock_q, NULL, locked);
}

static void test_serial_queue_as_lock(void)
{
    lock_q = cq_queue_create("lock", NULL);
    for (int round = 0; round < LOCK_ROUNDS; round++) {
        cq_group_t g = cq_group_create();
        for (int i = 0; i < LOCK_TASKS; i++) {
            cq_group_async_f(g, cq_get_global_queue(0, 0), NULL, lock_task);
        }
        WAIT_GROUP(g);
        cq_release(g);
    }
    cq_sync_f(lock_q, NULL, locked);
    CHECK_EQ(lock_counter, LOCK_TASKS * LOCK_ROUNDS + 1);
    cq_release(lock_q);
}

/* ---- queueing work, then waiting for the queue ------------------------------------------------ */

#define MIXED_TASKS 400
#define MIXED_ROUNDS 20

static cq_queue_t mixed_q;
static long mixed_counter; /* only touched on mixed_q */

static void mixed_increment(void *ctx)
{
    (void)ctx;
    mixed_counter++;
}

static void mixed_task(void *ctx)
{
    (void)ctx;
    for (int i = 0; i < MIXED_ROUNDS; i++) {
        cq_async_f(mixed_q, NULL, mixed_increment);
        cq_sync_f(mixed_q, NULL, mixed_increment);
    }
}

static void test_async_then_sync(void)
{
    mixed_q = cq_queue_create("mixed", NULL);
    cq_group_t g = cq_group_create();
    for (int i = 0; i < MIXED_TASKS; i++) {
        cq_group_async_f(g, cq_get_global_queue(0, 0), NULL, mixed_task);
    }
    WAIT_GROUP(g);
    cq_sync_f(mixed_q, NULL, mixed_increment);
    CHECK_EQ(mixed_counter, 2L * MIXED_TASKS * MIXED_ROUNDS + 1);
    cq_release(g);
    cq_release(mixed_q);
}

int main(void)
{
    /* before the pool starts: 2 workers, and the least thread limit the runtime accepts
     * with them (2 x workers + the express procs) plus a little */
    setenv("CQ_WORKERS", "2", 1);
    setenv("CQ_THREAD_LIMIT", "8", 1);
    RUN(test_readers_and_writers);
    RUN(test_serial_queue_as_lock);
    RUN(test_async_then_sync);
    TEST_MAIN_END();
}
