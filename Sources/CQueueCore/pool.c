/*
 * The thread pool: procs, threads, bands, the idle protocol, blocking waits, start-up and
 * fork (see pool_internal.h for the model; pool_find.c pushes and finds work).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "pool_internal.h"

#include <cqueuecore/runtime.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "diag_internal.h"
#include "fork_internal.h"
#include "parker_internal.h"
#include "task_internal.h"
#include "thread_internal.h"

#define IDLE_SEARCHING CQ__IDLE_SEARCHING
#define IDLE_UNPARKED CQ__IDLE_UNPARKED
#define IDLE_NPROCS CQ__IDLE_NPROCS
#define IDLE_SEARCHING_ONE CQ__IDLE_SEARCHING_ONE
#define IDLE_UNPARKED_ONE CQ__IDLE_UNPARKED_ONE
#define IDLE_NPROCS_ONE CQ__IDLE_NPROCS_ONE

struct cq__pool_state cq__pool = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};
#define pool cq__pool

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER; /* pool_init runs under it */
_Atomic bool cq__pool_started;

/* What each band runs: its levels, the level of its fast path and LIFO slot. */
static const struct {
    uint8_t levels, main_level, lifo_levels;
    const char *thread_name; /* pthread name prefix: what `top -H` and perf show */
} band_info[CQ__BAND_COUNT] = {
    [CQ__BAND_NORMAL] = {CQ__LEVEL(CQ__PRIO_HIGH) | CQ__LEVEL(CQ__PRIO_DEFAULT) |
                             CQ__LEVEL(CQ__PRIO_LOW),
                         CQ__PRIO_DEFAULT, CQ__LEVEL(CQ__PRIO_DEFAULT), "cq-worker"},
    [CQ__BAND_EXPRESS] = {CQ__LEVEL(CQ__PRIO_HIGH), CQ__PRIO_HIGH, 0, "cq-high"},
    [CQ__BAND_BACKGROUND] = {CQ__LEVEL(CQ__PRIO_BACKGROUND), CQ__PRIO_BACKGROUND,
                             CQ__LEVEL(CQ__PRIO_BACKGROUND), "cq-bg"},
};

/* ---------------------------------------------------------------------------------------- */
/* Procs and threads                                                                        */

static struct cq__proc *proc_new(unsigned band, bool extra)
{
    struct cq__proc *p = aligned_alloc(CQ_CACHELINE, sizeof *p);
    if (p == NULL) {
        return NULL;
    }
    for (unsigned prio = 0; prio < CQ__PRIO_COUNT; prio++) {
        cq__runq_init(&p->rq[prio]);
    }
    /* everything after the rings; the slots need no initialising */
    memset((char *)p + offsetof(struct cq__proc, lifo), 0,
           sizeof *p - offsetof(struct cq__proc, lifo));
    atomic_init(&p->lifo, NULL);
    uint32_t i = cq__load(&pool.nprocs_seen, relaxed);
    p->index = i;
    p->band = (uint8_t)band;
    p->levels = band_info[band].levels;
    p->main_level = band_info[band].main_level;
    p->lifo_levels = band_info[band].lifo_levels;
    p->extra = extra;
    p->search_ns = CQ__SPIN_SEARCH_NS;
    p->rng = 0x9e3779b97f4a7c15ull * (i + 1);
    /* release: the initialised proc is visible to thieves that find it in the array */
    cq__store(&pool.procs[i], p, release);
    cq__store(&pool.nprocs_seen, i + 1, release);
    return p;
}

static void unpark_thread(struct cq__thread *t)
{
    /* release: pairs with the parked thread's acquire load; it sees t->proc and the counts */
    if (cq__xchg(&t->park, CQ__PARK_NOTIFIED, release) == CQ__PARK_PARKED) {
        cq__futex_wake(&t->park, 1);
    }
}

/* Parks the calling thread until unpark_thread. */
static void park_thread(struct cq__thread *t)
{
    for (;;) {
        uint32_t s = cq__load(&t->park, acquire);
        if (s == CQ__PARK_NOTIFIED) {
            cq__store(&t->park, CQ__PARK_EMPTY, relaxed);
            return;
        }
        if (s == CQ__PARK_EMPTY && !cq__cas(&t->park, &s, CQ__PARK_PARKED, acquire)) {
            continue;
        }
        cq__futex_wait(&t->park, CQ__PARK_PARKED, NULL);
    }
}

static void *thread_main(void *arg);

int cq__thread_start(pthread_t *thread, void *(*fn)(void *), void *arg)
{
    sigset_t set, old;
    sigfillset(&set);
    static const int sync_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};
    for (size_t i = 0; i < sizeof sync_signals / sizeof sync_signals[0]; i++) {
        sigdelset(&set, sync_signals[i]);
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_sigmask(SIG_BLOCK, &set, &old); /* the new thread inherits this mask */
    int err = pthread_create(thread, &attr, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    return err;
}

static void note_limit_reached(void)
{
    cq__add(&pool.limit_reached, 1, relaxed);
    cq__report_once(&pool.limit_reported,
                    "thread limit %u reached: %u threads, %u of them waiting in runtime calls "
                    "and %u running tasks that sleep in the kernel; new work waits until one "
                    "returns. Raise it with CQ_THREAD_LIMIT.",
                    pool.thread_limit, cq__load(&pool.nthreads, relaxed),
                    cq__load(&pool.blocked, relaxed),
                    cq__load(&pool.blocked_in_tasks, relaxed));
}

void cq__pool_set_blocked_in_tasks(uint32_t n)
{
    if (cq__load(&pool.blocked_in_tasks, relaxed) != n) {
        cq__store(&pool.blocked_in_tasks, n, relaxed);
    }
}

/* Reserves a thread slot under the lock; false at the limit. */
static bool thread_slot_reserve_locked(void)
{
    uint32_t n = cq__load(&pool.nthreads, relaxed);
    if (n >= pool.thread_limit) {
        return false;
    }
    cq__store(&pool.nthreads, n + 1, relaxed);
    if (n + 1 > cq__load(&pool.threads_peak, relaxed)) {
        cq__store(&pool.threads_peak, n + 1, relaxed);
    }
    return true;
}

static void idle_push_free_locked(struct cq__proc *p);

/*
 * Starts a thread for `p` (a slot was reserved). On failure the slot is returned, `p` goes to
 * the threadless idle list, and the failure is reported.
 */
static void spawn_thread(struct cq__proc *p, bool searching)
{
    struct cq__thread *t = calloc(1, sizeof *t);
    int err = ENOMEM;
    if (t) {
        t->proc = p;
        t->band = p->band;
        t->wake_searching = searching;
        pthread_mutex_lock(&pool.lock);
        t->index = pool.next_thread_index++;
        p->thread = t;
        pthread_mutex_unlock(&pool.lock);
        err = cq__thread_start(&t->pthread, thread_main, t);
        if (err == 0) {
            return;
        }
        free(t);
    }
    static atomic_bool reported;
    cq__report_once(&reported, "cannot start a pool thread (%s); running with fewer threads",
                    strerror(err));
    pthread_mutex_lock(&pool.lock);
    cq__sub(&pool.nthreads, 1, relaxed);
    p->thread = NULL;
    if (searching) {
        cq__sub(&pool.band[p->band].idle, IDLE_SEARCHING_ONE, seq_cst);
    }
    idle_push_free_locked(p);
    pthread_mutex_unlock(&pool.lock);
}

/* ---------------------------------------------------------------------------------------- */
/* Idle bookkeeping                                                                         */

static void idle_push_free_locked(struct cq__proc *p)
{
    struct cq__band *b = &pool.band[p->band];
    p->idle = true;
    p->next_idle = b->idle_free;
    b->idle_free = p;
    cq__sub(&b->idle, IDLE_UNPARKED_ONE, seq_cst);
}

static bool idle_remove_locked(struct cq__proc **list, struct cq__proc *p)
{
    for (struct cq__proc **pp = list; *pp; pp = &(*pp)->next_idle) {
        if (*pp == p) {
            *pp = p->next_idle;
            p->idle = false;
            return true;
        }
    }
    return false;
}

bool cq__pool_try_searching(unsigned band)
{
    _Atomic uint64_t *idle = &pool.band[band].idle;
    uint64_t s = cq__load(idle, relaxed);
    for (;;) {
        if (2 * IDLE_SEARCHING(s) >= IDLE_NPROCS(s)) {
            return false;
        }
        if (cq__cas_weak(idle, &s, s + IDLE_SEARCHING_ONE, seq_cst)) {
            return true;
        }
    }
}

void cq__pool_stop_searching(struct cq__thread *t, struct cq__proc *p)
{
    t->searching = false;
    cq__sub(&pool.band[p->band].idle, IDLE_SEARCHING_ONE, seq_cst);
    cq__pool_announce_backlog(p);
}

/* Someone may have work for the band and nobody of it searches: wake an idle proc of it if
 * there is one (its parked thread, a spare thread of the band, or a new thread). */
CQ_NOINLINE bool cq__pool_notify_slow(unsigned band)
{
    struct cq__band *b = &pool.band[band];
    struct cq__thread *wake = NULL;
    struct cq__proc *spawn = NULL;
    pthread_mutex_lock(&pool.lock);
    uint64_t s = cq__load(&b->idle, seq_cst);
    if (IDLE_SEARCHING(s) != 0) {
        pthread_mutex_unlock(&pool.lock);
        return true;
    }
    if (IDLE_UNPARKED(s) >= IDLE_NPROCS(s)) {
        pthread_mutex_unlock(&pool.lock);
        return false;
    }
    struct cq__proc *p = b->idle_parked;
    if (p) {
        b->idle_parked = p->next_idle;
        wake = p->thread;
    } else if ((p = b->idle_free) != NULL) {
        b->idle_free = p->next_idle;
        if ((wake = b->spares) != NULL) {
            b->spares = wake->next_spare;
            b->nspares--;
            wake->proc = p;
            p->thread = wake;
        } else if (thread_slot_reserve_locked()) {
            spawn = p;
        } else {
            p->next_idle = b->idle_free; /* put it back: nobody can run it */
            b->idle_free = p;
            pthread_mutex_unlock(&pool.lock);
            note_limit_reached();
            return false;
        }
    } else {
        pthread_mutex_unlock(&pool.lock);
        return false;
    }
    p->idle = false;
    cq__add(&b->idle, IDLE_UNPARKED_ONE + IDLE_SEARCHING_ONE, seq_cst);
    if (wake) {
        wake->wake_searching = true;
    }
    pthread_mutex_unlock(&pool.lock);
    if (wake) {
        unpark_thread(wake);
    } else {
        spawn_thread(spawn, true);
    }
    return true;
}

/* ---------------------------------------------------------------------------------------- */
/* Parking, retiring, spares                                                                */

/* Parks t with its proc p; returns when woken (as a searcher) or when work showed up. */
static void park(struct cq__thread *t, struct cq__proc *p)
{
    struct cq__band *b = &pool.band[p->band];
    pthread_mutex_lock(&pool.lock);
    p->idle = true;
    p->next_idle = b->idle_parked;
    b->idle_parked = p;
    uint64_t dec = IDLE_UNPARKED_ONE + (t->searching ? IDLE_SEARCHING_ONE : 0);
    t->searching = false;
    cq__sub(&b->idle, dec, seq_cst);
    pthread_mutex_unlock(&pool.lock);

    /* Re-check every source of the band's work after a full fence: a producer that published
     * work before our idle-word update saw us as unparked and did not wake anyone. */
    cq__fence(seq_cst);
    if (cq__pool_band_work_waiting(p->band)) {
        pthread_mutex_lock(&pool.lock);
        bool mine = p->idle && idle_remove_locked(&b->idle_parked, p);
        if (mine) {
            cq__add(&b->idle, IDLE_UNPARKED_ONE + IDLE_SEARCHING_ONE, seq_cst);
            t->searching = true;
        }
        pthread_mutex_unlock(&pool.lock);
        if (mine) {
            return;
        }
        /* a notifier claimed us already: take its wake-up below */
    }
    cq__task_idle(); /* while a trim is due, the free tasks go where the trimmer sees them */
    park_thread(t);
    t->searching = t->wake_searching;
    t->wake_searching = false;
}

/* An extra proc with nothing to do leaves the pool; its thread exits. */
static bool retire_extra(struct cq__thread *t, struct cq__proc *p)
{
    struct cq__band *b = &pool.band[p->band];
    pthread_mutex_lock(&pool.lock);
    uint64_t s = cq__load(&b->idle, relaxed);
    if (IDLE_NPROCS(s) <= b->base) {
        pthread_mutex_unlock(&pool.lock);
        return false;
    }
    uint64_t dec = IDLE_UNPARKED_ONE + IDLE_NPROCS_ONE + (t->searching ? IDLE_SEARCHING_ONE : 0);
    t->searching = false;
    cq__sub(&b->idle, dec, seq_cst);
    p->thread = NULL;
    cq__store(&p->retired, 1, release);
    cq__sub(&pool.nthreads, 1, relaxed);
    pthread_mutex_unlock(&pool.lock);
    /* Items pushed to the rings after our last look (by nobody: only we push there) cannot
     * exist, but a LIFO item may have been put back by a helper; hand leftovers on. */
    struct cq__item *it;
    for (unsigned prio = 0; prio < CQ__PRIO_COUNT; prio++) {
        while ((it = cq__runq_pop(&p->rq[prio])) != NULL) {
            cq__inject_push(&pool.inject[prio], prio, it);
        }
    }
    if ((it = cq__pool_lifo_take(p)) != NULL) {
        unsigned prio = cq__load(&it->prio, relaxed);
        cq__inject_push(&pool.inject[prio], prio, it);
    }
    cq__fence(seq_cst);
    if (cq__pool_band_work_waiting(p->band)) {
        cq__pool_notify_prio(p->main_level);
    }
    return true;
}

/*
 * Gets a proc of its band for a thread that has none (it blocked and gave its proc away).
 * Returns NULL if the thread should exit (too many spares).
 */
static struct cq__proc *acquire_proc(struct cq__thread *t, bool may_wait)
{
    struct cq__band *b = &pool.band[t->band];
    pthread_mutex_lock(&pool.lock);
    struct cq__proc *p = b->idle_free;
    if (p) {
        b->idle_free = p->next_idle;
        p->idle = false;
        p->thread = t;
        cq__add(&b->idle, IDLE_UNPARKED_ONE, seq_cst);
        pthread_mutex_unlock(&pool.lock);
        t->proc = p;
        cq__tls.proc = p;
        return p;
    }
    if (!may_wait) {
        pthread_mutex_unlock(&pool.lock);
        return NULL;
    }
    if (b->nspares >= b->spare_limit) {
        cq__sub(&pool.nthreads, 1, relaxed);
        pthread_mutex_unlock(&pool.lock);
        return NULL;
    }
    t->next_spare = b->spares;
    b->spares = t;
    b->nspares++;
    pthread_mutex_unlock(&pool.lock);
    park_thread(t); /* until given a proc */
    t->searching = t->wake_searching;
    t->wake_searching = false;
    cq__tls.proc = t->proc;
    return t->proc;
}

/* ---------------------------------------------------------------------------------------- */
/* Running                                                                                  */

static inline void run_item(struct cq__thread *t, struct cq__proc *p, struct cq__item *it)
{
    cq__store(&p->tid, cq__load(&t->tid, relaxed), relaxed);
    cq__store(&p->running, 1, relaxed);
    cq__item_invoke(it);
    struct cq__proc *now = t->proc; /* may differ: the task blocked and gave its proc away */
    if (now) {
        cq__store(&now->running, 0, relaxed);
    }
}

static void worker_loop(struct cq__thread *t)
{
    for (;;) {
        struct cq__proc *p = t->proc;
        if (cq__unlikely(p == NULL)) {
            if ((p = acquire_proc(t, true)) == NULL) {
                return;
            }
            continue;
        }
        struct cq__item *it = cq__pool_find_work(t, p);
        if (it == NULL) {
            if (p->extra && retire_extra(t, p)) {
                t->proc = NULL;
                cq__tls.proc = NULL;
                return;
            }
            park(t, p);
            continue;
        }
        run_item(t, p, it);
        if (cq__unlikely(cq__tls.thread != t)) {
            cq__fork_child_task_returned(); /* the task forked: this is the child */
        }
    }
}

/* Background threads run at nice 19: the kernel runs every other thread first (and preempts
 * them when one wakes), yet never starves them outright, so work that waits for a background
 * task (a sync onto a background queue) still finishes. Raising the nice value needs no
 * privilege; an unprivileged thread cannot lower it again, hence threads keep their band. */
static void apply_band_os_priority(struct cq__thread *t)
{
    if (t->band == CQ__BAND_BACKGROUND) {
        pid_t tid = cq__load(&t->tid, relaxed);
        if (setpriority(PRIO_PROCESS, (id_t)tid, CQ__BACKGROUND_NICE) != 0) {
            static atomic_bool reported;
            cq__report_once(&reported,
                            "cannot lower the OS priority of background threads (%s); "
                            "background work competes with other work for the CPUs",
                            strerror(errno));
        }
    }
}

static void *thread_main(void *arg)
{
    struct cq__thread *t = arg;
    cq__store(&t->tid, (pid_t)syscall(SYS_gettid), relaxed);
    char name[16];
    snprintf(name, sizeof name, "%s-%u", band_info[t->band].thread_name, t->index);
    pthread_setname_np(pthread_self(), name);
    apply_band_os_priority(t);
    cq__tls.thread = t;
    cq__tls.main_thread = 2;
    cq__thread_exit_hook();
    pthread_mutex_lock(&pool.lock); /* t->proc was assigned under the lock */
    cq__tls.proc = t->proc;
    t->searching = t->wake_searching;
    t->wake_searching = false;
    pthread_mutex_unlock(&pool.lock);
    worker_loop(t);
    cq__tls.thread = NULL;
    free(t);
    return NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* Blocking waits                                                                           */

void cq__pool_block_begin(struct cq__block *blk)
{
    struct cq__thread *t = cq__tls.thread;
    blk->active = t != NULL;
    if (t == NULL) {
        return;
    }
    cq__add(&pool.blocked, 1, relaxed);
    struct cq__proc *p = t->proc;
    if (p == NULL) {
        return;
    }
    struct cq__band *b = &pool.band[p->band];
    cq__store(&p->running, 0, relaxed);
    t->proc = NULL;
    cq__tls.proc = NULL;
    bool work = cq__pool_proc_has_work(p) || cq__pool_band_work_waiting(p->band);
    pthread_mutex_lock(&pool.lock);
    if (work) {
        struct cq__thread *spare = b->spares;
        if (spare) {
            b->spares = spare->next_spare;
            b->nspares--;
            spare->proc = p;
            spare->wake_searching = false;
            p->thread = spare;
            pthread_mutex_unlock(&pool.lock);
            cq__add(&pool.handoffs, 1, relaxed);
            unpark_thread(spare);
            return;
        }
        if (thread_slot_reserve_locked()) {
            pthread_mutex_unlock(&pool.lock);
            cq__add(&pool.handoffs, 1, relaxed);
            spawn_thread(p, false);
            return;
        }
        /* At the limit: keep the proc. Thieves can take its rings but not its LIFO slot
         * (only a running owner's), so the item there moves to its ring, and an idle worker
         * is told: no runnable item stays pinned to a thread that sleeps. */
        pthread_mutex_unlock(&pool.lock);
        t->proc = p;
        cq__tls.proc = p;
        struct cq__item *pinned = cq__pool_lifo_take(p);
        if (pinned) {
            cq__pool_ring_push(p, pinned);
            cq__fence(seq_cst); /* store-load: the ring's tail before the idle word */
        }
        note_limit_reached();
        cq__pool_notify_prio(p->main_level);
        return;
    }
    p->thread = NULL;
    idle_push_free_locked(p);
    pthread_mutex_unlock(&pool.lock);
    cq__fence(seq_cst);
    if (cq__pool_band_work_waiting(p->band)) {
        cq__pool_notify_prio(p->main_level);
    }
}

void cq__pool_block_end(struct cq__block *blk)
{
    if (!blk->active) {
        return;
    }
    cq__sub(&pool.blocked, 1, relaxed);
    struct cq__thread *t = cq__tls.thread;
    if (t->proc == NULL) {
        acquire_proc(t, false); /* take an idle proc if there is one; otherwise run without */
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Start-up, monitor interface, info                                                        */

/* Creates a band's procs: `running` of them get a thread now, the rest wait threadless in
 * idle_free until work for them arrives. */
static void band_init(unsigned band, uint32_t procs, uint32_t running, bool extras,
                      struct cq__proc **started)
{
    struct cq__band *b = &pool.band[band];
    b->levels = band_info[band].levels;
    b->base = procs;
    b->spare_limit = procs;
    b->extras = extras;
    b->idle_parked = b->idle_free = NULL;
    b->spares = NULL;
    b->nspares = 0;
    cq__store(&b->idle, (uint64_t)procs * IDLE_NPROCS_ONE + (uint64_t)running * IDLE_UNPARKED_ONE,
              seq_cst);
    for (uint32_t i = 0; i < procs; i++) {
        struct cq__proc *p = proc_new(band, false);
        if (p == NULL) {
            cq__crash("out of memory starting the pool");
        }
        if (i < running) {
            started[i] = p;
        } else {
            p->idle = true;
            p->next_idle = b->idle_free;
            b->idle_free = p;
        }
    }
}

static void pool_init(void)
{
    uint32_t workers = cq__usable_cpus();
    pool.workers = workers;
    uint32_t dflt_limit = workers * 16 > 128 ? workers * 16 : 128;
    /* every band's base procs can run at once */
    uint32_t min_limit = 2 * workers + CQ__EXPRESS_PROCS;
    pool.thread_limit =
        cq__env_u32_clamped("CQ_THREAD_LIMIT", dflt_limit, min_limit, CQ__THREAD_LIMIT_MAX);
    for (uint32_t i = 0; i < CQ__PRIO_COUNT; i++) {
        cq__inject_init(&pool.inject[i]);
    }
    cq__store(&pool.high_hint, 0, relaxed);
    struct cq__proc *started[CQ__MAX_WORKERS];
    band_init(CQ__BAND_NORMAL, workers, workers, true, started);
    band_init(CQ__BAND_EXPRESS, CQ__EXPRESS_PROCS, 0, false, NULL);
    band_init(CQ__BAND_BACKGROUND, workers, 0, true, NULL);
    cq__store(&pool.nthreads, workers, relaxed);
    cq__store(&pool.threads_peak, workers, relaxed);
    /* release: pairs with the acquire loads of cq__pool_started; the pool is set up */
    cq__store(&cq__pool_started, true, release);
    for (uint32_t i = 0; i < workers; i++) {
        spawn_thread(started[i], false);
    }
    cq__monitor_start();
}

void cq__pool_ensure_started(void)
{
    if (cq__likely(cq__load(&cq__pool_started, acquire))) {
        return;
    }
    cq__fork_handlers_install();
    pthread_mutex_lock(&start_lock);
    if (!cq__load(&cq__pool_started, relaxed)) {
        pool_init();
    }
    pthread_mutex_unlock(&start_lock);
}

/* fork(): no start-up and no pool-lock holder may be caught half-way (see fork.c). */
void cq__pool_fork_prepare(void)
{
    pthread_mutex_lock(&start_lock);
    pthread_mutex_lock(&pool.lock);
}

void cq__pool_fork_parent(void)
{
    pthread_mutex_unlock(&pool.lock);
    pthread_mutex_unlock(&start_lock);
}

/*
 * In the child, only the forking thread exists: the pool starts over, empty, on the next
 * submission. The old procs, their queued items and the threads' records are abandoned (their
 * work belongs to the parent's threads); the forking thread stops being a pool thread.
 */
void cq__pool_fork_child(void)
{
    pthread_mutex_unlock(&pool.lock);
    pthread_mutex_unlock(&start_lock);
    uint32_t n = cq__load(&pool.nprocs_seen, relaxed);
    for (uint32_t i = 0; i < n; i++) {
        cq__store(&pool.procs[i], NULL, relaxed);
    }
    cq__store(&pool.nprocs_seen, 0, relaxed);
    for (unsigned band = 0; band < CQ__BAND_COUNT; band++) {
        struct cq__band *b = &pool.band[band];
        cq__store(&b->idle, 0, relaxed);
        b->idle_parked = b->idle_free = NULL;
        b->spares = NULL;
        b->nspares = 0;
    }
    for (uint32_t i = 0; i < CQ__PRIO_COUNT; i++) {
        cq__inject_init(&pool.inject[i]);
    }
    cq__store(&pool.high_hint, 0, relaxed);
    cq__store(&pool.nthreads, 0, relaxed);
    cq__store(&pool.blocked, 0, relaxed);
    cq__store(&cq__pool_started, false, relaxed);
    cq__tls.thread = NULL;
    cq__tls.proc = NULL;
    for (unsigned i = 0; i < sizeof cq__tls.inject / sizeof cq__tls.inject[0]; i++) {
        cq__tls.inject[i] = NULL;
    }
    cq__monitor_fork_child();
}

uint32_t cq__pool_workers(void)
{
    cq__pool_ensure_started();
    return pool.workers;
}

bool cq__pool_band_saturated(unsigned band)
{
    uint64_t s = cq__load(&pool.band[band].idle, seq_cst);
    return IDLE_SEARCHING(s) == 0 && IDLE_UNPARKED(s) >= IDLE_NPROCS(s);
}

uint32_t cq__pool_proc_count(void)
{
    return cq__load(&pool.nprocs_seen, acquire);
}

bool cq__pool_add_extra_proc(unsigned band)
{
    struct cq__band *b = &pool.band[band];
    if (!b->extras) {
        return false;
    }
    pthread_mutex_lock(&pool.lock);
    if (!thread_slot_reserve_locked()) {
        pthread_mutex_unlock(&pool.lock);
        note_limit_reached();
        return false;
    }
    struct cq__proc *p = NULL;
    uint32_t n = cq__load(&pool.nprocs_seen, relaxed);
    for (uint32_t i = 0; i < n; i++) {
        struct cq__proc *c = cq__pool_proc_at(i);
        if (c->band == band && cq__load(&c->retired, relaxed)) {
            p = c;
            break;
        }
    }
    if (p == NULL) {
        p = n < CQ__MAX_PROCS ? proc_new(band, true) : NULL;
    }
    if (p == NULL) {
        cq__sub(&pool.nthreads, 1, relaxed);
        pthread_mutex_unlock(&pool.lock);
        return false;
    }
    cq__store(&p->retired, 0, relaxed);
    p->idle = false;
    cq__add(&b->idle, IDLE_NPROCS_ONE + IDLE_UNPARKED_ONE + IDLE_SEARCHING_ONE, seq_cst);
    pthread_mutex_unlock(&pool.lock);
    cq__add(&pool.monitor_spawns, 1, relaxed);
    spawn_thread(p, true);
    return true;
}

void cq_runtime_get_info(struct cq_runtime_info *info)
{
    cq__pool_ensure_started();
    uint64_t s = cq__load(&pool.band[CQ__BAND_NORMAL].idle, relaxed);
    pthread_mutex_lock(&pool.lock);
    info->spares_parked = 0;
    for (unsigned band = 0; band < CQ__BAND_COUNT; band++) {
        info->spares_parked += pool.band[band].nspares;
    }
    pthread_mutex_unlock(&pool.lock);
    info->workers = pool.workers;
    info->procs = IDLE_NPROCS(s);
    info->threads = cq__load(&pool.nthreads, relaxed);
    info->threads_peak = cq__load(&pool.threads_peak, relaxed);
    info->thread_limit = pool.thread_limit;
    info->blocked = cq__load(&pool.blocked, relaxed);
    info->limit_reached = cq__load(&pool.limit_reached, relaxed);
    info->handoffs = cq__load(&pool.handoffs, relaxed);
    info->monitor_spawns = cq__load(&pool.monitor_spawns, relaxed);
    info->blocked_in_tasks = cq__load(&pool.blocked_in_tasks, relaxed);
    info->express_wakeups = cq__load(&pool.express_wakeups, relaxed);
    info->background_procs = IDLE_NPROCS(cq__load(&pool.band[CQ__BAND_BACKGROUND].idle, relaxed));
}
