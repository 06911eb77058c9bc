/* The guide's "migrating from threads", in C (docs/guide.md). */
#include "guide_support.h"

/* guide:begin threads */
/* pthread_create(&thread, NULL, save_report, report) becomes: */
struct report {
    const char *text;
    bool saved;
    cq_semaphore_t done; /* what pthread_join waited for, as an event */
};

static void save_report(void *context)
{
    struct report *report = context;
    report->saved = report->text != NULL; /* stands in for slow I/O */
    cq_semaphore_signal(report->done);
}

static void save_in_background(struct report *report)
{
    cq_async_f(cq_get_global_queue(CQ_QUEUE_PRIORITY_BACKGROUND, 0), report, save_report);
}

/* A hand-made pool of N threads, each taking every Nth index, becomes: */
static void square(void *context, size_t i)
{
    long *squares = context;
    squares[i] = (long)i * (long)i;
}

/* queue: a global queue, or a concurrent queue of your own; every idle worker helps */
static void squares_in_parallel(long *squares, size_t count, cq_queue_t queue)
{
    cq_apply_f(count, queue, squares, square); /* returns when every index is done */
}
/* guide:end threads */

int main(void)
{
    struct report report = {"quarterly", false, cq_semaphore_create(0)};
    save_in_background(&report);
    GUIDE_CHECK(cq_semaphore_wait(report.done, guide_patience()) == 0);
    GUIDE_CHECK(report.saved);
    cq_release(report.done);

    enum { COUNT = 100000 };
    static long squares[COUNT];
    cq_queue_t workers = cq_queue_create("squares", CQ_QUEUE_CONCURRENT);
    squares_in_parallel(squares, COUNT, workers);
    /* Helper tasks the apply queued may not have run yet: wait for them before exiting (see
     * guide_apply in guide_support.h). */
    cq_barrier_sync_f(workers, NULL, guide_nothing);
    cq_release(workers);
    for (size_t i = 0; i < COUNT; i++) {
        GUIDE_CHECK(squares[i] == (long)i * (long)i);
    }
    return 0;
}
