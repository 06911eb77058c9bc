/*
 * Dispatch queues: creation, submission, the state machine (push, width, unlock), suspension,
 * retargeting, end of life, and the run functions of queue and redirect items (see
 * scheduler/item.c). The drains live in queue_drain.c, synchronous calls in queue_sync.c, the main
 * queue in queue_main.c, queue-specific keys in queue_specific.c. See queue_internal.h for the
 * state word.
 */
#include "queue/queue_internal.h"

#include <cqueuecore/swift_support.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "platform/diag_internal.h"
#include "platform/parker_internal.h"
#include "platform/rcu_internal.h"
#include "queue/sync_internal.h"
#include "scheduler/pool_internal.h"
#include "scheduler/task_internal.h"

struct cq_queue_attr_s {
    int concurrent;
};

const struct cq_queue_attr_s cq_queue_attr_concurrent_s = {1};

cq_queue_attr_t cq_queue_attr_concurrent(void)
{
    return &cq_queue_attr_concurrent_s;
}

static void queue_xref_dispose(struct cq__object *o);
static void queue_dispose(struct cq__object *o);
static void queue_suspend(struct cq__object *o);
static void queue_resume(struct cq__object *o);
static uint32_t queue_suspended(const struct cq__object *o);
static const char *queue_label(const struct cq__object *o);

const struct cq__class cq__queue_class = {
    .kind = CQ__KIND_QUEUE,
    .name = "queue",
    .xref_dispose = queue_xref_dispose,
    .dispose = queue_dispose,
    .suspend = queue_suspend,
    .resume = queue_resume,
    .suspended = queue_suspended,
    .label = queue_label,
};
CQ__CLASS_REGISTER(cq__queue_class)

#define STATIC_QUEUE(k, p, l)                                                                      \
    {                                                                                              \
        .obj = {.cls = &cq__queue_class, .xref = CQ__IMMORTAL, .ref = CQ__IMMORTAL},               \
        .item = {.kind = CQ__ITEM_QUEUE}, .kind = (k), .prio = (p), .label = (char *)(l),          \
    }

struct cq_queue_s cq__root_queues[4] = {
    STATIC_QUEUE(CQ__QUEUE_ROOT, 0, "cq.global.high"),
    STATIC_QUEUE(CQ__QUEUE_ROOT, 1, "cq.global.default"),
    STATIC_QUEUE(CQ__QUEUE_ROOT, 2, "cq.global.low"),
    STATIC_QUEUE(CQ__QUEUE_ROOT, 3, "cq.global.background"),
};

struct cq_queue_s cq__main_queue = STATIC_QUEUE(CQ__QUEUE_MAIN, 1, "cq.main-thread");

/* ---------------------------------------------------------------------------------------- */
/* Creation and lookup                                                                      */

cq_queue_t cq_queue_create(const char *label, cq_queue_attr_t attr)
{
    if (attr != CQ_QUEUE_SERIAL && attr != CQ_QUEUE_CONCURRENT) {
        errno = EINVAL;
        return NULL;
    }
    cq__rcu_throttle(); /* queues are freed after a grace period: rcu_internal.h */
    size_t size = (sizeof(struct cq_queue_s) + CQ_CACHELINE - 1) & ~(size_t)(CQ_CACHELINE - 1);
    struct cq_queue_s *q = aligned_alloc(CQ_CACHELINE, size);
    char *copy = strdup(label ? label : "");
    if (q == NULL || copy == NULL) {
        free(q);
        free(copy);
        errno = ENOMEM;
        return NULL;
    }
    memset(q, 0, sizeof *q);
    cq__object_init(&q->obj, &cq__queue_class);
    /* A serial queue's drain may take an overcommit thread when every worker is stuck in a
     * long task, as libdispatch's serial queues do (scheduler/overcommit.c); a concurrent
     * queue's work, as a global queue's, waits for a worker. */
    cq__item_init(&q->item, CQ__ITEM_QUEUE, attr ? 0 : CQ__ITEM_OVERCOMMIT);
    q->kind = attr ? CQ__QUEUE_CONCURRENT : CQ__QUEUE_SERIAL;
    q->label = copy;
    atomic_init(&q->target, &cq__root_queues[CQ__PRIO_DEFAULT]);
    atomic_init(&q->specifics, NULL);
    atomic_init(&q->tail, NULL);
    atomic_init(&q->head, NULL);
    atomic_init(&q->pushed, 0);
    atomic_init(&q->popped, 0);
    atomic_init(&q->state, 0);
    atomic_init(&q->targeted, false);
    q->fork_gen = cq__fork_gen;
    cq__queue_registry_add(q);
    if (cq__unlikely(cq__pool_start_with_queues)) {
        cq__pool_ensure_started();
    }
    return q;
}

cq_queue_t cq_queue_create_inactive(const char *label, cq_queue_attr_t attr)
{
    cq_queue_t q = cq_queue_create(label, attr);
    if (q) {
        cq_suspend(q);
        cq__store(&q->obj.inactive, 1, relaxed); /* published with q by the caller */
    }
    return q;
}

void cq__queue_check_slow(cq_queue_t q, const char *call)
{
    if (!cq__object_is(q, &cq__queue_class)) {
        cq__object_check(q, CQ__KIND_QUEUE, call); /* aborts */
    }
    /* Inherited from the parent: usable if it and its target chain were idle at the fork (only
     * the child's thread exists, and it is here, so nothing changes under us). A queue with
     * work queued, running or pending on its target was busy with the parent's threads, which
     * the child does not have. A suspended queue keeps what it holds: resuming it in the child
     * runs it there. */
    for (struct cq_queue_s *l = q; l && l->kind != CQ__QUEUE_ROOT && l->kind != CQ__QUEUE_MAIN;
         l = cq__queue_target(l)) {
        uint64_t s = cq__load(&l->state, relaxed);
        bool suspended = (s & CQ__QS_SUSPEND_MASK) != 0;
        uint64_t busy = CQ__QS_LOCK | CQ__QS_ENQUEUED | CQ__QS_BARRIER_WAIT | CQ__QS_WIDTH_MASK |
                        (suspended ? 0 : CQ__QS_DIRTY);
        if ((s & busy) || (!suspended && !cq__queue_list_empty(l))) {
            cq__crash("%s: %s was busy when the process forked; its work belongs to the parent's "
                      "threads, so it cannot be used in the child (create queues in the child)",
                      call, CQ_DESCRIBE(l));
        }
    }
    for (struct cq_queue_s *l = q; l && l->kind != CQ__QUEUE_ROOT && l->kind != CQ__QUEUE_MAIN;
         l = cq__queue_target(l)) {
        l->fork_gen = cq__fork_gen;
    }
}

void cq__queue_fork_child(void)
{
    for (unsigned i = 0; i < 4; i++) {
        cq__root_queues[i].fork_gen = cq__fork_gen;
    }
    cq__main_queue.fork_gen = cq__fork_gen;
    if (!cq__is_main_thread()) {
        /* The main queue belonged to the parent's main thread, which the child does not have:
         * it starts over, empty (its pending work stays the parent's). */
        cq__store(&cq__main_queue.state, 0, relaxed);
        cq__store(&cq__main_queue.tail, NULL, relaxed);
        cq__store(&cq__main_queue.head, NULL, relaxed);
        cq__main_queue.pass_item = NULL; /* an item of that list */
        cq__main_fork_child();
    }
}

cq_queue_t cq_get_global_queue(intptr_t priority, uintptr_t flags)
{
    if (flags != 0) {
        errno = EINVAL;
        return NULL;
    }
    unsigned idx;
    if (priority >= 1) {
        idx = 0;
    } else if (priority >= -1) {
        idx = 1;
    } else if (priority > -16384) {
        idx = 2;
    } else {
        idx = 3;
    }
    return &cq__root_queues[idx];
}

cq_queue_t cq_get_main_queue(void)
{
    return &cq__main_queue;
}

/* ---------------------------------------------------------------------------------------- */
/* Pushing                                                                                  */

/* Hands an item that now holds one unit of q's width to q's target. */
void cq__queue_redirect(struct cq_queue_s *q, struct cq__item *it, unsigned flags)
{
    if (cq__unlikely(it->owner != NULL)) {
        /* Already holds another concurrent queue's width (concurrent targeting concurrent):
         * wrap it so each level releases its own. */
        struct cq__task *w = cq__task_alloc();
        cq__item_init(&w->item, CQ__ITEM_REDIRECT, 0);
        w->context = it;
        it = &w->item;
    }
    it->owner = q;
    cq__queue_push(cq__queue_target(q), it, flags);
}

bool cq__queue_try_acquire_width(struct cq_queue_s *q)
{
    /* Nothing may be queued (a barrier, or anything behind one): see cq__queue_try_lock. */
    if (!cq__mpsc_empty(&q->tail)) {
        return false;
    }
    uint64_t s = cq__load(&q->state, relaxed);
    for (;;) {
        if (s & (CQ__QS_LOCK | CQ__QS_ENQUEUED | CQ__QS_DIRTY | CQ__QS_BARRIER_WAIT |
                 CQ__QS_SUSPEND_MASK)) {
            return false;
        }
        if (CQ__QS_WIDTH(s) >= CQ__QS_WIDTH_MAX) {
            return false;
        }
        /* acquire: pairs with the release of the last barrier's unlock */
        if (cq__cas_weak(&q->state, &s, s + CQ__QS_WIDTH_ONE, acquire)) {
            if (CQ__QS_WIDTH(s) == 0) {
                cq__ref_retain(&q->obj); /* the reference WIDTH > 0 holds */
            }
            return true;
        }
    }
}

static void unlock(struct cq_queue_s *q, bool drain_ref, unsigned push_flags);

/*
 * The last unit of width left q, whose drainer waits to run a barrier (the list's first item):
 * holding q (LOCK, with BARRIER_WAIT's reference), hand q straight to that barrier if it is
 * another thread's barrier sync, as a drain would. Putting q on its target instead needs a free
 * worker to drain it, which a process whose threads all wait in syncs (at the thread limit)
 * does not have: readers and writers of a concurrent queue through sync and barrier sync hung
 * there for good. Any other barrier: q goes on its target as before.
 */
static void barrier_resume(struct cq_queue_s *q)
{
    if (!cq__queue_sync_pass_on(q)) { /* with no width out, it hands q to a barrier sync */
        unlock(q, true, 0);
    }
}

void cq__queue_release_width(struct cq_queue_s *q)
{
    uint64_t s = cq__load(&q->state, relaxed), n;
    bool resume, drop_barrier_ref;
    for (;;) {
        n = s - CQ__QS_WIDTH_ONE;
        resume = drop_barrier_ref = false;
        if (CQ__QS_WIDTH(n) == 0 && (n & CQ__QS_BARRIER_WAIT)) {
            /* the drainer is waiting for us: the barrier may run now */
            n &= ~CQ__QS_BARRIER_WAIT;
            if (n & CQ__QS_SUSPEND_MASK) {
                n |= CQ__QS_DIRTY;
                drop_barrier_ref = true;
            } else {
                n |= CQ__QS_LOCK; /* BARRIER_WAIT's reference moves to LOCK */
                resume = true;
            }
        }
        /* release: the task's effects happen-before the barrier (acquire at drain start); pairs
         * with the barrier's acquire load in concurrent_drain (queue_drain.c). acquire: the
         * other tasks' effects happen-before the barrier this thread may hand q to. */
        if (cq__cas_weak(&q->state, &s, n, acq_rel)) {
            break;
        }
    }
    if (resume) {
        barrier_resume(q);
    }
    if (drop_barrier_ref) {
        cq__ref_release(&q->obj);
    }
    if (CQ__QS_WIDTH(n) == 0) {
        cq__ref_release(&q->obj); /* last use of q: may free it */
    }
}

void cq__queue_enqueue_on_target(struct cq_queue_s *q, unsigned flags)
{
    if (q->kind == CQ__QUEUE_MAIN) {
        cq__main_wakeup();
    } else {
        struct cq_queue_s *tq = cq__queue_target(q);
        cq__store(&q->enq_target, tq, relaxed); /* published by the push below */
        cq__queue_push(tq, &q->item, flags);
    }
}

/* cq__queue_wakeup; with `take`, an idle q is taken (LOCK, returning true: the caller holds no
 * reference for it yet) rather than put on its target. */
static bool wakeup(struct cq_queue_s *q, unsigned flags, bool take)
{
    uint64_t s = cq__load(&q->state, relaxed), n;
    for (;;) {
        if (s & CQ__QS_LOCK) {
            if (s & CQ__QS_DIRTY) {
                return false; /* the holder will look again anyway */
            }
            n = s | CQ__QS_DIRTY;
        } else if (s & (CQ__QS_ENQUEUED | CQ__QS_BARRIER_WAIT)) {
            return false; /* a drain is already due and will find the item */
        } else if (s & CQ__QS_SUSPEND_MASK) {
            if (s & CQ__QS_DIRTY) {
                return false;
            }
            n = s | CQ__QS_DIRTY;
        } else {
            n = take ? (s & ~CQ__QS_DIRTY) | CQ__QS_LOCK : s | CQ__QS_ENQUEUED;
        }
        /* release: our list link happens-before the holder's acquire of this word; pairs with the
         * drain start's acquire CAS (cq__queue_drain) and the LOCK holder's acquire. acquire
         * (taking LOCK): pairs with the previous owner's release (its unlock) */
        if (cq__cas_weak(&q->state, &s, n, acq_rel)) {
            break;
        }
    }
    /* (LOCK with ENQUEUED, a sync waiter's: only DIRTY was set.) */
    if ((n & CQ__QS_ENQUEUED) && !(s & CQ__QS_ENQUEUED)) {
        cq__ref_retain(&q->obj); /* the reference ENQUEUED holds */
        cq__queue_enqueue_on_target(q, flags | CQ__PUSH_WAKEUP);
    }
    return (n & CQ__QS_LOCK) && !(s & CQ__QS_LOCK);
}

void cq__queue_wakeup(struct cq_queue_s *q, unsigned flags)
{
    (void)wakeup(q, flags, false);
}

bool cq__queue_wakeup_or_take(struct cq_queue_s *q)
{
    return wakeup(q, CQ__PUSH_TAIL, true);
}

void cq__queue_push(struct cq_queue_s *q, struct cq__item *it, unsigned flags)
{
    switch (q->kind) {
    case CQ__QUEUE_ROOT:
        cq__pool_push(it, q->prio, flags);
        return;
    case CQ__QUEUE_CONCURRENT:
        if (!(it->flags & CQ__ITEM_BARRIER) && it->kind != CQ__ITEM_SYNC_WAITER &&
            cq__queue_try_acquire_width(q)) {
            cq__queue_redirect(q, it, flags);
            return;
        }
        break;
    default:
        break;
    }
    cq__queue_count_push(q);
    if (cq__mpsc_push(&q->tail, &q->head, it, it)) {
        cq__queue_wakeup(q, flags);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Unlocking (the drains are in queue_drain.c)                                              */

static void unlock(struct cq_queue_s *q, bool drain_ref, unsigned push_flags)
{
    uint64_t s = cq__load(&q->state, relaxed), n;
    for (;;) {
        if ((s & CQ__QS_DIRTY) && q->kind == CQ__QUEUE_SERIAL && !(s & CQ__QS_SUSPEND_MASK) &&
            cq__load(&q->sync_waiters, relaxed) != 0) {
            /* Something was pushed while q was held, perhaps a sync waiter after the holder
             * looked for one (sync_take_queued sets DIRTY for that): look again before q goes
             * onto its target, where it would wait for a worker. acquire: pairs with the
             * pusher's release when it set DIRTY */
            if (!cq__cas_weak(&q->state, &s, s & ~CQ__QS_DIRTY, acquire)) {
                continue;
            }
            if (!drain_ref) {
                cq__ref_retain(&q->obj); /* handed on with LOCK, as a drain's */
                drain_ref = true;
            }
            if (cq__queue_pass_to_waiter(q, cq__mpsc_peek(&q->tail, &q->head))) {
                return;
            }
            s = cq__load(&q->state, relaxed);
            continue;
        }
        bool items = (s & CQ__QS_DIRTY) || !cq__queue_list_empty(q);
        n = s & ~(CQ__QS_LOCK | CQ__QS_DIRTY);
        /* ENQUEUED with LOCK: a sync waiter took q while q sat on its target (see
         * queue_internal.h); that drain, still due, finds what is left. */
        if (items && !(s & CQ__QS_ENQUEUED)) {
            n |= (s & CQ__QS_SUSPEND_MASK) ? CQ__QS_DIRTY : CQ__QS_ENQUEUED;
        }
        /* release: everything done under the lock happens-before the next owner's acquire; pairs
         * with the next owner's acquire: drain start, cq_sync_f's CAS, a barrier */
        if (cq__cas_weak(&q->state, &s, n, acq_rel)) {
            break;
        }
    }
    if ((n & CQ__QS_ENQUEUED) && !(s & CQ__QS_ENQUEUED)) {
        if (!drain_ref) {
            cq__ref_retain(&q->obj);
        }
        cq__queue_enqueue_on_target(q, CQ__PUSH_TAIL | push_flags);
    } else if (drain_ref) {
        cq__ref_release(&q->obj);
    }
}

void cq__queue_unlock(struct cq_queue_s *q, bool drain_ref)
{
    unlock(q, drain_ref, 0);
}

void cq__queue_unlock_drained(struct cq_queue_s *q)
{
    unlock(q, true, CQ__PUSH_YIELD);
}

/* ---------------------------------------------------------------------------------------- */
/* Submission                                                                               */

static inline void async_impl(cq_queue_t q, void *ctx, cq_function_t fn, unsigned flags,
                              const char *call)
{
    cq__queue_check(q, call);
    if (cq__unlikely(fn == NULL)) {
        cq__crash("%s: NULL function submitted to %s", call, CQ_DESCRIBE(q));
    }
    struct cq__task *t = cq__task_alloc();
    cq__item_init(&t->item, CQ__ITEM_TASK, flags);
    t->function = fn;
    t->context = ctx;
    t->group = NULL;
    CQ__PROBE_ENQUEUE(q, &t->item);
    cq__queue_push(q, &t->item, CQ__PUSH_TAIL);
}

void cq_async_f(cq_queue_t q, void *ctx, cq_function_t fn)
{
    async_impl(q, ctx, fn, 0, "cq_async_f");
}

void cq_barrier_async_f(cq_queue_t q, void *ctx, cq_function_t fn)
{
    async_impl(q, ctx, fn, CQ__ITEM_BARRIER, "cq_barrier_async_f");
}

void cq_swift_async_overcommit_f(cq_queue_t q, void *ctx, cq_function_t fn)
{
    async_impl(q, ctx, fn, CQ__ITEM_OVERCOMMIT, "cq_swift_async_overcommit_f");
}

/* ---------------------------------------------------------------------------------------- */
/* Suspension                                                                               */

static void queue_suspend(struct cq__object *o)
{
    struct cq_queue_s *q = cq__queue_check((struct cq_queue_s *)o, "cq_suspend");
    if (cq__object_is_immortal(o)) {
        return;
    }
    uint64_t s = cq__add(&q->state, CQ__QS_SUSPEND_ONE, relaxed);
    if (cq__unlikely((s & CQ__QS_SUSPEND_MASK) == CQ__QS_SUSPEND_MASK)) {
        cq__crash("cq_suspend: suspend count of %s overflowed", CQ_DESCRIBE(q));
    }
}

static uint32_t queue_suspended(const struct cq__object *o)
{
    const struct cq_queue_s *q = (const struct cq_queue_s *)o;
    return (uint32_t)((cq__load(&q->state, relaxed) & CQ__QS_SUSPEND_MASK) / CQ__QS_SUSPEND_ONE);
}

static void queue_resume(struct cq__object *o)
{
    struct cq_queue_s *q = cq__queue_check((struct cq_queue_s *)o, "cq_resume");
    if (cq__object_is_immortal(o)) {
        return;
    }
    /* Sync waiters are let in by this thread (cq__queue_let_waiters_in), not by a drain
     * on the target, which needs a free worker. */
    bool waiters = (q->kind == CQ__QUEUE_SERIAL || q->kind == CQ__QUEUE_CONCURRENT) &&
                   cq__load(&q->sync_waiters, relaxed) != 0;
    uint64_t s = cq__load(&q->state, relaxed), n;
    for (;;) {
        if (cq__unlikely(!(s & CQ__QS_SUSPEND_MASK))) {
            cq__crash("cq_resume: %s is not suspended (resumed more often than suspended)",
                      CQ_DESCRIBE(q));
        }
        n = s - CQ__QS_SUSPEND_ONE;
        if (!(n & CQ__QS_SUSPEND_MASK) && (n & CQ__QS_DIRTY) &&
            !(n & (CQ__QS_LOCK | CQ__QS_ENQUEUED | CQ__QS_BARRIER_WAIT))) {
            n = (n & ~CQ__QS_DIRTY) | (waiters ? CQ__QS_LOCK : CQ__QS_ENQUEUED);
        }
        /* pairs with the drain start's acquire CAS when the resume enqueues the queue, with the
         * previous owner's release when it takes LOCK, and with other suspend/resume CASes */
        if (cq__cas_weak(&q->state, &s, n, acq_rel)) {
            break;
        }
    }
    if ((n & CQ__QS_ENQUEUED) && !(s & CQ__QS_ENQUEUED)) {
        cq__ref_retain(&q->obj);
        cq__queue_enqueue_on_target(q, CQ__PUSH_TAIL);
    } else if ((n & CQ__QS_LOCK) && !(s & CQ__QS_LOCK)) {
        cq__queue_let_waiters_in(q, true);
    } else if (waiters && !(n & CQ__QS_SUSPEND_MASK) && (n & CQ__QS_ENQUEUED)) {
        cq__queue_let_waiters_in(q, false);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Retargeting                                                                              */

struct retarget {
    struct cq_queue_s *q;
    struct cq_queue_s *target;
};

static void apply_retarget(struct cq_queue_s *q, struct cq_queue_s *target)
{
    struct cq_queue_s *old =
        cq__load(&q->target, relaxed); /* we hold LOCK: nobody else writes; pairs with the acquire
                                          load in cq__queue_target (queue_internal.h) */
    cq__queue_mark_targeted(target);
    cq__store(&q->target, target, release);
    cq__ref_release(&old->obj);
}

static void retarget_barrier(void *ctx)
{
    struct retarget *r = ctx;
    apply_retarget(r->q, r->target);
    r->q->retargeted = true; /* the drain running us yields: later tasks use the new target */
    free(r);
}

void cq__finalizer_target_set(struct cq_queue_s *_Atomic *slot, struct cq_queue_s *target)
{
    cq__ref_retain(&target->obj);
    /* acq_rel: two racing calls each give back the reference the other stored; pairs with the
     * other setters' exchange (the load at dispose needs none: see cq__finalizer_run) */
    struct cq_queue_s *old = cq__xchg(slot, target, acq_rel);
    if (old) {
        cq__ref_release(&old->obj);
    }
}

void cq__finalizer_run(struct cq_queue_s *target, void *ctx, cq_function_t fin)
{
    if (fin && ctx) {
        cq_async_f(target ? target : &cq__root_queues[CQ__PRIO_DEFAULT], ctx, fin);
    }
    if (target) {
        cq__ref_release(&target->obj); /* after the submission, which holds its own */
    }
}

void cq_set_target_queue(void *object, cq_queue_t target)
{
    struct cq__object *o = cq__object_check(object, 0, "cq_set_target_queue");
    if (o->cls->set_target) { /* a source, a group, a semaphore (see struct cq__class) */
        o->cls->set_target(o, target ? cq__queue_check(target, "cq_set_target_queue")
                                     : &cq__root_queues[CQ__PRIO_DEFAULT]);
        return;
    }
    struct cq_queue_s *q = cq__queue_check(object, "cq_set_target_queue");
    if (cq__object_is_immortal(&q->obj)) {
        cq__crash("cq_set_target_queue: cannot change the target of %s", CQ_DESCRIBE(q));
    }
    target = target ? cq__queue_check(target, "cq_set_target_queue")
                    : &cq__root_queues[CQ__PRIO_DEFAULT];
    /* The chain above `target` may be retargeted meanwhile: walk it under RCU (queues are
     * freed after a grace period), so a stale link is never a freed one. */
    cq__rcu_read_lock();
    for (struct cq_queue_s *x = target; x; x = cq__queue_target(x)) {
        if (x == q) {
            cq__rcu_read_unlock();
            cq__crash("cq_set_target_queue: targeting %s at %s would create a cycle",
                      CQ_DESCRIBE(q), CQ_DESCRIBE(target));
        }
    }
    cq__rcu_read_unlock();
    cq__ref_retain(&target->obj);
    if (cq__queue_try_lock(q)) {
        apply_retarget(q, target);
        cq__queue_unlock(q, false);
        return;
    }
    struct retarget *r = malloc(sizeof *r);
    if (r == NULL) {
        cq__crash("cq_set_target_queue: out of memory");
    }
    r->q = q;
    r->target = target;
    cq_barrier_async_f(q, r, retarget_barrier);
}

/* ---------------------------------------------------------------------------------------- */
/* End of life                                                                              */

static void queue_xref_dispose(struct cq__object *o)
{
    struct cq_queue_s *q = (struct cq_queue_s *)o;
    if (cq__unlikely(cq__load(&q->state, relaxed) & CQ__QS_SUSPEND_MASK)) {
        if (cq__load(&q->obj.inactive, relaxed) && q->obj.cls->suspended(&q->obj) <= 1) {
            cq__crash("cq_release: last reference to %s released while it is inactive "
                      "(activate it first with cq_activate: its tasks could never run)",
                      CQ_DESCRIBE(q));
        }
        cq__crash("cq_release: last reference to %s released while it is suspended "
                  "(resume it first: its tasks could never run)",
                  CQ_DESCRIBE(q));
    }
}

static void queue_free_rcu(struct rcu_head *head)
{
    cq__rcu_reclaim_begin(head);
    struct cq_queue_s *q = (struct cq_queue_s *)((char *)head - offsetof(struct cq_queue_s, rcu));
    free(q->label);
    free(q);
}

static void queue_free(struct cq_queue_s *q)
{
    struct cq_queue_s *target = cq__load(&q->target, relaxed);
    cq__queue_specifics_dispose(q);
    cq__queue_registry_remove(q);
    q->obj.cls = NULL; /* later misuse of the pointer is reported, while the memory lasts */
    if (cq__load(&q->targeted, relaxed)) {
        /* The memory goes after an RCU grace period: a set_target elsewhere may be walking
         * a chain that still ran through this queue. */
        cq__rcu_defer(&q->rcu, queue_free_rcu);
    } else {
        /* Never anyone's target: no walk up a chain can reach it (every walk starts at a
         * queue its walker holds), and the registry's walkers are done with it (removed
         * under its lock). Freed now: through call_rcu, threads that made and dropped queues
         * quickly outran liburcu's callback thread, and the queues waiting to be freed grew
         * without bound (four threads, 500,000 queues each: 940 MB; libdispatch 3 MB). */
        free(q->label);
        free(q);
    }
    cq__ref_release(&target->obj);
}

static void finalize_queue(void *ctx)
{
    struct cq_queue_s *q = ctx;
    q->obj.finalizer(q->obj.context);
    queue_free(q);
}

static void queue_dispose(struct cq__object *o)
{
    struct cq_queue_s *q = (struct cq_queue_s *)o;
    if (q->obj.finalizer && q->obj.context) { /* as libdispatch: no context, no finalizer */
        /* Dead from here on: a call on the queue from its finalizer (a submission would bring
         * it back to life and dispose of it twice) is reported as a use of a freed object */
        q->obj.cls = NULL;
        /* q's reference to its target goes in finalize_queue, which may run (and the target be
         * freed) before cq_async_f's wake-up of the target has returned: hold one of our own
         * meanwhile (ThreadSanitizer saw the free race that wake-up's look at the state) */
        struct cq_queue_s *target = cq__load(&q->target, relaxed);
        cq__ref_retain(&target->obj);
        cq_async_f(target, q, finalize_queue);
        cq__ref_release(&target->obj);
    } else {
        queue_free(q);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Introspection                                                                            */

bool cq__queue_is_current(struct cq_queue_s *q)
{
    for (struct cq__frame *f = cq__tls.frame; f; f = f->prev) {
        for (struct cq_queue_s *x = f->queue; x; x = cq__queue_target(x)) {
            if (x == q) {
                return true;
            }
        }
    }
    return false;
}

/* The main thread counts as on the main queue for the checks below: outside any queue's work,
 * and inside a sync or an apply it makes from there (as in libdispatch, where the main thread
 * starts out on the main queue: dispatch_assert_queue(main queue) holds in main() before
 * dispatch_main, and in what main() syncs onto other queues). Main-queue work runs on the main
 * thread only, so never beside it. (Not for sync's deadlock check: a sync onto the idle main
 * queue from main() runs the function at once.) */
static bool main_thread_on_main(struct cq_queue_s *q)
{
    return q->kind == CQ__QUEUE_MAIN && cq__is_main_thread();
}

static bool queue_is_current_or_main(struct cq_queue_s *q)
{
    return cq__queue_is_current(q) || main_thread_on_main(q);
}

bool cq_queue_is_current(cq_queue_t q)
{
    return queue_is_current_or_main(cq__queue_check(q, "cq_queue_is_current"));
}

void cq_assert_queue(cq_queue_t q)
{
    if (!queue_is_current_or_main(cq__queue_check(q, "cq_assert_queue"))) {
        struct cq__frame *f = cq__tls.frame;
        cq__crash("cq_assert_queue: expected to run on %s, but running on %s", CQ_DESCRIBE(q),
                  f ? CQ_DESCRIBE(f->queue) : "no queue");
    }
}

void cq_assert_queue_not(cq_queue_t q)
{
    if (queue_is_current_or_main(cq__queue_check(q, "cq_assert_queue_not"))) {
        cq__crash("cq_assert_queue_not: running on %s", CQ_DESCRIBE(q));
    }
}

/* Whether a frame of the calling thread holds `q` exclusively (a serial task, a barrier, an
 * exclusive sync). The frames are the calling thread's own: no ordering needed. */
static bool queue_is_current_barrier(struct cq_queue_s *q)
{
    if (main_thread_on_main(q)) {
        return true; /* the main queue is serial */
    }
    for (struct cq__frame *f = cq__tls.frame; f; f = f->prev) {
        if (f->queue == q && f->exclusive) {
            return true;
        }
    }
    return false;
}

bool cq_queue_is_current_barrier(cq_queue_t q)
{
    return queue_is_current_barrier(cq__queue_check(q, "cq_queue_is_current_barrier"));
}

void cq_assert_queue_barrier(cq_queue_t q)
{
    if (queue_is_current_barrier(cq__queue_check(q, "cq_assert_queue_barrier"))) {
        return;
    }
    struct cq__frame *f = cq__tls.frame;
    cq__crash("cq_assert_queue_barrier: expected to run on %s exclusively, but running on %s%s",
              CQ_DESCRIBE(q), f ? CQ_DESCRIBE(f->queue) : "no queue",
              cq__queue_is_current(q) ? " (alongside other tasks of it)" : "");
}

bool cq_thread_is_main(void)
{
    return cq__is_main_thread();
}

cq_queue_t cq_get_current_queue(void)
{
    struct cq__frame *f = cq__tls.frame;
    return f ? f->queue : NULL;
}

const char *cq_queue_get_label(cq_queue_t q)
{
    if (q == NULL) {
        struct cq__frame *f = cq__tls.frame;
        return f ? f->queue->label : "";
    }
    return cq__queue_check(q, "cq_queue_get_label")->label;
}

static const char *queue_label(const struct cq__object *o)
{
    return ((const struct cq_queue_s *)o)->label;
}

unsigned cq__queue_root_prio(struct cq_queue_s *q)
{
    cq__rcu_read_lock(); /* a chain not held by the caller beyond q itself */
    for (unsigned depth = 0; q && q->kind != CQ__QUEUE_ROOT && depth < 64; depth++) {
        q = q->kind == CQ__QUEUE_MAIN ? NULL : cq__queue_target(q);
    }
    unsigned prio = q ? q->prio : CQ__PRIO_DEFAULT;
    cq__rcu_read_unlock();
    return prio;
}

/* For the scheduler's probes (cq__item_label): a queue's label, or a global queue's. */
static const char *label_of(struct cq_queue_s *q, unsigned prio)
{
    if (q == NULL) {
        return cq__root_queues[prio < 4 ? prio : CQ__PRIO_DEFAULT].label;
    }
    return q->label;
}

/* ---------------------------------------------------------------------------------------- */
/* Items that hold a concurrent queue's width                                               */

/* The wrapper cq__queue_redirect makes for an item that already holds another queue's width. */
static void redirect_run(struct cq__item *it)
{
    struct cq__task *t = (struct cq__task *)it;
    struct cq__item *inner = t->context;
    cq__task_free(t);
    cq__item_invoke(inner);
}
CQ__ITEM_KIND_REGISTER(CQ__ITEM_REDIRECT, redirect_run)

/* A queue's embedded item: drain it (queue_drain.c). Registered here, with the code that pushes
 * queue items, so a static link that has one has the other. */
static void queue_item_run(struct cq__item *it)
{
    cq__queue_drain((struct cq_queue_s *)((char *)it - offsetof(struct cq_queue_s, item)));
}
CQ__ITEM_KIND_REGISTER(CQ__ITEM_QUEUE, queue_item_run)

CQ_EARLY_INIT static void queue_register_owner_done(void)
{
    cq__item_owner_done_register(cq__queue_release_width);
    cq__item_label_register(label_of);
    struct cq_queue_s *const roots[4] = {&cq__root_queues[0], &cq__root_queues[1],
                                         &cq__root_queues[2], &cq__root_queues[3]};
    cq__item_roots_register(roots);
}

CQ__FORK_REGISTER(queue, CQ__FORK_RANK_QUEUE, NULL, NULL, cq__queue_fork_child)
