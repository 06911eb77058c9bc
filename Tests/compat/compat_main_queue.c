/*
 * The main queue through libdispatch's names: tasks submitted before dispatch_main run in order
 * once it is called; a sync onto the main queue from a worker runs before it returns, as a task
 * of the main queue; main() itself, before dispatch_main, passes dispatch_assert_queue(main
 * queue), also inside a dispatch_sync it makes, and sees the main queue's specific values.
 * dispatch_main never returns: the last task exits the process.
 *
 * CQueueCore runs the main queue on the main thread (inside dispatch_main). libdispatch on Linux
 * does not: dispatch_main ends the main thread and pool threads drain the main queue, so the
 * main-thread checks are CQueueCore's only.
 */
#include "compat_test.h"

#ifdef CQ_DISPATCH_COMPAT
#define ON_MAIN_THREAD() pthread_equal(pthread_self(), main_thread)
#else
#define ON_MAIN_THREAD() 1
#endif

static pthread_t main_thread;
static long order_seen[3];
static long order_next;
static long synced_on_main;

static void on_main_in_order(void *context)
{
    CHECK(ON_MAIN_THREAD());
    order_seen[order_next++] = (long)(intptr_t)context;
}

static void sync_body(void *context)
{
    (void)context;
    synced_on_main = ON_MAIN_THREAD() ? 1 : 0;
    dispatch_assert_queue(dispatch_get_main_queue());
}

static void finish(void *context)
{
    (void)context;
    CHECK(ON_MAIN_THREAD());
    CHECK_EQ(synced_on_main, 1);
    TEST_EXIT_END();
}

static void from_worker(void *context)
{
    (void)context;
    CHECK(!pthread_equal(pthread_self(), main_thread)); /* a worker */
    dispatch_sync_f(dispatch_get_main_queue(), NULL, sync_body);
    CHECK_EQ(synced_on_main, 1); /* it ran before the sync returned */
    dispatch_async_f(dispatch_get_main_queue(), NULL, finish);
}

static void first_on_main(void *context)
{
    dispatch_queue_t main_queue = dispatch_get_main_queue();
    (void)context;
    CHECK(ON_MAIN_THREAD());
    dispatch_assert_queue(main_queue);
    CHECK(dispatch_get_current_queue() == main_queue);
    CHECK(strcmp(dispatch_queue_get_label(DISPATCH_CURRENT_QUEUE_LABEL),
                 dispatch_queue_get_label(main_queue)) == 0);
    CHECK_EQ(order_next, 3);
    CHECK(order_seen[0] == 0 && order_seen[1] == 1 && order_seen[2] == 2);
    dispatch_async_f(compat_global(), NULL, from_worker);
}

static char main_key;
static long synced_from_main;

/* dispatch_sync'd from main(), before dispatch_main: the main thread still counts as the main
 * queue (libdispatch starts it out on the main queue; ours aborted here), while
 * dispatch_get_specific sees only the queue synced onto and its targets. */
static void synced_from_main_body(void *context)
{
    (void)context;
    dispatch_assert_queue(dispatch_get_main_queue());
    CHECK(dispatch_get_specific(&main_key) == NULL);
    compat_add(&synced_from_main, 1);
}

int main(void)
{
    dispatch_queue_t main_queue = dispatch_get_main_queue();
    long i;
    main_thread = pthread_self();
    REQUIRE(main_queue != NULL);
    CHECK(main_queue != compat_global());
    /* The main thread outside any queue's work counts as on the main queue (it aborted) */
    dispatch_assert_queue(main_queue);
    /* ... and sees the main queue's specific values (it saw none) */
    dispatch_queue_set_specific(main_queue, &main_key, &main_key, NULL);
    CHECK(dispatch_get_specific(&main_key) == &main_key);
    {
        dispatch_queue_t serial = dispatch_queue_create("compat.main.sync", NULL);
        dispatch_sync_f(serial, NULL, synced_from_main_body);
        dispatch_sync_f(compat_global(), NULL, synced_from_main_body);
        dispatch_release(serial);
        CHECK_EQ(synced_from_main, 2);
    }
    for (i = 0; i < 3; i++) {
        dispatch_async_f(main_queue, (void *)(intptr_t)i, on_main_in_order);
    }
    dispatch_async_f(main_queue, NULL, first_on_main);
    dispatch_main();
}
