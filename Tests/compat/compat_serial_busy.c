/*
 * Serial queues keep running while CPU-bound tasks on a global queue hold every CPU, as with
 * libdispatch, whose serial queues "overcommit" (a drain gets a thread when none is idle): a
 * service queue that answers requests from the main thread, a dispatch_after onto a serial
 * queue, a timer source on one, a serial queue that targets the high-priority global queue, and
 * two serial queues to which the spinning tasks themselves report as they start (CQueueCore ran
 * the first one's report only when the task ended: the second report pushed its drain into the
 * worker's own run queue, which nothing else took from), and serial queues
 * whose work waits on a semaphore that another serial queue's work signals (a thread per
 * serial queue there: CQueueCore's overcommit threads asleep in such waits no longer count
 * against their bound of one per CPU, which had left the signalling queue unrun), each while
 * twice as many tasks as CPUs spin on the default global queue. The spinners spin
 * until the test lets them go (or for longer than every wait here), so each check shows that
 * the work ran while they held the CPUs. CQueueCore ran none of it until a spinner returned: a
 * request waited 2.9 s behind tasks of 1.5 s on 2 CPUs; libdispatch answered in 0-30 ms.
 */
#include "compat_test.h"

#define SPIN_LIMIT_NS (2 * COMPAT_PATIENCE_NS) /* longer than any wait below */
#define REQUESTS 20
#define TIMER_FIRES 3

static long released;
static long spinning;
static dispatch_semaphore_t spinner_started;
static dispatch_semaphore_t reported, reported_too;
static dispatch_queue_t progress, progress_too;

static void signal_sema(void *context)
{
    dispatch_semaphore_signal((dispatch_semaphore_t)context);
}

static void spin(void *context)
{
    (void)context;
    dispatch_time_t until = dispatch_time(DISPATCH_TIME_NOW, SPIN_LIMIT_NS);
    compat_add(&spinning, 1);
    dispatch_semaphore_signal(spinner_started);
    /* Progress reports from inside the long task, to two queues: neither may wait for the task
     * to end. */
    dispatch_async_f(progress, reported, signal_sema);
    dispatch_async_f(progress_too, reported_too, signal_sema);
    while (!compat_load(&released) && compat_now() < until) {
    }
    compat_add(&spinning, -1);
}

struct timer_count {
    dispatch_semaphore_t fired;
    long fires;
};

struct waiters {
    dispatch_semaphore_t go;
    dispatch_semaphore_t done;
    long count;
};

static void wait_for_go(void *context)
{
    struct waiters *w = (struct waiters *)context;
    if (dispatch_semaphore_wait(w->go, compat_deadline()) == 0) {
        dispatch_semaphore_signal(w->done);
    }
}

static void signal_go(void *context)
{
    struct waiters *w = (struct waiters *)context;
    long i;
    for (i = 0; i < w->count; i++) {
        dispatch_semaphore_signal(w->go);
    }
}

static void timer_fired(void *context)
{
    struct timer_count *t = (struct timer_count *)context;
    compat_add(&t->fires, 1);
    dispatch_semaphore_signal(t->fired);
}

int main(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long i;
    dispatch_group_t spinners = dispatch_group_create();
    dispatch_semaphore_t done = dispatch_semaphore_create(0);
    dispatch_queue_t service = dispatch_queue_create("compat.busy.service", NULL);
    dispatch_queue_t later = dispatch_queue_create("compat.busy.after", NULL);
    dispatch_queue_t ticks = dispatch_queue_create("compat.busy.timer", NULL);
    dispatch_queue_t high = dispatch_queue_create("compat.busy.high", NULL);
    dispatch_source_t timer;
    struct timer_count count;
    spinner_started = dispatch_semaphore_create(0);
    reported = dispatch_semaphore_create(0);
    reported_too = dispatch_semaphore_create(0);
    progress = dispatch_queue_create("compat.busy.progress", NULL);
    progress_too = dispatch_queue_create("compat.busy.progress-too", NULL);
    if (cpus < 1) {
        cpus = 1;
    }
    for (i = 0; i < 2 * cpus; i++) {
        dispatch_group_async_f(spinners, compat_global(), NULL, spin);
    }
    for (i = 0; i < cpus; i++) {
        WAIT_SEMA(spinner_started); /* every CPU's worker spins */
    }

    fprintf(stderr, "-- reports to two serial queues from the spinning tasks\n");
    for (i = 0; i < cpus; i++) {
        WAIT_SEMA(reported);
        WAIT_SEMA(reported_too);
    }
    CHECK(compat_load(&spinning) >= cpus);

    fprintf(stderr, "-- requests to a serial queue from the main thread\n");
    for (i = 0; i < REQUESTS; i++) {
        dispatch_async_f(service, done, signal_sema);
        WAIT_SEMA(done);
    }
    CHECK(compat_load(&spinning) >= cpus);

    fprintf(stderr, "-- dispatch_after onto a serial queue\n");
    dispatch_after_f(dispatch_time(DISPATCH_TIME_NOW, 1000000), later, done, signal_sema);
    WAIT_SEMA(done);
    CHECK(compat_load(&spinning) >= cpus);

    fprintf(stderr, "-- a timer source on a serial queue\n");
    memset(&count, 0, sizeof count);
    count.fired = dispatch_semaphore_create(0);
    timer = dispatch_source_create(DISPATCH_SOURCE_TYPE_TIMER, 0, 0, ticks);
    REQUIRE(timer != NULL);
    dispatch_set_context(timer, &count);
    dispatch_source_set_event_handler_f(timer, timer_fired);
    dispatch_source_set_timer(timer, dispatch_time(DISPATCH_TIME_NOW, 1000000), 1000000, 0);
    dispatch_resume(timer);
    for (i = 0; i < TIMER_FIRES; i++) {
        WAIT_SEMA(count.fired);
    }
    dispatch_source_cancel(timer);
    CHECK(compat_load(&count.fires) >= TIMER_FIRES);
    CHECK(compat_load(&spinning) >= cpus);

    fprintf(stderr, "-- a serial queue that targets the high-priority global queue\n");
    dispatch_set_target_queue(high, dispatch_get_global_queue(DISPATCH_QUEUE_PRIORITY_HIGH, 0));
    for (i = 0; i < REQUESTS; i++) {
        dispatch_async_f(high, done, signal_sema);
        WAIT_SEMA(done);
    }
    CHECK(compat_load(&spinning) >= cpus);

    fprintf(stderr, "-- serial queues waiting for another serial queue's work\n");
    {
        struct waiters w;
        dispatch_queue_t waiting[8];
        dispatch_queue_t signaller = dispatch_queue_create("compat.busy.signaller", NULL);
        w.go = dispatch_semaphore_create(0);
        w.done = dispatch_semaphore_create(0);
        w.count = cpus + 1 < 8 ? cpus + 1 : 8;
        for (i = 0; i < w.count; i++) {
            waiting[i] = dispatch_queue_create("compat.busy.waiter", NULL);
            dispatch_async_f(waiting[i], &w, wait_for_go);
        }
        dispatch_async_f(signaller, &w, signal_go);
        for (i = 0; i < w.count; i++) {
            WAIT_SEMA(w.done);
        }
        CHECK(compat_load(&spinning) >= cpus);
        for (i = 0; i < w.count; i++) {
            dispatch_sync_f(waiting[i], NULL, compat_noop); /* its task has returned */
            dispatch_release(waiting[i]);
        }
        dispatch_sync_f(signaller, NULL, compat_noop);
        dispatch_release(signaller);
        dispatch_release(w.go);
        dispatch_release(w.done);
    }

    compat_store(&released, 1);
    WAIT_GROUP(spinners);
    CHECK_EQ(compat_load(&spinning), 0);
    /* the timer's queue drains what is left of it before its release */
    dispatch_sync_f(ticks, NULL, compat_noop);
    dispatch_release(timer);
    dispatch_release(count.fired);
    dispatch_release(high);
    dispatch_release(ticks);
    dispatch_release(later);
    dispatch_release(service);
    dispatch_release(done);
    dispatch_release(spinner_started);
    dispatch_sync_f(progress, NULL, compat_noop);
    dispatch_release(progress);
    dispatch_release(reported);
    dispatch_sync_f(progress_too, NULL, compat_noop);
    dispatch_release(progress_too);
    dispatch_release(reported_too);
    dispatch_release(spinners);
    TEST_MAIN_END();
}
