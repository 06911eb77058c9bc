/*
 * Overcommit threads over their life, as a service sees them: serial queues whose work blocks
 * while CPU-bound global tasks hold every worker each get a thread (threads asleep in a task do
 * not count towards the bound of one per worker that runs), the extra threads end once idle,
 * and the next such burst gets threads again (an ended thread's record is reused:
 * scheduler/overcommit.c). Every item runs exactly once throughout.
 */
#include "cq_test.h"

/* More than the workers: only threads asleep in a task let the count pass the bound. */
#define EXTRA_QUEUES 3

static atomic_int spinning, stop;
static atomic_int started, ran;
static cq_semaphore_t gate, arrived;

static void spin(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&spinning, 1);
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    }
}

/* A serial queue's item that blocks until the test opens the gate. */
static void blocked_item(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&started, 1);
    cq_semaphore_signal(arrived);
    REQUIRE(cq_semaphore_wait(gate, cq_test_deadline()) == 0);
    atomic_fetch_add(&ran, 1);
}

/* One burst: spinners on every worker, then `queues` serial queues whose items block at once
 * (each needs a thread of its own to start: the workers spin until the end). */
static void burst(int queues)
{
    atomic_store(&spinning, 0);
    atomic_store(&stop, 0);
    atomic_store(&started, 0);
    atomic_store(&ran, 0);
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    cq_group_t spinners = cq_group_create();
    for (unsigned i = 0; i < info.workers * 2; i++) {
        cq_group_async_f(spinners, cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), NULL, spin);
    }
    uint64_t give_up = cq_test_now_ns() + (uint64_t)CQ_TEST_PATIENCE_NS;
    while (atomic_load(&spinning) < (int)info.workers && cq_test_now_ns() < give_up) {
        cq_test_observe_window();
    }
    REQUIRE(atomic_load(&spinning) >= (int)info.workers);

    cq_group_t items = cq_group_create();
    cq_queue_t *q = calloc((size_t)queues, sizeof *q);
    REQUIRE(q != NULL);
    for (int i = 0; i < queues; i++) {
        q[i] = cq_queue_create("overcommit_threads.serial", CQ_QUEUE_SERIAL);
        cq_group_async_f(items, q[i], NULL, blocked_item);
    }
    /* every item starts while the others still block and the workers spin */
    for (int i = 0; i < queues; i++) {
        WAIT_SEMA(arrived);
    }
    int oc_threads = cq_test_thread_count_named("cq-oc-");
    CHECK_EQ(atomic_load(&started), queues);
    CHECK(oc_threads >= queues);
    for (int i = 0; i < queues; i++) {
        cq_semaphore_signal(gate);
    }
    WAIT_GROUP(items);
    CHECK_EQ(atomic_load(&ran), queues);
    atomic_store(&stop, 1);
    WAIT_GROUP(spinners);
    fprintf(stderr, "   %d blocked serial items beside %u x 2 spinners: %d overcommit threads\n",
            queues, info.workers, oc_threads);
    for (int i = 0; i < queues; i++) {
        cq_release(q[i]);
    }
    free(q);
    cq_release(items);
    cq_release(spinners);
}

static void test_threads_end_when_idle_and_come_back(void)
{
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    int queues = (int)info.workers + EXTRA_QUEUES;
    burst(queues);

    /* Those beyond one per worker end after 5 s without work (OC_IDLE_EXIT_NS). */
    uint64_t give_up = cq_test_now_ns() + (uint64_t)CQ_TEST_PATIENCE_NS;
    int left = cq_test_thread_count_named("cq-oc-");
    while (left > (int)info.workers && cq_test_now_ns() < give_up) {
        struct timespec ts = {0, 50 * 1000000};
        nanosleep(&ts, NULL);
        left = cq_test_thread_count_named("cq-oc-");
    }
    fprintf(stderr, "   overcommit threads left once idle: %d (at most %u stay)\n", left,
            info.workers);
    CHECK(left <= (int)info.workers);

    /* The next burst gets its threads again, on the ended threads' records. */
    burst(queues);
}

int main(void)
{
    gate = cq_semaphore_create(0);
    arrived = cq_semaphore_create(0);
    RUN(test_threads_end_when_idle_and_come_back);
    cq_release(gate);
    cq_release(arrived);
    TEST_MAIN_END();
}
