/*
 * A program that ends its main thread with pthread_exit() while long CPU-bound tasks keep every
 * worker of the default global queue busy: its main-queue work still starts at once, as on
 * libdispatch, which gives the orphaned main queue a thread of its own. Ours drained it through
 * a serial queue on the default global queue, behind those tasks: the main-queue task below
 * started after 3 s with six 1 s tasks queued, and never with tasks that requeue themselves.
 *
 * The busy tasks spin until the main-queue task has run, or until a third of COMPAT_PATIENCE_NS
 * has passed since the start: the check is that they saw it run, not how fast it ran.
 */
#include "compat_test.h"

#include <time.h>
#include <unistd.h>

static long main_ran;
static long spinning; /* busy tasks that have started */
static long gave_up;  /* busy tasks that reached the patience limit */
static long finished;
static long busy_tasks;
static dispatch_time_t limit; /* the busy tasks give up then */

static void busy(void *context)
{
    (void)context;
    compat_add(&spinning, 1);
    while (compat_load(&main_ran) == 0) {
        if (compat_now() > limit) {
            compat_add(&gave_up, 1);
            break;
        }
    }
    if (compat_add(&finished, 1) == busy_tasks) {
        CHECK_EQ(compat_load(&main_ran), 1);
        CHECK_EQ(compat_load(&gave_up), 0);
        TEST_EXIT_END();
    }
}

static void on_main(void *context)
{
    (void)context;
    dispatch_assert_queue(dispatch_get_main_queue());
    compat_store(&main_ran, 1);
}

/* On a worker once the main thread has gone and the busy tasks run: the main-queue task. */
static void submit_main_work(void *context)
{
    (void)context;
    dispatch_async_f(dispatch_get_main_queue(), NULL, on_main);
}

int main(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    busy_tasks = 2 * (cpus > 0 ? cpus : 1) + 2; /* more than the workers: some wait queued */
    limit = dispatch_time(DISPATCH_TIME_NOW, COMPAT_PATIENCE_NS / 3);
    for (long i = 0; i < busy_tasks; i++) {
        dispatch_async_f(compat_global(), NULL, busy);
    }
    dispatch_after_f(dispatch_time(DISPATCH_TIME_NOW, 20 * 1000000ll),
                     dispatch_get_global_queue(DISPATCH_QUEUE_PRIORITY_HIGH, 0), NULL,
                     submit_main_work);
    pthread_exit(NULL);
}
