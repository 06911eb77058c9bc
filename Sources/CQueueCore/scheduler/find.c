/*
 * Pushing work and finding it: where a runnable item goes, and in which order a worker looks
 * for the next one (see pool_internal.h for procs, bands and the idle protocol).
 *
 * Priority decides which work runs first, everywhere:
 *   - every proc has one ring per priority; an item goes to the ring of its priority (its LIFO
 *     slot holds only the proc's main level: default for normal procs, background for
 *     background procs);
 *   - high items anywhere raise `high_hint`; a normal or express worker looks at the hint
 *     before every item and, while it is set, runs high work first: its own high ring, the
 *     high inject queue, other procs' high rings;
 *   - then its main level (LIFO slot, ring, inject queue), then, for a normal proc, low work
 *     only after one look for default work elsewhere;
 *   - thieves steal level by level, highest first;
 *   - background work runs only on background procs, whose threads the kernel runs after
 *     everything else (nice 19); high work that finds every normal proc busy wakes the express
 *     proc, so it gets a CPU at once (the kernel shares the CPUs among the runnable threads).
 */
#include "scheduler/pool_internal.h"

#include "platform/parker_internal.h"
#include "platform/time_internal.h"
#include "scheduler/thread_internal.h"

#define P cq__pool

_Static_assert(sizeof cq__tls.inject / sizeof cq__tls.inject[0] == CQ__INJECT_COUNT,
               "a thread has a chunk for every inject queue");

/* Whether items of priority `prio` from outside the pool may wait: in its overcommit lane or
 * its inject queue (a hint, exact after a seq_cst fence). */
static inline bool inject_maybe(unsigned prio)
{
    return cq__inject_maybe_work(&P.inject[CQ__LANE(prio)]) ||
           cq__inject_maybe_work(&P.inject[prio]);
}

/* Items that came from outside our ring of `prio` were just pushed to it (see foreign_end). */
static inline void foreign_pushed(struct cq__proc *p, unsigned prio)
{
    p->foreign_end[prio] = cq__load(&p->rq[prio].tail, relaxed); /* our own store */
}

/* Whether our ring of `prio` holds only items our own tasks pushed since the last that came
 * from outside it (the head, which only moves on, has passed them). */
static inline bool ring_all_own(struct cq__proc *p, unsigned prio)
{
    /* relaxed: the owner's own pops move `real`; a thief's claim only moves it further on */
    uint32_t real = (uint32_t)cq__load(&p->rq[prio].head, relaxed);
    if ((int32_t)(real - p->foreign_end[prio]) < 0) {
        return false;
    }
    p->foreign_end[prio] = real; /* kept near the head, so the difference never wraps */
    return true;
}

/* Takes up to `max` items of priority `prio` from outside the pool (the rest into `rq`): the
 * overcommit lane's first. A serial queue's drain stands for the queue's whole backlog, and
 * the lane's threads take it only after workers stuck for milliseconds (overcommit.c). */
static struct cq__item *inject_take_prio(unsigned prio, struct cq__runq *rq, uint32_t max)
{
    struct cq__item *it = cq__inject_take(&P.inject[CQ__LANE(prio)], rq, max);
    return it ? it : cq__inject_take(&P.inject[prio], rq, max);
}

/* ---------------------------------------------------------------------------------------- */
/* Pushing work                                                                             */

/* Sends everything `p`'s ring of `prio` holds to the inject queue, oldest first, then `it`; the
 * rest of the running item's pushes of that priority follow them there (spill_levels, until it
 * returns). */
static void spill(struct cq__proc *p, unsigned prio, struct cq__item *it)
{
    struct cq__item *x;
    while ((x = cq__runq_pop(&p->rq[prio])) != NULL) {
        cq__inject_push(&P.inject[prio], prio, x);
    }
    cq__inject_push(&P.inject[prio], prio, it);
    p->spill_levels |= (uint8_t)CQ__LEVEL(prio);
}

/*
 * A full ring spills (above): its items wait in the inject queue in the order they were pushed,
 * behind them the new item and the rest of the running item's burst. So what a worker's ring
 * holds is older than what its tasks sent to the inject queue: a worker puts an item of the
 * inject queue behind what its ring took from outside (inject_take_levels), thieves and new
 * threads take the inject queue's oldest items, and each finds the oldest work there is.
 * Before, the ring's older half went to the inject queue and its newer half stayed, and the new
 * item went alone to the inject queue, ahead of the ring, while a thief copied from it: 2,000
 * tasks that each wait for the one submitted before them, submitted from a task, then left an
 * old task behind newer ones (behind the ring's 200 newest, which the worker put ahead of the
 * inject queue's; or in the inject queue behind the new item, which came out first in a batch).
 * The worker and every thread the monitor added ran and waited in newer tasks (compat_queue's
 * turns, 1 run in 40).
 */
void cq__pool_ring_push(struct cq__proc *p, struct cq__item *it)
{
    unsigned prio = cq__load(&it->prio, relaxed);
    struct cq__runq *rq = &p->rq[prio];
    if (cq__unlikely(p->spill_levels & CQ__LEVEL(prio))) {
        cq__inject_push(&P.inject[prio], prio, it);
        return;
    }
    for (;;) {
        enum cq__runq_push_result pushed = cq__runq_push(rq, it);
        if (cq__likely(pushed == CQ__RUNQ_PUSHED)) {
            return;
        }
        if (pushed == CQ__RUNQ_FULL) {
            /* Its older half at once (one CAS), then the rest through spill */
            struct cq__item *first, *last;
            uint32_t n;
            if (!cq__runq_push_overflow(rq, it, &first, &last, &n)) {
                continue; /* a thief took items: push `it` again */
            }
            for (struct cq__item *next; --n; first = next) { /* the chain ends with `it` */
                next = cq__load(&first->next, relaxed);      /* before it is published and run */
                cq__inject_push(&P.inject[prio], prio, first);
            }
        }
        spill(p, prio, it); /* full, or full while a thief copies from it */
        return;
    }
}

/* A high item was published (seq_cst): make sure the hint says so. The load is the second
 * half of the Dekker pair with take_high's clear-then-look. */
static inline void high_hint_raise(void)
{
    if (cq__load(&P.high_hint, seq_cst) == 0) {
        /* pairs with take_high's seq_cst clear and re-check of high work (below) */
        cq__store(&P.high_hint, 1, seq_cst);
    }
}

void cq__pool_notify_prio(unsigned prio)
{
    if (cq__pool_notify_band(cq__band_of_prio(prio))) {
        return;
    }
    if (prio == CQ__PRIO_HIGH && cq__pool_notify_band(CQ__BAND_EXPRESS)) {
        cq__add(&P.express_wakeups, 1, relaxed);
        return;
    }
    cq__monitor_kick();
}

void cq__pool_push(struct cq__item *it, unsigned prio, unsigned flags)
{
    cq__store(&it->prio, (uint8_t)prio, relaxed);
    struct cq__proc *p = cq__tls.proc;
    if (p && (p->levels & CQ__LEVEL(prio))) {
        if ((flags & CQ__PUSH_WAKEUP) && (p->lifo_levels & CQ__LEVEL(prio))) {
            /* seq_cst: publishes the item before the idle word is read; pairs with the parker's
             * seq_cst idle-word update, fence and re-check (cq__pool_park in park.c); thieves take
             * the slot with an acquire exchange (steal_lifo) */
            struct cq__item *prev = cq__xchg(&p->lifo, it, seq_cst);
            if (cq__unlikely(it->flags & CQ__ITEM_OVERCOMMIT)) {
                cq__store(&p->lifo_oc, it, relaxed); /* see lifo_oc */
            } else if (cq__unlikely(cq__load(&p->lifo_oc, relaxed) != NULL)) {
                /* the note names no item of the slot any more (see lifo_oc) */
                cq__store(&p->lifo_oc, NULL, relaxed);
            }
            if (prev) {
                unsigned prev_prio = cq__load(&prev->prio, relaxed);
                unsigned slot = cq__inject_slot(prev, prev_prio);
                if (cq__unlikely(slot != prev_prio)) {
                    /* A serial queue's drain that the task's next wake-up pushed out of the
                     * slot goes to its lane, not the ring: only the owner and thieves take
                     * from the ring, so behind a long task it waited for the task to end
                     * (a task that reported to two serial queues: the first one's report).
                     * The lane is where an overcommit thread finds it (overcommit.c). */
                    cq__inject_push(&P.inject[slot], slot, prev);
                    if (prev_prio != prio) {
                        cq__pool_notify_prio(prev_prio); /* `prio`'s is below */
                    }
                } else {
                    cq__pool_ring_push(p, prev);
                }
                /* pairs with the parker's seq_cst idle-word update, fence and re-check
                 * (cq__pool_park in park.c) */
                cq__fence(seq_cst);
            }
        } else {
            cq__pool_ring_push(p, it);
            if ((flags & CQ__PUSH_YIELD) && prio != CQ__PRIO_HIGH && cq__tls.frame == NULL &&
                cq__tls.help_depth == 0 && cq__tls.thread != NULL) {
                /* A drain's yield at the worker's top level: the worker's next search finds
                 * the queue (or a thief does). Waking another worker would only hand the
                 * queue to it, cold, 27 µs later. */
                return;
            }
            cq__fence(seq_cst); /* store-load: the ring's tail before the idle word; pairs with the
                                   parker's seq_cst idle-word update, fence and re-check
                                   (cq__pool_park in park.c) */
        }
    } else {
        /* Outside the pool, or a proc whose band does not run this priority. Pairs with the
         * release store of cq__pool_started in pool_init (pool.c) */
        if (cq__unlikely(!cq__load(&cq__pool_started, acquire))) {
            cq__pool_ensure_started();
        }
        /* serial queues' drains wait in the lane (see CQ__LANE) */
        unsigned slot = cq__inject_slot(it, prio);
        cq__inject_push(&P.inject[slot], slot, it); /* seq_cst publish inside */
        if (cq__unlikely(slot != prio) && prio != CQ__PRIO_HIGH &&
            cq__load(&cq__overcommit_hot, relaxed) && !cq__pool_notify_band(CQ__BAND_NORMAL)) {
            /* every worker is busy, and they are known to be stuck: see OC_HOT (high work has
             * the express worker first) */
            if (!cq__overcommit_wake_for_push()) {
                cq__monitor_kick();
            }
            return;
        }
    }
    if (prio == CQ__PRIO_HIGH) {
        high_hint_raise();
    }
    cq__pool_notify_prio(prio);
}

/* ---------------------------------------------------------------------------------------- */
/* Local work                                                                               */

struct cq__item *cq__pool_lifo_take(struct cq__proc *p)
{
    if (cq__load(&p->lifo, relaxed) == NULL) {
        return NULL;
    }
    return cq__xchg(&p->lifo, NULL, acquire); /* acquire: pairs with the pusher's exchange */
}

bool cq__pool_proc_has_work(struct cq__proc *p)
{
    if (cq__load(&p->lifo, relaxed) != NULL) {
        return true;
    }
    for (unsigned prio = 0; prio < CQ__PRIO_COUNT; prio++) {
        if ((p->levels & CQ__LEVEL(prio)) && !cq__runq_is_empty(&p->rq[prio])) {
            return true;
        }
    }
    return false;
}

static uint32_t backlog(struct cq__proc *p)
{
    uint32_t n = 0;
    for (unsigned prio = 0; prio < CQ__PRIO_COUNT; prio++) {
        if (p->levels & CQ__LEVEL(prio)) {
            n += cq__runq_len(&p->rq[prio]);
        }
    }
    return n;
}

static bool inject_work_for(unsigned levels)
{
    for (unsigned prio = 0; prio < CQ__PRIO_COUNT; prio++) {
        if ((levels & CQ__LEVEL(prio)) && inject_maybe(prio)) {
            return true;
        }
    }
    return false;
}

/*
 * Inject batches. A batch moves items from the shared inject queue into our ring, where only
 * we (or a thief that is searching) will run them. It pays off for tiny items only: one lock
 * and a run of prefetched pointers for many of them. It costs fairness: while we run the
 * batch, or while the kernel has preempted our thread (all the time when the machine has more
 * runnable threads than CPUs, e.g. a client on the same cores), its items wait for us, and
 * the other workers, never short of newer items from the inject queue, do not look for them.
 * Readiness events of sockets all arrive that way (the reactor is outside the pool): an HTTP
 * server on READ sources driven by wrk on the same 2 cores had p99 latencies of 1-8 ms at 16
 * connections, where libdispatch, whose items all wait in one shared queue, had 0.4 ms.
 * So a batch holds about CQ__INJECT_BATCH_NS of work: the time per item of our last batch
 * sizes the next one. It starts at one item and halves or doubles from batch to batch, within
 * [1, CQ__INJECT_BATCH_MAX] (halving, not dropping at once: a batch of tiny tasks during which
 * our thread was preempted looks slow). Tiny tasks move 32 at a time after the first few
 * batches; socket handlers (~15 us each) one at a time, so the inject queue stays the one
 * shared queue that every worker serves in order (test_inject_order.c).
 */
#ifndef CQ__INJECT_BATCH_NS
#define CQ__INJECT_BATCH_NS 20000u
#endif
#define CQ__INJECT_BATCH_MAX 32u

static inline uint32_t batch_limit(struct cq__proc *p)
{
    return p->batch_max ? p->batch_max : 1; /* 0: nothing measured yet */
}

/*
 * Work this worker leaves waiting — items a batch moved into its rings, or items still in the
 * inject queues — must not sit unseen while it runs a long or blocking task and other workers
 * sleep. A real backlog wakes an idle worker of its band at once (a burst fans out one worker
 * at a time): 4 items in our rings, or items left in the inject queue when our batches are
 * small (then each item is worth 5 us or more: the batch took what fits in
 * CQ__INJECT_BATCH_NS). A small one does not: a wake-up costs far more than running a few
 * short tasks here, so it only makes sure the monitor is watching, which wakes an idle worker
 * if this one gets stuck in a long task.
 */
#define CQ__FANOUT_BACKLOG 4u

/* `more` reads the inject queues' hints, which a take that stopped at its batch limit leaves
 * set even when it took the last item (the next look clears it). So a lone item from outside
 * the pool, taken in a batch of one, also wakes a second worker, which finds nothing. That wake
 * was once removed (the take looked on to clear the hint): a worker fewer woke per lone item,
 * but `await queue.run { }` from Swift concurrency went from 17-20 to 40-43 us a round trip,
 * as the second worker, searching about one wake-up later, was what caught the next item of a
 * ping-pong with a thread outside the pool. Moved after the item (so that it no longer delays
 * it), the wake still cost that ping-pong 5 us a round trip. So the wake stays, except for a
 * worker that was parked for over CQ__SPECULATIVE_PARK_NS before this item woke it: items that
 * far apart come after a second searcher has given up, and the wake, a system call that
 * interrupts the other CPU (about 10 us on these VMs), only delayed the item (priority_p50:
 * 13 us where libdispatch took 4.5). Whether the hint is stale is checked exactly, after our
 * searching count went down (cq__pool_stop_searching): a producer that published since either
 * saw us searching, and then its item is seen here and wakes a worker at once, or saw nobody
 * searching and woke one itself. */
static bool inject_items_for(unsigned levels)
{
    for (unsigned prio = 0; prio < CQ__PRIO_COUNT; prio++) {
        if ((levels & CQ__LEVEL(prio)) && (cq__inject_has_items(&P.inject[CQ__LANE(prio)]) ||
                                           cq__inject_has_items(&P.inject[prio]))) {
            return true;
        }
    }
    return false;
}

void cq__pool_announce_backlog(struct cq__proc *p)
{
    uint32_t len = backlog(p);
    bool more = inject_work_for(p->levels);
    if (len >= CQ__FANOUT_BACKLOG || (more && batch_limit(p) < CQ__FANOUT_BACKLOG)) {
        if (len == 0 && cq__tls.long_park && !inject_items_for(p->levels)) {
            return; /* only a stale hint, after a long park: see above */
        }
        if (!cq__pool_notify_band(p->band)) {
            cq__monitor_kick();
        }
    } else if (len > 0 || more) {
        cq__monitor_kick();
    }
}

/* Takes a batch of `prio` items from its inject queue: the first to run, the rest into our
 * ring of that priority. */
static struct cq__item *inject_take(struct cq__proc *p, unsigned prio)
{
    struct cq__runq *rq = &p->rq[prio];
    uint32_t room = cq__runq_free(rq) / 2;
    uint32_t max = batch_limit(p);
    if (max > room) {
        max = room > 0 ? room : 1;
    }
    struct cq__item *it = inject_take_prio(prio, rq, max);
    if (it) {
        foreign_pushed(p, prio);
    }
    return it;
}

/* Our queues ran dry: the batch being timed is done; its time per item sizes the next one. */
static void batch_done(struct cq__proc *p, uint64_t now)
{
    uint64_t per_item = (now - p->batch_since) / p->batch_items;
    uint64_t fit = per_item > 0 ? CQ__INJECT_BATCH_NS / per_item : CQ__INJECT_BATCH_MAX;
    uint32_t max = batch_limit(p);
    if (fit < max) {
        max = fit > max / 2 ? (uint32_t)fit : max / 2;
    } else {
        max = fit < max * 2 ? (uint32_t)fit : max * 2;
    }
    p->batch_max = max < 1 ? 1 : max > CQ__INJECT_BATCH_MAX ? CQ__INJECT_BATCH_MAX : max;
    p->batch_since = 0;
}

/* The inject queue of our main level, once our own queues are empty; the batch is timed. */
static struct cq__item *inject_take_main(struct cq__proc *p, unsigned main)
{
    uint64_t now = 0;
    if (p->batch_since != 0) {
        now = cq__now_ns();
        batch_done(p, now);
    }
    if (!inject_maybe(main)) {
        return NULL;
    }
    struct cq__item *it = inject_take(p, main);
    if (it) {
        p->batch_since = now ? now : cq__now_ns();
        p->batch_items = 1 + cq__runq_len(&p->rq[main]);
    }
    return it;
}

/* The inject queues' turn (every CQ__INJECT_INTERVAL items, so that a worker whose tasks keep
 * filling its own ring still serves them; and at the monitor's turns, see monitor.c,
 * inject_turns): an item of the highest level that has one.
 *
 * Where our ring of that level holds items that came from outside it (a batch from the inject
 * queue, a steal), they came before the item, so it goes behind them, and the caller runs its
 * ring as usual. Run first, it overtook them: tasks that each wait for the ones submitted
 * before them then waited for items in the ring of the worker they held, and every thread the
 * monitor added for the waits took newer items (2,000 such tasks: a hang at the thread limit;
 * libdispatch, which starts them in order, 0.01 s).
 *
 * Where the ring holds only what our own tasks pushed since (ring_all_own), and no ring of a
 * higher level holds work, the item runs now: it waited in the inject queue while those tasks
 * ran, and they keep pushing more. Put behind them, work from outside the pool waited for
 * everything the worker's ring held at its turn: tasks that each queue the next one (1 ms of
 * CPU, 8 on 2 CPUs) kept work from the main thread waiting 4.9 ms at the median (cq-bench
 * outside_p50; libdispatch's one shared queue, in order: 3.3 ms). The ring's items wait for one
 * more item, once per turn. */
static struct cq__item *inject_take_levels(struct cq__proc *p)
{
    bool higher_waits = false; /* a ring of a higher level holds work */
    for (unsigned prio = 0; prio < CQ__PRIO_COUNT; prio++) {
        if (!(p->levels & CQ__LEVEL(prio))) {
            continue;
        }
        bool empty = cq__runq_is_empty(&p->rq[prio]);
        if (inject_maybe(prio)) {
            if (empty) {
                return inject_take(p, prio);
            }
            struct cq__item *it = inject_take_prio(prio, NULL, 1);
            if (it) {
                if (!higher_waits && ring_all_own(p, prio)) {
                    return it;
                }
                cq__pool_ring_push(p, it);
                foreign_pushed(p, prio);
                return NULL;
            }
        }
        higher_waits |= !empty;
    }
    return NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* Stealing                                                                                 */

static inline uint64_t rng_next(struct cq__proc *p)
{
    p->rng ^= p->rng << 13;
    p->rng ^= p->rng >> 7;
    p->rng ^= p->rng << 17;
    return p->rng;
}

/* The LIFO slot of a victim that has been running the same item for at least this long. */
#define LIFO_STEAL_AFTER_NS 20000u

static struct cq__item *steal_lifo(struct cq__proc *p, struct cq__proc *v)
{
    if (cq__load(&v->lifo, relaxed) == NULL || !cq__load(&v->running, relaxed)) {
        return NULL;
    }
    uint32_t started = cq__load(&v->started, relaxed);
    uint64_t now = cq__now_ns();
    if (p->lifo_victim != v || p->lifo_victim_started != started) {
        p->lifo_victim = v;
        p->lifo_victim_started = started;
        p->lifo_victim_since = now;
        return NULL;
    }
    if (now - p->lifo_victim_since < LIFO_STEAL_AFTER_NS) {
        return NULL;
    }
    p->lifo_victim = NULL;
    /* pairs with the owner's seq_cst exchange or release store that filled the slot */
    return cq__xchg(&v->lifo, NULL, acquire);
}

/* Steals `prio` items from another proc's ring (random start); a LIFO item too when the
 * victim's slot holds only what we run. */
static struct cq__item *steal_level(struct cq__proc *p, unsigned prio)
{
    /* pairs with the release store of nprocs_seen in proc_new (pool.c) */
    uint32_t n = cq__load(&P.nprocs_seen, acquire);
    uint32_t start = (uint32_t)(rng_next(p) % n);
    for (uint32_t i = 0; i < n; i++) {
        struct cq__proc *v = cq__pool_proc_at((start + i) % n);
        if (v == p || !(v->levels & CQ__LEVEL(prio)) || cq__load(&v->retired, relaxed)) {
            continue;
        }
        struct cq__item *it = cq__runq_steal_oldest_into(&v->rq[prio], &p->rq[prio]);
        if (it) {
            foreign_pushed(p, prio);
        }
        if (it == NULL && (v->lifo_levels & CQ__LEVEL(prio)) &&
            (v->lifo_levels & ~p->levels) == 0) {
            it = steal_lifo(p, v);
        }
        if (it) {
            cq__pool_count(&p->n_steals);
            CQ_PROBE3(steal, v->index, p->index, prio);
            return it;
        }
    }
    return NULL;
}

/* Every level this proc runs, highest first: other rings, then the inject queue. */
static struct cq__item *steal_work(struct cq__proc *p)
{
    for (unsigned prio = 0; prio < CQ__PRIO_COUNT; prio++) {
        if (p->levels & CQ__LEVEL(prio)) {
            struct cq__item *it = steal_level(p, prio);
            if (it || (it = inject_take(p, prio)) != NULL) {
                return it;
            }
        }
    }
    return NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* High-priority work first                                                                 */

static bool high_work_visible(void)
{
    if (inject_maybe(CQ__PRIO_HIGH)) {
        return true;
    }
    /* pairs with the release store of nprocs_seen in proc_new (pool.c) */
    uint32_t n = cq__load(&P.nprocs_seen, acquire);
    for (uint32_t i = 0; i < n; i++) {
        struct cq__proc *v = cq__pool_proc_at(i);
        if ((v->levels & CQ__LEVEL(CQ__PRIO_HIGH)) && !cq__runq_is_empty(&v->rq[CQ__PRIO_HIGH])) {
            return true;
        }
    }
    return false;
}

/* The hint is set: high work from our ring, the inject queue or another proc's ring. If
 * there is none, clear the hint and look once more. */
static struct cq__item *take_high(struct cq__proc *p)
{
    struct cq__item *it = cq__runq_pop(&p->rq[CQ__PRIO_HIGH]);
    if (it) {
        return it;
    }
    if ((it = inject_take(p, CQ__PRIO_HIGH)) != NULL) {
        cq__pool_announce_backlog(p);
        return it;
    }
    if ((it = steal_level(p, CQ__PRIO_HIGH)) != NULL) {
        return it;
    }
    /* seq_cst: the store of the Dekker pair with high_hint_raise's load; a producer that
     * published before our look below is seen by it, a later one sees the hint clear. */
    cq__store(&P.high_hint, 0, seq_cst);
    if (high_work_visible()) {
        /* pairs with the pushers' seq_cst load and set in high_hint_raise */
        cq__store(&P.high_hint, 1, seq_cst);
    }
    return NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* The next item                                                                            */

/* An item of our main level, without looking elsewhere (see next_local). */
static struct cq__item *main_level_turn(struct cq__proc *p)
{
    struct cq__item *it = cq__pool_lifo_take(p);
    if (it == NULL && (it = cq__runq_pop(&p->rq[p->main_level])) == NULL &&
        (it = inject_take(p, p->main_level)) != NULL) {
        cq__pool_announce_backlog(p);
    }
    return it;
}

/*
 * The next item of our own, or of the inject queues. High work comes first, with two turns
 * that keep the rest from waiting for ever behind a stream of it (tasks that submit the next
 * high task as they end: each worker's ring always holds one):
 *   - every CQ__INJECT_INTERVAL items, and whenever the monitor saw items wait in an inject
 *     queue at a tick (P.inject_turn, at most once a millisecond), the inject queues', highest
 *     level first (they hold what comes from outside the pool: timers fired by the reactor,
 *     work submitted by application threads, readiness events);
 *   - after CQ__HIGH_STREAK_MAX high items in a row, one of our main level, if there is one.
 * Before, the high ring was looked at first, always: three such streams on 2 CPUs (the two
 * workers and the express worker) kept a 10 ms dispatch_after onto the high queue itself,
 * and every default task, from running at all, for as long as the streams ran (5 s and 20 s
 * runs; libdispatch ran them after 10 ms and 4 ms; test_priority.c, high_stream_starvation).
 */
static struct cq__item *next_local(struct cq__proc *p)
{
    struct cq__item *it;
    uint32_t turn = cq__load(&P.inject_turn, relaxed); /* a hint: see monitor.c, inject_turns */
    if ((++p->tick % CQ__INJECT_INTERVAL == 0 || turn != p->inject_turn_seen)) {
        p->inject_turn_seen = turn;
        if ((it = inject_take_levels(p)) != NULL) {
            cq__pool_announce_backlog(p);
            return it;
        }
    }
    if ((p->levels & CQ__LEVEL(CQ__PRIO_HIGH)) && cq__load(&P.high_hint, relaxed)) {
        if (p->high_streak >= CQ__HIGH_STREAK_MAX) {
            p->high_streak = 0;
            if ((p->levels & CQ__LEVEL(p->main_level)) && p->main_level != CQ__PRIO_HIGH &&
                (it = main_level_turn(p)) != NULL) {
                return it;
            }
        }
        if ((it = take_high(p)) != NULL) {
            p->high_streak++;
            return it;
        }
    }
    p->high_streak = 0;
    unsigned main = p->main_level;
    if (p->lifo_streak < CQ__LIFO_STREAK_MAX) {
        if ((it = cq__pool_lifo_take(p)) != NULL) {
            p->lifo_streak++;
            return it;
        }
    } else if ((it = cq__pool_lifo_take(p)) != NULL) {
        cq__pool_ring_push(p, it); /* give the ring its turn */
    }
    p->lifo_streak = 0;
    if ((it = cq__runq_pop(&p->rq[main])) != NULL) {
        return it;
    }
    if ((it = inject_take_main(p, main)) != NULL) {
        cq__pool_announce_backlog(p); /* the rest of the batch is in our ring now */
        return it;
    }
    if ((p->levels & CQ__LEVEL(CQ__PRIO_LOW)) &&
        (!cq__runq_is_empty(&p->rq[CQ__PRIO_LOW]) || inject_maybe(CQ__PRIO_LOW))) {
        /* Low work of our own waits: default work elsewhere comes first. */
        if ((it = steal_level(p, CQ__PRIO_DEFAULT)) != NULL) {
            return it;
        }
        if ((it = cq__runq_pop(&p->rq[CQ__PRIO_LOW])) != NULL) {
            return it;
        }
        if ((it = inject_take(p, CQ__PRIO_LOW)) != NULL) {
            cq__pool_announce_backlog(p);
            return it;
        }
    }
    return NULL;
}

/* Spins looking for work for a bounded time; the caller is searching (or could not be). */
static struct cq__item *search(struct cq__thread *t, struct cq__proc *p)
{
    if (p->band == CQ__BAND_EXPRESS) {
        /* The express band runs only while the normal band is saturated, i.e. every CPU is
         * busy: a spinning express thread takes the CPU from a worker, and once the kernel
         * preempts it (its slice spent on the spin), the next high item waits for it, as its
         * band has a searcher and nobody is woken, for milliseconds (latency_busy_p99: p99
         * 0.9-2.9 ms with the spin, the express thread woken once for 200 tasks). One look. */
        return steal_work(p);
    }
    if (!t->searching) {
        if (!cq__pool_try_searching(p->band)) {
            return steal_work(p); /* enough searchers: one look, then park */
        }
        t->searching = true;
    }
    /* Pure spinning: a searcher must notice new work within tens of nanoseconds, and it is
     * at most half the band's workers, so it never takes the CPU a producer needs on its own.
     * The spin adapts: a search that finds work doubles the next one (a stream of work keeps
     * a worker spinning and saves the wake-ups), one that ends in a park halves it (work that
     * trickles in at longer intervals does not cost a CPU spinning for it). */
    uint64_t deadline = cq__now_ns() + p->search_ns;
    uint32_t relax = cq__spin_iterations(200);
    for (;;) {
        struct cq__item *it = steal_work(p);
        if (it) {
            p->search_ns =
                p->search_ns * 2 < CQ__SPIN_SEARCH_NS ? p->search_ns * 2 : CQ__SPIN_SEARCH_NS;
            return it;
        }
        if (cq__now_ns() >= deadline) {
            p->search_ns = p->search_ns / 2 > CQ__SPIN_SEARCH_MIN_NS ? p->search_ns / 2
                                                                     : CQ__SPIN_SEARCH_MIN_NS;
            return NULL;
        }
        for (uint32_t i = 0; i < relax; i++) {
            cq__cpu_relax();
        }
    }
}

struct cq__item *cq__pool_find_work(struct cq__thread *t, struct cq__proc *p)
{
    struct cq__item *it = next_local(p);
    if (it == NULL && (it = search(t, p)) == NULL) {
        return NULL;
    }
    if (t->searching) {
        cq__pool_stop_searching(t, p);
    }
    return it;
}

bool cq__pool_band_work_waiting(unsigned band)
{
    unsigned levels = P.band[band].levels;
    if (inject_work_for(levels)) {
        return true;
    }
    /* pairs with the release store of nprocs_seen in proc_new (pool.c) */
    uint32_t n = cq__load(&P.nprocs_seen, acquire);
    for (uint32_t i = 0; i < n; i++) {
        struct cq__proc *v = cq__pool_proc_at(i);
        if (v->band == band) {
            if (cq__pool_proc_has_work(v)) {
                return true;
            }
        } else if ((v->levels & levels & CQ__LEVEL(CQ__PRIO_HIGH)) &&
                   !cq__runq_is_empty(&v->rq[CQ__PRIO_HIGH])) {
            return true; /* high work in another band's ring: ours to steal */
        }
    }
    return false;
}

bool cq__pool_work_waiting(void)
{
    for (unsigned band = 0; band < CQ__BAND_COUNT; band++) {
        if (cq__pool_band_work_waiting(band)) {
            return true;
        }
    }
    return false;
}

/* ---------------------------------------------------------------------------------------- */
/* Helping                                                                                  */

bool cq__pool_help(bool (*pred)(struct cq__item *, void *), void *arg)
{
    struct cq__proc *p = cq__tls.proc;
    if (p == NULL || cq__tls.help_depth >= CQ__HELP_DEPTH_MAX) {
        return false;
    }
    struct cq__item *it = cq__pool_lifo_take(p);
    if (it && !pred(it, arg)) {
        cq__store(&p->lifo, it, release); /* only the owner fills the slot: put it back; pairs with
                                             a thief's acquire exchange in steal_lifo */
        it = NULL;
    }
    for (unsigned prio = 0; it == NULL && prio < CQ__PRIO_COUNT; prio++) {
        if (!(p->levels & CQ__LEVEL(prio))) {
            continue;
        }
        /* Claim the newest item first, then look at it: a claimed item cannot be run and
         * freed by a thief under our feet. */
        it = cq__runq_pop_back(&p->rq[prio]);
        if (it && !pred(it, arg)) {
            cq__runq_push(&p->rq[prio], it); /* back where it was: we just made room */
            it = NULL;
        }
    }
    if (it == NULL) {
        return false;
    }
    /* The helped task runs as if another worker ran it: not on the waiter's queues (their
     * specifics, current-queue answers and exclusivity are the waiter's), not in its group. */
    struct cq__frame *frame = cq__tls.frame;
    struct cq_group_s *group = cq__tls.group;
    cq__tls.frame = NULL;
    cq__tls.group = NULL;
    cq__tls.help_depth++;
    cq__item_invoke(it);
    cq__tls.help_depth--;
    cq__tls.frame = frame;
    cq__tls.group = group;
    return true;
}
