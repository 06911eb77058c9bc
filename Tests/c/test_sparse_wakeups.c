/*
 * Sparse work wakes one worker per item. A lone task submitted from outside the pool to an
 * idle pool, milliseconds after the last one, needs one worker woken; a second one, woken
 * "in case more comes", finds nothing and parks again, and its wake-up (a system call that
 * interrupts the other CPU) used to delay the task itself: the finder made it before running
 * the task (find.c, cq__pool_announce_backlog). The pool's counters show the wake-ups.
 */
#include <time.h>

#include "cq_test.h"

#define ITEMS 100

static void signal_done(void *ctx)
{
    cq_semaphore_signal((cq_semaphore_t)ctx);
}

static uint64_t unparks(void)
{
    struct cq_runtime_counters c = {0};
    cq_runtime_get_counters(&c, sizeof c);
    return c.unparks;
}

static void lone_items_wake_one_worker(long priority)
{
    cq_semaphore_t done = cq_semaphore_create(0);
    cq_queue_t q = cq_get_global_queue(priority, 0);
    cq_async_f(q, done, signal_done); /* starts the pool */
    WAIT_SEMA(done);
    uint64_t before = unparks();
    for (int i = 0; i < ITEMS; i++) {
        /* The arrival pattern under test: items 2 ms apart, so that every worker has parked
         * (their search spins last at most microseconds) when the next one comes. */
        struct timespec gap = {0, 2 * 1000 * 1000};
        nanosleep(&gap, NULL);
        cq_async_f(q, done, signal_done);
        WAIT_SEMA(done);
    }
    uint64_t woken = unparks() - before;
    /* One per item at most (fewer when a worker was still searching); a little slack for a
     * worker woken to take a timer's or the monitor's work. Two per item was the old rate. */
    if (woken > ITEMS + ITEMS / 4) {
        fprintf(stderr, "%llu wake-ups for %d lone items of priority %ld\n",
                (unsigned long long)woken, ITEMS, priority);
    }
    CHECK(woken <= ITEMS + ITEMS / 4);
    cq_release(done);
}

/* High items are taken one at a time (take_high), which left the hint set: two wake-ups per
 * item before the fix. Default ones, taken in adaptive batches, were not affected. */
static void test_lone_items_wake_one_worker(void)
{
    lone_items_wake_one_worker(CQ_QUEUE_PRIORITY_HIGH);
    lone_items_wake_one_worker(CQ_QUEUE_PRIORITY_DEFAULT);
}

int main(void)
{
    RUN(test_lone_items_wake_one_worker);
    TEST_MAIN_END();
}
