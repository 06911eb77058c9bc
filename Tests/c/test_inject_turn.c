/*
 * Work from outside the pool is not held behind what a busy worker's own tasks keep queueing.
 *
 * One worker. A starter task queues STREAMS tasks that each queue the next one (streams), so
 * the worker's ring always holds about STREAMS items, all pushed by its own tasks. After a few
 * rounds the main thread submits one task. It waits in the inject queue until the worker's
 * next inject turn (every 61 items at the latest; earlier at the monitor's turns) and must run
 * then, not behind everything the ring holds: counted in stream tasks run between its
 * submission and its start, at most 61 and a few, where the runtime before this test put it
 * behind the ring's ~200 items (a server's requests from its reactor thread waited for every
 * task the busy workers had queued; cq-bench outside_p50: 4.9 ms against libdispatch's 3.3).
 * Counted in tasks, not in time: a slow machine slows both alike.
 *
 * The ring's own items still run: each stream keeps running while the outside task waits and
 * after it (every stream task must have run once more after it).
 */
#include "cq_test.h"

#define STREAMS 200
#define TURN_BOUND 128 /* the inject interval (61) with room; the ring holds ~STREAMS */

static cq_group_t streams;
static cq_queue_t global;
static atomic_long runs;
static atomic_int stop;
static atomic_long runs_at_start = -1;
static atomic_long runs_per_stream[STREAMS];

static void stream(void *ctx)
{
    atomic_fetch_add(&runs_per_stream[(intptr_t)ctx], 1);
    atomic_fetch_add(&runs, 1);
    if (!atomic_load(&stop)) {
        cq_group_async_f(streams, global, ctx, stream);
    }
}

/* Runs on the worker: the streams' first tasks are its own pushes, as the later ones are. */
static void starter(void *ctx)
{
    (void)ctx;
    for (intptr_t i = 0; i < STREAMS; i++) {
        cq_group_async_f(streams, global, (void *)i, stream);
    }
}

static void outside(void *ctx)
{
    (void)ctx;
    atomic_store(&runs_at_start, atomic_load(&runs));
}

static void test_outside_task_runs_at_the_next_turn(void)
{
    global = cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0);
    streams = cq_group_create();
    cq_group_async_f(streams, global, NULL, starter);
    /* A few rounds of every stream first (an event: the count, polled) */
    uint64_t deadline = cq_test_now_ns() + (uint64_t)CQ_TEST_PATIENCE_NS;
    while (atomic_load(&runs) < 3 * STREAMS) {
        REQUIRE(cq_test_now_ns() < deadline);
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    long per_stream_before[STREAMS];
    for (int i = 0; i < STREAMS; i++) {
        per_stream_before[i] = atomic_load(&runs_per_stream[i]);
    }
    cq_group_t group = cq_group_create();
    long before = atomic_load(&runs);
    cq_group_async_f(group, global, NULL, outside);
    WAIT_GROUP(group);
    cq_release(group);
    long waited = atomic_load(&runs_at_start) - before;
    /* Every stream runs again after the outside task (the ring is not starved either). */
    long after = atomic_load(&runs);
    while (atomic_load(&runs) < after + 2 * STREAMS) {
        REQUIRE(cq_test_now_ns() < deadline);
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    atomic_store(&stop, 1);
    WAIT_GROUP(streams);
    cq_release(streams);
    int stalled = 0;
    for (int i = 0; i < STREAMS; i++) {
        stalled += atomic_load(&runs_per_stream[i]) <= per_stream_before[i];
    }
    if (waited >= TURN_BOUND) {
        fprintf(stderr, "the outside task started after %ld stream tasks (bound %d)\n", waited,
                TURN_BOUND);
    }
    CHECK(waited >= 0);
    CHECK(waited < TURN_BOUND);
    CHECK_EQ(stalled, 0);
}

int main(void)
{
    setenv("CQ_WORKERS", "1", 1); /* before the pool starts */
    RUN(test_outside_task_runs_at_the_next_turn);
    TEST_MAIN_END();
}
