/* The guide's "limiting a resource with a semaphore", in C (docs/guide.md). */
#include "guide_support.h"
#include <stdatomic.h>

static atomic_int in_use, peak_in_use;

/* Stands in for work that holds a scarce resource (a connection, a file descriptor). */
static void use_resource(size_t job)
{
    int now = atomic_fetch_add(&in_use, 1) + 1;
    int peak = atomic_load(&peak_in_use);
    while (now > peak && !atomic_compare_exchange_weak(&peak_in_use, &peak, now)) {
    }
    atomic_fetch_sub(&in_use, 1);
}

/* guide:begin semaphore */
struct limited_job {
    cq_semaphore_t slots; /* created with the number of resources */
    size_t job;
};

static void run_limited(void *context)
{
    struct limited_job *job = context;
    cq_semaphore_wait(job->slots, CQ_TIME_FOREVER); /* take a slot, or wait for one */
    use_resource(job->job);
    cq_semaphore_signal(job->slots); /* give it back */
}

static void run_all_limited(struct limited_job *jobs, size_t count, intptr_t limit)
{
    cq_semaphore_t slots = cq_semaphore_create(limit);
    cq_group_t group = cq_group_create();
    for (size_t i = 0; i < count; i++) {
        jobs[i] = (struct limited_job){slots, i};
        cq_group_async_f(group, cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), &jobs[i],
                         run_limited);
    }
    cq_group_wait(group, CQ_TIME_FOREVER);
    cq_release(group);
    cq_release(slots);
}
/* guide:end semaphore */

int main(void)
{
    static struct limited_job jobs[2000];
    run_all_limited(jobs, 2000, 2);
    GUIDE_CHECK(atomic_load(&peak_in_use) >= 1);
    GUIDE_CHECK(atomic_load(&peak_in_use) <= 2);
    GUIDE_CHECK(atomic_load(&in_use) == 0);
    return 0;
}
