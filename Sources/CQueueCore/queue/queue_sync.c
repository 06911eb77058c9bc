/*
 * cq_sync_f and cq_barrier_sync_f.
 *
 * A sync acquires every non-root queue along the target chain (the queue itself exclusively
 * if it is serial or the call is a barrier; a concurrent queue with one unit of width), runs
 * the function inline on the calling thread with a frame for each level, and releases them.
 * Uncontended, each level costs one CAS to take and one to give back, with no allocation.
 * A busy level is waited for with a waiter item in its list: the drainer hands the level over
 * in FIFO order. A chain that reaches the main queue from another thread is the exception:
 * only the main thread may run it, so the function is sent there and the caller waits for it
 * (holding the levels above, which the main thread shows as current while it runs).
 */
#include <stdio.h>

#include "platform/diag_internal.h"
#include "platform/parker_internal.h"
#include "platform/rcu_internal.h"
#include "queue/queue_internal.h"
#include "queue/sync_internal.h"
#include "scheduler/pool_internal.h"

/* Aborts if acquiring q (exclusively or not) would wait for the calling thread itself. */
static void check_deadlock(struct cq_queue_s *q, bool exclusive, struct cq_queue_s *requested,
                           const char *call)
{
    for (struct cq__frame *f = cq__tls.frame; f; f = f->prev) {
        if (f->queue == q && (f->exclusive || exclusive)) {
            if (q == requested) {
                cq__crash("%s: deadlock: %s is already being run by the calling thread "
                          "(sync onto the current queue)",
                          call, CQ_DESCRIBE(q));
            }
            char req[160];
            cq__crash("%s: deadlock: %s targets %s, which the calling thread is already running",
                      call, cq__describe(requested, req, sizeof req), CQ_DESCRIBE(q));
        }
    }
}

/* Waits on the main thread for a waiter in the main queue: drains the main queue meanwhile
 * (nobody else can). */
static void wait_on_main_thread(struct cq__sync_waiter *w)
{
    /* pairs with the release exchange in cq__event_signal */
    while (cq__load(&w->event.state, acquire) != CQ__EVENT_SIGNALLED) {
        if (!cq__main_drain_pending()) {
            cq__main_wait();
        }
    }
}

static bool sync_hand_to_next_waiter(struct cq_queue_s *q);
static void sync_let_go(struct cq_queue_s *q);

/*
 * A sync waiter's push found q's list empty, and q is neither held nor due for a drain: its
 * holder let it go after this waiter's attempt to take it failed, or (a concurrent queue) this
 * is a barrier sync waiting for the syncs inside. Take q as a drain would and let its first
 * waiters in (this one, unless another pushed first), instead of putting q on its target:
 * a drain there needs a free worker, and a process whose threads all wait in syncs (at the
 * thread limit, or with every worker waiting behind another waiter: cq__event_wait_behind)
 * has none. Tasks that took turns at a queue through sync hung there for good. Otherwise (q
 * held or due for a drain, suspended, the main queue) as any push.
 */
static void sync_waiter_wakeup(struct cq_queue_s *q)
{
    if (q->kind != CQ__QUEUE_SERIAL && q->kind != CQ__QUEUE_CONCURRENT) { /* not the main queue */
        cq__queue_wakeup(q, CQ__PUSH_TAIL);
        return;
    }
    /* One CAS decides: a holder that lets q go between a look at the state and the wake-up's
     * CAS left q idle, and the wake-up put it on its target (a concurrent queue's readers at
     * the thread limit then hung: 1 run in 150). */
    if (cq__queue_wakeup_or_take(q)) {
        cq__ref_retain(&q->obj); /* LOCK's reference, as a drain holds it */
        sync_let_go(q);
    }
}

/*
 * A sync waiter (its item pushed) found serial queue q due for a drain on
 * its target and not held: takes q, leaving ENQUEUED set (see queue_internal.h), and hands it
 * to the first sync waiter in the list to run the items ahead of it, itself or one that came
 * before, as a holder letting q go would (cq__queue_pass_to_waiter). Waiting for that drain
 * needs a free worker: tasks that each queue work on a serial queue and then sync onto it
 * (the commonest way to flush a queue) each handed their CPU to a new thread while they waited,
 * up to the thread limit, where no worker was left and they hung for good.
 */
static void sync_take_queued(struct cq_queue_s *q)
{
    uint64_t s = cq__load(&q->state, relaxed);
    for (;;) {
        if (s & (CQ__QS_SUSPEND_MASK | CQ__QS_BARRIER_WAIT)) {
            return; /* the resume lets the waiters in */
        }
        if (s & CQ__QS_LOCK) {
            /* Held: the holder may have looked at the list before this waiter's link was
             * stored, and let q go without it (onto its target, for a worker that may never
             * come: at the thread limit with every thread in syncs). DIRTY makes it look at
             * the list again (unlock in queue.c, sync_let_go). release: this waiter's push
             * happens-before the holder's look; pairs with its acquire CAS clearing DIRTY */
            if ((s & CQ__QS_DIRTY) || cq__cas_weak(&q->state, &s, s | CQ__QS_DIRTY, release)) {
                return;
            }
            continue;
        }
        if (!(s & CQ__QS_ENQUEUED)) {
            /* Idle with this waiter in the list: a push ahead of it has not set ENQUEUED yet
             * (it will find LOCK and set DIRTY). Take q as sync_waiter_wakeup does. acquire:
             * pairs with the previous owner's release (its unlock) */
            if (cq__cas_weak(&q->state, &s, (s & ~CQ__QS_DIRTY) | CQ__QS_LOCK, acquire)) {
                cq__ref_retain(&q->obj); /* LOCK's reference, as a drain holds it */
                sync_let_go(q);
                return;
            }
            continue;
        }
        /* acquire: pairs with the previous owner's release (its unlock) */
        if (cq__cas_weak(&q->state, &s, s | CQ__QS_LOCK, acquire)) {
            break;
        }
    }
    cq__ref_retain(&q->obj); /* LOCK's own: ENQUEUED keeps the drain's */
    if (!cq__queue_pass_to_waiter(q, cq__mpsc_peek(&q->tail, &q->head))) {
        cq__queue_unlock(q, true);
    }
}

/*
 * q was resumed with sync waiters in its list (queue.c: queue_resume). `locked`: the resume
 * took q, as a drain would, instead of putting it on its target (the caller holds no reference
 * for it yet); otherwise q was due for a drain when it was suspended, and still is. Either way
 * the waiters are let in, or handed the items ahead of them, here: a drain needs a free
 * worker, and syncs that wait behind one another keep their workers' CPUs. A queue suspended
 * and resumed every few milliseconds under sync traffic ran only when the monitor added a
 * worker, 2 ms or more after each resume: 48 tasks doing async then sync took 11 s in 2 of 8
 * runs (libdispatch 2.5-3 s).
 */
void cq__queue_let_waiters_in(struct cq_queue_s *q, bool locked)
{
    if (locked) {
        cq__ref_retain(&q->obj); /* LOCK's reference, as a drain holds it */
        sync_let_go(q);
    } else if (q->kind == CQ__QUEUE_SERIAL) {
        sync_take_queued(q);
    }
}

/*
 * A sync waiter at serial queue q on another serial queue: if q is due for a drain in its
 * target's list, and so on up to a queue t due for a drain on a global queue and not held, it
 * takes t beside ENQUEUED (as sync_take_queued does) and drains t on its thread as a worker
 * would: q's turn comes inside (nested), and q's items run up to the first waiter, which q is
 * handed to. Tasks doing async then sync onto q1 and onto q2, with q1 targeting q2, left both
 * queues waiting for a drain queued behind those very tasks while every worker waited in them:
 * they stalled for good (libdispatch: 0.2 s).
 *
 * Each level's drain stops after the item of the level below it (chain->queue[0] is q,
 * chain->queue[n] is t; cq__tls.help_stops for the levels nested in t's drain). What it runs
 * then comes before this waiter's own block in any case: at q, the items ahead of it; at a
 * level above, items pushed before this thread's sync reaches that level, which it does only
 * once it holds the level below. Going on past the item, a drain would run items that come
 * after that, and one that syncs onto a queue this thread holds (the sync made from a queue's
 * work) would wait for this very thread. Without the stops such a waiter helped chains of two
 * only; a sync from a queue's work onto a chain of three waited for the monitor's additions of
 * threads: 30 tasks took 17-20 s or hung (libdispatch 0.02 s).
 */
static struct cq_queue_s *help_chain_take(struct cq_queue_s *q, bool *held,
                                          struct cq__help_stops *chain)
{
    struct cq_queue_s *c = q;
    chain->n = 0;
    for (;;) {
        uint64_t s = cq__load(&c->state, relaxed);
        if (!(s & CQ__QS_ENQUEUED) || (s & (CQ__QS_LOCK | CQ__QS_SUSPEND_MASK))) {
            *held = (s & CQ__QS_LOCK) && !(s & CQ__QS_SUSPEND_MASK);
            return NULL; /* not due for a drain, or someone sees to it */
        }
        chain->queue[chain->n] = c;
        struct cq_queue_s *t = cq__queue_target(c); /* c is not held: a hint, checked below */
        if (t->kind == CQ__QUEUE_ROOT) {
            break;
        }
        if (t->kind != CQ__QUEUE_SERIAL || chain->n == CQ__HELP_CHAIN_DEPTH) {
            return NULL;
        }
        chain->n++;
        c = t;
    }
    if (c == q) {
        return NULL; /* q on a global queue: sync_take_queued's */
    }
    uint64_t s = cq__load(&c->state, relaxed);
    do {
        if (!(s & CQ__QS_ENQUEUED) || (s & (CQ__QS_LOCK | CQ__QS_SUSPEND_MASK))) {
            *held = (s & CQ__QS_LOCK) && !(s & CQ__QS_SUSPEND_MASK);
            return NULL;
        }
        /* acquire: pairs with the previous owner's release (its unlock) */
    } while (!cq__cas_weak(&c->state, &s, s | CQ__QS_LOCK, acquire));
    cq__ref_retain(&c->obj); /* LOCK's own (ENQUEUED, set, keeps c alive meanwhile) */
    return c;
}

/* Returns true if it found a queue of the chain held by another thread, which moves the chain
 * on (the caller's wait is behind it). */
static bool sync_help_chain(struct cq_queue_s *q)
{
    bool held = false;
    struct cq__help_stops chain;
    cq__rcu_read_lock(); /* the queues above q are not held: one may be freed meanwhile */
    struct cq_queue_s *c = help_chain_take(q, &held, &chain);
    cq__rcu_read_unlock();
    if (c != NULL) {
        /* the levels between q and c: compared, never followed (queue_internal.h) */
        const struct cq__help_stops *outer = cq__tls.help_stops;
        cq__tls.help_stops = &chain;
        cq__queue_drain_taken(c, &chain.queue[chain.n - 1]->item);
        cq__tls.help_stops = outer;
    }
    return held;
}

/* Takes q for a sync; returns whether the caller now holds the drain's reference. Any waiter
 * may run the items ahead of it (cq__queue_pass_to_waiter): they run before its own block in
 * any case, so an item that needs a queue this thread holds would wait for it on any thread. */
static bool sync_acquire(struct cq_queue_s *q, bool exclusive, bool barrier)
{
    if (exclusive ? cq__queue_try_lock(q) : cq__queue_try_acquire_width(q)) {
        return false;
    }
    struct cq__sync_waiter w;
    cq__item_init(&w.item, CQ__ITEM_SYNC_WAITER, barrier ? CQ__ITEM_BARRIER : 0);
    cq__event_init(&w.event);
    w.drain_ref = false;
    w.drain_first = false;
    w.can_drain = q->kind == CQ__QUEUE_SERIAL && cq__tls.help_depth < CQ__HELP_DEPTH_MAX;
    bool others = cq__add(&q->sync_waiters, 1, relaxed) != 0;
    cq__queue_count_push(q);
    if (cq__mpsc_push(&q->tail, &q->head, &w.item, &w.item)) {
        sync_waiter_wakeup(q);
    }
    /* q's target is fixed only while q is held (a hint for whether to look for a chain); an
     * old one may be freed meanwhile */
    bool chain = false;
    if (w.can_drain) {
        cq__rcu_read_lock();
        chain = cq__queue_target(q)->kind != CQ__QUEUE_ROOT;
        cq__rcu_read_unlock();
    }
    bool chain_held = false;
    if (chain) {
        chain_held = sync_help_chain(q);
    } else if (w.can_drain) {
        sync_take_queued(q);
    }
    /* Another sync waits for q already and q is held (by a drain or a sync, also one that took
     * q while its drain was due, LOCK beside ENQUEUED, or its readers let a barrier in when
     * they leave): this waiter waits behind the other and keeps its
     * worker's CPU (cq__event_wait_behind); the holder moves things on without a new thread,
     * or nudges the first waiter when it puts q on its target (sync_let_go). A queue due for
     * a drain needs a worker: then, as the first waiter, the wait hands its CPU to a spare
     * while work waits. */
    uint64_t s = cq__load(&q->state, relaxed);
    bool behind = others && ((s & (CQ__QS_LOCK | CQ__QS_BARRIER_WAIT)) || chain_held) &&
                  !(s & CQ__QS_SUSPEND_MASK);
    if (q == &cq__main_queue && cq__is_main_thread()) {
        wait_on_main_thread(&w);
    } else {
        int64_t poll_ns = CQ__HELP_POLL_FIRST_NS;
        for (;;) {
            if (chain) {
                /* looks again now and then: nothing tells a waiter when the chain above it
                 * comes due for a drain that no worker will run */
                if (!cq__event_wait_until(&w.event, behind, cq__now_ns() + (uint64_t)poll_ns)) {
                    poll_ns = cq__help_poll_next(poll_ns);
                    sync_help_chain(q);
                    continue;
                }
            } else if (behind) {
                /* Keeps the proc while q is held; looks again now and then. A holder that let
                 * q go onto its target (a task at the head of the list: its drain needs a
                 * worker) nudges only the first waiter, and with every proc kept by waiters
                 * behind it, only the monitor's additions, up to a second apart, brought one:
                 * syncs and barrier syncs onto a concurrent queue and a serial queue on it,
                 * beside tasks queued on both, took 20 s in 1 of 8 runs. */
                if (!cq__event_wait_until(&w.event, true, cq__now_ns() + (uint64_t)poll_ns)) {
                    poll_ns = cq__help_poll_next(poll_ns);
                    s = cq__load(&q->state, relaxed);
                    behind =
                        (s & (CQ__QS_LOCK | CQ__QS_BARRIER_WAIT)) && !(s & CQ__QS_SUSPEND_MASK);
                    continue;
                }
            } else {
                cq__event_wait(&w.event);
            }
            /* Handed q to run the items ahead of this waiter first (cq__queue_pass_to_waiter):
             * when they have run it holds q, unless it had to let q go (its event re-armed). */
            if (!w.drain_first || cq__queue_sync_drain_first(q, &w.item)) {
                break;
            }
        }
    }
    cq__sub(&q->sync_waiters, 1, relaxed); /* the caller's reference keeps q */
    return w.drain_ref;
}

/*
 * A sync leaving a serial queue whose next item is another thread's sync waiter hands the
 * queue to that waiter itself, as a drain would (LOCK and a reference, drain_ref), instead of
 * unlocking it: unlocking puts the queue on its target, so each hand-off took a worker's wake-up
 * and drain before the waiter's own, and a queue released by a worker in the middle of a task
 * waited in that worker's LIFO slot. With threads contending for a serial queue through sync
 * on a busy machine (two CPU hogs), every hand-off then waited for CPUs twice: 200,000 syncs
 * from 4 apply iterations took 0.3-16 s, or more than 30 s, where they take 10 ms
 * (test_queue_sync.c: test_sync_handoff_between_threads). Returns false (nothing done) if the
 * queue is suspended or its next item is anything else. The caller holds LOCK's reference,
 * which goes to the waiter.
 */
static bool sync_hand_to_next_waiter(struct cq_queue_s *q)
{
    if (q->kind != CQ__QUEUE_SERIAL || cq__queue_list_empty(q) ||
        (cq__load(&q->state, relaxed) & CQ__QS_SUSPEND_MASK)) {
        return false;
    }
    /* Holding LOCK makes this thread the list's one consumer. */
    struct cq__item *it = cq__mpsc_peek(&q->tail, &q->head);
    if (it == NULL || it->kind != CQ__ITEM_SYNC_WAITER) {
        return false;
    }
    cq__mpsc_pop(&q->tail, &q->head);
    cq__queue_count_pop(q);
    struct cq__sync_waiter *w = (struct cq__sync_waiter *)it;
    w->drain_ref = true;
    cq__event_signal(&w->event); /* release: this thread's section happens-before the waiter's */
    return true;
}

/*
 * A sync lets q go (holding its LOCK and the reference LOCK holds): hands q to the sync
 * waiters first in its list as a drain would (a serial queue's next waiter; a concurrent
 * queue's readers, then its next barrier sync), and unlocks it only when its list is empty or
 * starts with something a drain must run. Unlocking with a waiter first in the list put q on
 * its target, whose drain needs a free worker, which a process whose threads all wait in syncs
 * does not have; a waiter pushing itself while this runs (setting DIRTY) is let in here.
 */
static void sync_let_go(struct cq_queue_s *q)
{
    while (q->kind == CQ__QUEUE_SERIAL || q->kind == CQ__QUEUE_CONCURRENT) {
        bool passed =
            q->kind == CQ__QUEUE_SERIAL ? sync_hand_to_next_waiter(q) : cq__queue_sync_pass_on(q);
        if (passed) {
            return;
        }
        uint64_t s = cq__load(&q->state, relaxed);
        if (s & CQ__QS_SUSPEND_MASK) {
            break; /* the resume lets the waiters in (cq__queue_let_waiters_in) */
        }
        if (s & CQ__QS_DIRTY) {
            /* acquire: pairs with the pusher's release when it set DIRTY */
            (void)cq__cas_weak(&q->state, &s, s & ~CQ__QS_DIRTY, acquire);
            continue; /* look at the list again */
        }
        if (!cq__queue_list_empty(q)) {
            struct cq__item *it = cq__mpsc_peek(&q->tail, &q->head);
            if (it != NULL && it->kind == CQ__ITEM_SYNC_WAITER) {
                continue; /* a waiter pushed since the hand-off looked */
            }
            if (cq__queue_pass_to_waiter(q, it)) {
                return;
            }
            break; /* work for a drain */
        }
        /* Empty and clean: let go. A waiter that pushes after this finds q free (see
         * sync_waiter_wakeup); one that pushed before set DIRTY, failing the CAS.
         * release: everything done under the lock happens-before the next owner's acquire.
         * acquire: with ENQUEUED still set (a sync waiter took q while its drain was due), the
         * drain that clears it may have run meanwhile; its use of q's item happens-before
         * whoever puts the item on a list next, which reads this CAS's value. Pairs with the
         * drain start's acq_rel CAS (cq__queue_drain) and the next owner's acquire */
        if (cq__cas(&q->state, &s, s & ~CQ__QS_LOCK, acq_rel)) {
            cq__ref_release(&q->obj);
            return;
        }
    }
    cq__queue_unlock(q, true);
}

static void sync_release(struct cq_queue_s *q, bool exclusive, bool drain_ref)
{
    if (exclusive) {
        if (!drain_ref) {
            if (cq__queue_try_unlock(q)) {
                return;
            }
            cq__ref_retain(&q->obj); /* as a drain holds LOCK */
        }
        sync_let_go(q);
    } else {
        cq__queue_release_width(q);
    }
}

/*
 * Sends the function to the main thread through q (the main queue, or a queue whose target is
 * the main queue) and waits for it to have run. top..bottom: frames of the levels the caller
 * holds, which the main thread shows while it runs the function.
 */
static void sync_on_main_thread(struct cq_queue_s *q, bool barrier, void *ctx, cq_function_t fn,
                                struct cq__frame *top, struct cq__frame *bottom)
{
    struct cq__sync_waiter w;
    cq__item_init(&w.item, CQ__ITEM_EXEC_WAITER, barrier ? CQ__ITEM_BARRIER : 0);
    cq__event_init(&w.event);
    w.function = fn;
    w.context = ctx;
    w.frames_top = top;
    w.frames_bottom = bottom;
    cq__queue_push(q, &w.item, CQ__PUSH_TAIL);
    cq__event_wait(&w.event);
}

/*
 * Acquires q, then recurses into its target; the innermost level links the frames (each
 * level's frame on its own stack, the requested queue on top) and runs the function. Holding q
 * keeps q's target fixed, so the chain is read one held level at a time. A chain that reaches
 * the main queue from another thread ends there: the main thread runs the function.
 */
static void sync_level(struct cq_queue_s *q, bool barrier, void *ctx, cq_function_t fn,
                       struct cq_queue_s *requested, const char *call, struct cq__frame *top,
                       struct cq__frame *upper)
{
    bool exclusive = barrier || cq__queue_is_exclusive(q);
    check_deadlock(q, exclusive, requested, call);
    bool drain_ref = sync_acquire(q, exclusive, barrier);
    struct cq__frame f = {.queue = q, .exclusive = exclusive, .prev = NULL};
    if (upper) {
        upper->prev = &f;
    } else {
        top = &f;
    }
    struct cq_queue_s *tq = cq__queue_target(q);
    if (tq == NULL || tq->kind == CQ__QUEUE_ROOT) {
        struct cq__frame *saved = cq__tls.frame;
        f.prev = saved;
        cq__tls.frame = top;
        fn(ctx);
        cq__tls.frame = saved;
    } else if (tq == &cq__main_queue && !cq__is_main_thread()) {
        sync_on_main_thread(tq, false, ctx, fn, top, &f);
    } else {
        sync_level(tq, false, ctx, fn, requested, call, top, &f);
    }
    sync_release(q, exclusive, drain_ref);
}

static CQ_NOINLINE void sync_impl(cq_queue_t q, void *ctx, cq_function_t fn, bool barrier,
                                  const char *call);

/*
 * A background worker (nice 19) syncing onto a queue whose work is not background work, from
 * a task of a global queue (holding no queue of its own): the sync is made by a worker of the
 * queue's priority, and the caller waits for it. Made here, it would hold the queue, and run
 * the items ahead of it (cq__queue_pass_to_waiter), at nice 19: with other processes busy such
 * a thread gets ~1.5 % of a CPU, and the waiters of higher priority behind it waited that much
 * longer. Syncs from tasks of all four priorities through a chain of two serial queues, beside
 * two CPU hogs, took 1.5-2.3 s, 5-21 ms a sync (libdispatch, whose threads all run at one nice
 * value: 0.15 s). An unprivileged thread cannot raise its priority for the while (Darwin's
 * QoS override); a task that holds a queue syncs on its own thread (its queues are its
 * frames, which the check for a sync onto a queue it holds needs).
 */
struct sync_elsewhere {
    cq_queue_t q;
    void *ctx;
    cq_function_t fn;
    bool barrier;
    const char *call;
};

static void sync_elsewhere_run(void *arg)
{
    struct sync_elsewhere *s = arg;
    sync_impl(s->q, s->ctx, s->fn, s->barrier, s->call);
}

/* Neither held nor due for a drain, and no sync waits for it (a look, not a promise). */
static bool queue_idle(struct cq_queue_s *q)
{
    uint64_t s = cq__load(&q->state, relaxed);
    return !(s & (CQ__QS_LOCK | CQ__QS_ENQUEUED | CQ__QS_BARRIER_WAIT | CQ__QS_SUSPEND_MASK)) &&
           cq__load(&q->sync_waiters, relaxed) == 0;
}

/* The priority of the global queue on whose worker a sync onto q by the calling thread is
 * made (see above), or -1: made here. */
static int sync_elsewhere_prio(struct cq_queue_s *q)
{
    struct cq__thread *t = cq__tls.thread;
    if (cq__likely(t == NULL || t->band != CQ__BAND_BACKGROUND) || cq__tls.help_depth != 0) {
        return -1;
    }
    for (struct cq__frame *f = cq__tls.frame; f; f = f->prev) {
        if (f->queue->kind != CQ__QUEUE_ROOT) {
            return -1;
        }
    }
    /* An idle chain: the sync takes it at once and holds it for its own call only, on this
     * thread (10 ns, not a hand-off's 0.5-1.5 us). The levels above q are not held: their
     * targets are hints, read under the RCU lock (an old target may be freed meanwhile), and
     * a queue that is busy by the time the sync gets there is waited for here. */
    bool idle = queue_idle(q);
    struct cq_queue_s *c = cq__queue_target(q); /* compared before the lock, not followed */
    if (idle && c >= cq__root_queues && c < cq__root_queues + 4) {
        return -1;
    }
    cq__rcu_read_lock();
    for (unsigned depth = 0; c->kind != CQ__QUEUE_ROOT && depth < 64; depth++) {
        if (c->kind == CQ__QUEUE_MAIN) {
            idle = false; /* the main thread runs it: made on a default worker */
            break;
        }
        idle = idle && queue_idle(c);
        c = cq__queue_target(c);
    }
    unsigned prio = c->kind == CQ__QUEUE_ROOT ? c->prio : CQ__PRIO_DEFAULT;
    cq__rcu_read_unlock();
    return idle || prio == CQ__PRIO_BACKGROUND ? -1 : (int)prio;
}

static void sync_elsewhere(struct cq_queue_s *q, void *ctx, cq_function_t fn, bool barrier,
                           const char *call, unsigned prio)
{
    struct sync_elsewhere s = {.q = q, .ctx = ctx, .fn = fn, .barrier = barrier, .call = call};
    struct cq__sync_waiter w;
    cq__item_init(&w.item, CQ__ITEM_EXEC_WAITER, 0);
    cq__event_init(&w.event);
    w.function = sync_elsewhere_run;
    w.context = &s;
    w.frames_top = NULL;
    w.frames_bottom = NULL;
    cq__queue_push(&cq__root_queues[prio], &w.item, CQ__PUSH_TAIL);
    cq__event_wait(&w.event);
}

static CQ_NOINLINE void sync_impl(cq_queue_t q, void *ctx, cq_function_t fn, bool barrier,
                                  const char *call)
{
    cq__queue_check(q, call);
    if (cq__unlikely(fn == NULL)) {
        cq__crash("%s: NULL function for %s", call, CQ_DESCRIBE(q));
    }
    if (q->kind == CQ__QUEUE_ROOT) {
        struct cq__frame f;
        cq__frame_push(&f, q, false);
        fn(ctx);
        cq__frame_pop(&f);
        return;
    }
    if (cq__unlikely(q == &cq__main_queue) && !cq__is_main_thread()) {
        sync_on_main_thread(q, barrier, ctx, fn, NULL, NULL);
        return;
    }
    int elsewhere = sync_elsewhere_prio(q);
    if (cq__unlikely(elsewhere >= 0)) {
        sync_elsewhere(q, ctx, fn, barrier, call, (unsigned)elsewhere);
        return;
    }
    sync_level(q, barrier, ctx, fn, q, call, NULL, NULL);
}

void cq__sync_named(cq_queue_t q, void *ctx, cq_function_t fn, const char *call)
{
    sync_impl(q, ctx, fn, false, call);
}

/* cq_sync_f found q idle and took its LOCK, but q does not target a global queue: give the
 * LOCK back and take the general way. */
static CQ_NOINLINE void sync_not_on_root(cq_queue_t q, void *ctx, cq_function_t fn)
{
    if (!cq__queue_try_unlock(q)) {
        cq__queue_unlock(q, false);
    }
    sync_impl(q, ctx, fn, false, "cq_sync_f");
}

static CQ_NOINLINE void sync_unlock_slow(cq_queue_t q)
{
    cq__ref_retain(&q->obj); /* as a drain holds LOCK */
    sync_let_go(q);
}

/*
 * cq_sync_f's fast path, holding q's LOCK. Its two CASes are most of the cost, and each waits
 * for every store before it to drain, saved registers included: so cq_sync_f saves none (all
 * else is tail calls), and this keeps nothing live across fn but the frame (q is read back
 * from it, which the volatile access makes the compiler do rather than save q in a register).
 */
static CQ_NOINLINE void sync_locked(cq_queue_t q, void *ctx, cq_function_t fn)
{
    /* Holding q fixes its target: now it can be read. */
    if (cq__unlikely(cq__queue_target(q)->kind != CQ__QUEUE_ROOT)) {
        sync_not_on_root(q, ctx, fn);
        return;
    }
    struct cq__frame f = {.queue = q, .exclusive = true, .prev = NULL};
    cq__tls.frame = &f;
    fn(ctx);
    cq__tls.frame = NULL;
    q = *(struct cq_queue_s *volatile *)&f.queue;
    if (cq__unlikely(!cq__queue_try_unlock(q))) {
        sync_unlock_slow(q);
    }
}

void cq_sync_f(cq_queue_t q, void *ctx, cq_function_t fn)
{
    /* The common case in full: an idle serial queue on a global queue, from a thread that runs
     * on no queue (so no deadlock is possible): one CAS in, the call, one CAS out. */
    if (cq__likely(cq__object_is(q, &cq__queue_class) && fn != NULL &&
                   q->kind == CQ__QUEUE_SERIAL && cq__tls.frame == NULL &&
                   q->fork_gen == cq__fork_gen) &&
        cq__queue_try_lock(q)) {
        sync_locked(q, ctx, fn);
        return;
    }
    sync_impl(q, ctx, fn, false, "cq_sync_f");
}

void cq_barrier_sync_f(cq_queue_t q, void *ctx, cq_function_t fn)
{
    sync_impl(q, ctx, fn, true, "cq_barrier_sync_f");
}

/* A cq_sync_f onto a main-thread-bound queue: the drainer runs the function on the waiter's
 * behalf, inside the frames the waiting thread holds, then signals it. */
static void exec_waiter_run(struct cq__item *it)
{
    struct cq__sync_waiter *w = (struct cq__sync_waiter *)it;
    struct cq__frame *saved = cq__tls.frame;
    if (w->frames_top) {
        w->frames_bottom->prev = saved;
        cq__tls.frame = w->frames_top;
    }
    w->function(w->context);
    cq__tls.frame = saved;
    cq__event_signal(&w->event);
}
CQ__ITEM_KIND_REGISTER(CQ__ITEM_EXEC_WAITER, exec_waiter_run)
