/*
 * Misuse is reported with a clear message naming the call and the object, then the process
 * aborts. Each case runs in a forked child (the parent never starts the runtime). The messages
 * checked here are the ones listed in docs/misuse.md.
 */
#include "cq_test.h"

static void noop(void *ctx)
{
    (void)ctx;
}

static void wait_gate(void *ctx)
{
    cq_semaphore_wait(ctx, CQ_TIME_FOREVER);
}

static void over_release(void *arg)
{
    (void)arg;
    cq_queue_t q = cq_queue_create("twice", NULL);
    cq_async_f(q, cq_semaphore_create(0), wait_gate); /* keeps the queue alive, never ends */
    cq_release(q);
    cq_release(q); /* one too many */
}

static void resume_not_suspended(void *arg)
{
    (void)arg;
    cq_queue_t q = cq_queue_create("never-suspended", NULL);
    cq_resume(q);
}

static void over_resume(void *arg)
{
    (void)arg;
    cq_queue_t q = cq_queue_create("over-resumed", CQ_QUEUE_CONCURRENT);
    cq_suspend(q);
    cq_resume(q);
    cq_resume(q);
}

static cq_queue_t sync_q;

static void sync_onto_self(void *ctx)
{
    (void)ctx;
    cq_sync_f(sync_q, NULL, noop);
}

static void sync_current(void *arg)
{
    (void)arg;
    sync_q = cq_queue_create("self-sync", NULL);
    cq_sync_f(sync_q, NULL, sync_onto_self);
}

static void sync_current_async(void *arg)
{
    (void)arg;
    sync_q = cq_queue_create("self-sync-async", NULL);
    cq_async_f(sync_q, NULL, sync_onto_self);
    cq_semaphore_wait(cq_semaphore_create(0), CQ_TIME_FOREVER); /* the task aborts */
}

static cq_queue_t chain_target, chain_child;

static void sync_onto_child(void *ctx)
{
    (void)ctx;
    cq_sync_f(chain_child, NULL, noop);
}

static void sync_through_target(void *arg)
{
    (void)arg;
    chain_target = cq_queue_create("chain-target", NULL);
    chain_child = cq_queue_create("chain-child", NULL);
    cq_set_target_queue(chain_child, chain_target);
    cq_sync_f(chain_target, NULL, sync_onto_child);
}

static cq_queue_t conc_q;

static void barrier_onto_self(void *ctx)
{
    (void)ctx;
    cq_barrier_sync_f(conc_q, NULL, noop);
}

static void barrier_sync_current(void *arg)
{
    (void)arg;
    conc_q = cq_queue_create("conc-self", CQ_QUEUE_CONCURRENT);
    cq_sync_f(conc_q, NULL, barrier_onto_self);
}

static void null_queue(void *arg)
{
    (void)arg;
    cq_async_f(NULL, NULL, noop);
}

static void null_function(void *arg)
{
    (void)arg;
    cq_async_f(cq_queue_create("nullfn", NULL), NULL, NULL);
}

static void null_sync_function(void *arg)
{
    (void)arg;
    cq_sync_f(cq_queue_create("nullfn-sync", NULL), NULL, NULL);
}

static void not_a_queue(void *arg)
{
    (void)arg;
    cq_async_f((cq_queue_t)(void *)cq_semaphore_create(1), NULL, noop);
}

static void garbage_object(void *arg)
{
    (void)arg;
    static long not_an_object[8] = {1, 2, 3};
    cq_retain(not_an_object);
}

static void release_suspended(void *arg)
{
    (void)arg;
    cq_queue_t q = cq_queue_create("released-suspended", NULL);
    cq_suspend(q);
    cq_release(q);
}

static void target_cycle(void *arg)
{
    (void)arg;
    cq_queue_t a = cq_queue_create("cycle-a", NULL), b = cq_queue_create("cycle-b", NULL);
    cq_set_target_queue(a, b);
    cq_set_target_queue(b, a);
}

static void retarget_global(void *arg)
{
    (void)arg;
    cq_set_target_queue(cq_get_global_queue(0, 0), cq_queue_create("x", NULL));
}

static void leave_without_enter(void *arg)
{
    (void)arg;
    cq_group_leave(cq_group_create());
}

static void semaphore_in_use(void *arg)
{
    (void)arg;
    cq_semaphore_t s = cq_semaphore_create(2);
    cq_semaphore_wait(s, CQ_TIME_FOREVER);
    cq_release(s);
}

static cq_once_t recursive_pred;

static void recurse(void *ctx)
{
    (void)ctx;
    cq_once_f(&recursive_pred, NULL, recurse);
}

static void once_recursive(void *arg)
{
    (void)arg;
    cq_once_f(&recursive_pred, NULL, recurse);
}

static cq_queue_t assert_q;

static void assert_other(void *ctx)
{
    (void)ctx;
    cq_assert_queue(assert_q);
}

static void assert_fails(void *arg)
{
    (void)arg;
    assert_q = cq_queue_create("expected", NULL);
    cq_sync_f(cq_queue_create("actual", NULL), NULL, assert_other);
}

static void main_off_main_thread_body(void *ctx)
{
    (void)ctx;
    cq_main();
}

static void main_off_main_thread(void *arg)
{
    (void)arg;
    cq_async_f(cq_get_global_queue(0, 0), NULL, main_off_main_thread_body);
    cq_semaphore_wait(cq_semaphore_create(0), CQ_TIME_FOREVER);
}

int main(void)
{
    expect_abort("over-release", over_release, NULL, "cq_release: over-release of queue \"twice\"");
    expect_abort("resume", resume_not_suspended, NULL,
                 "cq_resume: queue \"never-suspended\" (0x");
    expect_abort("over-resume", over_resume, NULL, "is not suspended");
    expect_abort("sync-current", sync_current, NULL,
                 "cq_sync_f: deadlock: queue \"self-sync\"");
    expect_abort("sync-current-async", sync_current_async, NULL,
                 "cq_sync_f: deadlock: queue \"self-sync-async\"");
    expect_abort("sync-through-target", sync_through_target, NULL,
                 "queue \"chain-child\" (0x");
    expect_abort("barrier-sync-current", barrier_sync_current, NULL,
                 "cq_barrier_sync_f: deadlock: queue \"conc-self\"");
    expect_abort("null-queue", null_queue, NULL, "cq_async_f: NULL object");
    expect_abort("null-function", null_function, NULL,
                 "cq_async_f: NULL function submitted to queue \"nullfn\"");
    expect_abort("null-sync-function", null_sync_function, NULL,
                 "cq_sync_f: NULL function for queue \"nullfn-sync\"");
    expect_abort("not-a-queue", not_a_queue, NULL, "cq_async_f: semaphore 0x");
    expect_abort("garbage", garbage_object, NULL, "cq_retain: 0x");
    expect_abort("release-suspended", release_suspended, NULL,
                 "cq_release: last reference to queue \"released-suspended\"");
    expect_abort("target-cycle", target_cycle, NULL, "would create a cycle");
    expect_abort("retarget-global", retarget_global, NULL,
                 "cq_set_target_queue: cannot change the target of queue \"cq.global.default\"");
    expect_abort("leave-without-enter", leave_without_enter, NULL,
                 "cq_group_leave: unbalanced call");
    expect_abort("semaphore-in-use", semaphore_in_use, NULL,
                 "released while in use (count 1 is below its initial value 2)");
    expect_abort("once-recursive", once_recursive, NULL, "cq_once_f: recursive call");
    expect_abort("assert-queue", assert_fails, NULL,
                 "cq_assert_queue: expected to run on queue \"expected\"");
    expect_abort("main-off-main-thread", main_off_main_thread, NULL,
                 "cq_main: must be called on the main thread");

    /* Recoverable bad input: a clear error, no abort. */
    errno = 0;
    CHECK(cq_semaphore_create(-1) == NULL);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK(cq_queue_create("bad-attr", (cq_queue_attr_t)(void *)&errno) == NULL);
    CHECK_EQ(errno, EINVAL);
    TEST_MAIN_END();
}
