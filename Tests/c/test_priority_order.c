/*
 * On one worker, work that a task submits runs highest priority first, whatever the order it
 * was submitted in: the task submits low, then default, then high work (to the global queues
 * and to serial queues targeting them); once it returns, the high work starts first, then the
 * default, then the low. (Background work runs on its own threads; it is not ordered here.)
 * The express worker may run some of the high work at the same time, so the order is checked
 * per thread: no thread starts an item after one of lower priority, and the normal worker
 * runs all the default and low work.
 */
#include "cq_test.h"

#include <pthread.h>

#define PER_LEVEL 8

struct run {
    long priority;
    int seq; /* start order, from 1 */
    pthread_t thread;
};

static atomic_int next_seq;
static struct run runs[3 * 2 * PER_LEVEL];
static atomic_int nruns;

static void record(void *ctx)
{
    struct run *r = ctx;
    r->thread = pthread_self();
    r->seq = atomic_fetch_add(&next_seq, 1) + 1;
}

static const long order_submitted[3] = {CQ_QUEUE_PRIORITY_LOW, CQ_QUEUE_PRIORITY_DEFAULT,
                                        CQ_QUEUE_PRIORITY_HIGH};
static cq_queue_t serial[3];
static cq_group_t group;

static void submit_all(void *ctx)
{
    (void)ctx;
    for (int level = 0; level < 3; level++) {
        long prio = order_submitted[level];
        for (int i = 0; i < PER_LEVEL; i++) {
            struct run *r = &runs[atomic_fetch_add(&nruns, 1)];
            r->priority = prio;
            cq_group_async_f(group, cq_get_global_queue(prio, 0), r, record);
            r = &runs[atomic_fetch_add(&nruns, 1)];
            r->priority = prio;
            cq_group_async_f(group, serial[level], r, record);
        }
    }
}

static int rank(long priority)
{
    return priority == CQ_QUEUE_PRIORITY_HIGH ? 0 : priority == CQ_QUEUE_PRIORITY_DEFAULT ? 1 : 2;
}

static void test_highest_priority_first(void)
{
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    REQUIRE(info.workers == 1);
    group = cq_group_create();
    for (int level = 0; level < 3; level++) {
        serial[level] = cq_queue_create("ordered", NULL);
        cq_set_target_queue(serial[level], cq_get_global_queue(order_submitted[level], 0));
    }
    cq_group_async_f(group, cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), NULL, submit_all);
    WAIT_GROUP(group);
    /* In start order, per thread: the priority never goes up. */
    int n = atomic_load(&nruns);
    struct run *by_seq[3 * 2 * PER_LEVEL] = {0};
    for (int i = 0; i < n; i++) {
        REQUIRE(runs[i].seq > 0 && runs[i].seq <= n);
        by_seq[runs[i].seq - 1] = &runs[i];
    }
    int inversions = 0;
    for (int i = 0; i < n; i++) {
        for (int j = i + 1; j < n; j++) {
            if (pthread_equal(by_seq[i]->thread, by_seq[j]->thread) &&
                rank(by_seq[j]->priority) < rank(by_seq[i]->priority)) {
                inversions++;
            }
        }
    }
    fprintf(stderr, "   start order:");
    for (int i = 0; i < n; i++) {
        fprintf(stderr, " %c", "HDL"[rank(by_seq[i]->priority)]);
    }
    fprintf(stderr, "\n   %d pairs started out of priority order on one thread\n", inversions);
    CHECK_EQ(inversions, 0);
    for (int level = 0; level < 3; level++) {
        cq_release(serial[level]);
    }
    cq_release(group);
}

int main(void)
{
    setenv("CQ_WORKERS", "1", 1); /* before the pool starts */
    RUN(test_highest_priority_first);
    TEST_MAIN_END();
}
