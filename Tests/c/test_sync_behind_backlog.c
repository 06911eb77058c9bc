/*
 * A sync behind a long backlog costs a walk of the list once, not once per pause. A serial
 * queue's drain gives way every CQ__DRAIN_BUDGET items; with a sync caller waiting in the
 * list, each pause looked for that caller from the head of the list, which walked the whole
 * backlog each time: N^2 / 128 steps in all. A sync behind 800k tasks on a queue with a serial
 * target took 4 s (libdispatch: 0.09 s), and 100k retargets of a suspended queue, each of
 * which ends a drain, 15 s (libdispatch: 0.7 s); a program that suspends, retargets and
 * resumes a queue in a loop while others sync onto a queue below it stalled for seconds.
 *
 * The tests count the steps of those walks (the runtime's own counter, reached through the
 * static library), which do not depend on the machine's speed: about N with the fix, about
 * N^2 / 256 without it (1.5M for N = 20,000).
 */
#include "cq_test.h"

#include <pthread.h>

/* queue/queue_internal.h: items cq__queue_pass_to_waiter has walked past, ever. */
extern _Atomic uint64_t cq__queue_pass_walked;

#define BACKLOG 20000

static atomic_long ran;

static void count(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&ran, 1);
}

/* The sync's block: every task queued before it has run. */
static void sync_block(void *ctx)
{
    *(long *)ctx = atomic_load(&ran);
}

struct syncer {
    cq_queue_t q;
    long ran_before;
};

static void *sync_thread(void *arg)
{
    struct syncer *s = arg;
    cq_sync_f(s->q, &s->ran_before, sync_block);
    return NULL;
}

/* How many items wait in the list of the queue labelled `label` (introspection). */
struct queued_query {
    const char *label;
    uint32_t queued;
};

static void visit_queue(void *ctx, const struct cq_introspect_queue *queue)
{
    struct queued_query *query = ctx;
    if (strcmp(queue->label, query->label) == 0) {
        query->queued = queue->queued;
    }
}

static uint32_t queued_in(const char *label)
{
    struct queued_query query = {label, 0};
    struct cq_introspect_visitor visitor = {.queue = visit_queue};
    cq_introspect(&visitor, &query);
    return query.queued;
}

/* Waits until the queue labelled `label` holds `n` items (the syncing thread's among them). */
static void wait_until_queued(const char *label, uint32_t n)
{
    uint64_t deadline = cq_test_now_ns() + CQ_TEST_PATIENCE_NS;
    while (queued_in(label) != n) {
        REQUIRE(cq_test_now_ns() < deadline);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

/* The drain's pauses walked at most two items per item behind which the sync waited (`what`
 * names them), since `before` (the counter's value then). */
static void check_walked(uint64_t before, const char *what)
{
    uint64_t walked = atomic_load(&cq__queue_pass_walked) - before;
    CHECK(walked <= 2 * BACKLOG);
    if (walked > 2 * BACKLOG) {
        fprintf(stderr, "   the drain's pauses walked %llu items for %d %s\n",
                (unsigned long long)walked, BACKLOG, what);
    }
}

/* BACKLOG tasks on a serial queue whose target is a serial queue, then a sync caller behind
 * them: its target is held suspended until all of them wait in the list. */
static void test_sync_behind_a_backlog(void)
{
    atomic_store(&ran, 0);
    cq_queue_t target = cq_queue_create("backlog-target", NULL);
    cq_queue_t q = cq_queue_create("backlog", NULL);
    cq_set_target_queue(q, target);
    cq_suspend(target);
    for (int i = 0; i < BACKLOG; i++) {
        cq_async_f(q, NULL, count);
    }
    struct syncer s = {q, -1};
    pthread_t thread;
    REQUIRE(pthread_create(&thread, NULL, sync_thread, &s) == 0);
    wait_until_queued("backlog", BACKLOG + 1);
    uint64_t walked_before = atomic_load(&cq__queue_pass_walked);
    cq_resume(target);
    REQUIRE(pthread_join(thread, NULL) == 0);
    CHECK_EQ(s.ran_before, BACKLOG);
    check_walked(walked_before, "tasks queued");
    cq_release(q);
    cq_release(target);
}

static void noop(void *ctx)
{
    (void)ctx;
}

/* BACKLOG retargets of a suspended queue B (the "suspend, set target, resume" idiom) between
 * two serial queues, with a task and then a sync caller on A, which targets B. Each retarget
 * ends B's drain (the next items run on the new target). */
static void test_sync_behind_retargets(void)
{
    cq_queue_t c1 = cq_queue_create("retarget-c1", NULL);
    cq_queue_t c2 = cq_queue_create("retarget-c2", NULL);
    cq_queue_t b = cq_queue_create("retarget-b", NULL);
    cq_queue_t a = cq_queue_create("retarget-a", NULL);
    cq_set_target_queue(b, c1);
    cq_set_target_queue(a, b);
    cq_suspend(b);
    cq_async_f(a, NULL, noop);
    for (int k = 0; k < BACKLOG; k++) {
        cq_set_target_queue(b, k & 1 ? c1 : c2);
    }
    struct syncer s = {a, -1};
    pthread_t thread;
    uint64_t walked_before = atomic_load(&cq__queue_pass_walked);
    REQUIRE(pthread_create(&thread, NULL, sync_thread, &s) == 0);
    cq_resume(b);
    REQUIRE(pthread_join(thread, NULL) == 0);
    check_walked(walked_before, "retargets");
    cq_release(a);
    cq_release(b);
    cq_release(c1);
    cq_release(c2);
}

int main(void)
{
    RUN(test_sync_behind_a_backlog);
    RUN(test_sync_behind_retargets);
    TEST_MAIN_END();
}
