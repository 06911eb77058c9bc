/*
 * A program that ends its main thread with pthread_exit() instead of calling dispatch_main
 * (libdispatch's own dispatch_main ends the main thread that way, and ported code does too):
 * the main queue still runs, on the pool, in order and one task at a time, for tasks submitted
 * before the main thread went and after (ours never ran it: the program hung). A watchdog ends
 * the program with a failure if nothing has finished after the patience of the other tests.
 */
#include "compat_test.h"

#include <time.h>

static long order_seen[4];
static long order_next;
static long running; /* main-queue tasks running now: never above 1 */
static long overlap;
static long synced;

static void on_main(void *context)
{
    if (compat_add(&running, 1) != 1) {
        compat_add(&overlap, 1);
    }
    dispatch_assert_queue(dispatch_get_main_queue());
    order_seen[order_next++] = (long)(intptr_t)context;
    compat_add(&running, -1);
}

static void sync_body(void *context)
{
    (void)context;
    dispatch_assert_queue(dispatch_get_main_queue());
    synced = 1;
}

static void finish(void *context)
{
    (void)context;
    CHECK_EQ(order_next, 4);
    CHECK(order_seen[0] == 0 && order_seen[1] == 1 && order_seen[2] == 2 && order_seen[3] == 3);
    CHECK_EQ(compat_load(&overlap), 0);
    CHECK_EQ(synced, 1);
    TEST_EXIT_END();
}

/* On a worker, after the main thread has gone: more main-queue work, a sync onto it. */
static void later(void *context)
{
    (void)context;
    dispatch_async_f(dispatch_get_main_queue(), (void *)(intptr_t)3, on_main);
    dispatch_sync_f(dispatch_get_main_queue(), NULL, sync_body);
    CHECK_EQ(synced, 1);
    dispatch_async_f(dispatch_get_main_queue(), NULL, finish);
}

static void *watchdog(void *unused)
{
    (void)unused;
    struct timespec patience = {(time_t)(COMPAT_PATIENCE_NS / 1000000000ll), 0};
    nanosleep(&patience, NULL);
    fprintf(stderr, "the main queue did not finish its work after the main thread exited\n");
    exit(1);
}

int main(void)
{
    pthread_t dog;
    long i;
    REQUIRE(pthread_create(&dog, NULL, watchdog, NULL) == 0);
    for (i = 0; i < 3; i++) {
        dispatch_async_f(dispatch_get_main_queue(), (void *)(intptr_t)i, on_main);
    }
    /* most likely after the main thread has exited: a worker submits the rest */
    dispatch_after_f(dispatch_time(DISPATCH_TIME_NOW, 10 * 1000000ll), compat_global(), NULL,
                     later);
    pthread_exit(NULL);
}
