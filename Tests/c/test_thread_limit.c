/*
 * At the thread limit a worker that blocks in a runtime wait keeps its run queue (there is no
 * thread to hand it to). A task it made runnable just before, waiting in its LIFO slot, must
 * still run on another worker: no runnable item is pinned to a thread that sleeps.
 *
 * Two workers and the least limit the pool takes (five threads: two normal workers, one
 * express, two background). Three background tasks block first, so the limit is reached with
 * both normal workers idle. Then task A wakes serial queue S (S goes to A's LIFO slot) and
 * waits on a semaphore that only S's task signals. No thread may replace A's; the second
 * worker is idle and must take S. Repeated, since each round is a race between A's wait and
 * the idle worker's search.
 */
#include "cq_test.h"

#define ROUNDS 50

struct round {
    cq_queue_t s;
    cq_semaphore_t from_s;
    cq_semaphore_t done;
    atomic_int signalled_in_time;
};

static void signal_from_s(void *ctx)
{
    struct round *r = ctx;
    cq_semaphore_signal(r->from_s);
}

static void task_a(void *ctx)
{
    struct round *r = ctx;
    cq_async_f(r->s, r, signal_from_s); /* S becomes runnable: this worker's LIFO slot */
    /* Generous, but finite: a stranded S would keep this waiting to the end. */
    if (cq_semaphore_wait(r->from_s, cq_time(CQ_TIME_NOW, 10 * 1000000000ll)) == 0) {
        atomic_fetch_add(&r->signalled_in_time, 1);
    }
    cq_semaphore_signal(r->done);
}

#define LIMIT 5
#define BLOCKERS 3

struct blockers {
    cq_semaphore_t started, gate;
    cq_group_t done;
};

static void background_blocker(void *ctx)
{
    struct blockers *b = ctx;
    cq_semaphore_signal(b->started);
    WAIT_SEMA(b->gate);
}

static void test_lifo_item_not_stranded_at_limit(void)
{
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    REQUIRE(info.workers == 2);
    REQUIRE(info.thread_limit == LIMIT);
    struct blockers b = {cq_semaphore_create(0), cq_semaphore_create(0), cq_group_create()};
    for (int i = 0; i < BLOCKERS; i++) {
        cq_group_async_f(b.done, cq_get_global_queue(CQ_QUEUE_PRIORITY_BACKGROUND, 0), &b,
                         background_blocker);
    }
    for (int i = 0; i < BLOCKERS; i++) {
        WAIT_SEMA(b.started);
    }
    cq_runtime_get_info(&info);
    REQUIRE(info.threads == LIMIT); /* 2 normal workers + 3 blocked background threads */
    struct round r = {.s = cq_queue_create("woken-before-wait", NULL),
                      .from_s = cq_semaphore_create(0),
                      .done = cq_semaphore_create(0)};
    for (int i = 0; i < ROUNDS; i++) {
        cq_async_f(cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), &r, task_a);
        WAIT_SEMA(r.done);
        if (atomic_load(&r.signalled_in_time) != i + 1) {
            fprintf(stderr, "   round %d: S's task did not run while A waited\n", i);
            break;
        }
    }
    cq_runtime_get_info(&info);
    fprintf(stderr,
            "   %d of %d rounds ran S while A waited; the limit was reached %u times "
            "(threads %u, hand-offs %llu)\n",
            atomic_load(&r.signalled_in_time), ROUNDS, info.limit_reached, info.threads,
            (unsigned long long)info.handoffs);
    CHECK_EQ(atomic_load(&r.signalled_in_time), ROUNDS);
    CHECK(info.threads_peak <= LIMIT);
    for (int i = 0; i < BLOCKERS; i++) {
        cq_semaphore_signal(b.gate);
    }
    WAIT_GROUP(b.done); /* the waits have returned: the semaphores may go */
    cq_release(b.done);
    cq_release(b.started);
    cq_release(b.gate);
    cq_release(r.s);
    cq_release(r.from_s);
    cq_release(r.done);
}

int main(void)
{
    /* Before the pool starts: two workers, the least limit. */
    setenv("CQ_WORKERS", "2", 1);
    setenv("CQ_THREAD_LIMIT", "5", 1);
    RUN(test_lifo_item_not_stranded_at_limit);
    TEST_MAIN_END();
}
