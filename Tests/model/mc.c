/*
 * The interleaving checker (see mc.h).
 *
 * A state is "every live thread stopped at its next scheduling point, with that operation
 * announced". A step lets one thread perform its announced operation and run its private code
 * up to its next scheduling point (or its end). Node d of the search stack is the state before
 * step d: it stores each live thread's announced operation, the thread chosen, and the DPOR
 * sets (backtrack: threads still to try here; done: tried; sleep: provably redundant here).
 * An execution replays nodes [0, replay_depth) with their stored choice and extends the stack
 * past them with fresh nodes; then the deepest node with an untried backtrack entry is
 * advanced.
 *
 * DPOR (Source-DPOR): after each new step, every earlier step of another thread in an immediate
 * race with it (dependent, ordered only by that dependence: vector clocks tell) is reversed by
 * scheduling, at the node before the earlier step, a thread that can start the reversed
 * order (see reverse_races). Sleep sets drop the executions that only reorder independent
 * steps of ones already explored. Every Mazurkiewicz trace (class of interleavings equal up
 * to swapping adjacent independent steps) gets at least one execution.
 */
#define _GNU_SOURCE
#include "mc.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#include "platform/atomic_internal.h" /* enum cq__model_op, the cq__model_yield prototype */

#define MC_MAX_STEPS 4096
#define MC_STACK_SIZE (256 * 1024)

struct op {
    const volatile void *addr;
    int kind; /* enum cq__model_op */
    const char *func;
    int line;
};

struct node {
    struct op next[MC_MAX_THREADS]; /* announced operation of each live thread */
    uint8_t live, backtrack, done, sleep;
    int8_t chosen;                  /* the thread that performs step d */
    int8_t prev;                    /* the thread that performed step d - 1 (-1 at the root) */
    int16_t preemptions;            /* preemptions in steps [0, d) */
};

static struct node nodes[MC_MAX_STEPS];
static uint32_t clocks[MC_MAX_STEPS][MC_MAX_THREADS]; /* vector clock of step d */
static uint32_t tclock[MC_MAX_THREADS][MC_MAX_THREADS]; /* clock of each thread's last step */
static unsigned depth;        /* steps performed in this execution */
static unsigned replay_depth; /* nodes below this are replayed with their stored choice */

static const struct mc_scenario *sc;
static const struct mc_options *opt;
static struct mc_stats *stats;

static ucontext_t main_ctx, tctx[MC_MAX_THREADS];
static char *stacks[MC_MAX_THREADS];
static int cur = -1;   /* running simulated thread, -1 on the main context */
static bool starting;  /* threads run to their first scheduling point, one after the other */
static bool live[MC_MAX_THREADS];
static struct op pending[MC_MAX_THREADS];
static enum { END_NONE, END_DONE, END_PRUNED } end_reason;

/* A set of 64-bit hashes: open addressing, 0 marks an empty slot. */
struct hset {
    uint64_t *slot;
    size_t cap, count;
    uint64_t digest; /* order-independent digest of the members */
};

static struct hset outcome_set, trace_set;

int mc_current_thread(void)
{
    return cur;
}

static unsigned live_mask(void)
{
    unsigned m = 0;
    for (int t = 0; t < sc->nthreads; t++) {
        if (live[t]) {
            m |= 1u << t;
        }
    }
    return m;
}

static bool dependent(const struct op *a, const struct op *b)
{
    if (a->kind == CQ__MODEL_FENCE || b->kind == CQ__MODEL_FENCE || a->addr != b->addr) {
        return false;
    }
    return a->kind != CQ__MODEL_LOAD || b->kind != CQ__MODEL_LOAD;
}

static int lowest(unsigned mask)
{
    return __builtin_ctz(mask);
}

static const char *kind_name(int kind)
{
    switch (kind) {
    case CQ__MODEL_LOAD:
        return "load";
    case CQ__MODEL_STORE:
        return "store";
    case CQ__MODEL_RMW:
        return "rmw";
    default:
        return "fence";
    }
}

static void print_op(const struct op *o)
{
    char where[64], buf[64];
    snprintf(where, sizeof where, "%s:%d", o->func, o->line);
    const char *name = NULL;
    if (o->kind == CQ__MODEL_FENCE) {
        name = "";
    } else if (sc->name_of) {
        name = sc->name_of(o->addr, buf, sizeof buf);
    }
    if (name == NULL) {
        snprintf(buf, sizeof buf, "%p", (const void *)o->addr);
        name = buf;
    }
    fprintf(stderr, "%-32s %-5s %s\n", where, kind_name(o->kind), name);
}

static void print_schedule(void)
{
    fprintf(stderr, "schedule (%u steps; each step is the operation shown, then the thread's "
                    "private code up to its next atomic operation):\n", depth);
    for (unsigned i = 0; i < depth; i++) {
        int t = nodes[i].chosen;
        fprintf(stderr, "  %c%4u  T%d %-8s ", i && t != nodes[i].prev ? '>' : ' ', i, t,
                sc->thread_names[t] ? sc->thread_names[t] : "");
        print_op(&nodes[i].next[t]);
    }
    fprintf(stderr, "  ('>' marks a switch to another thread)\n  threads' next operations:\n");
    for (int t = 0; t < sc->nthreads; t++) {
        fprintf(stderr, "         T%d %-8s ", t, sc->thread_names[t] ? sc->thread_names[t] : "");
        if (live[t]) {
            print_op(&pending[t]);
        } else {
            fprintf(stderr, "(finished)\n");
        }
    }
    fprintf(stderr, "  as a choice string: ");
    for (unsigned i = 0; i < depth; i++) {
        fputc('0' + nodes[i].chosen, stderr);
    }
    fputc('\n', stderr);
}

void mc_fail(const char *fmt, ...)
{
    fprintf(stderr, "\nVIOLATION in scenario %s", sc ? sc->name : "?");
    if (cur >= 0) {
        fprintf(stderr, " (in thread T%d %s)", cur, sc->thread_names[cur]);
    } else {
        fprintf(stderr, " (final-state check)");
    }
    fprintf(stderr, ": ");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    if (sc) {
        print_schedule();
    }
    fflush(stderr);
    exit(1);
}

static void harness_error(const char *what)
{
    cur = -1;
    mc_fail("harness error: %s (the scenario must be deterministic and reset by setup())", what);
}

static uint32_t tclock_before[MC_MAX_THREADS]; /* q's clock before its step (reverse_races) */

/* Vector clock of step `depth`, performed by q. */
static void clock_step(int q)
{
    const struct op *a = &nodes[depth].next[q];
    uint32_t c[MC_MAX_THREADS];
    memcpy(c, tclock[q], sizeof c);
    if (a->kind != CQ__MODEL_FENCE) {
        for (unsigned k = 0; k < depth; k++) {
            int t = nodes[k].chosen;
            if (t != q && dependent(&nodes[k].next[t], a)) {
                for (int j = 0; j < sc->nthreads; j++) {
                    if (clocks[k][j] > c[j]) {
                        c[j] = clocks[k][j];
                    }
                }
            }
        }
    }
    c[q] = depth + 1;
    memcpy(clocks[depth], c, sizeof c);
    memcpy(tclock_before, tclock[q], sizeof tclock_before);
    memcpy(tclock[q], c, sizeof c);
}

static bool hb(unsigned k, unsigned j) /* step k happens-before step j (k < j) */
{
    return clocks[j][nodes[k].chosen] >= k + 1;
}

/*
 * Source-DPOR race reversal (Abdulla, Aronis, Jonsson, Sagonas, POPL 2014) for step d, just
 * performed by q, whose vector clock is computed. For every earlier step i in an immediate race
 * with it (dependent, another thread, ordered before d only by that dependence), the
 * executions that reverse the race start, at node i, with one of the "initials" of
 * v = (the steps after i that do not happen-after i), then q: the threads whose first step in v
 * has no predecessor in v. If none of them is in node i's backtrack set yet, one is added.
 */
static void reverse_races(int q)
{
    const struct op *a = &nodes[depth].next[q];
    if (a->kind == CQ__MODEL_FENCE) {
        return;
    }
    unsigned dep[MC_MAX_STEPS];
    unsigned ndep = 0;
    for (unsigned k = 0; k < depth; k++) {
        int t = nodes[k].chosen;
        if (t != q && dependent(&nodes[k].next[t], a)) {
            dep[ndep++] = k;
        }
    }
    for (unsigned x = 0; x < ndep; x++) {
        unsigned i = dep[x];
        int ti = nodes[i].chosen;
        /* immediate: i is not ordered before d through q's earlier steps or another step */
        bool covered = tclock_before[ti] >= i + 1;
        for (unsigned y = 0; y < ndep && !covered; y++) {
            covered = y != x && dep[y] > i && hb(i, dep[y]);
        }
        if (covered) {
            continue;
        }
        unsigned initials = 0, seen = 0;
        for (unsigned k = i + 1; k < depth; k++) {
            int t = nodes[k].chosen;
            if (hb(i, k) || (seen & (1u << t))) {
                continue;
            }
            seen |= 1u << t;
            bool first = true; /* no earlier step of v happens-before t's first step in v */
            for (unsigned m = i + 1; m < k && first; m++) {
                first = hb(i, m) || !hb(m, k);
            }
            if (first) {
                initials |= 1u << t;
            }
        }
        if (!(seen & (1u << q))) {
            bool first = true;
            for (unsigned m = i + 1; m < depth && first; m++) {
                first = hb(i, m) || clocks[depth][nodes[m].chosen] < m + 1;
            }
            if (first) {
                initials |= 1u << q;
            }
        }
        struct node *n = &nodes[i];
        initials &= n->live;
        if (initials && !(initials & n->backtrack)) {
            unsigned awake = initials & ~n->sleep;
            n->backtrack |= (uint8_t)(1u << lowest(awake ? awake : initials));
        }
    }
}

/* At a state: returns the thread that performs the next step, or -1 (execution over). */
static int schedule(void)
{
    unsigned livem = live_mask();
    if (livem == 0) {
        end_reason = END_DONE;
        return -1;
    }
    if (depth >= MC_MAX_STEPS) {
        cur = -1;
        mc_fail("an execution exceeded %d steps (livelock?)", MC_MAX_STEPS);
    }
    struct node *n = &nodes[depth];
    int q;
    if (depth < replay_depth) {
        if (n->live != livem) {
            harness_error("replay reached a different set of live threads");
        }
        for (int t = 0; t < sc->nthreads; t++) {
            if ((livem & (1u << t)) &&
                (n->next[t].addr != pending[t].addr || n->next[t].kind != pending[t].kind ||
                 n->next[t].line != pending[t].line)) {
                harness_error("replay reached a different operation");
            }
        }
        q = n->chosen;
    } else {
        n->live = (uint8_t)livem;
        memcpy(n->next, pending, sizeof n->next);
        n->backtrack = n->done = n->sleep = 0;
        n->prev = depth ? nodes[depth - 1].chosen : -1;
        n->preemptions = 0;
        if (depth) {
            const struct node *p = &nodes[depth - 1];
            n->preemptions = (int16_t)(p->preemptions +
                                       (p->prev >= 0 && p->chosen != p->prev &&
                                        (p->live & (1u << p->prev))));
            if (opt->mode == MC_DPOR) {
                /* Threads asleep (or already explored) at the parent stay asleep here while
                 * their operation commutes with the step just taken. */
                unsigned s = (p->sleep | p->done) & ~(1u << p->chosen) & livem;
                for (int r = 0; r < sc->nthreads; r++) {
                    if ((s & (1u << r)) && !dependent(&p->next[r], &p->next[p->chosen])) {
                        n->sleep |= (uint8_t)(1u << r);
                    }
                }
            }
        }
        unsigned cand = livem & ~n->sleep;
        if (cand == 0) {
            end_reason = END_PRUNED;
            return -1;
        }
        int prev = n->prev;
        bool prev_live = prev >= 0 && (livem & (1u << prev));
        if (opt->mode == MC_DPOR) {
            q = prev_live && (cand & (1u << prev)) ? prev : lowest(cand);
            n->backtrack = (uint8_t)(1u << q);
        } else {
            if (opt->preemption_bound >= 0 && prev_live &&
                n->preemptions >= opt->preemption_bound) {
                cand = 1u << prev;
            }
            q = prev_live && (cand & (1u << prev)) ? prev : lowest(cand);
            n->backtrack = (uint8_t)cand;
        }
        n->chosen = (int8_t)q;
        n->done = (uint8_t)(1u << q);
    }
    clock_step(q);
    /* a replayed step's races were reversed when it was new (same prefix, same races) */
    if (opt->mode == MC_DPOR && depth + 1 >= replay_depth) {
        reverse_races(q);
    }
    depth++;
    stats->steps++;
    return q;
}

/* Advances the search stack to the next schedule; false when the search is complete. */
static bool next_schedule(void)
{
    for (int b = (int)depth - 1; b >= 0; b--) {
        struct node *n = &nodes[b];
        unsigned avail = n->backtrack & ~n->done & ~n->sleep;
        if (avail) {
            int q = lowest(avail);
            n->chosen = (int8_t)q;
            n->done |= (uint8_t)(1u << q);
            replay_depth = (unsigned)b + 1;
            return true;
        }
    }
    return false;
}

/* Switches from thread `me` (still live) to q (-1: back to the main context). */
static void dispatch(int me, int q)
{
    if (q == me) {
        return;
    }
    cur = q;
    swapcontext(&tctx[me], q < 0 ? &main_ctx : &tctx[q]);
    /* resumed: whoever switched to us set cur = me */
}

void cq__model_yield(const volatile void *addr, enum cq__model_op kind, const char *func,
                     int line)
{
    if (cur < 0) {
        return; /* setup and checks run on the main context: no scheduling */
    }
    int me = cur;
    pending[me] = (struct op){addr, (int)kind, func, line};
    if (starting) {
        cur = -1;
        swapcontext(&tctx[me], &main_ctx);
        return;
    }
    dispatch(me, schedule());
}

static void thread_entry(void)
{
    int me = cur;
    sc->threads[me]();
    live[me] = false;
    int q = starting ? -1 : schedule();
    cur = q;
    setcontext(q < 0 ? &main_ctx : &tctx[q]);
    abort();
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* Adds h; true if it was new. */
static bool hset_add(struct hset *set, uint64_t h)
{
    h = h ? h : 1;
    if (2 * (set->count + 1) > set->cap) {
        size_t cap = set->cap ? 2 * set->cap : 1024;
        uint64_t *slot = calloc(cap, sizeof *slot);
        if (slot == NULL) {
            abort();
        }
        for (size_t i = 0; i < set->cap; i++) {
            if (set->slot[i]) {
                size_t j = mix(set->slot[i]) & (cap - 1);
                while (slot[j]) {
                    j = (j + 1) & (cap - 1);
                }
                slot[j] = set->slot[i];
            }
        }
        free(set->slot);
        set->slot = slot;
        set->cap = cap;
    }
    size_t j = mix(h) & (set->cap - 1);
    while (set->slot[j]) {
        if (set->slot[j] == h) {
            return false;
        }
        j = (j + 1) & (set->cap - 1);
    }
    set->slot[j] = h;
    set->count++;
    set->digest += mix(h ^ 0x9e3779b97f4a7c15ull);
    return true;
}

static void hset_clear(struct hset *set)
{
    free(set->slot);
    memset(set, 0, sizeof *set);
}

/*
 * A hash of the execution's Mazurkiewicz trace: its steps as a partial order (each step: its
 * thread, its operation, and how many steps of each thread happen-before it), which is the
 * same for every interleaving that only reorders independent steps. Exhaustive DPOR must reach
 * exactly the traces the unreduced search reaches; --cross-check compares the two sets.
 */
static uint64_t trace_hash(void)
{
    uint32_t local[MC_MAX_STEPS]; /* index of each step among its thread's steps */
    uint32_t count[MC_MAX_THREADS] = {0};
    uint64_t h = 0x84222325cbf29ce4ull;
    for (unsigned k = 0; k < depth; k++) {
        int t = nodes[k].chosen;
        local[k] = count[t]++;
        const struct op *o = &nodes[k].next[t];
        uint64_t e = mix(((uint64_t)(uintptr_t)o->addr) ^ ((uint64_t)o->kind << 56) ^
                         ((uint64_t)o->line << 40) ^ ((uint64_t)t << 36) ^ local[k]);
        for (int j = 0; j < sc->nthreads; j++) {
            uint32_t c = clocks[k][j] ? local[clocks[k][j] - 1] + 1 : 0;
            e = mix(e ^ ((uint64_t)c << (8 * j)));
        }
        h += e; /* a sum: the interleaving order of the steps does not matter */
    }
    return h;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint64_t *mc_last_traces(size_t *count)
{
    uint64_t *v = malloc((trace_set.count + 1) * sizeof *v);
    if (v == NULL) {
        abort();
    }
    size_t n = 0;
    for (size_t i = 0; i < trace_set.cap; i++) {
        if (trace_set.slot[i]) {
            v[n++] = trace_set.slot[i];
        }
    }
    qsort(v, n, sizeof *v, cmp_u64);
    *count = n;
    return v;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void mc_explore(const struct mc_scenario *scenario, const struct mc_options *options,
                struct mc_stats *st)
{
    sc = scenario;
    opt = options;
    stats = st;
    memset(st, 0, sizeof *st);
    hset_clear(&outcome_set);
    hset_clear(&trace_set);
    for (int t = 0; t < sc->nthreads; t++) {
        if (stacks[t] == NULL && (stacks[t] = malloc(MC_STACK_SIZE)) == NULL) {
            abort();
        }
    }
    double t0 = now_s();
    replay_depth = 0;
    for (;;) {
        depth = 0;
        memset(tclock, 0, sizeof tclock);
        end_reason = END_NONE;
        cur = -1;
        sc->setup();
        starting = true;
        for (int t = 0; t < sc->nthreads; t++) {
            live[t] = true;
            getcontext(&tctx[t]);
            tctx[t].uc_stack.ss_sp = stacks[t];
            tctx[t].uc_stack.ss_size = MC_STACK_SIZE;
            tctx[t].uc_link = NULL;
            makecontext(&tctx[t], thread_entry, 0);
        }
        for (int t = 0; t < sc->nthreads; t++) {
            cur = t;
            swapcontext(&main_ctx, &tctx[t]);
        }
        starting = false;
        cur = -1;
        int q = schedule();
        if (q >= 0) {
            cur = q;
            swapcontext(&main_ctx, &tctx[q]);
        }
        cur = -1;
        if (depth > st->max_depth) {
            st->max_depth = depth;
        }
        if (end_reason == END_DONE) {
            st->executions++;
            sc->check();
            if (sc->outcome) {
                hset_add(&outcome_set, sc->outcome());
            }
            uint64_t th = trace_hash();
            if (hset_add(&trace_set, th) && getenv("MC_DUMP_TRACES")) {
                fprintf(stderr, "trace %016" PRIx64 ": ", th);
                for (unsigned i = 0; i < depth; i++) {
                    fputc('0' + nodes[i].chosen, stderr);
                }
                fputc('\n', stderr);
            }
        } else {
            st->pruned++;
        }
        if (opt->verbose && (st->executions + st->pruned) % 100000 == 0) {
            fprintf(stderr, "  %s: %" PRIu64 " executions, %" PRIu64 " pruned...\n", sc->name,
                    st->executions, st->pruned);
        }
        if (!next_schedule()) {
            break;
        }
    }
    st->outcomes = outcome_set.count;
    st->outcome_digest = outcome_set.digest;
    st->traces = trace_set.count;
    st->trace_digest = trace_set.digest;
    st->seconds = now_s() - t0;
}
