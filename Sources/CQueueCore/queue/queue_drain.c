/*
 * Draining a queue: the worker that won the queue's LOCK runs its items in order (serial
 * queues, barriers) or hands each to the target with one unit of width (concurrent queues),
 * within a budget. See queue_internal.h for the state word.
 */
#include "queue/queue_internal.h"

#include "platform/parker_internal.h"
#include "queue/sync_internal.h"
#include "scheduler/pool_internal.h"

/*
 * Called by a drainer that found the list empty, or must stop. Returns false if it should go
 * on draining (new items arrived and it may continue); otherwise the queue was unlocked.
 */
static bool drain_finish(struct cq_queue_s *q, bool may_continue)
{
    if (may_continue) {
        uint64_t s = cq__load(&q->state, relaxed);
        while (!(s & CQ__QS_SUSPEND_MASK)) {
            if (!(s & CQ__QS_DIRTY)) {
                if (cq__queue_list_empty(q)) {
                    break;
                }
                return false;
            }
            /* acquire: pairs with the pusher's release when it set DIRTY */
            if (cq__cas_weak(&q->state, &s, s & ~CQ__QS_DIRTY, acquire)) {
                return false;
            }
        }
    }
    cq__queue_unlock_drained(q);
    return true;
}

static inline void handoff_to_waiter(struct cq__item *it)
{
    struct cq__sync_waiter *w = (struct cq__sync_waiter *)it;
    w->drain_ref = true; /* the waiter now owns LOCK and the reference it holds */
    cq__event_signal(&w->event);
}

CQ_INLINE void serial_drain(struct cq_queue_s *q)
{
    struct cq__frame f;
    cq__frame_push(&f, q, true);
    uint32_t budget = CQ__DRAIN_BUDGET;
    for (;;) {
        struct cq__item *it = cq__mpsc_pop(&q->tail, &q->head);
        if (it == NULL) {
            if (drain_finish(q, budget != 0)) {
                break;
            }
            continue;
        }
        cq__queue_count_pop(q);
        if (it->kind == CQ__ITEM_SYNC_WAITER) {
            cq__frame_pop(&f);
            handoff_to_waiter(it);
            return;
        }
        cq__item_invoke(it);
        if (cq__unlikely(q->retargeted)) {
            q->retargeted = false; /* the next items run on the new target */
            budget = 0;
        }
        if (budget) {
            budget--;
        }
        if (budget == 0 || (cq__load(&q->state, relaxed) & CQ__QS_SUSPEND_MASK)) {
            cq__frame_pop(&f);
            drain_finish(q, false);
            return;
        }
    }
    cq__frame_pop(&f);
}

/* Thread naming on (scheduler/thread_internal.h): the drain runs under q's label; after a drain
 * nested in another queue's, the thread takes that queue's name back. After an outer drain it
 * keeps q's: the worker renames itself when it next runs something else (worker.c), so a
 * worker that drains one queue again and again renames itself once. Out of line, so the
 * common drain carries none of it. */
static CQ_NOINLINE void serial_drain_named(struct cq_queue_s *q)
{
    cq__thread_name_note(q->label);
    serial_drain(q);
    struct cq__frame *f = cq__tls.frame;
    if (f) {
        cq__thread_name_note(f->queue->label);
    }
}

static void concurrent_drain(struct cq_queue_s *q)
{
    uint32_t budget = CQ__DRAIN_BUDGET;
    for (;;) {
        struct cq__item *it = cq__mpsc_peek(&q->tail, &q->head);
        if (it == NULL) {
            if (drain_finish(q, budget != 0)) {
                return;
            }
            continue;
        }
        if (it->flags & CQ__ITEM_BARRIER) {
            uint64_t s = cq__load(&q->state, relaxed);
            while (CQ__QS_WIDTH(s) != 0) {
                /* Tasks are in flight: let the last one enqueue us again. LOCK's reference
                 * moves to BARRIER_WAIT. release: pairs with release_width's acquire. */
                uint64_t n = (s & ~(CQ__QS_LOCK | CQ__QS_DIRTY)) | CQ__QS_BARRIER_WAIT;
                if (cq__cas_weak(&q->state, &s, n, acq_rel)) {
                    return;
                }
            }
            /* acquire: pairs with the release of the last width holder */
            (void)cq__load(&q->state, acquire);
            cq__mpsc_pop(&q->tail, &q->head);
            cq__queue_count_pop(q);
            if (it->kind == CQ__ITEM_SYNC_WAITER) {
                handoff_to_waiter(it);
                return;
            }
            struct cq__frame f;
            cq__frame_push(&f, q, true);
            cq__item_invoke(it);
            cq__frame_pop(&f);
        } else {
            cq__mpsc_pop(&q->tail, &q->head);
            cq__queue_count_pop(q);
            uint64_t s = cq__add(&q->state, CQ__QS_WIDTH_ONE, relaxed);
            if (CQ__QS_WIDTH(s) == 0) {
                cq__ref_retain(&q->obj);
            }
            if (it->kind == CQ__ITEM_SYNC_WAITER) {
                cq__event_signal(&((struct cq__sync_waiter *)it)->event); /* runs with width */
            } else {
                cq__queue_redirect(q, it, CQ__PUSH_TAIL);
            }
        }
        if (cq__unlikely(q->retargeted)) {
            q->retargeted = false;
            budget = 0;
        }
        if (budget) {
            budget--;
        }
        if (budget == 0 || (cq__load(&q->state, relaxed) & CQ__QS_SUSPEND_MASK)) {
            drain_finish(q, false);
            return;
        }
    }
}

void cq__queue_drain(struct cq_queue_s *q)
{
    uint64_t s = cq__load(&q->state, relaxed), n;
    for (;;) {
        if (!(s & CQ__QS_ENQUEUED)) {
            return; /* spurious (the main run loop may signal twice) */
        }
        if (s & CQ__QS_SUSPEND_MASK) {
            n = (s & ~CQ__QS_ENQUEUED) | CQ__QS_DIRTY;
        } else {
            n = (s & ~(CQ__QS_ENQUEUED | CQ__QS_DIRTY)) | CQ__QS_LOCK;
        }
        /* acquire: pairs with the pushers' and the previous owner's release */
        if (cq__cas_weak(&q->state, &s, n, acquire)) {
            break;
        }
    }
    if (!(n & CQ__QS_LOCK)) {
        cq__ref_release(&q->obj); /* suspended: resume will enqueue it again */
        return;
    }
    if (q->kind == CQ__QUEUE_CONCURRENT) {
        concurrent_drain(q);
    } else if (cq__unlikely(cq__load(&cq__thread_naming_ms, relaxed) != 0)) {
        serial_drain_named(q);
    } else {
        serial_drain(q);
    }
}
