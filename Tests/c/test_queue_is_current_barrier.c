/*
 * cq_queue_is_current_barrier: true exactly where cq_assert_queue_barrier passes (a task of a
 * serial queue, a barrier of a concurrent one, an exclusive sync), false elsewhere (outside any
 * queue, a plain task or sync of a concurrent queue, another queue). Swift's sqPrecondition
 * (.onQueueAsBarrier) reports failures itself with this predicate.
 */
#include "cq_test.h"

struct probe {
    cq_queue_t queue;
    cq_queue_t other;
    bool on_queue;
    bool on_other;
};

static void probe_run(void *ctx)
{
    struct probe *p = ctx;
    p->on_queue = cq_queue_is_current_barrier(p->queue);
    p->on_other = cq_queue_is_current_barrier(p->other);
    if (p->on_queue) {
        cq_assert_queue_barrier(p->queue); /* the assert agrees: it must not abort */
    }
}

/* A sync (or barrier sync) onto `q` that probes from inside. */
static void check_sync_probe(cq_queue_t q, bool barrier, bool expected)
{
    cq_queue_t other = cq_queue_create("other", NULL);
    struct probe p = {q, other, !expected, true};
    (barrier ? cq_barrier_sync_f : cq_sync_f)(q, &p, probe_run);
    CHECK_EQ(p.on_queue, expected);
    CHECK(!p.on_other);
    cq_release(other);
}

/* An async (or barrier async) onto `q` that probes from inside. */
struct async_probe {
    struct probe probe;
    cq_semaphore_t done;
};

static void async_probe_run(void *ctx)
{
    struct async_probe *a = ctx;
    probe_run(&a->probe);
    cq_semaphore_signal(a->done);
}

static void check_async_probe(cq_queue_t q, bool barrier, bool expected)
{
    cq_queue_t other = cq_queue_create("other", NULL);
    struct async_probe a = {{q, other, !expected, true}, cq_semaphore_create(0)};
    (barrier ? cq_barrier_async_f : cq_async_f)(q, &a, async_probe_run);
    WAIT_SEMA(a.done);
    CHECK_EQ(a.probe.on_queue, expected);
    CHECK(!a.probe.on_other);
    cq_release(a.done);
    cq_release(other);
}

static void test_outside_queues(void)
{
    cq_queue_t q = cq_queue_create("outside", CQ_QUEUE_CONCURRENT);
    CHECK(!cq_queue_is_current_barrier(q));
    CHECK(!cq_queue_is_current_barrier(cq_get_global_queue(0, 0)));
    cq_release(q);
}

static void test_serial_queue(void)
{
    cq_queue_t q = cq_queue_create("serial", NULL);
    check_sync_probe(q, false, true);
    check_sync_probe(q, true, true);
    check_async_probe(q, false, true);
    check_async_probe(q, true, true);
    cq_release(q);
}

static void test_concurrent_queue(void)
{
    cq_queue_t q = cq_queue_create("concurrent", CQ_QUEUE_CONCURRENT);
    check_sync_probe(q, false, false); /* a plain sync runs alongside other tasks */
    check_sync_probe(q, true, true);
    check_async_probe(q, false, false);
    check_async_probe(q, true, true);
    cq_release(q);
}

int main(void)
{
    RUN(test_outside_queues);
    RUN(test_serial_queue);
    RUN(test_concurrent_queue);
    TEST_MAIN_END();
}
