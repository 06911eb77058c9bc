/*
 * Systematic interleaving check of the per-worker ring (Sources/CQueueCore/runq.c, compiled into
 * this program with -DCQ_RUNQ_CAPACITY=4 -DCQ_MODEL_CHECK): every sequentially consistent
 * interleaving of small scenarios — owner push/pop/pop_back/overflow against one or two thieves,
 * with indices that wrap around 2^32 — is executed and checked. See docs/model-checking.md.
 *
 *   runq_model                 every scenario, exhaustive (DPOR), with a summary line each
 *   runq_model --cross-check [PB]  each scenario explored with DPOR and without reduction: for
 *                              the tiny ones completely (the sets of Mazurkiewicz traces and
 *                              of outcomes must be equal), for the others with at most PB
 *                              preemptions (default 2; its traces must all be among DPOR's)
 *   runq_model --list | --scenario NAME | --naive [--pb N] | -v
 *
 * What is checked after every execution (and, where noted, during it):
 *   - conservation: every item pushed comes out exactly once — returned by pop, pop_back or a
 *     steal, moved out by push_overflow, sent elsewhere on CQ__RUNQ_STEALING, or still in a
 *     ring at the end; nothing else ever comes out (no stale or duplicated slot);
 *   - FIFO: everything taken from the head of the owner's ring (pops, steal batches, overflow
 *     batches) and what is left in it at the end tile the ring's order exactly, each batch
 *     contiguous and in order, the owner's pops in increasing order, the leftovers last;
 *   - pop_back returns the newest item, or NULL only if the ring is empty or a thief took it;
 *     an item popped back can be pushed back at once (cq__pool_help relies on it);
 *   - push_overflow moves out exactly the oldest half plus the new item, linked in order;
 *   - len: while running, the owner never sees more items than it has in the ring (nor more
 *     than the capacity), another thread never more than were ever pushed (its len() can exceed
 *     the capacity: see docs/model-checking.md); at the end len, is_empty and free match the
 *     leftovers and no steal claim is left behind (steal == real).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc.h"
#include "scheduler/runq_internal.h"

#define CAP CQ_RUNQ_CAPACITY
#define MAX_ITEMS 16
#define MAX_LOG 64
#define NRINGS 3 /* rq[0] the owner's, rq[1] and rq[2] the thieves' own rings */

_Static_assert(CQ_RUNQ_CAPACITY == 4, "the scenarios are written for a capacity of 4");

struct log {
    int n;
    int id[MAX_LOG];
};

/* A run of items that left a ring's head together (a steal batch, an overflow batch, a pop). */
struct batch {
    int ring;  /* the ring it came from */
    bool thief; /* taken by a steal (not by the owner) */
    int first; /* index of its first item in `batch_items` */
    int n;
};

static struct cq__runq rq[NRINGS];
static struct cq__item items[MAX_ITEMS + 1]; /* ids 1..MAX_ITEMS; items[0] unused */

/* ---- per-execution state (reset by setup) ------------------------------------------------ */
static int pushed;                   /* ids handed out so far */
static struct log ringseq;           /* the owner's ring order: ids pushed into it, minus those
                                        popped back */
static bool owner_removed[MAX_ITEMS + 1]; /* taken by the owner itself (pop, pop_back, overflow) */
static int owner_in_ring;            /* upper bound on the owner's ring as the owner knows it */
static int last_pop_pos;             /* ringseq position of the owner's last pop, -1 */
static struct log got;               /* every item handed out to run: pops, pop_backs, steals */
static struct log owner_pops;
static struct log elsewhere;         /* pushed to "the inject queue" on CQ__RUNQ_STEALING */
static struct log overflowed;        /* moved out by push_overflow (the new item included) */
static struct log must_be_stolen;    /* newest item when pop_back returned NULL */
static struct log left[NRINGS];      /* drained at the end */
static struct batch batches[16];
static int nbatches;
static struct log batch_items;
/* What each thread saw, in its own order: the outcome of an execution. (The shared logs above
 * are appended in interleaving order, which equivalent interleavings need not share.) */
static struct log tlog[MC_MAX_THREADS + 1];

static struct cq__item *item(int id)
{
    return &items[id];
}

static int id_of(struct cq__item *it)
{
    if (it < &items[1] || it > &items[MAX_ITEMS]) {
        mc_fail("a ring returned %p, which is not an item", (void *)it);
    }
    int id = (int)(it - items);
    if (id > pushed) {
        mc_fail("a ring returned item %d, which was never pushed", id);
    }
    return id;
}

static void log_add(struct log *l, int id)
{
    if (l->n >= MAX_LOG) {
        mc_fail("log overflow");
    }
    l->id[l->n++] = id;
}

static bool log_has(const struct log *l, int id)
{
    for (int i = 0; i < l->n; i++) {
        if (l->id[i] == id) {
            return true;
        }
    }
    return false;
}

static int ringseq_pos(int id)
{
    for (int i = ringseq.n - 1; i >= 0; i--) {
        if (ringseq.id[i] == id) {
            return i;
        }
    }
    return -1;
}

enum { EV_PUSHED = 100, EV_ELSEWHERE = 200, EV_OVERFLOW = 300, EV_POP = 400, EV_POPBACK = 500,
       EV_POPBACK_NULL = 600, EV_PUSHED_BACK = 700, EV_COPIED = 800, EV_STOLEN = 900 };

static void trace(int event, int id)
{
    log_add(&tlog[mc_current_thread() + 1], event + id);
}

static void batch_begin(int ring, bool thief)
{
    batches[nbatches].ring = ring;
    batches[nbatches].thief = thief;
    batches[nbatches].first = batch_items.n;
    batches[nbatches].n = 0;
}

static void batch_add(int id)
{
    log_add(&batch_items, id);
    batches[nbatches].n++;
}

static void batch_end(void)
{
    nbatches++;
}

/* Plain reads of a ring's fields by its owner, or by the checker: not scheduling points. */
static uint32_t peek_tail(struct cq__runq *r)
{
    return atomic_load_explicit(&r->tail, memory_order_relaxed);
}

static struct cq__item *peek_slot(struct cq__runq *r, uint32_t i)
{
    return atomic_load_explicit(&r->slots[i & CQ_RUNQ_MASK], memory_order_relaxed);
}

/* ---- the owner's operations, as pool.c uses them ----------------------------------------- */

static bool len_checks;

static void check_owner_len(void)
{
    if (!len_checks) {
        return;
    }
    uint32_t n = cq__runq_len(&rq[0]);
    MC_CHECK(n <= (uint32_t)owner_in_ring && n <= CAP,
             "owner: len() = %u but at most %d items can be in its ring", n, owner_in_ring);
}

/* ring_push of pool.c: the ring, or its overflow path, or elsewhere while a thief copies. */
static void owner_push_item(int id)
{
    struct cq__item *it = item(id);
    for (;;) {
        switch (cq__runq_push(&rq[0], it)) {
        case CQ__RUNQ_PUSHED:
            trace(EV_PUSHED, id);
            log_add(&ringseq, id);
            owner_in_ring++;
            check_owner_len();
            return;
        case CQ__RUNQ_STEALING:
            trace(EV_ELSEWHERE, id);
            log_add(&elsewhere, id);
            return;
        case CQ__RUNQ_FULL: {
            struct cq__item *first, *last;
            uint32_t count;
            if (!cq__runq_push_overflow(&rq[0], it, &first, &last, &count)) {
                break; /* a thief changed the ring: push again */
            }
            MC_CHECK(count == CAP / 2 + 1, "push_overflow moved %u items, not %u", count,
                     CAP / 2 + 1);
            MC_CHECK(last == it, "push_overflow's chain does not end with the new item");
            batch_begin(0, false);
            struct cq__item *x = first;
            for (uint32_t i = 0; i < count; i++) {
                int xid = id_of(x);
                MC_CHECK(!log_has(&overflowed, xid), "item %d overflowed twice", xid);
                log_add(&overflowed, xid);
                trace(EV_OVERFLOW, xid);
                if (i + 1 < count) {
                    batch_add(xid); /* the ring's part of the chain: a head batch */
                    owner_removed[xid] = true;
                    owner_in_ring--;
                    x = atomic_load_explicit(&x->next, memory_order_relaxed);
                } else {
                    MC_CHECK(x == it, "push_overflow's chain has the new item elsewhere");
                }
            }
            batch_end();
            check_owner_len();
            return;
        }
        }
    }
}

static void owner_push(void)
{
    owner_push_item(++pushed);
}

static void owner_pop(void)
{
    struct cq__item *it = cq__runq_pop(&rq[0]);
    if (it) {
        int id = id_of(it);
        int pos = ringseq_pos(id);
        MC_CHECK(pos >= 0, "pop returned item %d, which is not in the ring's order", id);
        MC_CHECK(pos > last_pop_pos, "pop returned item %d after a newer one (not FIFO)", id);
        MC_CHECK(!owner_removed[id], "pop returned item %d, which the owner already took", id);
        last_pop_pos = pos;
        owner_removed[id] = true;
        owner_in_ring--;
        log_add(&got, id);
        log_add(&owner_pops, id);
        trace(EV_POP, id);
        batch_begin(0, false);
        batch_add(id);
        batch_end();
    }
    check_owner_len();
}

/* The newest item the owner may still have in its ring (0 if none). */
static int owner_newest(void)
{
    if (ringseq.n == 0) {
        return 0;
    }
    int id = ringseq.id[ringseq.n - 1];
    return owner_removed[id] ? 0 : id;
}

/* pop_back; `push_back`: cq__pool_help's path for an item it does not want — push it back at
 * once, which must succeed (pop_back just made room). */
static void owner_pop_back_impl(bool push_back)
{
    int newest = owner_newest();
    struct cq__item *it = cq__runq_pop_back(&rq[0]);
    if (it) {
        int id = id_of(it);
        MC_CHECK(id == newest, "pop_back returned item %d, the newest is %d", id, newest);
        ringseq.n--; /* it leaves the ring's order (a push back re-enters it at the tail) */
        owner_in_ring--;
        check_owner_len();
        if (push_back) {
            enum cq__runq_push_result r = cq__runq_push(&rq[0], it);
            MC_CHECK(r == CQ__RUNQ_PUSHED, "pushing back a popped-back item failed (%d)", (int)r);
            log_add(&ringseq, id);
            owner_in_ring++;
            trace(EV_PUSHED_BACK, id);
        } else {
            owner_removed[id] = true;
            log_add(&got, id);
            trace(EV_POPBACK, id);
        }
    } else if (newest) {
        trace(EV_POPBACK_NULL, newest);
        log_add(&must_be_stolen, newest); /* empty, or a thief took it */
        owner_removed[newest] = true;
        owner_in_ring--;
    }
    check_owner_len();
}

static void owner_pop_back(void)
{
    owner_pop_back_impl(false);
}

static void owner_pop_back_and_push_back(void)
{
    owner_pop_back_impl(true);
}

/* ---- thieves ------------------------------------------------------------------------------ */

static void thief_steal(int self, int victim)
{
    if (len_checks) {
        /* Not bounded by the capacity: another thread's len() pairs a stale head with a fresh
         * tail (the owner popped and pushed in between), e.g. 5 for a capacity of 4. It is a
         * hint (pool.c only asks is_empty of other procs); it must stay sane across the
         * wrap-around of the indices, though. */
        uint32_t n = cq__runq_len(&rq[victim]);
        MC_CHECK(n <= (uint32_t)pushed, "a thief saw len() = %u, only %d items were ever pushed",
                 n, pushed);
    }
    uint32_t before = peek_tail(&rq[self]);
    struct cq__item *ret = cq__runq_steal_into(&rq[victim], &rq[self]);
    if (ret == NULL) {
        return;
    }
    uint32_t after = peek_tail(&rq[self]);
    batch_begin(victim, true);
    for (uint32_t i = before; i != after; i++) {
        int cid = id_of(peek_slot(&rq[self], i));
        batch_add(cid);
        trace(EV_COPIED, cid);
    }
    int id = id_of(ret);
    batch_add(id);
    batch_end();
    log_add(&got, id);
    trace(EV_STOLEN, id);
}

static void thief_pop_own(int self)
{
    struct cq__item *it = cq__runq_pop(&rq[self]);
    if (it) {
        log_add(&got, id_of(it));
        trace(EV_POP, id_of(it));
    }
}

/* ---- scenarios ---------------------------------------------------------------------------- */

struct scenario_def {
    struct mc_scenario sc;
    uint32_t start;  /* initial index of every ring: near 2^32 to wrap around */
    int prefill;     /* items pushed into the owner's ring by setup, before the threads run */
    bool len_checks;
    bool tiny;       /* small enough to explore without any reduction (--cross-check) */
};

static void setup_common(const struct scenario_def *d)
{
    memset(items, 0, sizeof items);
    for (int i = 1; i <= MAX_ITEMS; i++) {
        cq__item_init(&items[i], CQ__ITEM_TASK, 0);
    }
    for (int r = 0; r < NRINGS; r++) {
        cq__runq_init(&rq[r]);
        atomic_init(&rq[r].head, ((uint64_t)d->start << 32) | d->start);
        atomic_init(&rq[r].tail, d->start);
        left[r].n = 0;
    }
    for (int t = 0; t <= MC_MAX_THREADS; t++) {
        tlog[t].n = 0;
    }
    pushed = 0;
    ringseq.n = got.n = owner_pops.n = elsewhere.n = overflowed.n = must_be_stolen.n = 0;
    batch_items.n = nbatches = 0;
    memset(owner_removed, 0, sizeof owner_removed);
    owner_in_ring = 0;
    last_pop_pos = -1;
    len_checks = d->len_checks;
    for (int i = 0; i < d->prefill; i++) {
        owner_push(); /* on the main context: no scheduling points */
    }
}

/* Drains every ring on the main context and checks the final state. */
static void check_final(void)
{
    for (int r = 0; r < NRINGS; r++) {
        uint64_t head = atomic_load(&rq[r].head);
        uint32_t real = (uint32_t)head, steal = (uint32_t)(head >> 32);
        uint32_t tail = peek_tail(&rq[r]);
        MC_CHECK(steal == real, "ring %d: a steal claim was left behind (steal %u, real %u)", r,
                 steal, real);
        int32_t n = (int32_t)(tail - real);
        MC_CHECK(n >= 0 && n <= (int32_t)CAP, "ring %d: tail - head = %d", r, n);
        MC_CHECK(cq__runq_len(&rq[r]) == (uint32_t)n, "ring %d: len() = %u, %d items are in it",
                 r, cq__runq_len(&rq[r]), n);
        MC_CHECK(cq__runq_is_empty(&rq[r]) == (n == 0), "ring %d: is_empty is wrong", r);
        MC_CHECK(cq__runq_free(&rq[r]) == CAP - (uint32_t)n, "ring %d: free() = %u with %d items",
                 r, cq__runq_free(&rq[r]), n);
        struct cq__item *it;
        while ((it = cq__runq_pop(&rq[r])) != NULL) {
            log_add(&left[r], id_of(it));
        }
        MC_CHECK(left[r].n == n, "ring %d: %d items popped at the end, %d were in it", r,
                 left[r].n, n);
    }

    /* conservation: every id exactly once among everything that came out */
    int seen[MAX_ITEMS + 1] = {0};
    const struct log *sinks[] = {&got, &elsewhere, &overflowed, &left[0], &left[1], &left[2]};
    for (size_t s = 0; s < sizeof sinks / sizeof sinks[0]; s++) {
        for (int i = 0; i < sinks[s]->n; i++) {
            seen[sinks[s]->id[i]]++;
        }
    }
    for (int id = 1; id <= pushed; id++) {
        MC_CHECK(seen[id] == 1, "item %d came out %d times (lost or duplicated)", id, seen[id]);
    }
    for (int i = 0; i < must_be_stolen.n; i++) {
        int id = must_be_stolen.id[i];
        bool stolen = false;
        for (int b = 0; b < nbatches; b++) {
            for (int k = 0; k < batches[b].n; k++) {
                stolen |= batches[b].ring == 0 && batches[b].thief &&
                          batch_items.id[batches[b].first + k] == id;
            }
        }
        MC_CHECK(stolen,
                 "pop_back returned NULL while item %d, the newest, was not taken by a thief",
                 id);
    }

    /* FIFO of the owner's ring: head batches and leftovers tile its order exactly */
    int covered[MAX_LOG] = {0};
    for (int b = 0; b < nbatches; b++) {
        if (batches[b].ring != 0) {
            continue;
        }
        int p0 = -1;
        for (int k = 0; k < batches[b].n; k++) {
            int id = batch_items.id[batches[b].first + k];
            int p = ringseq_pos(id);
            MC_CHECK(p >= 0, "item %d left the owner's ring but is not in its order", id);
            MC_CHECK(k == 0 || p == p0 + k,
                     "a batch taken from the owner's ring is not contiguous and in order "
                     "(item %d)", id);
            if (k == 0) {
                p0 = p;
            }
            covered[p]++;
        }
    }
    int first_left = ringseq.n - left[0].n;
    for (int k = 0; k < left[0].n; k++) {
        int p = ringseq_pos(left[0].id[k]);
        MC_CHECK(p == first_left + k,
                 "the items left in the owner's ring are not the newest, in order (item %d)",
                 left[0].id[k]);
        covered[p]++;
    }
    for (int p = 0; p < ringseq.n; p++) {
        MC_CHECK(covered[p] == 1, "position %d of the owner's ring (item %d) left it %d times",
                 p, ringseq.id[p], covered[p]);
    }

    /* batches stolen from a thief's ring come out in that ring's order too */
    for (int b = 0; b < nbatches; b++) {
        if (batches[b].ring == 0) {
            continue;
        }
        for (int k = 1; k < batches[b].n; k++) {
            MC_CHECK(batch_items.id[batches[b].first + k] >
                         batch_items.id[batches[b].first + k - 1],
                     "a batch stolen from ring %d is out of order", batches[b].ring);
        }
    }
}

static uint64_t outcome(void)
{
    uint64_t h = 1469598103934665603ull;
    for (int l = 0; l < MC_MAX_THREADS + 1 + NRINGS; l++) {
        const struct log *lg = l <= MC_MAX_THREADS ? &tlog[l] : &left[l - MC_MAX_THREADS - 1];
        for (int i = 0; i < lg->n; i++) {
            h = (h ^ (uint64_t)lg->id[i]) * 1099511628211ull;
        }
        h = (h ^ 0xffff) * 1099511628211ull;
    }
    return h;
}

static const char *name_of(const volatile void *addr, char *buf, unsigned size)
{
    static const char *rings[NRINGS] = {"owner", "thief1", "thief2"};
    for (int r = 0; r < NRINGS; r++) {
        if (addr == &rq[r].head) {
            snprintf(buf, size, "%s.head", rings[r]);
            return buf;
        }
        if (addr == &rq[r].tail) {
            snprintf(buf, size, "%s.tail", rings[r]);
            return buf;
        }
        for (unsigned i = 0; i < CAP; i++) {
            if (addr == &rq[r].slots[i]) {
                snprintf(buf, size, "%s.slots[%u]", rings[r], i);
                return buf;
            }
        }
    }
    for (int i = 1; i <= MAX_ITEMS; i++) {
        if (addr == &items[i].next) {
            snprintf(buf, size, "item%d.next", i);
            return buf;
        }
    }
    return NULL;
}

/* Threads. Each scenario lists the owner first. */

static void owner_pop_steal(void)
{
    owner_push();
    owner_push();
    owner_push();
    owner_pop();
    owner_push();
    owner_push();
    owner_pop();
    owner_pop();
}

static void owner_popback(void)
{
    owner_push();
    owner_push();
    owner_pop_back();
    owner_pop_back();
    owner_pop_back();
}

static void owner_two_thieves(void)
{
    owner_push();
    owner_push();
    owner_push();
    owner_pop();
    owner_push();
    owner_pop();
}

static void owner_overflow(void)
{
    owner_push(); /* the ring is full (prefilled): overflow, or elsewhere while a thief copies */
    owner_push();
    owner_pop();
}

static void owner_help(void)
{
    owner_pop_back_and_push_back(); /* the ring is full (prefilled) */
    owner_pop();
    owner_push();
}

static void owner_chain(void)
{
    owner_push();
    owner_push();
    owner_push();
    owner_pop();
}

static void owner_popback_two(void)
{
    owner_push();
    owner_push();
    owner_pop_back();
    owner_pop_back();
}

static void owner_refill(void)
{
    owner_push(); /* 2 items prefilled: the fourth push wraps onto the second slot */
    owner_push();
    owner_push();
    owner_push();
}

static void owner_push_pop(void)
{
    owner_push();
    owner_pop();
}

static void owner_push_popback(void)
{
    owner_push();
    owner_pop_back();
}

static void owner_push_one(void)
{
    owner_push();
}

/* A third party asking how full the owner's ring is (pool.c's proc_has_work). */
static void observer_len(void)
{
    uint32_t n = cq__runq_len(&rq[0]);
    MC_CHECK(n <= (uint32_t)pushed, "an observer saw len() = %u, only %d items were ever pushed",
             n, pushed);
    log_add(&tlog[mc_current_thread() + 1], (int)n);
}

static void thief1_steal(void)
{
    thief_steal(1, 0);
}

static void thief1_steal_twice(void)
{
    thief_steal(1, 0);
    thief_steal(1, 0);
}

static void thief2_steal(void)
{
    thief_steal(2, 0);
}

static void thief1_steal_then_pop(void)
{
    thief_steal(1, 0);
    thief_pop_own(1);
}

static void thief2_steal_from_thief1(void)
{
    thief_steal(2, 1);
    thief_steal(2, 0);
}

#define SCENARIO(nm, about_, st, pf, lc, sm, ...)                                               \
    {                                                                                           \
        .sc = {.name = nm, .about = about_, __VA_ARGS__, .check = check_final,                  \
               .outcome = outcome, .name_of = name_of},                                         \
        .start = (st), .prefill = (pf), .len_checks = (lc), .tiny = (sm)                       \
    }

#define NEAR_WRAP(k) ((uint32_t)(UINT32_MAX - (k)))

static struct scenario_def defs[] = {
    SCENARIO("pop_steal", "owner: 3 push, pop, 2 push, 2 pop; thief: steal", 0, 0, true, false,
             .nthreads = 2, .thread_names = {"owner", "thief1"},
             .threads = {owner_pop_steal, thief1_steal}),
    SCENARIO("pop_steal_wrap", "pop_steal with indices starting at 2^32 - 3", NEAR_WRAP(2), 0,
             true, false, .nthreads = 2, .thread_names = {"owner", "thief1"},
             .threads = {owner_pop_steal, thief1_steal}),
    SCENARIO("popback_steal", "owner: 2 push, 3 pop_back; thief: 2 steal (last-item contest)",
             0, 0, true, false, .nthreads = 2, .thread_names = {"owner", "thief1"},
             .threads = {owner_popback, thief1_steal_twice}),
    SCENARIO("popback_steal_wrap", "popback_steal with indices starting at 2^32 - 1",
             NEAR_WRAP(0), 0, true, false, .nthreads = 2, .thread_names = {"owner", "thief1"},
             .threads = {owner_popback, thief1_steal_twice}),
    SCENARIO("two_thieves", "owner: 3 push, pop, push, pop; two thieves: steal each", 0, 0,
             false, false, .nthreads = 3, .thread_names = {"owner", "thief1", "thief2"},
             .threads = {owner_two_thieves, thief1_steal, thief2_steal}),
    SCENARIO("two_thieves_refill", "2 items in the ring; owner: 4 push; two thieves: steal "
             "each", 0, 2, false, false, .nthreads = 3,
             .thread_names = {"owner", "thief1", "thief2"},
             .threads = {owner_refill, thief1_steal, thief2_steal}),
    SCENARIO("popback_two_thieves", "owner: 2 push, 2 pop_back; two thieves: steal each", 0, 0,
             false, false, .nthreads = 3, .thread_names = {"owner", "thief1", "thief2"},
             .threads = {owner_popback_two, thief1_steal, thief2_steal}),
    SCENARIO("overflow_steal", "full ring; owner: 2 push (overflow), pop; thief: steal", 0, 4,
             true, false, .nthreads = 2, .thread_names = {"owner", "thief1"},
             .threads = {owner_overflow, thief1_steal}),
    SCENARIO("overflow_steal_wrap", "overflow_steal with indices starting at 2^32 - 2",
             NEAR_WRAP(1), 4, true, false, .nthreads = 2, .thread_names = {"owner", "thief1"},
             .threads = {owner_overflow, thief1_steal}),
    SCENARIO("help_push_back", "full ring; owner: pop_back + push back, pop, push; thief: steal",
             0, 4, true, false, .nthreads = 2, .thread_names = {"owner", "thief1"},
             .threads = {owner_help, thief1_steal}),
    /* tiny: explored with no reduction at all too (--cross-check) */
    SCENARIO("tiny_pop_steal", "owner: push, pop; thief: steal", 0, 0, false, true,
             .nthreads = 2, .thread_names = {"owner", "thief1"},
             .threads = {owner_push_pop, thief1_steal}),
    SCENARIO("tiny_popback_steal", "owner: push, pop_back; thief: steal", NEAR_WRAP(0), 0,
             false, true, .nthreads = 2, .thread_names = {"owner", "thief1"},
             .threads = {owner_push_popback, thief1_steal}),
    SCENARIO("tiny_two_thieves", "2 items in the ring; two thieves: steal each", 0, 2, false,
             true, .nthreads = 2, .thread_names = {"thief1", "thief2"},
             .threads = {thief1_steal, thief2_steal}),
    SCENARIO("tiny_overflow", "full ring; owner: push (overflow); thief: steal", 0, 4, false,
             true, .nthreads = 2, .thread_names = {"owner", "thief1"},
             .threads = {owner_push_one, thief1_steal}),
    SCENARIO("tiny_three", "owner: push; thief: steal; observer: len", 0, 0, false, true,
             .nthreads = 3, .thread_names = {"owner", "thief1", "observer"},
             .threads = {owner_push_one, thief1_steal, observer_len}),
    SCENARIO("steal_chain", "owner: 3 push, pop; thief1: steal, pop; thief2: steal from "
             "thief1, then from owner", NEAR_WRAP(1), 0, false, false, .nthreads = 3,
             .thread_names = {"owner", "thief1", "thief2"},
             .threads = {owner_chain, thief1_steal_then_pop, thief2_steal_from_thief1}),
};

#define NDEFS (sizeof defs / sizeof defs[0])

/* setup() has no argument: one trampoline per scenario would be noise, so the scenario being
 * explored is a global. */
static const struct scenario_def *exploring;

static void setup(void)
{
    setup_common(exploring);
}

static void run(const struct scenario_def *d, enum mc_mode mode, int pb, bool verbose,
                struct mc_stats *st)
{
    exploring = d;
    struct mc_scenario sc = d->sc;
    sc.setup = setup;
    struct mc_options opt = {.mode = mode, .preemption_bound = pb, .verbose = verbose};
    mc_explore(&sc, &opt, st);
}

static void print_stats(const struct scenario_def *d, const char *mode, const struct mc_stats *st)
{
    printf("%-20s %-4s %9" PRIu64 " executions %6" PRIu64 " pruned %9" PRIu64
           " traces %10" PRIu64 " steps  depth %3u  outcomes %3" PRIu64 "  %6.2f s\n",
           d->sc.name, mode, st->executions, st->pruned, st->traces, st->steps, st->max_depth,
           st->outcomes, st->seconds);
    fflush(stdout);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int cross_pb = 2;
    const char *only = NULL;
    enum mc_mode mode = MC_DPOR;
    int pb = -1;
    bool verbose = false, cross = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--scenario") && i + 1 < argc) {
            only = argv[++i];
        } else if (!strcmp(argv[i], "--naive")) {
            mode = MC_NAIVE;
        } else if (!strcmp(argv[i], "--pb") && i + 1 < argc) {
            pb = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--cross-check")) {
            cross = true;
            if (i + 1 < argc && argv[i + 1][0] != '-') {
                cross_pb = atoi(argv[++i]);
            }
        } else if (!strcmp(argv[i], "-v")) {
            verbose = true;
        } else if (!strcmp(argv[i], "--list")) {
            for (size_t k = 0; k < NDEFS; k++) {
                printf("%-20s %s%s\n", defs[k].sc.name, defs[k].sc.about,
                       defs[k].tiny ? " [tiny]" : "");
            }
            return 0;
        } else {
            fprintf(stderr, "usage: %s [--scenario NAME] [--naive [--pb N]] [--cross-check [PB]] "
                            "[--list] [-v]\n", argv[0]);
            return 2;
        }
    }
    printf("ring model check: capacity %u, sequentially consistent interleavings\n", CAP);
    int ran = 0, failed = 0;
    for (size_t k = 0; k < NDEFS; k++) {
        const struct scenario_def *d = &defs[k];
        if (only && strcmp(only, d->sc.name)) {
            continue;
        }
        struct mc_stats st;
        run(d, mode, pb, verbose, &st);
        print_stats(d, mode == MC_DPOR ? "dpor" : pb >= 0 ? "pb" : "all", &st);
        ran++;
        if (!cross) {
            continue;
        }
        /* The unreduced search: complete for the tiny scenarios (the sets must be equal),
         * preemption-bounded for the others (its traces must be among DPOR's). */
        size_t ndpor;
        uint64_t *dpor = mc_last_traces(&ndpor);
        struct mc_stats all;
        run(d, MC_NAIVE, d->tiny ? -1 : cross_pb, verbose, &all);
        print_stats(d, d->tiny ? "all" : "pb", &all);
        size_t nall;
        uint64_t *alltr = mc_last_traces(&nall);
        size_t missing = 0;
        for (size_t i = 0; i < nall; i++) {
            missing += bsearch(&alltr[i], dpor, ndpor, sizeof *dpor, cmp_u64) == NULL;
        }
        bool ok = missing == 0 && (!d->tiny || (nall == ndpor && all.outcomes == st.outcomes));
        printf("  %s: %zu traces unreduced (%s), %zu with DPOR, %zu missing from DPOR\n",
               ok ? "ok" : "MISMATCH", nall, d->tiny ? "complete" : "preemption-bounded",
               ndpor, missing);
        failed += !ok;
        free(dpor);
        free(alltr);
    }
    if (ran == 0) {
        fprintf(stderr, "no scenario named %s\n", only ? only : "?");
        return 2;
    }
    printf("%d scenarios explored, %d mismatches, no violation\n", ran, failed);
    return failed ? 1 : 0;
}
