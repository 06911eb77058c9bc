/*
 * The thread pool (see pool_internal.h for the model and the idle-word protocol).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "diag_internal.h"
#include "fork_internal.h"
#include "inject_internal.h"
#include "parker_internal.h"
#include "task_internal.h"
#include "thread_internal.h"

#define IDLE_SEARCHING(s) ((uint32_t)((s)&0xffffu))
#define IDLE_UNPARKED(s) ((uint32_t)(((s) >> 16) & 0xffffu))
#define IDLE_NPROCS(s) ((uint32_t)(((s) >> 32) & 0xffffu))
#define IDLE_SEARCHING_ONE 1ull
#define IDLE_UNPARKED_ONE (1ull << 16)
#define IDLE_NPROCS_ONE (1ull << 32)

static struct {
    _Atomic uint64_t idle CQ_CACHE_ALIGNED;
    struct cq__inject inject[CQ__PRIO_COUNT];
    _Atomic uint32_t nprocs_seen CQ_CACHE_ALIGNED; /* procs[0, nprocs_seen) are allocated */
    struct cq__proc *_Atomic procs[CQ__MAX_PROCS];
    uint32_t workers;
    /* protected by lock */
    pthread_mutex_t lock;
    struct cq__proc *idle_parked; /* idle procs whose thread is parked with them */
    struct cq__proc *idle_free;   /* idle procs without a thread */
    struct cq__thread *spares;    /* parked threads without a proc */
    uint32_t nspares;
    uint32_t spare_limit;
    uint32_t thread_limit;
    _Atomic uint32_t nthreads;
    _Atomic uint32_t threads_peak;
    uint32_t next_thread_index;
    /* counters for cq_runtime_get_info */
    _Atomic uint32_t blocked;
    _Atomic uint32_t blocked_in_tasks; /* procs the monitor last saw blocked in the kernel */
    _Atomic uint32_t limit_reached;
    _Atomic uint64_t handoffs;
    _Atomic uint64_t monitor_spawns;
    atomic_bool limit_reported;
} pool = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER; /* pool_init runs under it */
static _Atomic bool pool_started;

/* ---------------------------------------------------------------------------------------- */
/* Inject queues                                                                            */

static struct cq__item *inject_take_any(struct cq__proc *p)
{
    uint32_t room = cq__runq_free(&p->rq);
    uint32_t max = room / 2 < 32 ? room / 2 : 32;
    if (max == 0) {
        max = 1;
    }
    for (uint32_t prio = 0; prio < CQ__PRIO_COUNT; prio++) {
        struct cq__item *it = cq__inject_take(&pool.inject[prio], &p->rq, max);
        if (it) {
            return it;
        }
    }
    return NULL;
}

static bool inject_any_work(void)
{
    for (uint32_t prio = 0; prio < CQ__PRIO_COUNT; prio++) {
        if (cq__inject_maybe_work(&pool.inject[prio])) {
            return true;
        }
    }
    return false;
}

/* ---------------------------------------------------------------------------------------- */
/* Procs and threads                                                                        */

static inline struct cq__proc *proc_at(uint32_t i)
{
    return cq__load(&pool.procs[i], acquire); /* pairs with the release store in proc_new */
}

static struct cq__proc *proc_new(bool extra)
{
    struct cq__proc *p = aligned_alloc(CQ_CACHELINE, sizeof *p);
    if (p == NULL) {
        return NULL;
    }
    memset(p, 0, sizeof *p);
    cq__runq_init(&p->rq);
    atomic_init(&p->lifo, NULL);
    uint32_t i = cq__load(&pool.nprocs_seen, relaxed);
    p->index = i;
    p->extra = extra;
    p->search_ns = CQ__SPIN_SEARCH_NS;
    p->rng = 0x9e3779b97f4a7c15ull * (i + 1);
    /* release: the initialised proc is visible to thieves that find it in the array */
    cq__store(&pool.procs[i], p, release);
    cq__store(&pool.nprocs_seen, i + 1, release);
    return p;
}

static bool proc_has_work(struct cq__proc *p)
{
    return cq__load(&p->lifo, relaxed) != NULL || !cq__runq_is_empty(&p->rq);
}

bool cq__pool_work_waiting(void)
{
    if (inject_any_work()) {
        return true;
    }
    uint32_t n = cq__load(&pool.nprocs_seen, acquire);
    for (uint32_t i = 0; i < n; i++) {
        if (proc_has_work(proc_at(i))) {
            return true;
        }
    }
    return false;
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
        cq__sub(&pool.idle, IDLE_SEARCHING_ONE, seq_cst);
    }
    idle_push_free_locked(p);
    pthread_mutex_unlock(&pool.lock);
}

/* ---------------------------------------------------------------------------------------- */
/* Idle bookkeeping                                                                         */

static void idle_push_free_locked(struct cq__proc *p)
{
    p->idle = true;
    p->next_idle = pool.idle_free;
    pool.idle_free = p;
    cq__sub(&pool.idle, IDLE_UNPARKED_ONE, seq_cst);
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

static bool idle_try_searching(void)
{
    uint64_t s = cq__load(&pool.idle, relaxed);
    for (;;) {
        if (2 * IDLE_SEARCHING(s) >= IDLE_NPROCS(s)) {
            return false;
        }
        if (cq__cas_weak(&pool.idle, &s, s + IDLE_SEARCHING_ONE, seq_cst)) {
            return true;
        }
    }
}

static void notify_slow(void);

/* Someone may have work and nobody searches for it: wake an idle proc if there is one. */
static inline void notify(void)
{
    uint64_t s = cq__load(&pool.idle, seq_cst);
    if (IDLE_SEARCHING(s) != 0) {
        return;
    }
    if (IDLE_UNPARKED(s) < IDLE_NPROCS(s)) {
        notify_slow();
    } else {
        cq__monitor_kick();
    }
}

static CQ_NOINLINE void notify_slow(void)
{
    struct cq__thread *wake = NULL;
    struct cq__proc *spawn = NULL;
    pthread_mutex_lock(&pool.lock);
    uint64_t s = cq__load(&pool.idle, seq_cst);
    if (IDLE_SEARCHING(s) != 0 || IDLE_UNPARKED(s) >= IDLE_NPROCS(s)) {
        pthread_mutex_unlock(&pool.lock);
        return;
    }
    struct cq__proc *p = pool.idle_parked;
    if (p) {
        pool.idle_parked = p->next_idle;
        wake = p->thread;
    } else if ((p = pool.idle_free) != NULL) {
        pool.idle_free = p->next_idle;
        if ((wake = pool.spares) != NULL) {
            pool.spares = wake->next_spare;
            pool.nspares--;
            wake->proc = p;
            p->thread = wake;
        } else if (thread_slot_reserve_locked()) {
            spawn = p;
        } else {
            p->next_idle = pool.idle_free; /* put it back: nobody can run it */
            pool.idle_free = p;
            pthread_mutex_unlock(&pool.lock);
            note_limit_reached();
            return;
        }
    } else {
        pthread_mutex_unlock(&pool.lock);
        return;
    }
    p->idle = false;
    cq__add(&pool.idle, IDLE_UNPARKED_ONE + IDLE_SEARCHING_ONE, seq_cst);
    if (wake) {
        wake->wake_searching = true;
    }
    pthread_mutex_unlock(&pool.lock);
    if (wake) {
        unpark_thread(wake);
    } else {
        spawn_thread(spawn, true);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Pushing work                                                                             */

static void ring_push(struct cq__proc *p, struct cq__item *it)
{
    for (;;) {
        switch (cq__runq_push(&p->rq, it)) {
        case CQ__RUNQ_PUSHED:
            return;
        case CQ__RUNQ_STEALING:
            cq__inject_push(&pool.inject[CQ__PRIO_DEFAULT], CQ__PRIO_DEFAULT, it);
            return;
        case CQ__RUNQ_FULL: {
            struct cq__item *first, *last;
            uint32_t n;
            if (cq__runq_push_overflow(&p->rq, it, &first, &last, &n)) {
                for (struct cq__item *x = first, *next; n--; x = next) {
                    next = cq__load(&x->next, relaxed); /* before x is published and run */
                    cq__inject_push(&pool.inject[CQ__PRIO_DEFAULT], CQ__PRIO_DEFAULT, x);
                }
                return;
            }
            break;
        }
        }
    }
}

void cq__pool_push(struct cq__item *it, unsigned prio, unsigned flags)
{
    struct cq__proc *p = cq__tls.proc;
    if (p) {
        if (flags & CQ__PUSH_WAKEUP) {
            /* seq_cst: publishes the item before notify() reads the idle word */
            struct cq__item *prev = cq__xchg(&p->lifo, it, seq_cst);
            if (prev) {
                ring_push(p, prev);
                cq__fence(seq_cst);
            }
        } else {
            ring_push(p, it);
            cq__fence(seq_cst); /* store-load: the ring's tail before the idle word */
        }
    } else {
        if (cq__unlikely(!cq__load(&pool_started, acquire))) {
            cq__pool_ensure_started();
        }
        cq__inject_push(&pool.inject[prio], prio, it); /* seq_cst publish inside */
    }
    notify();
}

/* ---------------------------------------------------------------------------------------- */
/* Finding work                                                                             */

static inline struct cq__item *lifo_take(struct cq__proc *p)
{
    if (cq__load(&p->lifo, relaxed) == NULL) {
        return NULL;
    }
    return cq__xchg(&p->lifo, NULL, acquire); /* acquire: pairs with the pusher's exchange */
}

/*
 * Work this worker leaves waiting — items a batch moved into its ring, or items still in the
 * inject queues — must not sit unseen while it runs a long or blocking task and other workers
 * sleep. A real backlog wakes an idle worker at once (a burst fans out one worker at a time).
 * A small one does not: a wake-up costs far more than running a few short tasks here, so it
 * only makes sure the monitor is watching, which wakes an idle worker if this one gets stuck.
 */
#define CQ__FANOUT_BACKLOG 4u

static inline void announce_backlog(struct cq__proc *p)
{
    uint32_t len = cq__runq_len(&p->rq);
    if (len >= CQ__FANOUT_BACKLOG) {
        notify();
    } else if (len > 0 || inject_any_work()) {
        cq__monitor_kick();
    }
}

static struct cq__item *next_local(struct cq__proc *p)
{
    struct cq__item *it;
    if (++p->tick % CQ__INJECT_INTERVAL == 0 && (it = inject_take_any(p)) != NULL) {
        announce_backlog(p);
        return it;
    }
    if (p->lifo_streak < CQ__LIFO_STREAK_MAX) {
        if ((it = lifo_take(p)) != NULL) {
            p->lifo_streak++;
            return it;
        }
    } else if ((it = lifo_take(p)) != NULL) {
        ring_push(p, it); /* give the ring its turn */
    }
    p->lifo_streak = 0;
    if ((it = cq__runq_pop(&p->rq)) != NULL) {
        return it;
    }
    if ((it = inject_take_any(p)) != NULL) {
        announce_backlog(p); /* the rest of the batch is in our ring now */
    }
    return it;
}

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
    return cq__xchg(&v->lifo, NULL, acquire);
}

static struct cq__item *steal_work(struct cq__proc *p)
{
    uint32_t n = cq__load(&pool.nprocs_seen, acquire);
    uint32_t start = (uint32_t)(rng_next(p) % n);
    for (uint32_t i = 0; i < n; i++) {
        struct cq__proc *v = proc_at((start + i) % n);
        if (v == p || cq__load(&v->retired, relaxed)) {
            continue;
        }
        struct cq__item *it = cq__runq_steal_into(&v->rq, &p->rq);
        if (it || (it = steal_lifo(p, v)) != NULL) {
            return it;
        }
    }
    return inject_take_any(p);
}

/* Spins looking for work for a bounded time; the caller is searching (or could not be). */
static struct cq__item *search(struct cq__thread *t, struct cq__proc *p)
{
    if (!t->searching) {
        if (!idle_try_searching()) {
            return steal_work(p); /* enough searchers: one look, then park */
        }
        t->searching = true;
    }
    /* Pure spinning: a searcher must notice new work within tens of nanoseconds, and it is
     * at most half the workers, so it never takes the CPU a producer needs on its own.
     * The spin adapts: a search that finds work doubles the next one (a stream of work keeps
     * a worker spinning and saves the wake-ups), one that ends in a park halves it (work that
     * trickles in at longer intervals does not cost a CPU spinning for it). */
    uint64_t deadline = cq__now_ns() + p->search_ns;
    uint32_t relax = cq__spin_iterations(200);
    for (;;) {
        struct cq__item *it = steal_work(p);
        if (it) {
            p->search_ns = p->search_ns * 2 < CQ__SPIN_SEARCH_NS ? p->search_ns * 2
                                                                 : CQ__SPIN_SEARCH_NS;
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

static inline void stop_searching(struct cq__thread *t, struct cq__proc *p)
{
    t->searching = false;
    cq__sub(&pool.idle, IDLE_SEARCHING_ONE, seq_cst);
    announce_backlog(p);
}

/* ---------------------------------------------------------------------------------------- */
/* Parking, retiring, spares                                                                */

/* Parks t with its proc p; returns when woken (as a searcher) or when work showed up. */
static void park(struct cq__thread *t, struct cq__proc *p)
{
    pthread_mutex_lock(&pool.lock);
    p->idle = true;
    p->next_idle = pool.idle_parked;
    pool.idle_parked = p;
    uint64_t dec = IDLE_UNPARKED_ONE + (t->searching ? IDLE_SEARCHING_ONE : 0);
    t->searching = false;
    cq__sub(&pool.idle, dec, seq_cst);
    pthread_mutex_unlock(&pool.lock);

    /* Re-check every source of work after a full fence: a producer that published work before
     * our idle-word update saw us as unparked and did not wake anyone. */
    cq__fence(seq_cst);
    if (cq__pool_work_waiting()) {
        pthread_mutex_lock(&pool.lock);
        bool mine = p->idle && idle_remove_locked(&pool.idle_parked, p);
        if (mine) {
            cq__add(&pool.idle, IDLE_UNPARKED_ONE + IDLE_SEARCHING_ONE, seq_cst);
            t->searching = true;
        }
        pthread_mutex_unlock(&pool.lock);
        if (mine) {
            return;
        }
        /* a notifier claimed us already: take its wake-up below */
    }
    park_thread(t);
    t->searching = t->wake_searching;
    t->wake_searching = false;
}

/* An extra proc with nothing to do leaves the pool; its thread exits. */
static bool retire_extra(struct cq__thread *t, struct cq__proc *p)
{
    pthread_mutex_lock(&pool.lock);
    uint64_t s = cq__load(&pool.idle, relaxed);
    if (IDLE_NPROCS(s) <= pool.workers) {
        pthread_mutex_unlock(&pool.lock);
        return false;
    }
    uint64_t dec = IDLE_UNPARKED_ONE + IDLE_NPROCS_ONE + (t->searching ? IDLE_SEARCHING_ONE : 0);
    t->searching = false;
    cq__sub(&pool.idle, dec, seq_cst);
    p->thread = NULL;
    cq__store(&p->retired, 1, release);
    cq__sub(&pool.nthreads, 1, relaxed);
    pthread_mutex_unlock(&pool.lock);
    /* Items pushed to the ring after our last look (by nobody: only we push there) cannot
     * exist, but a LIFO item may have been put back by a helper; hand leftovers on. */
    struct cq__item *it;
    while ((it = cq__runq_pop(&p->rq)) != NULL || (it = lifo_take(p)) != NULL) {
        cq__inject_push(&pool.inject[CQ__PRIO_DEFAULT], CQ__PRIO_DEFAULT, it);
    }
    cq__fence(seq_cst);
    if (cq__pool_work_waiting()) {
        notify();
    }
    return true;
}

/*
 * Gets a proc for a thread that has none (it blocked and gave its proc away). Returns NULL if
 * the thread should exit (too many spares).
 */
static struct cq__proc *acquire_proc(struct cq__thread *t, bool may_wait)
{
    pthread_mutex_lock(&pool.lock);
    struct cq__proc *p = pool.idle_free;
    if (p) {
        pool.idle_free = p->next_idle;
        p->idle = false;
        p->thread = t;
        cq__add(&pool.idle, IDLE_UNPARKED_ONE, seq_cst);
        pthread_mutex_unlock(&pool.lock);
        t->proc = p;
        cq__tls.proc = p;
        return p;
    }
    if (!may_wait) {
        pthread_mutex_unlock(&pool.lock);
        return NULL;
    }
    if (pool.nspares >= pool.spare_limit) {
        cq__sub(&pool.nthreads, 1, relaxed);
        pthread_mutex_unlock(&pool.lock);
        return NULL;
    }
    t->next_spare = pool.spares;
    pool.spares = t;
    pool.nspares++;
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
        struct cq__item *it = next_local(p);
        if (it == NULL && (it = search(t, p)) == NULL) {
            if (p->extra && retire_extra(t, p)) {
                t->proc = NULL;
                cq__tls.proc = NULL;
                return;
            }
            park(t, p);
            continue;
        }
        if (t->searching) {
            stop_searching(t, p);
        }
        run_item(t, p, it);
        if (cq__unlikely(cq__tls.thread != t)) {
            cq__fork_child_task_returned(); /* the task forked: this is the child */
        }
    }
}

static void *thread_main(void *arg)
{
    struct cq__thread *t = arg;
    cq__store(&t->tid, (pid_t)syscall(SYS_gettid), relaxed);
    char name[16];
    snprintf(name, sizeof name, "cq-worker-%u", t->index);
    pthread_setname_np(pthread_self(), name);
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

void cq__pool_block_begin(struct cq__block *b)
{
    struct cq__thread *t = cq__tls.thread;
    b->active = t != NULL;
    if (t == NULL) {
        return;
    }
    cq__add(&pool.blocked, 1, relaxed);
    struct cq__proc *p = t->proc;
    if (p == NULL) {
        return;
    }
    cq__store(&p->running, 0, relaxed);
    t->proc = NULL;
    cq__tls.proc = NULL;
    bool work = proc_has_work(p) || inject_any_work();
    pthread_mutex_lock(&pool.lock);
    if (work) {
        struct cq__thread *spare = pool.spares;
        if (spare) {
            pool.spares = spare->next_spare;
            pool.nspares--;
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
        /* At the limit: keep the proc. Thieves can take its ring but not its LIFO slot (only
         * a running owner's), so the item there moves to the ring, and an idle worker is
         * told: no runnable item stays pinned to a thread that sleeps. */
        pthread_mutex_unlock(&pool.lock);
        t->proc = p;
        cq__tls.proc = p;
        struct cq__item *pinned = lifo_take(p);
        if (pinned) {
            ring_push(p, pinned);
            cq__fence(seq_cst); /* store-load: the ring's tail before the idle word */
        }
        note_limit_reached();
        notify();
        return;
    }
    p->thread = NULL;
    idle_push_free_locked(p);
    pthread_mutex_unlock(&pool.lock);
    cq__fence(seq_cst);
    if (cq__pool_work_waiting()) {
        notify();
    }
}

void cq__pool_block_end(struct cq__block *b)
{
    if (!b->active) {
        return;
    }
    cq__sub(&pool.blocked, 1, relaxed);
    struct cq__thread *t = cq__tls.thread;
    if (t->proc == NULL) {
        acquire_proc(t, false); /* take an idle proc if there is one; otherwise run without */
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Helping                                                                                  */

bool cq__pool_help(bool (*pred)(struct cq__item *, void *), void *arg)
{
    struct cq__proc *p = cq__tls.proc;
    if (p == NULL || cq__tls.help_depth >= CQ__HELP_DEPTH_MAX) {
        return false;
    }
    struct cq__item *it = lifo_take(p);
    if (it && !pred(it, arg)) {
        cq__store(&p->lifo, it, release); /* only the owner fills the slot: put it back */
        it = NULL;
    }
    if (it == NULL) {
        /* Claim the newest item first, then look at it: a claimed item cannot be run and
         * freed by a thief under our feet. */
        it = cq__runq_pop_back(&p->rq);
        if (it && !pred(it, arg)) {
            cq__runq_push(&p->rq, it); /* back where it was: we just made room */
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

/* ---------------------------------------------------------------------------------------- */
/* Start-up, monitor interface, info                                                        */

static void pool_init(void)
{
    uint32_t workers = cq__usable_cpus();
    pool.workers = workers;
    uint32_t dflt_limit = workers * 16 > 128 ? workers * 16 : 128;
    pool.thread_limit =
        cq__env_u32_clamped("CQ_THREAD_LIMIT", dflt_limit, workers, CQ__THREAD_LIMIT_MAX);
    pool.spare_limit = workers;
    for (uint32_t i = 0; i < CQ__PRIO_COUNT; i++) {
        cq__inject_init(&pool.inject[i]);
    }
    struct cq__proc *procs[CQ__MAX_PROCS];
    for (uint32_t i = 0; i < workers; i++) {
        procs[i] = proc_new(false);
        if (procs[i] == NULL) {
            cq__crash("out of memory starting the pool");
        }
    }
    cq__store(&pool.idle, (uint64_t)workers * (IDLE_NPROCS_ONE + IDLE_UNPARKED_ONE), seq_cst);
    cq__store(&pool.nthreads, workers, relaxed);
    cq__store(&pool.threads_peak, workers, relaxed);
    /* release: pairs with the acquire loads of pool_started; the pool is set up */
    cq__store(&pool_started, true, release);
    for (uint32_t i = 0; i < workers; i++) {
        spawn_thread(procs[i], false);
    }
    cq__monitor_start();
}

void cq__pool_ensure_started(void)
{
    if (cq__likely(cq__load(&pool_started, acquire))) {
        return;
    }
    cq__fork_handlers_install();
    pthread_mutex_lock(&start_lock);
    if (!cq__load(&pool_started, relaxed)) {
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
    cq__store(&pool.idle, 0, relaxed);
    for (uint32_t i = 0; i < CQ__PRIO_COUNT; i++) {
        cq__inject_init(&pool.inject[i]);
    }
    pool.idle_parked = pool.idle_free = NULL;
    pool.spares = NULL;
    pool.nspares = 0;
    cq__store(&pool.nthreads, 0, relaxed);
    cq__store(&pool.blocked, 0, relaxed);
    cq__store(&pool_started, false, relaxed);
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

void cq__pool_notify(void)
{
    notify();
}

bool cq__pool_saturated(void)
{
    uint64_t s = cq__load(&pool.idle, seq_cst);
    return IDLE_SEARCHING(s) == 0 && IDLE_UNPARKED(s) >= IDLE_NPROCS(s);
}

uint32_t cq__pool_proc_count(void)
{
    return cq__load(&pool.nprocs_seen, acquire);
}

struct cq__proc *cq__pool_proc(uint32_t index)
{
    return proc_at(index);
}

bool cq__pool_add_extra_proc(void)
{
    pthread_mutex_lock(&pool.lock);
    if (!thread_slot_reserve_locked()) {
        pthread_mutex_unlock(&pool.lock);
        note_limit_reached();
        return false;
    }
    struct cq__proc *p = NULL;
    uint32_t n = cq__load(&pool.nprocs_seen, relaxed);
    for (uint32_t i = 0; i < n; i++) {
        struct cq__proc *c = proc_at(i);
        if (cq__load(&c->retired, relaxed)) {
            p = c;
            break;
        }
    }
    if (p == NULL) {
        p = n < CQ__MAX_PROCS ? proc_new(true) : NULL;
    }
    if (p == NULL) {
        cq__sub(&pool.nthreads, 1, relaxed);
        pthread_mutex_unlock(&pool.lock);
        return false;
    }
    cq__store(&p->retired, 0, relaxed);
    p->idle = false;
    cq__add(&pool.idle, IDLE_NPROCS_ONE + IDLE_UNPARKED_ONE + IDLE_SEARCHING_ONE, seq_cst);
    pthread_mutex_unlock(&pool.lock);
    cq__add(&pool.monitor_spawns, 1, relaxed);
    spawn_thread(p, true);
    return true;
}

void cq_runtime_get_info(struct cq_runtime_info *info)
{
    cq__pool_ensure_started();
    uint64_t s = cq__load(&pool.idle, relaxed);
    pthread_mutex_lock(&pool.lock);
    info->spares_parked = pool.nspares;
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
}
