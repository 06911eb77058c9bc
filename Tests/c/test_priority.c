/*
 * Priority decides which work runs first, as a user of the global queues sees it:
 *   - background work runs on threads the kernel ranks below every other (nice 19), so it
 *     never holds a CPU that other work wants;
 *   - default work starts while background work keeps every CPU busy;
 *   - high work starts while default work keeps every worker busy (the express worker);
 *   - work submitted from a task runs highest priority first, not in submission order
 *     (test_priority_order.c, on one worker).
 * The busy tasks spin until the task under test has run, or give up after a long deadline:
 * giving up means the task under test did not get a CPU while they ran, which fails.
 */
#define _GNU_SOURCE
#include "cq_test.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>

/* How long a spinner waits for the task under test before it gives up (the test fails). */
#define GIVE_UP_NS (20ll * 1000000000ll)

struct spinners {
    atomic_int started;
    atomic_bool released; /* set by the task under test */
    atomic_int gave_up;
    cq_group_t group;
};

static void spin_until_released(void *ctx)
{
    struct spinners *s = ctx;
    atomic_fetch_add(&s->started, 1);
    uint64_t deadline = cq_test_now_ns() + (uint64_t)GIVE_UP_NS;
    while (!atomic_load(&s->released)) {
        if (cq_test_now_ns() > deadline) {
            atomic_fetch_add(&s->gave_up, 1);
            return;
        }
    }
}

static void release_spinners(void *ctx)
{
    struct spinners *s = ctx;
    atomic_store(&s->released, true);
}

static int workers(void)
{
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    return (int)info.workers;
}

/* Starts n spinners on the global queue of `priority` and waits until `wait_for` of them run. */
static void start_spinners(struct spinners *s, long priority, int n, int wait_for)
{
    s->group = cq_group_create();
    for (int i = 0; i < n; i++) {
        cq_group_async_f(s->group, cq_get_global_queue(priority, 0), s, spin_until_released);
    }
    uint64_t deadline = cq_test_now_ns() + (uint64_t)CQ_TEST_PATIENCE_NS;
    while (atomic_load(&s->started) < wait_for) {
        REQUIRE(cq_test_now_ns() < deadline);
        sched_yield();
    }
}

static void finish_spinners(struct spinners *s)
{
    atomic_store(&s->released, true);
    WAIT_GROUP(s->group);
    cq_release(s->group);
}

/* ---- OS priority ------------------------------------------------------------------------ */

struct os_priority {
    int nice;
    cq_semaphore_t done;
};

static void read_nice(void *ctx)
{
    struct os_priority *p = ctx;
    errno = 0;
    p->nice = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    cq_semaphore_signal(p->done);
}

static void test_background_threads_rank_lowest(void)
{
    int process_nice = getpriority(PRIO_PROCESS, 0);
    struct os_priority bg = {.done = cq_semaphore_create(0)};
    struct os_priority dflt = {.done = cq_semaphore_create(0)};
    cq_async_f(cq_get_global_queue(CQ_QUEUE_PRIORITY_BACKGROUND, 0), &bg, read_nice);
    cq_async_f(cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), &dflt, read_nice);
    WAIT_SEMA(bg.done);
    WAIT_SEMA(dflt.done);
    fprintf(stderr, "   nice: process %d, default task %d, background task %d\n", process_nice,
            dflt.nice, bg.nice);
    CHECK_EQ(bg.nice, 19);
    CHECK_EQ(dflt.nice, process_nice);
    cq_release(bg.done);
    cq_release(dflt.done);
}

/* ---- default work while background work saturates the CPUs -------------------------------- */

static void test_default_runs_while_background_saturates(void)
{
    int n = workers();
    struct spinners s = {0};
    start_spinners(&s, CQ_QUEUE_PRIORITY_BACKGROUND, 2 * n, n);
    cq_group_t g = cq_group_create();
    cq_group_async_f(g, cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), &s, release_spinners);
    WAIT_GROUP(g);
    finish_spinners(&s);
    fprintf(stderr, "   %d background spinners, %d gave up before the default task ran\n", 2 * n,
            atomic_load(&s.gave_up));
    CHECK_EQ(atomic_load(&s.gave_up), 0);
    cq_release(g);
}

/* ---- high work while default work keeps every worker busy --------------------------------- */

static void test_high_runs_while_default_saturates(void)
{
    struct cq_runtime_info before, after;
    cq_runtime_get_info(&before);
    int n = (int)before.workers;
    struct spinners s = {0};
    start_spinners(&s, CQ_QUEUE_PRIORITY_DEFAULT, n, n); /* one per worker: all are busy */
    cq_group_t g = cq_group_create();
    cq_group_async_f(g, cq_get_global_queue(CQ_QUEUE_PRIORITY_HIGH, 0), &s, release_spinners);
    WAIT_GROUP(g);
    finish_spinners(&s);
    cq_runtime_get_info(&after);
    fprintf(stderr,
            "   %d default spinners, %d gave up before the high task ran; express wake-ups %llu\n",
            n, atomic_load(&s.gave_up),
            (unsigned long long)(after.express_wakeups - before.express_wakeups));
    CHECK_EQ(atomic_load(&s.gave_up), 0);
    cq_release(g);
}

/* ---- a serial queue inherits its target's priority ---------------------------------------- */

static void test_high_serial_queue_runs_while_default_saturates(void)
{
    int n = workers();
    struct spinners s = {0};
    start_spinners(&s, CQ_QUEUE_PRIORITY_DEFAULT, n, n);
    cq_queue_t q = cq_queue_create("high-serial", NULL);
    cq_set_target_queue(q, cq_get_global_queue(CQ_QUEUE_PRIORITY_HIGH, 0));
    cq_group_t g = cq_group_create();
    cq_group_async_f(g, q, &s, release_spinners);
    WAIT_GROUP(g);
    finish_spinners(&s);
    CHECK_EQ(atomic_load(&s.gave_up), 0);
    cq_release(q);
    cq_release(g);
}

/* ---- streams of high work do not keep everything else from running --------------------- */

/* Tasks that each queue the next one as they end, on the high queue: one stream more than
 * there are workers, so the workers and the express worker always have one in their rings.
 * A timer onto the high queue itself, a timer and an async onto the default queue must still
 * run while the streams go on (libdispatch: 10 ms, 10 ms, 4 ms). Ours ran none of them until
 * the streams stopped (5 s and 20 s runs): every worker took its own high ring's next item
 * first, always, and the inject queues, where the timers' tasks and the main thread's work
 * wait, never got a turn. */

struct high_stream {
    atomic_bool stop;
    atomic_int pieces, live;
    cq_semaphore_t ran, ended;
};

static struct high_stream streams_state; /* static: a late witness may run after the test (the old code) */

static void stream_piece(void *ctx)
{
    struct high_stream *hs = ctx;
    if (atomic_load(&hs->stop)) {
        if (atomic_fetch_sub(&hs->live, 1) == 1) {
            cq_semaphore_signal(hs->ended);
        }
        return;
    }
    uint64_t end = cq_test_now_ns() + 1000000; /* 1 ms of CPU */
    while (cq_test_now_ns() < end) {
    }
    atomic_fetch_add(&hs->pieces, 1);
    cq_async_f(cq_get_global_queue(CQ_QUEUE_PRIORITY_HIGH, 0), hs, stream_piece);
}

static void stream_witness(void *ctx)
{
    struct high_stream *hs = ctx;
    if (!atomic_load(&hs->stop)) { /* ran while the streams ran */
        cq_semaphore_signal(hs->ran);
    }
}

static void test_high_streams_leave_room(void)
{
    int streams = workers() + 1;
    streams_state.ran = cq_semaphore_create(0);
    streams_state.ended = cq_semaphore_create(0);
    atomic_store(&streams_state.live, streams);
    for (int i = 0; i < streams; i++) {
        cq_async_f(cq_get_global_queue(CQ_QUEUE_PRIORITY_HIGH, 0), &streams_state, stream_piece);
    }
    while (atomic_load(&streams_state.pieces) < 10 * streams) { /* the streams are going */
        sched_yield();
    }
    cq_time_t soon = cq_time(CQ_TIME_NOW, 10 * (int64_t)CQ_NSEC_PER_MSEC);
    cq_after_f(soon, cq_get_global_queue(CQ_QUEUE_PRIORITY_HIGH, 0), &streams_state, stream_witness);
    cq_after_f(soon, cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), &streams_state, stream_witness);
    cq_async_f(cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), &streams_state, stream_witness);
    int ran = 0;
    cq_time_t deadline = cq_time(CQ_TIME_NOW, GIVE_UP_NS);
    while (ran < 3 && cq_semaphore_wait(streams_state.ran, deadline) == 0) {
        ran++;
    }
    atomic_store(&streams_state.stop, true);
    fprintf(stderr, "   %d of 3 ran while %d high streams ran (%d pieces)\n", ran, streams,
            atomic_load(&streams_state.pieces));
    CHECK_EQ(ran, 3);
    WAIT_SEMA(streams_state.ended); /* each stream ends at its next piece */
}

int main(void)
{
    RUN(test_background_threads_rank_lowest);
    RUN(test_default_runs_while_background_saturates);
    RUN(test_high_runs_while_default_saturates);
    RUN(test_high_serial_queue_runs_while_default_saturates);
    RUN(test_high_streams_leave_room);
    TEST_MAIN_END();
}
