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
 * A resume of a queue that syncs wait for lets them in itself rather than put the queue on its
 * target for a worker's drain: with every thread up to the limit waiting at the suspended
 * queue, none was left for that drain (hung on every run).
 *
 * The same through a serial queue that targets another: a waiter drains the chain's top queue
 * itself when the chain is due for a drain that no worker runs, also one whose sync is made
 * from a queue's work, through three levels.
 *
 * With a limit of 8 threads (2 workers): readers and writers of a concurrent queue, a serial
 * queue used as a lock, tasks that queue work on a serial queue and then sync onto it (also
 * through a chain of two, and of three from a queue's work), and a serial and a concurrent
 * queue resumed with syncs waiting.
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

/* ---- queueing work, then waiting for the queue ------------------------------------------------
 */

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

/* ---- the same through a chain of serial queues ------------------------------------------ */

static cq_queue_t chain_outer, chain_inner; /* chain_inner targets chain_outer */
static long chain_counts[2];                /* only touched on chain_outer (and so inner) */
static atomic_long chain_inside, chain_overlap;

static void chain_increment(void *ctx)
{
    if (atomic_fetch_add(&chain_inside, 1) != 0) {
        atomic_fetch_add(&chain_overlap, 1);
    }
    chain_counts[(intptr_t)ctx]++;
    atomic_fetch_sub(&chain_inside, 1);
}

static void chain_task(void *ctx)
{
    intptr_t which = (intptr_t)ctx % 2;
    cq_queue_t q = which ? chain_inner : chain_outer;
    for (int i = 0; i < MIXED_ROUNDS; i++) {
        cq_async_f(q, (void *)which, chain_increment);
        cq_sync_f(q, (void *)which, chain_increment);
    }
}

/* Tasks that queue work and then sync, onto a serial queue that targets another serial queue
 * and onto that one: with every thread waiting, both queues were due for a drain queued behind
 * the waiting tasks, which no worker ran (stalled for good). A waiter that holds no queue
 * drains the chain's top itself. */
static void test_async_then_sync_through_a_chain(void)
{
    chain_outer = cq_queue_create("chain.outer", NULL);
    chain_inner = cq_queue_create("chain.inner", NULL);
    cq_set_target_queue(chain_inner, chain_outer);
    cq_group_t g = cq_group_create();
    for (intptr_t i = 0; i < MIXED_TASKS; i++) {
        cq_group_async_f(g, cq_get_global_queue(0, 0), (void *)i, chain_task);
    }
    WAIT_GROUP(g);
    cq_sync_f(chain_inner, (void *)1, chain_increment);
    CHECK_EQ(chain_counts[0], 2L * MIXED_ROUNDS * (MIXED_TASKS / 2));
    CHECK_EQ(chain_counts[1], 2L * MIXED_ROUNDS * (MIXED_TASKS / 2) + 1);
    CHECK_EQ(atomic_load(&chain_overlap), 0);
    cq_release(g);
    cq_release(chain_inner);
    cq_release(chain_outer);
}

/* ---- from a queue's work, through a chain of three ------------------------------------- */

#define DEEP_TASKS 60
#define DEEP_ROUNDS 30
#define DEEP_LEVELS 3
#define DEEP_OWNERS 1

static cq_queue_t deep_q[DEEP_LEVELS];   /* deep_q[i] targets deep_q[i + 1] */
static cq_queue_t deep_own[DEEP_OWNERS]; /* serial queues some syncs are made from */
static long deep_count;                  /* only touched on deep_q[DEEP_LEVELS - 1] */
static atomic_long deep_inside, deep_overlap;

static void deep_increment(void *ctx)
{
    (void)ctx;
    if (atomic_fetch_add(&deep_inside, 1) != 0) {
        atomic_fetch_add(&deep_overlap, 1);
    }
    deep_count++;
    atomic_fetch_sub(&deep_inside, 1);
}

static void deep_owned(void *ctx)
{
    intptr_t level = (intptr_t)ctx;
    cq_async_f(deep_q[(level + 1) % DEEP_LEVELS], NULL, deep_increment);
    cq_sync_f(deep_q[level], NULL, deep_increment);
}

static void deep_task(void *ctx)
{
    intptr_t task = (intptr_t)ctx;
    for (int r = 0; r < DEEP_ROUNDS; r++) {
        intptr_t level = (task + r) % DEEP_LEVELS;
        cq_async_f(deep_q[level], NULL, deep_increment);
        if (r % 3 == 0) {
            cq_sync_f(deep_own[task % DEEP_OWNERS], (void *)level, deep_owned);
        } else {
            cq_sync_f(deep_q[level], NULL, deep_increment);
        }
    }
}

/* The same through a chain of three serial queues, every third sync made from a block on
 * another serial queue: such a waiter helped chains of two only (a longer chain's middle level
 * ran on past its item), and at the limit the syncs made from a queue's work waited for a
 * worker that never came (hung on every run). Each level of a helper's drain now stops after
 * the item that leads to the helper's own queue. */
static void test_from_a_queue_through_three_levels(void)
{
    for (int i = DEEP_LEVELS - 1; i >= 0; i--) {
        deep_q[i] = cq_queue_create("deep", NULL);
        if (i < DEEP_LEVELS - 1) {
            cq_set_target_queue(deep_q[i], deep_q[i + 1]);
        }
    }
    for (int i = 0; i < DEEP_OWNERS; i++) {
        deep_own[i] = cq_queue_create("deep.owner", NULL);
    }
    cq_group_t g = cq_group_create();
    for (intptr_t i = 0; i < DEEP_TASKS; i++) {
        cq_group_async_f(g, cq_get_global_queue(0, 0), (void *)i, deep_task);
    }
    WAIT_GROUP(g);
    cq_sync_f(deep_q[0], NULL, deep_increment);
    long per_task = 0;
    for (int r = 0; r < DEEP_ROUNDS; r++) {
        per_task += r % 3 == 0 ? 3 : 2;
    }
    CHECK_EQ(deep_count, per_task * DEEP_TASKS + 1);
    CHECK_EQ(atomic_load(&deep_overlap), 0);
    cq_release(g);
    for (int i = 0; i < DEEP_OWNERS; i++) {
        cq_release(deep_own[i]);
    }
    for (int i = 0; i < DEEP_LEVELS; i++) {
        cq_release(deep_q[i]);
    }
}

/* ---- resuming a queue that syncs wait for ------------------------------------------------- */

#define RESUME_TASKS 400

static cq_queue_t resume_q;
static cq_semaphore_t resume_arrived; /* a task is about to wait at resume_q */
static long resume_serial_count;      /* only touched on resume_q (serial) */
static atomic_long resume_reads, resume_writes, resume_bad, resume_inside;

static void resume_increment(void *ctx)
{
    (void)ctx;
    resume_serial_count++;
}

static void resume_serial_task(void *ctx)
{
    cq_semaphore_signal(resume_arrived);
    if ((intptr_t)ctx % 2) {
        cq_async_f(resume_q, NULL, resume_increment); /* work ahead of the waiters */
    }
    cq_sync_f(resume_q, NULL, resume_increment);
}

static void resume_read(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&resume_inside, 1);
    atomic_fetch_add(&resume_reads, 1);
    atomic_fetch_sub(&resume_inside, 1);
}

static void resume_write(void *ctx)
{
    (void)ctx;
    if (atomic_fetch_add(&resume_inside, 1) != 0) {
        atomic_fetch_add(&resume_bad, 1);
    }
    atomic_fetch_add(&resume_writes, 1);
    atomic_fetch_sub(&resume_inside, 1);
}

static void resume_concurrent_task(void *ctx)
{
    cq_semaphore_signal(resume_arrived);
    if ((intptr_t)ctx % 10 == 0) {
        cq_barrier_sync_f(resume_q, NULL, resume_write);
    } else {
        cq_sync_f(resume_q, NULL, resume_read);
    }
}

/* Waits until the pool has hit its thread limit since `hits` (every thread then waits at the
 * suspended queue, and tasks are left over): looks after each task's arrival, the event that
 * comes before a hit, and after each 10 ms without one (the hit follows the last arrival). */
static void wait_for_limit(uint32_t hits)
{
    uint64_t deadline = cq_test_now_ns() + (uint64_t)CQ_TEST_PATIENCE_NS;
    struct cq_runtime_info info;
    for (;;) {
        cq_runtime_get_info(&info);
        if (info.limit_reached > hits) {
            return;
        }
        REQUIRE(cq_test_now_ns() < deadline);
        (void)cq_semaphore_wait(resume_arrived, cq_time(CQ_TIME_NOW, 10 * 1000000ll));
    }
}

/* Every thread up to the limit waits in a sync onto a suspended queue, then the queue is
 * resumed: the resume lets the waiters in itself. It put the queue on its global queue for a
 * drain, and no worker was left to run it (hung on every run). */
static void run_resume_with_waiters(bool concurrent)
{
    resume_q = cq_queue_create("resumed", concurrent ? CQ_QUEUE_CONCURRENT : NULL);
    resume_arrived = cq_semaphore_create(0);
    cq_suspend(resume_q);
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    cq_group_t g = cq_group_create();
    for (intptr_t i = 0; i < RESUME_TASKS; i++) {
        cq_group_async_f(g, cq_get_global_queue(0, 0), (void *)i,
                         concurrent ? resume_concurrent_task : resume_serial_task);
    }
    wait_for_limit(info.limit_reached);
    cq_resume(resume_q);
    WAIT_GROUP(g);
    cq_release(g);
    cq_release(resume_arrived);
}

static void test_resume_with_waiters(void)
{
    run_resume_with_waiters(false);
    cq_sync_f(resume_q, NULL, resume_increment);
    CHECK_EQ(resume_serial_count, RESUME_TASKS + RESUME_TASKS / 2 + 1);
    cq_release(resume_q);

    run_resume_with_waiters(true);
    CHECK_EQ(atomic_load(&resume_writes), RESUME_TASKS / 10);
    CHECK_EQ(atomic_load(&resume_reads), RESUME_TASKS - RESUME_TASKS / 10);
    CHECK_EQ(atomic_load(&resume_bad), 0);
    cq_release(resume_q);
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
    RUN(test_async_then_sync_through_a_chain);
    RUN(test_from_a_queue_through_three_levels);
    RUN(test_resume_with_waiters);
    TEST_MAIN_END();
}
