/*
 * Dispatch queues: the list, the 64-bit state word, and how a queue gets onto its target.
 *
 * State word (all transitions are CAS loops or single RMWs on `state`):
 *   LOCK          drain ownership: held by the drainer, an uncontended sync / barrier sync, or a
 *                 sync waiter the drainer handed the queue to. Exclusive.
 *   ENQUEUED      the queue sits on its target (or the main thread's run loop), a drain is due.
 *                 With LOCK (serial queues only): a sync waiter (or a group waiter) took the
 *                 queue to run the items ahead of it (see sync_take_queued in queue_sync.c);
 *                 the drain due, when it comes, only clears ENQUEUED, and an unlock before it
 *                 leaves the rest to it instead of putting the queue on its target again.
 *   DIRTY         items may be in the list that nobody is responsible for yet: pushed while the
 *                 queue was locked (the unlocker re-checks) or suspended (resume enqueues).
 *   BARRIER_WAIT  concurrent only: the drainer found a barrier while tasks were in flight; the
 *                 task that brings the width to zero enqueues the queue again.
 *   WIDTH         concurrent only: tasks of this queue handed to the pool (bits 8-43).
 *   SUSPEND       suspend count (bits 44-63).
 * Invariant: once a pusher's wake-up has completed, a non-empty list implies one of LOCK,
 * ENQUEUED, DIRTY or BARRIER_WAIT.
 *
 * Internal references: the ENQUEUED state (and the LOCK that the drainer turns it into, and
 * BARRIER_WAIT) holds one; WIDTH > 0 holds one. Each is taken on the transition into the
 * state and dropped on the transition out, so the common paths touch no counter.
 */
#ifndef CQ_QUEUE_INTERNAL_H
#define CQ_QUEUE_INTERNAL_H

#include <cqueuecore/queue.h>
#include <pthread.h>

#include "platform/atomic_internal.h"
#include "platform/fork_internal.h"
#include "platform/object_internal.h"
#include "platform/probes_internal.h"
#include "platform/rcu_internal.h"
#include "scheduler/item_internal.h"
#include "scheduler/thread_internal.h"

#define CQ__QS_LOCK 0x1ull
#define CQ__QS_ENQUEUED 0x2ull
#define CQ__QS_DIRTY 0x4ull
#define CQ__QS_BARRIER_WAIT 0x8ull
#define CQ__QS_WIDTH_SHIFT 8
#define CQ__QS_WIDTH_ONE (1ull << CQ__QS_WIDTH_SHIFT)
#define CQ__QS_WIDTH_MASK (((1ull << 36) - 1) << CQ__QS_WIDTH_SHIFT)
#define CQ__QS_WIDTH_MAX (1ull << 35) /* the fast path stops here; the field holds 2^36 - 1 */
#define CQ__QS_SUSPEND_ONE (1ull << 44)
#define CQ__QS_SUSPEND_MASK (0xfffffull << 44)

#define CQ__QS_WIDTH(s) (((s)&CQ__QS_WIDTH_MASK) >> CQ__QS_WIDTH_SHIFT)

/* Tasks a drain runs before it lets other queues have the worker. */
#define CQ__DRAIN_BUDGET 128u

enum cq__queue_kind {
    CQ__QUEUE_SERIAL = 1,
    CQ__QUEUE_CONCURRENT,
    CQ__QUEUE_ROOT, /* a global queue: the pool at one priority */
    CQ__QUEUE_MAIN,
};

struct cq__specifics;

/* `q` becomes the target of a queue or source (see `targeted`). */
#define cq__queue_mark_targeted(q) cq__store(&(q)->targeted, true, relaxed)

struct cq_queue_s {
    struct cq__object obj;
    struct cq__item item; /* how this queue waits on its target */
    uint8_t kind;         /* enum cq__queue_kind, written once */
    uint8_t prio;         /* root queues: pool priority index */
    bool retargeted;      /* written by a retarget barrier, read by its drain */
    /* Some queue or source has had it as its target: a walk up a chain under the RCU read lock
     * may reach it, so its memory goes after a grace period (queue_free). Set before the link
     * is published; read when the last reference goes, after every link to it has been. */
    _Atomic bool targeted;
    uint32_t fork_gen; /* cq__fork_gen it was created or adopted under */
    char *label;       /* written once */
    /* Changed only by a retarget barrier (holding LOCK). Read by whoever holds the queue (its
     * LOCK, one unit of its width, or its ENQUEUED state), which makes the chain below a held
     * queue stable; any other reader walks it under an RCU read lock. */
    struct cq_queue_s *_Atomic target;
    struct rcu_head rcu;                     /* deferred free (see queue_free) */
    struct cq__specifics *_Atomic specifics; /* RCU-protected, see queue_specific.c */
    struct cq_queue_s *reg_prev, *reg_next;  /* live-queue list (queue_registry.c), its lock */
    /* producers */
    struct cq__item *_Atomic tail CQ_CACHE_ALIGNED;
    _Atomic uint64_t pushed;       /* items ever put in the list (introspection: queued) */
    _Atomic uint32_t sync_waiters; /* syncs waiting for the queue (see sync_acquire) */
    /* the drainer, and producers on empty->non-empty transitions */
    _Atomic uint64_t state CQ_CACHE_ALIGNED;
    struct cq__item *_Atomic head;
    /* The target q was last put on (ENQUEUED): written by whoever set ENQUEUED, read by the
     * drain that item starts, holding LOCK (the push and pop order the two; relaxed atomic
     * because a sync waiter's unlock may set ENQUEUED again after a drain it never
     * synchronised with cleared it). Differs from `target` only when q, held by a sync waiter
     * while that drain was due, was retargeted meanwhile (see cq__queue_drain). */
    struct cq_queue_s *_Atomic enq_target;
    _Atomic uint64_t popped; /* items ever taken from the list; written by the drainer only */
    /* Where cq__queue_pass_to_waiter's walk stopped (the first sync waiter, or the last item
     * it saw), and that item's place among all items ever pushed: it is still in the list
     * while pass_index >= popped (the head's place is `popped`). The LOCK holder only. */
    struct cq__item *pass_item;
    uint64_t pass_index;
};

/* Counts for introspection's `queued` (pushed - popped, read relaxed: a snapshot). */
CQ_INLINE void cq__queue_count_push(struct cq_queue_s *q)
{
    cq__add(&q->pushed, 1, relaxed);
}

/* Only the list's consumer (the LOCK or drain owner) calls it: a plain increment. */
CQ_INLINE void cq__queue_count_pop(struct cq_queue_s *q)
{
    cq__store(&q->popped, cq__load(&q->popped, relaxed) + 1, relaxed);
}

/* Items cq__queue_pass_to_waiter has walked past, ever (relaxed, added once per call): what a
 * drain's pauses cost in walks of its list; test_sync_behind_backlog reads it. */
extern _Atomic uint64_t cq__queue_pass_walked;

extern struct cq_queue_s cq__root_queues[4];
extern struct cq_queue_s cq__main_queue;

/* Not a queue (aborts), or a queue from before a fork() first used in the child (adopts it or
 * aborts, see fork.c). */
extern const struct cq__class cq__queue_class; /* queue.c */
CQ_INTERNAL void cq__queue_check_slow(cq_queue_t q, const char *call);

CQ_INLINE struct cq_queue_s *cq__queue_check(cq_queue_t q, const char *call)
{
    if (cq__unlikely(!cq__object_is(q, &cq__queue_class) || q->fork_gen != cq__fork_gen)) {
        cq__queue_check_slow(q, call);
    }
    return q;
}

/* acquire: pairs with the release store of a retarget; the target's fields are visible */
CQ_INLINE struct cq_queue_s *cq__queue_target(struct cq_queue_s *q)
{
    return cq__load(&q->target, acquire);
}

CQ_INLINE bool cq__queue_is_exclusive(const struct cq_queue_s *q)
{
    return q->kind == CQ__QUEUE_SERIAL || q->kind == CQ__QUEUE_MAIN;
}

CQ_INLINE bool cq__queue_list_empty(struct cq_queue_s *q)
{
    return cq__load(&q->head, relaxed) == NULL && cq__load(&q->tail, relaxed) == NULL;
}

/* Pushes an item (task, queue, waiter) onto q; flags: CQ__PUSH_* (pool_internal.h). */
CQ_INTERNAL void cq__queue_push(struct cq_queue_s *q, struct cq__item *it, unsigned flags);

/* After a push found q's list empty: get q drained (set ENQUEUED and push it to its target),
 * or leave a note (DIRTY) for whoever holds it. */
CQ_INTERNAL void cq__queue_wakeup(struct cq_queue_s *q, unsigned flags);
/* A sync waiter's wake-up (queue_sync.c): as cq__queue_wakeup, but an idle q is taken (LOCK;
 * true: the caller holds no reference for it yet) instead of put on its target. */
CQ_INTERNAL bool cq__queue_wakeup_or_take(struct cq_queue_s *q);

/* Puts q (ENQUEUED, holding its reference) on its target or the main run loop. */
CQ_INTERNAL void cq__queue_enqueue_on_target(struct cq_queue_s *q, unsigned flags);

/* Releases LOCK; re-enqueues q if items are waiting. `drain_ref`: the caller holds the
 * reference of the ENQUEUED/LOCK state (a drainer, or a sync waiter it handed the queue to). */
CQ_INTERNAL void cq__queue_unlock(struct cq_queue_s *q, bool drain_ref);
/* As cq__queue_unlock(q, true) by a drainer that stops (budget spent, suspended, or items came
 * as it finished): a re-enqueue is a yield (CQ__PUSH_YIELD). */
CQ_INTERNAL void cq__queue_unlock_drained(struct cq_queue_s *q);

/* Takes one unit of width on a concurrent queue if nothing is queued; false otherwise. */
CQ_INTERNAL bool cq__queue_try_acquire_width(struct cq_queue_s *q);
CQ_INTERNAL void cq__queue_release_width(struct cq_queue_s *q);

/*
 * Takes LOCK if the queue is completely idle (nothing queued, running or suspended). The list
 * must be empty too, not only the state word: the first push onto an empty list announces it
 * (wake-up) only after its exchange, and pushes behind it do not announce themselves at all, so
 * the caller's own earlier async may sit in a list whose state word still reads idle.
 */
CQ_INLINE bool cq__queue_try_lock(struct cq_queue_s *q)
{
    uint64_t s = 0;
    /* acquire: pairs with the release in cq__queue_unlock / width release of the last owner */
    return cq__mpsc_empty(&q->tail) && cq__cas(&q->state, &s, CQ__QS_LOCK, acquire);
}

/*
 * Releases a LOCK taken by cq__queue_try_lock when nothing happened meanwhile (one CAS);
 * false if something did (DIRTY, a suspension): then call cq__queue_unlock. A push between
 * its exchange and its wake-up sees the idle word afterwards and enqueues the queue itself.
 */
CQ_INLINE bool cq__queue_try_unlock(struct cq_queue_s *q)
{
    uint64_t s = CQ__QS_LOCK;
    /* release: the function's effects happen-before the next owner's acquire; pairs with the next
     * owner's acquire (drain start, cq_sync_f's CAS) */
    return cq__cas(&q->state, &s, 0, release);
}

/* The priority index (CQ__PRIO_*) of the global queue at the end of q's target chain (for
 * probes: walks the chain). */
CQ_INTERNAL unsigned cq__queue_root_prio(struct cq_queue_s *q);

/* Fires the task_enqueue probe for `it` submitted to q (when a tracer is attached). */
#define CQ__PROBE_ENQUEUE(q, it) CQ_PROBE3(task_enqueue, (q)->label, (it), cq__queue_root_prio(q))

/* Levels of a target chain a sync waiter drains on its thread (queue_sync.c). */
#define CQ__HELP_CHAIN_DEPTH 8u

/* A sync waiter at c[0] draining its chain c[0] -> c[1] -> ... -> c[n] (cq__tls.help_stops):
 * the drain of c[i] (i >= 1) stops after the item of c[i - 1], the one that leads to the
 * waiter's own queue. */
struct cq__help_stops {
    struct cq_queue_s *queue[CQ__HELP_CHAIN_DEPTH + 1];
    uint32_t n;
};

/* Whether the drain of q, a level of the chain in cq__tls.help_stops, has just run the item
 * that leads to the helping waiter's queue (serial_drain, queue_drain.c). */
CQ_INLINE bool cq__help_stop_at(const struct cq__help_stops *h, struct cq_queue_s *q,
                                const struct cq__item *it)
{
    for (uint32_t i = 1; i <= h->n; i++) {
        if (h->queue[i] == q) {
            return it == &h->queue[i - 1]->item;
        }
    }
    return false;
}

/* A waiter that may run a queue's work but is not told when it comes due (a sync through a
 * chain, a group wait behind the queue's holder) looks again after CQ__HELP_POLL_FIRST_NS, then
 * after twice the wait before, up to CQ__HELP_POLL_MAX_NS. */
#define CQ__HELP_POLL_FIRST_NS 1000000ll
#define CQ__HELP_POLL_MAX_NS 64000000ll
CQ_INLINE int64_t cq__help_poll_next(int64_t ns)
{
    return ns * 2 < CQ__HELP_POLL_MAX_NS ? ns * 2 : CQ__HELP_POLL_MAX_NS;
}

/* cq_group_wait's help (queue_drain.c): serial queue q (the caller holds a reference) got
 * group work from the waiting thread. If q is due for a drain and not
 * held, takes it beside ENQUEUED and runs its items up to the last one `mine` accepts (they
 * run before that one in any case), then lets it go. Returns CQ__HELP_RAN if it ran any,
 * CQ__HELP_HELD if another thread holds q (and so moves it on), else CQ__HELP_NONE. */
enum cq__help_result { CQ__HELP_NONE, CQ__HELP_RAN, CQ__HELP_HELD };
CQ_INTERNAL enum cq__help_result
cq__queue_help_group(struct cq_queue_s *q, bool (*mine)(struct cq__item *, void *), void *arg);

/* Drains q (called for a CQ__ITEM_QUEUE item by whoever popped it). */
CQ_INTERNAL void cq__queue_drain(struct cq_queue_s *q);
/* The holder of concurrent queue q (its LOCK and the reference LOCK holds), a sync about to let
 * q go, lets in the sync waiters at the head of the list as a drain would (queue_drain.c).
 * Returns true if q is no longer the caller's (handed to a barrier sync, or waiting for its
 * readers to let a barrier sync in); false: the caller unlocks q. */
CQ_INTERNAL bool cq__queue_sync_pass_on(struct cq_queue_s *q);
/* q, held by the caller (its LOCK and the reference LOCK holds; its list's one consumer) and
 * about to go onto its target for a drain of `it`, its first item: hands q to the first sync
 * waiter in its list to run that drain itself if it can (true: q is no longer the caller's),
 * else nudges that waiter (false: the caller unlocks q). queue_drain.c. */
CQ_INTERNAL bool cq__queue_pass_to_waiter(struct cq_queue_s *q, struct cq__item *it);
/* The sync waiter `mine`, handed q with drain_first, runs the items ahead of it. Returns true
 * if it now holds q; false if it let q go (suspended, retargeted: its event re-armed first)
 * and must wait to be handed q again. queue_drain.c. */
CQ_INTERNAL bool cq__queue_sync_drain_first(struct cq_queue_s *q, struct cq__item *mine);
/* queue_resume's hand-off to sync waiters (queue_sync.c): `locked` if the resume took q
 * (LOCK, no reference yet) instead of putting it on its target; else q is due for a drain. */
CQ_INTERNAL void cq__queue_let_waiters_in(struct cq_queue_s *q, bool locked);
/* Serial queue q, on a global queue, taken by a sync waiter on its thread (LOCK beside
 * ENQUEUED, with LOCK's own reference): drains it there as a worker would, up to the item
 * `stop` (its own chain's: compared, never followed), and lets it go (queue_drain.c). */
CQ_INTERNAL void cq__queue_drain_taken(struct cq_queue_s *q, const struct cq__item *stop);
/* Hands an item that now holds one unit of q's width to q's target (queue.c; the concurrent
 * drain uses it). */
CQ_INTERNAL void cq__queue_redirect(struct cq_queue_s *q, struct cq__item *it, unsigned flags);

/* cq_sync_f, with `call` naming the public call in misuse messages (cq_apply_f). */
CQ_INTERNAL void cq__sync_named(cq_queue_t q, void *ctx, cq_function_t fn, const char *call);

/* queue_main.c: the main thread's run loop. wakeup marks the main queue runnable;
 * drain_pending drains it if it was (main thread only); wait sleeps until the next wakeup. */
CQ_INTERNAL void cq__main_wakeup(void);
CQ_INTERNAL bool cq__main_drain_pending(void);
CQ_INTERNAL void cq__main_fork_child(void); /* the run loop starts over */
CQ_INTERNAL void cq__main_wait(void);

/* queue_registry.c: the live-queue list for introspection (create / free, not the hot path). */
CQ_INTERNAL void cq__queue_registry_add(struct cq_queue_s *q);
CQ_INTERNAL void cq__queue_registry_remove(struct cq_queue_s *q);
struct cq_introspect_queue;
/* Calls fn for the global queues, the main queue and every live created queue. */
CQ_INTERNAL void cq__queue_introspect(void (*fn)(void *ctx, const struct cq_introspect_queue *q),
                                      void *ctx);

/* queue_specific.c */
CQ_INTERNAL void cq__queue_specifics_dispose(struct cq_queue_s *q);

/* The finalizer queue of an object that is not a queue (groups, semaphores: for them, as in
 * libdispatch, cq_set_target_queue only says where the finalizer runs). `slot` is the object's
 * field, NULL until set. cq__finalizer_target_set (the class's set_target hook) keeps an
 * internal reference to `target` and gives back the old one. cq__finalizer_run, from the
 * object's dispose with the slot's value (loaded relaxed: the last reference drop, acq_rel,
 * orders every setter before it): schedules fin(ctx) on that queue (the default global queue
 * if none; nothing without a context or a finalizer, as libdispatch) and gives back the slot's
 * reference. */
CQ_INTERNAL void cq__finalizer_target_set(struct cq_queue_s *_Atomic *slot,
                                          struct cq_queue_s *target);
CQ_INTERNAL void cq__finalizer_run(struct cq_queue_s *target, void *ctx, cq_function_t fin);

/* Frames: is the calling thread running on q (or on a queue targeting it)? */
CQ_INTERNAL bool cq__queue_is_current(struct cq_queue_s *q);

/* fork(): queue_specific.c and queue.c register these (platform/fork_internal.h). */
CQ__FORK_HOOKS(specific)
/* The main queue starts over unless the forking thread was the main thread. */
CQ_INTERNAL void cq__queue_fork_child(void);

#endif /* CQ_QUEUE_INTERNAL_H */
