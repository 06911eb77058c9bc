/*
 * fork(): the child can use the runtime (docs/fork.md). Children report through their exit
 * status; each arms alarm() so that a hang in the child becomes a failure, not a stuck test.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>

#include "cq_test.h"

#define CHILD_ALARM_S 60

/* ThreadSanitizer refuses new threads in a child of a multi-threaded process unless told
 * otherwise; the runtime's child starts its own (read only by TSan builds). */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "die_after_fork=0";
}

static void noop(void *ctx)
{
    (void)ctx;
}

static void count_task(void *ctx)
{
    atomic_fetch_add((atomic_long *)ctx, 1);
}

static void signal_sema(void *ctx)
{
    cq_semaphore_signal(ctx);
}

static void wait_sema(void *ctx)
{
    cq_semaphore_wait(ctx, CQ_TIME_FOREVER);
}

/* Waits for a child and returns its exit status, or 128 + signal. */
static int child_status(pid_t pid)
{
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* ---- a child exercises the runtime ---------------------------------------------------------- */

struct fifo_check {
    long next;
    atomic_int out_of_order;
};

static struct fifo_check fifo;
static long fifo_ids[1000];

static void fifo_task(void *ctx)
{
    long id = *(long *)ctx;
    if (id != fifo.next++) {
        atomic_fetch_add(&fifo.out_of_order, 1);
    }
}

static void timer_tick(void *ctx)
{
    cq_semaphore_signal(ctx);
}

static void reader_event(void *ctx)
{
    cq_semaphore_signal(ctx);
}

/* A source's cancel handler runs after its last event handler: waiting for it makes releasing
 * what the handlers use safe (an event, where a task on another queue would only be a guess). */
static void source_canceled(void *ctx)
{
    cq_semaphore_signal(ctx);
}

static void apply_body(void *ctx, size_t i)
{
    atomic_fetch_add(&((atomic_long *)ctx)[i % 4], 1);
}

/* Runs a bit of everything; returns the number of failed checks (the child's exit status). */
static int exercise_runtime(cq_queue_t inherited_idle)
{
    int failures = test_failures;

    /* the global queue and a group */
    atomic_long count = 0;
    cq_group_t g = cq_group_create();
    for (int i = 0; i < 1000; i++) {
        cq_group_async_f(g, cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), &count,
                         count_task);
    }
    WAIT_GROUP(g);
    CHECK_EQ(atomic_load(&count), 1000);

    /* a new serial queue keeps FIFO order */
    cq_queue_t q = cq_queue_create("child-serial", NULL);
    fifo.next = 0;
    for (long i = 0; i < 1000; i++) {
        fifo_ids[i] = i;
        cq_async_f(q, &fifo_ids[i], fifo_task);
    }
    cq_sync_f(q, NULL, noop);
    CHECK_EQ(fifo.next, 1000);
    CHECK_EQ(atomic_load(&fifo.out_of_order), 0);
    cq_release(q);

    /* a queue inherited idle from the parent is adopted */
    if (inherited_idle) {
        atomic_store(&count, 0);
        for (int i = 0; i < 100; i++) {
            cq_async_f(inherited_idle, &count, count_task);
        }
        cq_sync_f(inherited_idle, NULL, noop);
        CHECK_EQ(atomic_load(&count), 100);
    }

    /* apply, after, a timer source and a read source (the reactor starts over) */
    atomic_long slots[4] = {0};
    cq_apply_f(1000, cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), slots, apply_body);
    CHECK_EQ(slots[0] + slots[1] + slots[2] + slots[3], 1000);

    cq_semaphore_t s = cq_semaphore_create(0);
    cq_semaphore_t canceled = cq_semaphore_create(0);
    cq_after_f(cq_time(CQ_TIME_NOW, 2 * 1000000ll), cq_get_global_queue(0, 0), s, signal_sema);
    WAIT_SEMA(s);

    cq_source_t timer = cq_source_create(CQ_SOURCE_TYPE_TIMER, 0, 0, NULL);
    REQUIRE(timer != NULL);
    cq_set_context(timer, s);
    cq_source_set_event_handler_f(timer, timer_tick);
    cq_source_set_cancel_handler_ctx_f(timer, canceled, source_canceled, NULL);
    cq_source_set_timer(timer, CQ_TIME_NOW, 1000000, 0);
    cq_resume(timer);
    for (int i = 0; i < 3; i++) {
        WAIT_SEMA(s);
    }
    cq_source_cancel(timer);
    WAIT_SEMA(canceled); /* no tick signals `s` after this */
    cq_release(timer);

    int fds[2];
    REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
    cq_semaphore_t readable = cq_semaphore_create(0);
    cq_source_t reader = cq_source_create(CQ_SOURCE_TYPE_READ, (uintptr_t)fds[0], 0, NULL);
    REQUIRE(reader != NULL);
    cq_set_context(reader, readable);
    cq_source_set_event_handler_f(reader, reader_event);
    cq_source_set_cancel_handler_ctx_f(reader, canceled, source_canceled, NULL);
    cq_resume(reader);
    REQUIRE(write(fds[1], "x", 1) == 1);
    WAIT_SEMA(readable);
    cq_source_cancel(reader);
    WAIT_SEMA(canceled); /* no event handler signals `readable` after this */
    cq_release(reader);
    close(fds[0]);
    close(fds[1]);

    cq_release(readable);
    cq_release(canceled);
    cq_release(s);
    cq_release(g);
    return test_failures - failures;
}

/* ---- fork from the main thread, with the parent's runtime busy ------------------------------ */

static cq_queue_t busy_q, idle_q, idle_target;
static cq_semaphore_t busy_gate;
static cq_source_t parent_timer;
static atomic_long parent_ticks;
static cq_semaphore_t parent_ticked; /* one signal per tick; never released (a tick may still
                                      * be running after the cancel) */

static void parent_tick(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&parent_ticks, 1);
    cq_semaphore_signal(parent_ticked);
}

/* Waits (on the ticks themselves) until the parent's timer has ticked `n` more times; fails
 * the test if it stopped ticking. */
static void wait_parent_ticks(long n)
{
    long target = atomic_load(&parent_ticks) + n;
    while (atomic_load(&parent_ticks) < target) {
        WAIT_SEMA(parent_ticked);
    }
}

static void setup_parent_state(void)
{
    busy_gate = cq_semaphore_create(0);
    parent_ticked = cq_semaphore_create(0);
    busy_q = cq_queue_create("busy-at-fork", NULL);
    cq_async_f(busy_q, busy_gate, wait_sema); /* running (blocked) when the process forks */
    cq_async_f(busy_q, NULL, noop);           /* and one queued behind it */
    idle_target = cq_queue_create("idle-target", CQ_QUEUE_CONCURRENT);
    idle_q = cq_queue_create("idle-at-fork", NULL);
    cq_set_target_queue(idle_q, idle_target);
    cq_sync_f(idle_q, NULL, noop); /* used, and idle again */

    parent_timer = cq_source_create(CQ_SOURCE_TYPE_TIMER, 0, 0, NULL);
    cq_source_set_event_handler_f(parent_timer, parent_tick);
    cq_source_set_timer(parent_timer, CQ_TIME_NOW, 1000000, 0);
    cq_resume(parent_timer);
    wait_parent_ticks(2);
    /* An after_f the child must not run (it belongs to the parent's reactor). */
    cq_after_f(cq_time(CQ_TIME_NOW, 3600ll * 1000000000ll), cq_get_global_queue(0, 0), NULL,
               noop);
}

static void test_child_uses_runtime(void)
{
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        alarm(CHILD_ALARM_S);
        _exit(exercise_runtime(idle_q) == 0 ? 0 : 1);
    }
    CHECK_EQ(child_status(pid), 0);
}

/* A child forks again before it uses the runtime (a daemon's double fork): liburcu's call_rcu
 * side, paused by the first fork and restarted only on the child's first use, must not be
 * paused a second time (the child hung in fork(), waiting for the lock its first fork left
 * held). The grandchild and then the child use the runtime. */
static void test_nested_fork(void)
{
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        alarm(CHILD_ALARM_S);
        pid_t grandchild = fork();
        if (grandchild < 0) {
            _exit(2);
        }
        if (grandchild == 0) {
            alarm(CHILD_ALARM_S);
            _exit(exercise_runtime(idle_q) == 0 ? 0 : 1);
        }
        int status = 0;
        if (waitpid(grandchild, &status, 0) != grandchild || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0) {
            _exit(3);
        }
        _exit(exercise_runtime(idle_q) == 0 ? 0 : 1);
    }
    CHECK_EQ(child_status(pid), 0);
}

static void async_onto_busy(void *arg)
{
    (void)arg;
    cq_async_f(busy_q, NULL, noop);
}

static void cancel_parent_timer(void *arg)
{
    (void)arg;
    cq_source_cancel(parent_timer);
}

static void release_inherited(void *arg)
{
    (void)arg;
    /* Releasing what the parent made is always allowed (the objects are simply let go). */
    cq_retain(busy_q);
    cq_release(busy_q);
    cq_retain(parent_timer);
    cq_release(parent_timer);
    abort(); /* expect_abort wants an abort: reaching it means the releases went through */
}

static void test_child_inherited_objects(void)
{
    expect_abort("busy queue in the child", async_onto_busy, NULL,
                 "cq_async_f: queue \"busy-at-fork\"");
    expect_abort("busy queue message", async_onto_busy, NULL,
                 "was busy when the process forked");
    expect_abort("parent's source in the child", cancel_parent_timer, NULL,
                 "was created before the process forked");
    expect_abort("release of inherited objects", release_inherited, NULL, "");
}

static void test_parent_unaffected(void)
{
    /* The parent's blocked task, the task behind it, its timer: all still work. */
    cq_semaphore_signal(busy_gate);
    cq_sync_f(busy_q, NULL, noop); /* returns once both have run */
    wait_parent_ticks(3);
    cq_source_cancel(parent_timer);
    cq_release(parent_timer);
    cq_release(busy_q);
    cq_release(idle_q);
    cq_release(idle_target);
    cq_release(busy_gate);
}

/* ---- fork from inside a task ---------------------------------------------------------------- */

static atomic_int task_child_status = -1;

static void forking_task(void *ctx)
{
    cq_semaphore_t done = ctx;
    pid_t pid = fork();
    if (pid == 0) {
        alarm(CHILD_ALARM_S);
        /* The pool thread blocked every asynchronous signal; the child must not inherit that. */
        sigset_t blocked;
        pthread_sigmask(SIG_BLOCK, NULL, &blocked);
        if (sigismember(&blocked, SIGTERM) || sigismember(&blocked, SIGINT)) {
            _exit(10);
        }
        if (exercise_runtime(NULL) != 0) {
            _exit(11);
        }
        return; /* back to the worker loop: the child exits with status 0 */
    }
    atomic_store(&task_child_status, pid > 0 ? child_status(pid) : 99);
    cq_semaphore_signal(done);
}

static void test_fork_in_task(void)
{
    cq_queue_t q = cq_queue_create("forker", NULL);
    cq_semaphore_t done = cq_semaphore_create(0);
    cq_async_f(q, done, forking_task);
    WAIT_SEMA(done);
    CHECK_EQ(atomic_load(&task_child_status), 0);
    atomic_long count = 0;
    for (int i = 0; i < 100; i++) {
        cq_async_f(q, &count, count_task); /* the parent's queue carries on */
    }
    cq_sync_f(q, NULL, noop);
    CHECK_EQ(atomic_load(&count), 100);
    cq_release(done);
    cq_release(q);
}

/* ---- forks while other threads keep the runtime busy ---------------------------------------- */

static atomic_bool storm_stop;
static atomic_long storm_submitted, storm_ran;
static cq_group_t storm_group; /* every storm task: empty once all of them have run */

static void storm_task(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&storm_ran, 1);
}

static void *storm_producer(void *arg)
{
    cq_queue_t q = arg;
    while (!atomic_load(&storm_stop)) {
        for (int i = 0; i < 64; i++) {
            atomic_fetch_add(&storm_submitted, 1);
            cq_group_async_f(storm_group, i % 2 ? q : cq_get_global_queue(0, 0), NULL,
                             storm_task);
        }
        cq_sync_f(q, NULL, noop);
    }
    return NULL;
}

static void small_child_work(void)
{
    atomic_long count = 0;
    cq_group_t g = cq_group_create();
    for (int i = 0; i < 100; i++) {
        cq_group_async_f(g, cq_get_global_queue(0, 0), &count, count_task);
    }
    if (cq_group_wait(g, cq_test_deadline()) != 0 || atomic_load(&count) != 100) {
        _exit(1);
    }
    _exit(0);
}

static void test_fork_storm(void)
{
    enum { PRODUCERS = 2, FORKS = 20 };
    pthread_t producers[PRODUCERS];
    cq_queue_t queues[PRODUCERS];
    storm_group = cq_group_create();
    for (int i = 0; i < PRODUCERS; i++) {
        queues[i] = cq_queue_create("storm", NULL);
        REQUIRE(pthread_create(&producers[i], NULL, storm_producer, queues[i]) == 0);
    }
    int ok = 0;
    for (int i = 0; i < FORKS; i++) {
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            alarm(CHILD_ALARM_S);
            small_child_work();
        }
        ok += child_status(pid) == 0;
    }
    CHECK_EQ(ok, FORKS);
    atomic_store(&storm_stop, true);
    for (int i = 0; i < PRODUCERS; i++) {
        pthread_join(producers[i], NULL);
    }
    for (int i = 0; i < PRODUCERS; i++) {
        cq_release(queues[i]);
    }
    /* every task the producers submitted ran exactly once in the parent */
    WAIT_GROUP(storm_group);
    CHECK_EQ(atomic_load(&storm_ran), atomic_load(&storm_submitted));
    cq_release(storm_group);
}

int main(void)
{
    setup_parent_state();
    RUN(test_child_uses_runtime);
    RUN(test_nested_fork);
    RUN(test_child_inherited_objects);
    RUN(test_parent_unaffected);
    RUN(test_fork_in_task);
    RUN(test_fork_storm);
    TEST_MAIN_END();
}
