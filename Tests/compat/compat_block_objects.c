/*
 * Dispatch block objects (dispatch_block_create and the dispatch_block_* calls) through
 * libdispatch's names, with clang -fblocks, in C and C++, on both runtimes: call, submit, wait,
 * notify, cancel before the run, cancel while running, barriers, and release right after
 * submitting.
 */
#include "compat_test.h"

#ifndef __BLOCKS__
#error "compat_block_objects.c needs clang -fblocks"
#endif

#include <Block.h>

static void test_call_and_wait(void)
{
    __block long runs = 0;
    dispatch_block_t b = dispatch_block_create((dispatch_block_flags_t)0, ^{
        runs++;
    });
    REQUIRE(b != NULL);
    CHECK(dispatch_block_wait(b, DISPATCH_TIME_NOW) != 0); /* not run yet: times out */
    b();
    CHECK_EQ(runs, 1);
    CHECK_EQ(dispatch_block_wait(b, compat_deadline()), 0);
    CHECK_EQ(dispatch_block_testcancel(b), 0);
    Block_release(b);
}

static void test_submit_wait_notify(void)
{
    dispatch_queue_t q = dispatch_queue_create("compat.block-objects", NULL);
    dispatch_semaphore_t notified = dispatch_semaphore_create(0);
    __block long value = 0;
    dispatch_block_t b = dispatch_block_create((dispatch_block_flags_t)0, ^{
        value = 42;
    });
    dispatch_block_notify(b, compat_global(), ^{
        dispatch_semaphore_signal(notified);
    });
    dispatch_async(q, b);
    CHECK_EQ(dispatch_block_wait(b, compat_deadline()), 0);
    CHECK_EQ(value, 42);
    WAIT_SEMA(notified);
    Block_release(b); /* the submission is over */
    /* Released right after submitting: the queue keeps it until it has run. */
    __block long later = 0;
    b = dispatch_block_create((dispatch_block_flags_t)0, ^{
        later = 7;
    });
    dispatch_async(q, b);
    Block_release(b);
    dispatch_sync(q, ^{
    });
    CHECK_EQ(later, 7);
    dispatch_release(notified);
    dispatch_release(q);
}

static void test_cancel_before_run(void)
{
    dispatch_queue_t q = dispatch_queue_create("compat.block-objects.cancel", NULL);
    dispatch_semaphore_t held = dispatch_semaphore_create(0);
    dispatch_semaphore_t open = dispatch_semaphore_create(0);
    dispatch_semaphore_t notified = dispatch_semaphore_create(0);
    __block long runs = 0;
    dispatch_async(q, ^{
        dispatch_semaphore_signal(held);
        dispatch_semaphore_wait(open, DISPATCH_TIME_FOREVER);
    });
    WAIT_SEMA(held);
    dispatch_block_t b = dispatch_block_create((dispatch_block_flags_t)0, ^{
        runs++;
    });
    dispatch_block_notify(b, compat_global(), ^{
        dispatch_semaphore_signal(notified);
    });
    dispatch_async(q, b);
    dispatch_block_cancel(b);
    CHECK(dispatch_block_testcancel(b) != 0);
    dispatch_semaphore_signal(open);
    dispatch_sync(q, ^{
    }); /* the cancelled block was reached and skipped */
    WAIT_SEMA(notified);
    CHECK_EQ(dispatch_block_wait(b, compat_deadline()), 0);
    CHECK_EQ(runs, 0);
#ifndef COMPAT_USE_LIBDISPATCH
    /* Ours: calling a cancelled block does nothing. libdispatch stops the process here ("a
     * block object may not be both run more than once and waited for"). */
    b();
    CHECK_EQ(runs, 0);
#endif
    Block_release(b);
    dispatch_release(held);
    dispatch_release(open);
    dispatch_release(notified);
    dispatch_release(q);
}

static void test_cancel_while_running(void)
{
    dispatch_semaphore_t entered = dispatch_semaphore_create(0);
    dispatch_semaphore_t open = dispatch_semaphore_create(0);
    __block long finished = 0;
    __block long saw_cancel = 0;
    __block dispatch_block_t self = NULL;
    dispatch_block_t b = dispatch_block_create((dispatch_block_flags_t)0, ^{
        dispatch_semaphore_signal(entered);
        dispatch_semaphore_wait(open, DISPATCH_TIME_FOREVER);
        saw_cancel = dispatch_block_testcancel(self) != 0;
        finished = 1;
    });
    self = b;
    dispatch_async(compat_global(), b);
    WAIT_SEMA(entered);
    dispatch_block_cancel(b);
    dispatch_semaphore_signal(open);
    CHECK_EQ(dispatch_block_wait(b, compat_deadline()), 0);
    CHECK_EQ(finished, 1); /* a running block is not interrupted */
    CHECK_EQ(saw_cancel, 1);
    Block_release(b);
    dispatch_release(entered);
    dispatch_release(open);
}

static void test_barrier_flag(void)
{
    dispatch_queue_t q = dispatch_queue_create("compat.block-objects.c", DISPATCH_QUEUE_CONCURRENT);
    dispatch_group_t g = dispatch_group_create();
    __block long inside = 0;
    __block long overlaps = 0;
    long *inside_p = &inside;
    dispatch_block_t barrier = dispatch_block_create(DISPATCH_BLOCK_BARRIER, ^{
        if (compat_load(inside_p) != 0) {
            overlaps++;
        }
    });
    int round, i;
    for (round = 0; round < 10; round++) {
        for (i = 0; i < 6; i++) {
            dispatch_group_async(g, q, ^{
                compat_add(inside_p, 1);
                struct timespec pause = {0, 200000};
                nanosleep(&pause, NULL);
                compat_add(inside_p, -1);
            });
        }
        dispatch_async(q, barrier);
    }
    dispatch_barrier_sync(q, ^{
    });
    WAIT_GROUP(g);
    CHECK_EQ(overlaps, 0);
    Block_release(barrier);
    dispatch_release(g);
    dispatch_release(q);
}

/* A barrier block submitted to run later — by dispatch_after, or by a group's notification —
 * is a barrier when it comes due: it waits for the tasks running on the concurrent queue. */
static void late_barrier(int by_notify)
{
    dispatch_queue_t q = dispatch_queue_create("compat.block-objects.late", DISPATCH_QUEUE_CONCURRENT);
    dispatch_semaphore_t started = dispatch_semaphore_create(0);
    dispatch_semaphore_t gate = dispatch_semaphore_create(0);
    dispatch_semaphore_t ran = dispatch_semaphore_create(0);
    dispatch_group_t g = dispatch_group_create();
    __block long inside = 0;
    __block long seen = -1;
    long *inside_p = &inside;
    int i;
    for (i = 0; i < 2; i++) {
        dispatch_group_async(g, q, ^{
            compat_add(inside_p, 1);
            dispatch_semaphore_signal(started);
            dispatch_semaphore_wait(gate, compat_deadline());
            compat_add(inside_p, -1);
        });
    }
    WAIT_SEMA(started);
    WAIT_SEMA(started); /* both run now, and wait for the gate */
    dispatch_block_t barrier = dispatch_block_create(DISPATCH_BLOCK_BARRIER, ^{
        seen = compat_load(inside_p);
        dispatch_semaphore_signal(ran);
    });
    if (by_notify) {
        dispatch_group_t empty = dispatch_group_create();
        dispatch_group_notify(empty, q, barrier); /* an empty group notifies at once */
        dispatch_release(empty);
    } else {
        dispatch_after(dispatch_time(DISPATCH_TIME_NOW, 1000000), q, barrier);
    }
    /* It must not run while the two tasks run (a bounded window: a plain submission ran within
     * it every time, a barrier waits for the gate). */
    CHECK(dispatch_semaphore_wait(ran, compat_short()) != 0);
    dispatch_semaphore_signal(gate);
    dispatch_semaphore_signal(gate);
    WAIT_SEMA(ran);
    CHECK_EQ(seen, 0);
    WAIT_GROUP(g);
    Block_release(barrier);
    dispatch_release(g);
    dispatch_release(ran);
    dispatch_release(gate);
    dispatch_release(started);
    dispatch_release(q);
}

static void test_barrier_flag_after(void)
{
    late_barrier(0);
}

static void test_barrier_flag_group_notify(void)
{
    late_barrier(1);
}

static void test_perform_and_generic(void)
{
    __block long runs = 0;
    dispatch_block_perform((dispatch_block_flags_t)0, ^{
        runs++;
    });
    CHECK_EQ(runs, 1);
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
    dispatch_block_t b = dispatch_block_create((dispatch_block_flags_t)0, ^{
        runs++;
    });
    dispatch_cancel(b);
    CHECK(dispatch_testcancel(b) != 0);
#ifndef COMPAT_USE_LIBDISPATCH
    /* Ours: a block cancelled before any run has finished (its waiters return, its
     * notifications run). libdispatch waits for a run that never comes (a difference listed
     * in docs/libdispatch-compat.md). */
    CHECK_EQ(dispatch_wait(b, compat_deadline()), 0);
#endif
    Block_release(b);
#endif
}

#ifndef COMPAT_USE_LIBDISPATCH
/* dispatch_block_notify with a NULL queue or notification block stops with a message naming
 * the call (ours named cq_group_notify_f, which the program never called; libdispatch
 * crashes with SIGSEGV). Each in a child, before the runtime's threads start. */
static void notify_null_queue(void *arg)
{
    (void)arg;
    dispatch_block_t b = dispatch_block_create((dispatch_block_flags_t)0, ^{
                                               });
    dispatch_block_notify(b, NULL, ^{
                          });
}

static void notify_null_block(void *arg)
{
    (void)arg;
    dispatch_block_t b = dispatch_block_create((dispatch_block_flags_t)0, ^{
                                               });
    dispatch_block_notify(b, dispatch_get_global_queue(0, 0), NULL);
}

static void expect_stop(void (*fn)(void *), const char *message)
{
    char out[4096];
    int status = test_fork_capture(fn, NULL, out, sizeof out);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    CHECK(strstr(out, message) != NULL);
    if (strstr(out, message) == NULL) {
        fprintf(stderr, "   expected \"%s\" in: %s\n", message, out);
    }
}

static void test_notify_misuse(void)
{
    expect_stop(notify_null_queue, "CQueueCore: cq_work_item_notify_f: NULL object");
    expect_stop(notify_null_block, "CQueueCore: cq_block_notify: the notification: NULL block");
}
#endif

int main(void)
{
#ifndef COMPAT_USE_LIBDISPATCH
    RUN(test_notify_misuse); /* first: it forks before the runtime's threads start */
#endif
    RUN(test_call_and_wait);
    RUN(test_submit_wait_notify);
    RUN(test_cancel_before_run);
    RUN(test_cancel_while_running);
    RUN(test_barrier_flag);
    RUN(test_barrier_flag_after);
    RUN(test_barrier_flag_group_notify);
    RUN(test_perform_and_generic);
    TEST_MAIN_END();
}
