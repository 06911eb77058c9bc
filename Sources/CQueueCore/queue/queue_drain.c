/*
 * Draining a queue: the worker that won the queue's LOCK runs its items in order (serial
 * queues, barriers) or hands each to the target with one unit of width (concurrent queues),
 * within a budget. See queue_internal.h for the state word.
 */
#include "queue/queue_internal.h"

#include "platform/parker_internal.h"
#include "queue/sync_internal.h"
#include "scheduler/pool_internal.h"

static inline void handoff_to_waiter(struct cq__item *it)
{
    struct cq__sync_waiter *w = (struct cq__sync_waiter *)it;
    w->drain_ref = true; /* the waiter now owns LOCK and the reference it holds */
    cq__event_signal(&w->event);
}

/* A waiting thread runs a queue's items on its stack: the frames of its own queues and its
 * group are hidden meanwhile, so the items run with their own context only, as on a worker
 * (see "Helping" in cq_group_wait). */
struct caller_context {
    struct cq__frame *frame;
    struct cq_group_s *group;
};

static inline void hide_caller(struct caller_context *c)
{
    c->frame = cq__tls.frame;
    c->group = cq__tls.group;
    cq__tls.frame = NULL;
    cq__tls.group = NULL;
    cq__tls.help_depth++;
}

static inline void restore_caller(const struct caller_context *c)
{
    cq__tls.help_depth--;
    cq__tls.frame = c->frame;
    cq__tls.group = c->group;
}

/*
 * q goes onto its target for a drain of `it` with syncs waiting behind it. A wait behind
 * another keeps its proc (cq__event_wait_behind), so with every proc kept so, no worker would
 * come, and a drain queued behind many tasks that all wait for q came last: tasks that each
 * queue work on a serial queue and then sync onto it hung at the thread limit. So the first
 * sync waiter in the list is handed q to run the items ahead of it itself if it holds no
 * queue (cq__queue_sync_drain_first); any other is nudged to hand its proc on for the drain.
 */
_Atomic uint64_t cq__queue_pass_walked;

/* Sync waiters cq__queue_pass_to_waiter looks at for one that can run the items ahead of it. */
#define PASS_SCAN_LIMIT 32u

bool cq__queue_pass_to_waiter(struct cq_queue_s *q, struct cq__item *it)
{
    if (cq__load(&q->sync_waiters, relaxed) == 0) {
        return false;
    }
    /* The walk goes on from where the last one stopped, while that item is still in the list:
     * a drain gives way every CQ__DRAIN_BUDGET items, and walking from the head each time cost
     * the whole backlog per pause (a sync behind 800k tasks on a queue with a serial target:
     * 4 s, against libdispatch's 0.09). */
    uint64_t index = cq__load(&q->popped, relaxed); /* the head's place */
    if (it != NULL && q->pass_item != NULL && q->pass_index >= index) {
        it = q->pass_item;
        index = q->pass_index;
    }
    struct cq__item *seen = NULL;
    uint64_t walked = 0;
    while (it != NULL && it->kind != CQ__ITEM_SYNC_WAITER) {
        seen = it;
        /* acquire: pairs with the producer's release store linking it->next (a link not stored
         * yet ends the walk: its waiter came after the others) */
        it = cq__load(&it->next, acquire);
        index++;
        walked++;
    }
    if (walked != 0) { /* a shared line: touched only when the walk moved */
        cq__add(&cq__queue_pass_walked, walked, relaxed);
    }
    if (it == NULL) {
        if (seen != NULL) {
            q->pass_item = seen;
            q->pass_index = index - 1;
        }
        return false;
    }
    q->pass_item = it;
    q->pass_index = index;
    struct cq__sync_waiter *first = (struct cq__sync_waiter *)it;
    /* q is held: its target is fixed. A queue on another queue runs only inside that one's
     * drain, which the waiter does not hold. */
    if (q->kind == CQ__QUEUE_SERIAL && cq__queue_target(q)->kind == CQ__QUEUE_ROOT) {
        /* The first waiter that may run them, among the first few (one deep in nested help
         * may not): a drain queued behind the tasks that wait in those syncs never came
         * (tasks doing async then sync onto q and onto a queue targeting q stalled for good).
         * The items ahead of it include the waiters before it, which it hands q to in turn
         * (cq__queue_sync_drain_first). */
        unsigned looked = 0;
        for (struct cq__item *c = it; c != NULL && looked < PASS_SCAN_LIMIT; looked++) {
            struct cq__sync_waiter *w = (struct cq__sync_waiter *)c;
            if (w->can_drain) {
                w->drain_first = true;
                handoff_to_waiter(c); /* LOCK and its reference; the waiter stays in the list */
                return true;
            }
            do {
                /* acquire: pairs with the producer's release store linking c->next, as in
                 * the walk above */
                c = cq__load(&c->next, acquire);
            } while (c != NULL && c->kind != CQ__ITEM_SYNC_WAITER);
        }
    }
    cq__event_nudge(&first->event);
    return false;
}

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
    if (!may_continue && !(cq__load(&q->state, relaxed) & CQ__QS_SUSPEND_MASK) &&
        cq__queue_pass_to_waiter(q, cq__mpsc_peek(&q->tail, &q->head))) {
        return true;
    }
    cq__queue_unlock_drained(q);
    return true;
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
        if (cq__unlikely(cq__tls.help_stops != NULL) &&
            cq__help_stop_at(cq__tls.help_stops, q, it)) {
            budget = 0; /* a sync waiter's chain: its own queue has had its turn (queue_sync.c) */
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

/*
 * A barrier sync (or a sync through a chain) leaving a concurrent queue with syncs waiting
 * behind it let the queue go onto its target, where a worker's drain let them in: with every
 * thread waiting in those syncs (readers and writers of a queue through sync and barrier
 * sync, at the thread limit) no worker came, and the process hung. The leaving sync lets them
 * in itself, as concurrent_drain does, and leaves anything else to a drain.
 */
bool cq__queue_sync_pass_on(struct cq_queue_s *q)
{
    for (;;) {
        if (cq__load(&q->state, relaxed) & CQ__QS_SUSPEND_MASK) {
            return false;
        }
        struct cq__item *it = cq__mpsc_peek(&q->tail, &q->head);
        if (it == NULL || it->kind != CQ__ITEM_SYNC_WAITER) {
            return false;
        }
        if (it->flags & CQ__ITEM_BARRIER) {
            uint64_t s = cq__load(&q->state, relaxed);
            while (CQ__QS_WIDTH(s) != 0) {
                /* The readers let in run: the last one hands q to the barrier (barrier_resume
                 * in queue.c). LOCK's reference moves to BARRIER_WAIT. release: pairs with
                 * release_width's acquire. */
                uint64_t n = (s & ~(CQ__QS_LOCK | CQ__QS_DIRTY)) | CQ__QS_BARRIER_WAIT;
                if (cq__cas_weak(&q->state, &s, n, acq_rel)) {
                    return true;
                }
            }
            /* acquire: pairs with the release of the last width holder */
            (void)cq__load(&q->state, acquire);
            cq__mpsc_pop(&q->tail, &q->head);
            cq__queue_count_pop(q);
            handoff_to_waiter(it);
            return true;
        }
        cq__mpsc_pop(&q->tail, &q->head);
        cq__queue_count_pop(q);
        uint64_t s = cq__add(&q->state, CQ__QS_WIDTH_ONE, relaxed);
        if (CQ__QS_WIDTH(s) == 0) {
            cq__ref_retain(&q->obj); /* the reference WIDTH > 0 holds */
        }
        cq__event_signal(&((struct cq__sync_waiter *)it)->event); /* runs with width */
    }
}

/* The sync waiter `mine` was handed q (LOCK and its reference) by cq__queue_pass_to_waiter to
 * run the items ahead of it first: it runs them on its thread with q's frame alone (its own
 * queues and group hidden), as a worker's drain shows them. */
bool cq__queue_sync_drain_first(struct cq_queue_s *q, struct cq__item *mine)
{
    struct cq__sync_waiter *w = (struct cq__sync_waiter *)mine;
    w->drain_first = false;
    struct caller_context caller;
    hide_caller(&caller);
    struct cq__frame f;
    cq__frame_push(&f, q, true);
    bool held = false;
    for (;;) {
        /* Checked before each item, the first too: q may have been suspended between the
         * hand-off and this thread's wake-up, milliseconds on a busy machine. */
        struct cq__item *it = NULL;
        if (cq__likely(!q->retargeted) && !(cq__load(&q->state, relaxed) & CQ__QS_SUSPEND_MASK)) {
            it = cq__mpsc_pop(&q->tail, &q->head);
        }
        if (it == mine) {
            cq__queue_count_pop(q);
            held = true;
            break;
        }
        if (it == NULL) {
            /* let q go (the next items run on the new target, or after the resume) and wait to
             * be handed it again: re-armed first */
            q->retargeted = false;
            cq__event_init(&w->event);
            cq__queue_unlock(q, true);
            break;
        }
        cq__queue_count_pop(q);
        if (it->kind == CQ__ITEM_SYNC_WAITER) {
            /* a waiter that came before `mine` (one that could not run them: see
             * cq__queue_pass_to_waiter) gets q; `mine` waits to be handed q again, re-armed
             * before the hand-off, after which q may come back at once */
            cq__event_init(&w->event);
            handoff_to_waiter(it);
            break;
        }
        cq__item_invoke(it);
    }
    cq__frame_pop(&f);
    restore_caller(&caller);
    return held;
}

/* A waiting thread that took serial queue q (LOCK and its reference) runs at most `max` of its
 * items, as q and with its own context hidden, stopping after `stop` (compared, never
 * followed), at a sync waiter (handed q) or a retarget or suspension; then lets q go. */
static void run_taken(struct cq_queue_s *q, uint32_t max, const struct cq__item *stop)
{
    struct caller_context caller;
    hide_caller(&caller);
    struct cq__frame f;
    cq__frame_push(&f, q, true);
    bool held = true;
    for (uint32_t i = 0; i < max; i++) {
        struct cq__item *it = cq__mpsc_pop(&q->tail, &q->head);
        if (it == NULL) {
            break;
        }
        cq__queue_count_pop(q);
        if (it->kind == CQ__ITEM_SYNC_WAITER) {
            handoff_to_waiter(it); /* q is that thread's now; it moves q on */
            held = false;
            break;
        }
        cq__item_invoke(it);
        if (it == stop) {
            break; /* the helper's own chain had its turn: the rest is not its to run */
        }
        if (cq__unlikely(q->retargeted) || (cq__load(&q->state, relaxed) & CQ__QS_SUSPEND_MASK)) {
            q->retargeted = false; /* the next items run on the new target, or after the resume */
            break;
        }
    }
    cq__frame_pop(&f);
    restore_caller(&caller);
    if (held) {
        drain_finish(q, false);
    }
}

void cq__queue_drain_taken(struct cq_queue_s *q, const struct cq__item *stop)
{
    if (cq__unlikely(cq__queue_target(q)->kind != CQ__QUEUE_ROOT)) {
        cq__queue_unlock(q, true); /* retargeted since the look: its drain is due there */
        return;
    }
    run_taken(q, CQ__DRAIN_BUDGET, stop);
}

enum cq__help_result cq__queue_help_group(struct cq_queue_s *q,
                                          bool (*mine)(struct cq__item *, void *), void *arg)
{
    uint64_t s = cq__load(&q->state, relaxed);
    do {
        if ((s & CQ__QS_LOCK) && !(s & CQ__QS_SUSPEND_MASK)) {
            return CQ__HELP_HELD;
        }
        if (!(s & CQ__QS_ENQUEUED) || (s & (CQ__QS_LOCK | CQ__QS_SUSPEND_MASK))) {
            return CQ__HELP_NONE;
        }
        /* acquire: pairs with the previous owner's release (its unlock) */
    } while (!cq__cas_weak(&q->state, &s, s | CQ__QS_LOCK, acquire));
    cq__ref_retain(&q->obj); /* LOCK's own: ENQUEUED keeps the drain's */
    if (cq__queue_target(q)->kind != CQ__QUEUE_ROOT) {
        cq__queue_unlock(q, true); /* its items run inside its target's drain */
        return CQ__HELP_NONE;
    }
    /* Holding LOCK makes this thread the list's one consumer: the items up to the last one of
     * the caller's run first whoever runs them. Those pushed meanwhile come after. */
    uint32_t count = 0, last = 0;
    for (struct cq__item *it = cq__mpsc_peek(&q->tail, &q->head); it != NULL;) {
        count++;
        if (mine(it, arg)) {
            last = count;
        }
        /* acquire: pairs with the producer's release store linking it->next */
        it = cq__load(&it->next, acquire);
    }
    run_taken(q, last, NULL);
    return last != 0 ? CQ__HELP_RAN : CQ__HELP_NONE;
}

void cq__queue_drain(struct cq_queue_s *q)
{
    uint64_t s = cq__load(&q->state, relaxed), n;
    for (;;) {
        if (!(s & CQ__QS_ENQUEUED)) {
            return; /* spurious (the main run loop may signal twice) */
        }
        if (s & CQ__QS_LOCK) {
            /* a sync waiter took q meanwhile (sync_take_queued): its holder sees to the rest */
            n = s & ~CQ__QS_ENQUEUED;
        } else if (s & CQ__QS_SUSPEND_MASK) {
            n = (s & ~CQ__QS_ENQUEUED) | CQ__QS_DIRTY;
        } else {
            n = (s & ~(CQ__QS_ENQUEUED | CQ__QS_DIRTY)) | CQ__QS_LOCK;
        }
        /* acquire: pairs with the pushers' and the previous owner's release. release: when a
         * sync waiter holds q, its unlock may put q's item on a list again once this clears
         * ENQUEUED; this drain's pop of the item happens-before that (pairs with its acq_rel
         * CAS in unlock, queue.c) */
        if (cq__cas_weak(&q->state, &s, n, acq_rel)) {
            break;
        }
    }
    if (!(n & CQ__QS_LOCK) || (s & CQ__QS_LOCK)) {
        cq__ref_release(&q->obj); /* suspended (resume enqueues it again), or taken by a sync */
        return;
    }
    if (q->kind != CQ__QUEUE_MAIN &&
        cq__unlikely(cq__load(&q->enq_target, relaxed) != cq__queue_target(q))) {
        /* Retargeted by a sync waiter that held q while this drain was due (sync_take_queued
         * in queue_sync.c): q's items belong on the new target now (its width, its
         * priority); the unlock puts q there. */
        cq__queue_unlock(q, true);
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
