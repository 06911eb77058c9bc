/*
 * Groups through libdispatch's names: async into a group, enter/leave, wait with and without a
 * timeout, notify, reuse.
 */
#include "compat_test.h"

#define N_TASKS 500

struct tally {
    long done;
    long at_notify;
    long notified;
    dispatch_semaphore_t notify_sema;
};

static void count_done(void *context)
{
    compat_add(&((struct tally *)context)->done, 1);
}

static void on_notify(void *context)
{
    struct tally *t = (struct tally *)context;
    t->at_notify = compat_load(&t->done);
    compat_add(&t->notified, 1);
    dispatch_semaphore_signal(t->notify_sema);
}

static void test_async_and_wait(void)
{
    struct tally t;
    dispatch_group_t g = dispatch_group_create();
    dispatch_queue_t serial = dispatch_queue_create("compat.group.serial", NULL);
    dispatch_queue_t concurrent = dispatch_queue_create("compat.group.concurrent",
                                                        DISPATCH_QUEUE_CONCURRENT);
    int i;
    REQUIRE(g != NULL && serial != NULL && concurrent != NULL);
    memset(&t, 0, sizeof t);
    CHECK_EQ(dispatch_group_wait(g, DISPATCH_TIME_NOW), 0); /* empty */
    for (i = 0; i < N_TASKS; i++) {
        dispatch_queue_t q = i % 3 == 0 ? serial : i % 3 == 1 ? concurrent : compat_global();
        dispatch_group_async_f(g, q, &t, count_done);
    }
    WAIT_GROUP(g);
    CHECK_EQ(compat_load(&t.done), N_TASKS);
    dispatch_release(serial);
    dispatch_release(concurrent);
    dispatch_release(g);
}

static void test_enter_leave_timeout(void)
{
    dispatch_group_t g = dispatch_group_create();
    dispatch_time_t deadline;
    REQUIRE(g != NULL);
    dispatch_group_enter(g);
    dispatch_group_enter(g);
    errno = 0;
    /* libdispatch on Linux: -1 with errno ETIMEDOUT (its documentation: non-zero) */
    CHECK_EQ(dispatch_group_wait(g, DISPATCH_TIME_NOW), -1);
    CHECK_EQ(errno, ETIMEDOUT);
    deadline = compat_short();
    errno = 0;
    CHECK_EQ(dispatch_group_wait(g, deadline), -1);
    CHECK_EQ(errno, ETIMEDOUT);
    CHECK(compat_now() >= deadline); /* a timeout never comes early */
    dispatch_group_leave(g);
    CHECK(dispatch_group_wait(g, DISPATCH_TIME_NOW) != 0);
    dispatch_group_leave(g);
    CHECK_EQ(dispatch_group_wait(g, DISPATCH_TIME_NOW), 0);
    CHECK_EQ(dispatch_group_wait(g, DISPATCH_TIME_FOREVER), 0);
    dispatch_release(g);
}

static void leave_later(void *context)
{
    dispatch_group_leave((dispatch_group_t)context);
}

static void test_wait_forever_for_leave_from_task(void)
{
    dispatch_group_t g = dispatch_group_create();
    int i;
    for (i = 0; i < 8; i++) {
        dispatch_group_enter(g);
        dispatch_async_f(compat_global(), g, leave_later);
    }
    CHECK_EQ(dispatch_group_wait(g, DISPATCH_TIME_FOREVER), 0);
    dispatch_release(g);
}

static void test_notify_and_reuse(void)
{
    struct tally t;
    dispatch_group_t g = dispatch_group_create();
    dispatch_queue_t q = dispatch_queue_create("compat.group.notify", DISPATCH_QUEUE_CONCURRENT);
    int round, i;
    memset(&t, 0, sizeof t);
    t.notify_sema = dispatch_semaphore_create(0);
    for (round = 1; round <= 3; round++) {
        dispatch_group_enter(g); /* hold the group until the notify is registered */
        for (i = 0; i < N_TASKS; i++) {
            dispatch_group_async_f(g, q, &t, count_done);
        }
        dispatch_group_notify_f(g, compat_global(), &t, on_notify);
        dispatch_group_leave(g);
        WAIT_SEMA(t.notify_sema);
        CHECK_EQ(t.at_notify, round * N_TASKS); /* after every task of the group */
        CHECK_EQ(compat_load(&t.notified), round);
    }
    /* notify on an empty group runs at once */
    dispatch_group_notify_f(g, q, &t, on_notify);
    WAIT_SEMA(t.notify_sema);
    CHECK_EQ(compat_load(&t.notified), 4);
    dispatch_release(t.notify_sema);
    dispatch_release(q);
    dispatch_release(g);
}

/* Tasks keep their group alive: releasing it right after submitting is fine. */
static void test_release_while_busy(void)
{
    struct tally t;
    dispatch_group_t g = dispatch_group_create();
    int i;
    memset(&t, 0, sizeof t);
    t.notify_sema = dispatch_semaphore_create(0);
    dispatch_retain(g);
    for (i = 0; i < N_TASKS; i++) {
        dispatch_group_async_f(g, compat_global(), &t, count_done);
    }
    dispatch_group_notify_f(g, compat_global(), &t, on_notify);
    dispatch_release(g);
    dispatch_release(g);
    WAIT_SEMA(t.notify_sema);
    CHECK_EQ(t.at_notify, N_TASKS);
    dispatch_release(t.notify_sema);
}

/* Records which notify ran, in order, on a serial queue. */
struct notify_order {
    long seen[2];
    long count;
    long flag;
};

static void note_first(void *context)
{
    struct notify_order *o = (struct notify_order *)context;
    o->seen[o->count++] = 1;
    compat_store(&o->flag, 1);
}

static void note_second(void *context)
{
    struct notify_order *o = (struct notify_order *)context;
    o->seen[o->count++] = 2;
}

static void read_flag(void *context)
{
    struct notify_order *o = (struct notify_order *)context;
    o->seen[1] = compat_load(&o->flag);
}

/* The leave that empties the group queues its notifies before it wakes the waiters (as
 * libdispatch does): once dispatch_group_wait returns, a task submitted to the notify's serial
 * queue runs after the notify, and a notify registered then (on the empty group, queued at
 * once) after the earlier one. Ours woke the waiters first: 4-16 misses in 500 rounds. */
static void test_notify_queued_before_wait_returns(void)
{
    dispatch_queue_t q = dispatch_queue_create("compat.group.notify", NULL);
    long misses = 0, disorders = 0;
    int round;
    for (round = 0; round < 500; round++) {
        struct notify_order o;
        dispatch_group_t g = dispatch_group_create();
        memset(&o, 0, sizeof o);
        dispatch_group_async_f(g, compat_global(), NULL, compat_noop);
        dispatch_group_notify_f(g, q, &o, note_first);
        WAIT_GROUP(g);
        if (round % 2 == 0) {
            dispatch_sync_f(q, &o, read_flag);
            misses += o.seen[1] != 1;
        } else {
            dispatch_group_notify_f(g, q, &o, note_second);
            dispatch_sync_f(q, &o, compat_noop);
            disorders += !(o.count == 2 && o.seen[0] == 1 && o.seen[1] == 2);
        }
        dispatch_release(g);
    }
    CHECK_EQ(misses, 0);
    CHECK_EQ(disorders, 0);
    dispatch_release(q);
}

int main(void)
{
    RUN(test_notify_queued_before_wait_returns);
    RUN(test_async_and_wait);
    RUN(test_enter_leave_timeout);
    RUN(test_wait_forever_for_leave_from_task);
    RUN(test_notify_and_reuse);
    RUN(test_release_while_busy);
    TEST_MAIN_END();
}
