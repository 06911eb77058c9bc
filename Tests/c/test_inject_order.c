/*
 * Work submitted from outside the pool (here the main thread; in a server, the reactor's
 * readiness events) waits in the shared inject queue. A worker that takes a batch of it moves
 * the rest of the batch into its own ring, where it waits for that worker. When the items are
 * long, a worker takes them one at a time, so a worker stuck in a long task holds none of
 * them back: the other worker runs them all, in the order they were submitted.
 *
 * Two workers. Two gate tasks keep both busy while the main thread submits 64 tasks; then the
 * first task (taken by one of the workers) spins until the last one has run, and the other
 * worker must start tasks 1..63 in submission order. With batches of up to 32 (the runtime
 * before this test), the stuck worker held tasks 1..31 while the other ran 32..63 first.
 */
#include "cq_test.h"

#define TASKS 64
#define TASK_SPIN_NS 200000ll /* long enough that batching them buys nothing */

static atomic_int gate_open;
static atomic_int gates_running;
static atomic_int next_seq;
static atomic_int last_done;
static int seq[TASKS];

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spins until *flag is set; false after the test's patience. */
static bool spin_until(atomic_int *flag)
{
    int64_t deadline = now_ns() + CQ_TEST_PATIENCE_NS;
    while (!atomic_load(flag)) {
        if (now_ns() > deadline) {
            return false;
        }
    }
    return true;
}

static void spin_for(int64_t ns)
{
    int64_t end = now_ns() + ns;
    while (now_ns() < end) {
    }
}

/* Holds a worker until the tasks are all submitted; long (at least 1 ms), as they are. */
static void gate(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&gates_running, 1);
    spin_until(&gate_open);
    spin_for(1000000);
}

static void task(void *ctx)
{
    int i = (int)(intptr_t)ctx;
    seq[i] = atomic_fetch_add(&next_seq, 1);
    if (i == 0) {
        /* stuck until the others have run (a long task, as far as the pool can tell) */
        if (!spin_until(&last_done)) {
            fprintf(stderr, "task 0 waited in vain for the last task\n");
        }
        return;
    }
    spin_for(TASK_SPIN_NS);
    if (i == TASKS - 1) {
        atomic_store(&last_done, 1);
    }
}

static void test_long_items_run_in_order(void)
{
    cq_queue_t global = cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0);
    cq_group_t group = cq_group_create();
    cq_group_async_f(group, global, NULL, gate);
    cq_group_async_f(group, global, NULL, gate);
    /* Both workers in a gate (an event, not a delay: each gate counts itself in). */
    int64_t deadline = now_ns() + CQ_TEST_PATIENCE_NS;
    while (atomic_load(&gates_running) < 2) {
        REQUIRE(now_ns() < deadline);
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < TASKS; i++) {
        cq_group_async_f(group, global, (void *)(intptr_t)i, task);
    }
    atomic_store(&gate_open, 1);
    WAIT_GROUP(group);
    cq_release(group);
    int inversions = 0;
    for (int i = 2; i < TASKS; i++) {
        if (seq[i] < seq[i - 1]) {
            if (inversions++ < 5) {
                fprintf(stderr, "task %d started as #%d, before task %d (#%d)\n", i, seq[i],
                        i - 1, seq[i - 1]);
            }
        }
    }
    CHECK_EQ(inversions, 0);
}

int main(void)
{
    setenv("CQ_WORKERS", "2", 1); /* before the pool starts */
    RUN(test_long_items_run_in_order);
    TEST_MAIN_END();
}
