/*
 * The live-queue list, for introspection (include/cqueuecore/introspect.h): a queue joins it
 * when created and leaves it when freed, under a mutex that nothing on the submission or drain
 * paths takes. Global queues and the main queue are static and listed first.
 */
#include <cqueuecore/introspect.h>
#include <pthread.h>

#include "platform/fork_internal.h"
#include "platform/rcu_internal.h"
#include "queue/queue_internal.h"

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cq_queue_s *reg_head, *reg_tail;

void cq__queue_registry_add(struct cq_queue_s *q)
{
    pthread_mutex_lock(&reg_lock);
    q->reg_next = NULL;
    q->reg_prev = reg_tail;
    if (reg_tail) {
        reg_tail->reg_next = q;
    } else {
        reg_head = q;
    }
    reg_tail = q;
    pthread_mutex_unlock(&reg_lock);
}

void cq__queue_registry_remove(struct cq_queue_s *q)
{
    pthread_mutex_lock(&reg_lock);
    if (q->reg_prev) {
        q->reg_prev->reg_next = q->reg_next;
    } else {
        reg_head = q->reg_next;
    }
    if (q->reg_next) {
        q->reg_next->reg_prev = q->reg_prev;
    } else {
        reg_tail = q->reg_prev;
    }
    q->reg_prev = q->reg_next = NULL;
    pthread_mutex_unlock(&reg_lock);
}

static void describe(struct cq_queue_s *q, struct cq_introspect_queue *d)
{
    uint64_t s = cq__load(&q->state, relaxed);
    d->queue = q;
    d->label = q->label ? q->label : "";
    d->inactive = cq__load(&q->obj.inactive, relaxed) != 0;
    d->suspend_count = (uint32_t)((s & CQ__QS_SUSPEND_MASK) / CQ__QS_SUSPEND_ONE);
    /* A snapshot: an item is counted pushed before it enters the list and popped after it
     * left, so popped (read first) never exceeds pushed but for a torn pair of reads. */
    uint64_t popped = cq__load(&q->popped, relaxed);
    uint64_t pushed = cq__load(&q->pushed, relaxed);
    uint64_t queued = pushed > popped ? pushed - popped : 0;
    d->queued = queued > UINT32_MAX ? UINT32_MAX : (uint32_t)queued;
    d->target_label = "";
    switch (q->kind) {
    case CQ__QUEUE_ROOT:
        d->kind = CQ_INTROSPECT_QUEUE_GLOBAL;
        d->width = 0;
        d->running = 0;
        d->queued = 0;
        return;
    case CQ__QUEUE_MAIN:
        d->kind = CQ_INTROSPECT_QUEUE_MAIN;
        d->width = 1;
        d->running = (s & CQ__QS_LOCK) ? 1 : 0;
        return;
    case CQ__QUEUE_CONCURRENT:
        d->kind = CQ_INTROSPECT_QUEUE_CONCURRENT;
        d->width = 0;
        d->running = (uint32_t)CQ__QS_WIDTH(s) + ((s & CQ__QS_LOCK) ? 1 : 0);
        break;
    default:
        d->kind = CQ_INTROSPECT_QUEUE_SERIAL;
        d->width = 1;
        d->running = (s & CQ__QS_LOCK) ? 1 : 0;
        break;
    }
    /* The target outlives q (q holds a reference); its label is written once. RCU: a retarget
     * may be swapping it. */
    struct cq_queue_s *t = cq__queue_target(q);
    d->target_label = t && t->label ? t->label : "";
}

void cq__queue_introspect(void (*fn)(void *ctx, const struct cq_introspect_queue *q), void *ctx)
{
    struct cq_introspect_queue d;
    for (unsigned i = 0; i < 4; i++) {
        describe(&cq__root_queues[i], &d);
        fn(ctx, &d);
    }
    describe(&cq__main_queue, &d);
    fn(ctx, &d);
    cq__rcu_read_lock();
    pthread_mutex_lock(&reg_lock);
    for (struct cq_queue_s *q = reg_head; q; q = q->reg_next) {
        describe(q, &d);
        fn(ctx, &d);
    }
    pthread_mutex_unlock(&reg_lock);
    cq__rcu_read_unlock();
}

static void registry_fork_prepare(void)
{
    pthread_mutex_lock(&reg_lock);
}

static void registry_fork_release(void)
{
    pthread_mutex_unlock(&reg_lock);
}

CQ__FORK_REGISTER(queue_registry, CQ__FORK_RANK_REGISTRY, registry_fork_prepare,
                  registry_fork_release, registry_fork_release)
