/*
 * cq_after_f: one-shot timers that push a function onto a queue.
 *
 * A pending call is a small malloc'd record (queue, function, context, times). Submitters
 * push records on a lock-free stack and take no lock: a lock there let a thread submitting a
 * burst starve the thread that fires (glibc's mutex is not fair), so timers due during a
 * burst ran only after it (1-6 ms late). Whoever fires moves the records, under `A.lock`,
 * into a heap per clock whose entries carry the keys (deadline, latest, submission number):
 * sifting never touches the scattered records, and only the heap array is written.
 *
 * Windows. Timers fire in windows, as the reactor's TIMER sources do: the window's time W is
 * the largest deadline not after the smallest latest (deadline + leeway), so timers whose
 * leeways overlap share one wake-up, none fires after its latest, and a lone timer fires at
 * its deadline.
 *
 * The firer. Waking the reactor and then, from it, a parked worker cost two wake-ups per
 * window, the second a cross-CPU futex wake (~25 us here) on top of the first, and the
 * reactor's notify contended with parking workers for the pool lock. So monotonic windows are
 * fired by a task on a worker, the *firer*: it sleeps until a little before the next window,
 * spins the last microseconds, cuts the window and pushes its tasks to its own ring, where
 * they run next; a continuation behind them takes the next window. One wake-up per window, on
 * the thread that runs the work. The early margin is the 75th percentile of how late its
 * sleeps end, learnt as it goes. A short sleep keeps the worker's proc (a task that naps); a
 * long one, or one while work from outside the pool waits, goes through the pool's block
 * bracket. At most one firer exists (POSTED on a run queue, or RUNNING); it leaves when no
 * monotonic timer is left or the next window is more than FIRER_IDLE_MAX_NS away.
 *
 * The reactor (reactor.c, through cq__after_run) starts a firer FIRER_LEAD_NS before a
 * window when none exists, fires wall-clock windows itself (its timerfd follows clock
 * changes), and is the watchdog: while a firer exists it looks again FIRER_GRACE_NS after the
 * next window and fires the windows that are that late itself while the firer is stuck on a
 * run queue (behind a long task, or its thread preempted). Windows are cut and pushed by one
 * party at a time, in deadline order: the RUNNING firer, or the reactor only while no firer
 * runs (it cuts under the lock and pushes after it, since a push may take the pool's lock,
 * which fork() takes before ours; a firer that starts meanwhile waits for it). Whoever cuts
 * reads the clock before it takes the new records: a timer whose cq_after_f returned before a
 * later-due timer's deadline fires no later than it, so on a serial queue it runs first
 * (test_after_burst.c). The reactor used to take new timers, then fire what was due by a
 * clock read later, and so fired later-due timers ahead of ones submitted in between.
 *
 * Waking for new timers. The party that sleeps publishes `look`: it will be in time for any timer
 * due at or after it. A submitter wakes it only for a timer due earlier, so a burst of n timers in
 * shuffled order wakes it about ln(n) times; every INCOMING_BATCH-th submission wakes it anyway if
 * it sleeps, so records move to the heap a thousand at a time rather than all at once when the
 * first falls due. A submitter pushes (seq_cst) and then reads `look` (seq_cst); a sleeper
 * publishes `look` (seq_cst) and then looks at the stack (seq_cst) once more: one of them sees the
 * other.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/prctl.h>

#include "events/after_heap_internal.h"
#include "events/reactor_command_internal.h"
#include "events/reactor_internal.h"
#include "events/source_internal.h"
#include "platform/diag_internal.h"
#include "platform/parker_internal.h"
#include "platform/time_internal.h"
#include "queue/queue_internal.h"
#include "queue/work_item_internal.h"
#include "scheduler/pool_internal.h"
#include "scheduler/task_internal.h"
#include "scheduler/thread_internal.h"

#define FIRER_LEAD_NS 200000       /* the reactor starts a firer this long before a window */
#define FIRER_IDLE_MAX_NS 10000000 /* a firer leaves when the next window is further away */
#define FIRER_GRACE_NS 250000      /* the reactor fires windows this late past a stuck firer */
#define FIRER_HOLD_MAX_NS 500000   /* a firer sleeps this long at most keeping its proc */
#define FIRER_HOLD_BUSY_NS 50000   /* the same while work from outside the pool waits */
#define FIRER_MARGIN_MIN_NS 2000   /* bounds of the learnt early margin */
#define FIRER_MARGIN_MAX_NS 50000
#define FIRER_MARGIN_START_NS 10000
#define INCOMING_BATCH 1024u /* every this many submissions wake the sleeper anyway */
enum { LOOK_REACTOR_MONO = MONO, LOOK_REACTOR_WALL = WALL, LOOK_FIRER = 2 };
enum { FIRER_NONE = 0, FIRER_POSTED, FIRER_RUNNING };

static struct {
    /* The heaps, `seq` and `firer`: taken by the firer and the reactor, never by submitters. */
    pthread_mutex_t lock;
    struct heap heap[2]; /* MONO, WALL */
    uint64_t seq;
    int firer;           /* FIRER_*: who fires monotonic windows */
    bool reactor_firing; /* the reactor pushes windows a stuck firer left (see cq__after_run) */
    /* Submitters push here (seq_cst CAS; the consumer's exchange acquires). */
    struct pending *_Atomic incoming CQ_CACHE_ALIGNED;
    _Atomic uint64_t submitted; /* calls so far: every INCOMING_BATCH-th wakes the sleeper */
    /* LOOK_*: the reactor (per clock) and the firer, when about to sleep, publish that they
     * will be in time for timers due at or after this (INT64_MIN: not responsible, or awake
     * and looking before it sleeps; the reactor's monotonic one is INT64_MIN while a firer
     * exists). Written by that party (seq_cst, then it looks at `incoming`), read by
     * submitters after their push (seq_cst), which lower it to INT64_MIN when they wake it. */
    _Atomic int64_t look[3];
    /* bumped to wake the sleeping firer, which sleeps on it (futex) */
    _Atomic uint32_t firer_word;
    /* the firer's early margin (ns); written by the firer only (one at a time) */
    _Atomic int64_t margin;
} A = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .look = {INT64_MAX, INT64_MAX, INT64_MIN},
    .margin = FIRER_MARGIN_START_NS,
};

static int64_t clock_now(int c)
{
    struct timespec ts;
    clock_gettime(c == WALL ? CLOCK_REALTIME : CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- fork ----------------------------------------------------------------------------- */

void cq__after_fork_prepare(void)
{
    pthread_mutex_lock(&A.lock);
}

void cq__after_fork_parent(void)
{
    pthread_mutex_unlock(&A.lock);
}

/* The parent's pending calls do not fire in the child: they belong to the parent's reactor and
 * pool. Their records and queue references are abandoned. */
void cq__after_fork_child(void)
{
    pthread_mutex_unlock(&A.lock);
    for (int c = 0; c < 2; c++) {
        free(A.heap[c].items);
        A.heap[c] = (struct heap){0};
        cq__store(&A.look[c], INT64_MAX, relaxed);
    }
    cq__store(&A.look[LOOK_FIRER], INT64_MIN, relaxed);
    A.firer = FIRER_NONE;
    A.reactor_firing = false;
    cq__store(&A.incoming, NULL, relaxed);
}

/*
 * Fan-out. The firer runs the tasks it pushes to its own ring next, so waking a helper for
 * them pays only when they hold more work than a wake-up costs: it announces them as the pool
 * announces an inject batch (4 or more wake a helper) only when they add up to FIRER_FANOUT_NS
 * by its estimate of their run time; otherwise it only makes sure the monitor watches (so
 * they do not sit behind a task that blocks). The estimate is how long the last window's
 * tasks took, from their push to the continuation's start behind them; it moves at most a
 * factor of two per window and starts at a whole FIRER_FANOUT_NS per task (the pool's rule).
 * Wrong the other way (a helper woken for 3 tasks of 0.3 us) it cost a futex wake and a
 * search spin per window: a quarter of the CPU of 20k timers over 200 ms.
 */
#define FIRER_FANOUT_NS 20000
static struct {
    int64_t task_ns;           /* estimated run time of one fired task */
    int64_t pushed_at;         /* when the last window's local pushes ended */
    uint32_t pushed;           /* how many there were (0: nothing to learn from) */
} F = {FIRER_FANOUT_NS, 0, 0}; /* the RUNNING firer's only (the role passes under A.lock) */

static void fanout_learn(int64_t now)
{
    if (F.pushed == 0) {
        return;
    }
    int64_t per = (now - F.pushed_at) / F.pushed;
    int64_t lo = F.task_ns / 2, hi = F.task_ns * 2;
    F.task_ns = per < lo ? lo : per > hi ? hi : per;
    if (F.task_ns < 1) {
        F.task_ns = 1;
    }
    F.pushed = 0;
}

/*
 * Turns each pending call of a cut window into a task and pushes it onto its queue. On the
 * firer's worker (`p`), tasks of the worker's own global queue level go to its ring without
 * waking anyone (it runs them next), announced as above. Returns true if this worker has work
 * of its own now.
 */
static bool fire(struct pending *b, struct cq__proc *p)
{
    uint32_t local = 0, calls = 0;
    while (b) {
        calls++;
        cq__count(timer_fires, 1); /* before the task can run: a reader that saw it ran sees it */
        struct pending *next = b->next;
        struct cq_queue_s *q = b->queue;
        cq_function_t fn = b->function;
        void *ctx = b->context;
        bool barrier = b->barrier;
        free(b);
        if (barrier) {
            /* onto its queue now: what is submitted to it from now on comes after it */
            cq_barrier_async_f(q, ctx, fn);
            cq__ref_release(&q->obj);
            b = next;
            continue;
        }
        struct cq__task *t = cq__task_alloc();
        cq__item_init(&t->item, CQ__ITEM_TASK, 0);
        t->function = fn;
        t->context = ctx;
        t->group = NULL;
        if (p && q->kind == CQ__QUEUE_ROOT && q->prio == p->main_level) {
            cq__store(&t->item.prio, q->prio, relaxed); /* as cq__pool_push sets it */
            cq__pool_ring_push(p, &t->item);
            local++;
        } else {
            cq__queue_push(q, &t->item, CQ__PUSH_TAIL);
        }
        cq__ref_release(&q->obj); /* the pushed task keeps the queue busy, and so alive */
        b = next;
    }
    if (calls) {
        CQ_PROBE2(timer_fire, 0, calls);
    }
    if (local) {
        cq__fence(
            seq_cst); /* store-load: the ring's tail before the idle word; pairs with the parker's
                         seq_cst idle-word update, fence and re-check (cq__pool_park in park.c) */
        if ((int64_t)local * F.task_ns >= FIRER_FANOUT_NS) {
            cq__pool_announce_backlog(p);
        } else {
            cq__monitor_kick();
        }
        F.pushed_at = clock_now(MONO);
        F.pushed = local;
    }
    return p && (local || cq__pool_proc_has_work(p));
}

/* Moves the submitted records into the heaps. Caller holds the lock. */
static void take_incoming(void)
{
    /* acquire: pairs with the submitters' CAS; the records' contents are visible */
    struct pending *list = cq__xchg(&A.incoming, NULL, acquire);
    if (list == NULL) {
        return;
    }
    /* The stack is newest first: reverse it so submission numbers follow submission order. */
    struct pending *fifo = NULL;
    while (list) {
        struct pending *next = list->next;
        list->next = fifo;
        fifo = list;
        list = next;
    }
    for (struct pending *b = fifo; b; b = b->next) {
        struct entry e = {b->deadline, b->latest, A.seq++, b};
        cq__after_heap_insert(&A.heap[b->clock], e);
    }
}

/*
 * Publishes `look` (LOOK_*) for the caller, about to sleep, then makes sure no record was
 * pushed by a submitter that read an older value. Caller holds the lock; returns false if new
 * records came in (taken now): recompute before sleeping.
 */
static bool publish_look(int who, int64_t look)
{
    /* pairs with a submitter's seq_cst push on `incoming` then its load of `look` (cq_after_f): a
     * Dekker pair */
    cq__store(&A.look[who], look, seq_cst);
    /* pairs with a submitter's seq_cst push on `incoming` then its load of `look` (cq_after_f): a
     * Dekker pair */
    if (cq__load(&A.incoming, seq_cst) == NULL) {
        return true;
    }
    take_incoming();
    return false;
}

/* ---- the firer ---------------------------------------------------------------------------- */

static void firer_run(void *unused);

/* The early margin settles where MARGIN_UP of every MARGIN_UP + 1 sleeps end within it: up
 * MARGIN_UP steps for a sleep that ends later than the margin, down one step otherwise. */
#define MARGIN_UP 3
#define MARGIN_STEP_NS 250
static void margin_learn(int64_t late)
{
    int64_t m = cq__load(&A.margin, relaxed);
    m += late > m ? MARGIN_UP * MARGIN_STEP_NS : -MARGIN_STEP_NS;
    m = m < FIRER_MARGIN_MIN_NS   ? FIRER_MARGIN_MIN_NS
        : m > FIRER_MARGIN_MAX_NS ? FIRER_MARGIN_MAX_NS
                                  : m;
    cq__store(&A.margin, m, relaxed);
}

/* Work from outside the pool waits for our proc's levels (a hint, as the searchers use it). */
static bool inject_work(struct cq__proc *p)
{
    for (unsigned prio = 0; prio < CQ__PRIO_COUNT; prio++) {
        if ((p->levels & CQ__LEVEL(prio)) &&
            (cq__inject_maybe_work(&cq__pool.inject[prio]) ||
             cq__inject_maybe_work(&cq__pool.inject[CQ__LANE(prio)]))) {
            return true;
        }
    }
    return false;
}

/*
 * Sleeps until `until` (CLOCK_MONOTONIC) or a wake of the firer word. A short sleep keeps the
 * worker's proc when no work from outside waits for it (as a task that naps briefly: handing
 * the proc on and getting it back, or not, costs more than the nap); a long one, or one while
 * such work waits, goes through the pool's block bracket so the CPU runs other work meanwhile.
 */
static void firer_sleep(uint32_t word, int64_t now, int64_t until)
{
    static __thread bool slack_set;
    if (!slack_set) {
        /* hrtimer expiries on time, not up to the default 50 us late (this thread only) */
        prctl(PR_SET_TIMERSLACK, 1UL);
        slack_set = true;
    }
    struct cq__deadline d = {.forever = false, .clock = CLOCK_MONOTONIC};
    d.at.tv_sec = until / 1000000000;
    d.at.tv_nsec = until % 1000000000;
    struct cq__proc *p = cq__tls.proc;
    int r;
    cq__task_idle(); /* as a worker about to park: the trimmer sees our free tasks */
    if (p && until - now <= (inject_work(p) ? FIRER_HOLD_BUSY_NS : FIRER_HOLD_MAX_NS)) {
        r = cq__futex_wait(&A.firer_word, word, &d);
    } else {
        struct cq__block blk = {.active = false, .keep_proc = false};
        cq__pool_block_begin(&blk);
        r = cq__futex_wait(&A.firer_word, word, &d);
        cq__pool_block_end(&blk);
    }
    if (r == ETIMEDOUT) {
        int64_t late = clock_now(MONO) - until;
        margin_learn(late);
    }
}

/* Posts the firer task. Caller: A.firer just became POSTED. `p`: the calling worker's proc, to
 * put it behind the work it has just pushed, or NULL. */
static void firer_post(struct cq__proc *p)
{
    if (p && p->main_level == CQ__PRIO_DEFAULT) {
        struct cq__task *t = cq__task_alloc();
        cq__item_init(&t->item, CQ__ITEM_TASK, 0);
        t->function = firer_run;
        t->context = NULL;
        t->group = NULL;
        cq__store(&t->item.prio, (uint8_t)CQ__PRIO_DEFAULT, relaxed);
        cq__pool_ring_push(p, &t->item); /* we run it after that work: no one to wake */
        return;
    }
    cq_async_f(&cq__root_queues[CQ__PRIO_DEFAULT], NULL, firer_run);
}

static void firer_run(void *unused)
{
    (void)unused;
    int64_t start = clock_now(MONO);
    pthread_mutex_lock(&A.lock);
    A.firer = FIRER_RUNNING;
    fanout_learn(start);
    for (;;) {
        /* The time first: every timer submitted before it is in the heap when we cut, so a
         * timer whose cq_after_f returned before a window's time fires no later than it. */
        int64_t now = clock_now(MONO);
        take_incoming();
        int64_t w = cq__after_window(&A.heap[MONO]);
        if (w <= now && A.reactor_firing) {
            /* The reactor is pushing windows that fell late while we were queued: ours
             * follow them. A few microseconds. */
            pthread_mutex_unlock(&A.lock);
            cq__cpu_relax();
            pthread_mutex_lock(&A.lock);
            continue;
        }
        if (w <= now) {
            struct pending *list = cq__after_cut(&A.heap[MONO], w);
            pthread_mutex_unlock(&A.lock);
            /* Pushed outside the lock, in order: nobody else fires while we are RUNNING. */
            struct cq__proc *p = cq__tls.proc;
            /* Our own work (or, without a proc, whatever a proc is for) runs first, and the
             * monitor sees this task end: a continuation behind it takes the next window. */
            if (fire(list, p) || p == NULL || now - start > FIRER_HOLD_MAX_NS) {
                pthread_mutex_lock(&A.lock);
                A.firer = FIRER_POSTED;
                pthread_mutex_unlock(&A.lock);
                firer_post(p);
                return;
            }
            pthread_mutex_lock(&A.lock);
            continue;
        }
        if (w == INT64_MAX || w - now > FIRER_IDLE_MAX_NS) {
            /* Leave; the reactor takes over (it publishes its own look). */
            A.firer = FIRER_NONE;
            F.pushed = 0;
            pthread_mutex_unlock(&A.lock);
            cq__reactor_wake();
            return;
        }
        int64_t margin = cq__load(&A.margin, relaxed);
        if (w - now <= margin) {
            /* Close: spin to it; new timers are looked at then. */
            pthread_mutex_unlock(&A.lock);
            while (clock_now(MONO) < w) {
                cq__cpu_relax();
            }
            pthread_mutex_lock(&A.lock);
            continue;
        }
        uint32_t word = cq__load(&A.firer_word, relaxed);
        if (!publish_look(LOOK_FIRER, w)) {
            /* Not asleep after all: a published look tells the reactor we are (below). */
            cq__store(&A.look[LOOK_FIRER], INT64_MIN, relaxed);
            continue;
        }
        pthread_mutex_unlock(&A.lock);
        firer_sleep(word, now, w - margin);
        pthread_mutex_lock(&A.lock);
        cq__store(&A.look[LOOK_FIRER], INT64_MIN, relaxed); /* awake: it looks before it sleeps */
    }
}

_Atomic uint32_t *cq__after_firer_word(void)
{
    return &A.firer_word;
}

/* ---- the reactor's part ------------------------------------------------------------------ */

/*
 * Called by the reactor thread on every turn. Fires due wall-clock windows; starts a firer
 * before the next monotonic window if there is none; fires monotonic windows a stuck or
 * oversleeping firer left FIRER_GRACE_NS late. Sets when the reactor must look again, per
 * clock.
 */
void cq__after_run(int64_t *mono_next, int64_t *wall_next)
{
    struct pending *wall = NULL, **wall_tail = &wall;
    struct pending *late = NULL, **late_tail = &late;
    bool post = false;
    int64_t ww, wm;
    pthread_mutex_lock(&A.lock);
    do {
        int64_t now_wall = clock_now(WALL), now = clock_now(MONO); /* first, as in firer_run */
        take_incoming();
        /* wall clock: the reactor fires */
        while ((ww = cq__after_window(&A.heap[WALL])) <= now_wall) {
            *wall_tail = cq__after_cut(&A.heap[WALL], ww);
            while (*wall_tail) {
                wall_tail = &(*wall_tail)->next;
            }
        }
        /* monotonic: the firer fires */
        wm = cq__after_window(&A.heap[MONO]);
        if (A.firer == FIRER_NONE && wm != INT64_MAX && wm - FIRER_LEAD_NS <= now) {
            A.firer = FIRER_POSTED;
            cq__store(&A.look[LOOK_REACTOR_MONO], INT64_MIN, relaxed); /* the firer's now */
            post = true;
        } else if (A.firer == FIRER_POSTED ||
                   (A.firer == FIRER_RUNNING &&
                    cq__load(&A.look[LOOK_FIRER], relaxed) != INT64_MIN)) {
            /* Stuck behind other work, or asleep (its look published) past its window: fire
             * what is that late, here. A firer's thread woken on time can wait for a CPU
             * for a whole slice of each thread of its priority in front of it: high timers
             * came 100-700 ms late (1 run in 25) beside busy CPUs, low-priority tasks filling
             * the pool, and the reactor, woken on time, left them to the firer. An awake
             * firer (no look) is pushing its windows: the reactor leaves those to it. */
            while (wm <= now - FIRER_GRACE_NS) {
                *late_tail = cq__after_cut(&A.heap[MONO], wm);
                while (*late_tail) {
                    late_tail = &(*late_tail)->next;
                }
                wm = cq__after_window(&A.heap[MONO]);
            }
        }
    } while (!publish_look(LOOK_REACTOR_WALL, ww) ||
             (A.firer == FIRER_NONE && !publish_look(LOOK_REACTOR_MONO, wm)));
    *wall_next = ww;
    /* With a firer: look again when its next window is FIRER_GRACE_NS late, but not before
     * FIRER_GRACE_NS from now (a window already late and a firer awake, pushing: nothing to
     * do here, and spinning would take its CPU). */
    int64_t now = clock_now(MONO);
    *mono_next = wm == INT64_MAX         ? INT64_MAX
                 : A.firer == FIRER_NONE ? wm - FIRER_LEAD_NS
                                         : add_sat(wm > now ? wm : now, FIRER_GRACE_NS);
    /* Pushed outside the lock (a push may take the pool's lock, which fork() takes before
     * ours). While we push the late windows, a firer that starts waits (reactor_firing), so
     * windows still reach their queues in deadline order. */
    A.reactor_firing = late != NULL;
    pthread_mutex_unlock(&A.lock);
    fire(wall, NULL);
    if (late) {
        fire(late, NULL);
        pthread_mutex_lock(&A.lock);
        A.reactor_firing = false;
        pthread_mutex_unlock(&A.lock);
    }
    if (post) {
        firer_post(NULL);
    }
}

/* ---- submission ------------------------------------------------------------------------------ */

static void wake_firer(void)
{
    cq__add(&A.firer_word, 1, relaxed);
    cq__futex_wake(&A.firer_word, 1);
}

/* The first submitter to find `look` later than its deadline (or, on a batch, any look: the
 * party sleeps) claims the wake-up: one is enough until the sleeper publishes again. */
static bool claim_wake(int who, int64_t deadline, bool batch)
{
    int64_t look = cq__load(&A.look[who], seq_cst); /* after our push: see publish_look */
    return look != INT64_MIN && (deadline < look || batch) &&
           cq__cas(&A.look[who], &look, INT64_MIN, relaxed);
}

/* cq_after_f's work, for a call queued as a barrier when it comes due too. */
static void after_submit(cq_time_t when, cq_queue_t q, void *ctx, cq_function_t fn, bool barrier)
{
    /* A deadline that has passed (CQ_TIME_NOW, cq_time(CQ_TIME_NOW, 0), a past wall time) is
     * an async, as in libdispatch: the function is queued now, ahead of what the caller
     * submits next ("run next" through cq_after_f(cq_time(CQ_TIME_NOW, 0), ...)). */
    int64_t delay = when == CQ_TIME_NOW ? 0 : cq_time_nanoseconds_until(when);
    if (delay <= 0) {
        if (barrier) {
            cq_barrier_async_f(q, ctx, fn);
        } else {
            cq_async_f(q, ctx, fn);
        }
        return;
    }
    int c = (when & CQ__WALL_BIT) ? WALL : MONO;
    uint64_t ns = when & ~CQ__WALL_BIT;
    int64_t deadline = ns > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)ns;
    /* A little leeway (a tenth of the delay, at most AFTER_LEEWAY_MAX_NS) lets timers due
     * close together share a wake-up. */
    int64_t leeway = delay / 10 < AFTER_LEEWAY_MAX_NS ? delay / 10 : AFTER_LEEWAY_MAX_NS;
    struct pending *b = malloc(sizeof *b);
    if (b == NULL) {
        cq__crash("out of memory creating a timer");
    }
    b->queue = q;
    b->context = ctx;
    b->function = fn;
    b->deadline = deadline;
    b->latest = add_sat(deadline, leeway);
    b->clock = (uint8_t)c;
    b->barrier = barrier;
    cq__ref_retain(&q->obj);
    /* Starts the reactor if needed. If it cannot start (descriptors exhausted), the timer
     * waits until a later call starts it. */
    cq__reactor_ensure_started();
    struct pending *top = cq__load(&A.incoming, relaxed);
    do {
        b->next = top;
        /* seq_cst: the push before the load of `look` below (see publish_look); release for
         * the record's contents */
    } while (!cq__cas_weak(&A.incoming, &top, b, seq_cst));
    bool batch = (cq__add(&A.submitted, 1, relaxed) + 1) % INCOMING_BATCH == 0;
    if (c == MONO && claim_wake(LOOK_FIRER, deadline, batch)) {
        wake_firer();
    }
    if (claim_wake(c, deadline, batch)) {
        cq__reactor_wake();
    }
}

void cq_after_f(cq_time_t when, cq_queue_t q, void *ctx, cq_function_t fn)
{
    cq__queue_check(q, "cq_after_f");
    if (fn == NULL) {
        cq__crash("cq_after_f: NULL function for %s", CQ_DESCRIBE(q));
    }
    if (when == CQ_TIME_FOREVER) {
        return; /* never: libdispatch drops it too */
    }
    after_submit(when, q, ctx, fn, false);
}

/* A BARRIER item is queued as a barrier when it comes due, by the thread that fires the
 * timer, as libdispatch's timers do. It used to come due as a task on the global queue of its
 * queue's priority, which then submitted it: with that queue busy (three CPU-bound tasks on 2
 * CPUs), a task submitted to the concurrent queue 30 ms after the barrier's deadline ran before
 * the barrier, beside the task the barrier was to wait for, in 37 of 80 rounds (libdispatch:
 * none; test_work_item.c, after_barrier_under_load). */
void cq_after_work_item(cq_time_t when, cq_queue_t queue, cq_work_item_t item)
{
    bool barrier = cq__work_item_is_barrier(item, "cq_after_work_item");
    cq__queue_check(queue, "cq_after_work_item");
    if (when == CQ_TIME_FOREVER) {
        return; /* never due: cq_after_f drops it, and the reference would never go */
    }
    cq_function_t fn;
    void *ctx;
    cq__work_item_submission(item, &fn, &ctx);
    after_submit(when, queue, ctx, fn, barrier);
}
