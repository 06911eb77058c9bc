/*
 * The default thread limit lets a program finish that libdispatch finishes: 200 serial queues
 * (one per connection, say) each run a task that waits on one semaphore, and a task on another
 * serial queue, submitted last, signals it 200 times. Every waiter holds a thread, so the
 * signaller needs the 201st-odd. libdispatch runs it with about 200 threads (its pool stops at
 * 255); with a default limit of 128 the pool reported the limit and the program never ended
 * (found from the user's side, with libdispatch's names).
 */
#include "cq_test.h"

#define WAITERS 200

static cq_semaphore_t gate;

static void waiter(void *ctx)
{
    (void)ctx;
    WAIT_SEMA(gate);
}

static void signaller(void *ctx)
{
    (void)ctx;
    for (int i = 0; i < WAITERS; i++) {
        cq_semaphore_signal(gate);
    }
}

static void test_two_hundred_waiting_serial_queues(void)
{
    gate = cq_semaphore_create(0);
    cq_group_t g = cq_group_create();
    for (int i = 0; i < WAITERS; i++) {
        cq_queue_t q = cq_queue_create("connection", CQ_QUEUE_SERIAL);
        cq_group_async_f(g, q, NULL, waiter);
        cq_release(q);
    }
    cq_queue_t last = cq_queue_create("signaller", CQ_QUEUE_SERIAL);
    cq_group_async_f(g, last, NULL, signaller);
    cq_release(last);
    WAIT_GROUP(g);
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    /* Every waiter held a thread when the signaller ran: a pool thread, or an overcommit
     * thread (serial queues' work gets one when every worker is stuck; those idle for seconds
     * before they end, so they are all still there). */
    int overcommit = cq_test_thread_count_named("cq-oc-");
    fprintf(stderr, "   pool threads peak %u, overcommit threads %d\n", info.threads_peak,
            overcommit);
    CHECK(info.threads_peak + (uint32_t)overcommit > WAITERS);
    CHECK_EQ(info.limit_reached, 0);
    cq_release(g);
    cq_release(gate);
}

int main(void)
{
    /* The default limit for two workers; nothing else set. */
    setenv("CQ_WORKERS", "2", 1);
    unsetenv("CQ_THREAD_LIMIT");
    RUN(test_two_hundred_waiting_serial_queues);
    TEST_MAIN_END();
}
