/*
 * The thread pool's state: procs, bands, the thread limit, start-up, fork and info (see
 * pool_internal.h for the model). The rest of the scheduler, one concept per file:
 *   idle.c    the idle word and notify (waking a searcher)
 *   park.c    parking a worker, retiring an extra proc, spares getting a proc back
 *   worker.c  the worker loop and pool thread start
 *   block.c   blocking waits: handing the proc to a spare (block_begin/end)
 *   find.c    pushing work and finding it (rings, inject, LIFO, steal, search, help)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "scheduler/pool_internal.h"

#include <cqueuecore/introspect.h>
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

#include "platform/diag_internal.h"
#include "platform/fork_internal.h"
#include "platform/parker_internal.h"
#include "scheduler/task_internal.h"
#include "scheduler/thread_internal.h"

struct cq__pool_state cq__pool = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER; /* pool_init runs under it */
static void (*on_start)(void); /* cq__pool_on_start_register (set by constructors) */
_Atomic bool cq__pool_started;
bool cq__pool_start_with_queues;

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

/* cq__event_wait (platform/parker.c) sleeps inside the pool's block bracket. */
CQ_EARLY_INIT static void pool_register_sleep_hooks(void)
{
    cq__sleep_hooks_register(cq__pool_block_begin, cq__pool_block_end);
}

const char *cq__pool_band_thread_name(unsigned band)
{
    return band_info[band].thread_name;
}

/* ---------------------------------------------------------------------------------------- */
/* Procs and limits                                                                         */

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
    atomic_init(&p->lifo_oc, NULL);
    uint32_t i = cq__load(&cq__pool.nprocs_seen, relaxed);
    p->index = i;
    p->band = (uint8_t)band;
    p->levels = band_info[band].levels;
    p->main_level = band_info[band].main_level;
    p->lifo_levels = band_info[band].lifo_levels;
    p->extra = extra;
    p->search_ns = CQ__SPIN_SEARCH_NS;
    p->rng = 0x9e3779b97f4a7c15ull * (i + 1);
    /* release: the initialised proc is visible to thieves that find it in the array; pairs with the
     * thieves' acquire loads of the proc array after nprocs_seen (find.c) */
    cq__store(&cq__pool.procs[i], p, release);
    /* pairs with the acquire loads of nprocs_seen (find.c, cq__pool_proc_count) */
    cq__store(&cq__pool.nprocs_seen, i + 1, release);
    return p;
}

void cq__pool_note_limit_reached(void)
{
    cq__add(&cq__pool.limit_reached, 1, relaxed);
    CQ_PROBE2(thread_limit, cq__load(&cq__pool.nthreads, relaxed), cq__pool.thread_limit);
    cq__report_once(&cq__pool.limit_reported,
                    "thread limit %u reached: %u threads, %u of them waiting in runtime calls "
                    "and %u running tasks that sleep in the kernel; new work waits until one "
                    "returns. Raise it with CQ_THREAD_LIMIT.",
                    cq__pool.thread_limit, cq__load(&cq__pool.nthreads, relaxed),
                    cq__load(&cq__pool.blocked, relaxed),
                    cq__load(&cq__pool.blocked_in_tasks, relaxed));
}

void cq__pool_set_blocked_in_tasks(uint32_t n)
{
    if (cq__load(&cq__pool.blocked_in_tasks, relaxed) != n) {
        cq__store(&cq__pool.blocked_in_tasks, n, relaxed);
    }
}

/* Reserves a thread slot under the lock; false at the limit. */
bool cq__pool_thread_slot_reserve_locked(void)
{
    uint32_t n = cq__load(&cq__pool.nthreads, relaxed);
    if (n >= cq__pool.thread_limit) {
        return false;
    }
    cq__store(&cq__pool.nthreads, n + 1, relaxed);
    if (n + 1 > cq__load(&cq__pool.threads_peak, relaxed)) {
        cq__store(&cq__pool.threads_peak, n + 1, relaxed);
    }
    return true;
}

/* ---------------------------------------------------------------------------------------- */
/* Start-up, monitor interface, info                                                        */

static void band_init(unsigned band, uint32_t procs, uint32_t running, bool extras,
                      struct cq__proc **started)
{
    struct cq__band *b = &cq__pool.band[band];
    b->levels = band_info[band].levels;
    b->base = procs;
    b->spare_limit = procs;
    b->extras = extras;
    b->idle_parked = b->idle_free = NULL;
    b->spares = NULL;
    b->nspares = 0;
    /* idle word: pairs with the parker's fence and re-check (park.c), design.md §10; published by
     * the release store of cq__pool_started below */
    cq__store(&b->idle,
              (uint64_t)procs * CQ__IDLE_NPROCS_ONE + (uint64_t)running * CQ__IDLE_UNPARKED_ONE,
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
    uint32_t workers = cq__usable_cpus(CQ__MAX_WORKERS);
    cq__pool.workers = workers;
    /* libdispatch's pool stops at 255 threads: a program that parks that many in waits there
     * runs here too (test_default_thread_limit.c). */
    uint32_t dflt_limit =
        workers * 16 > CQ__THREAD_LIMIT_DEFAULT_MIN ? workers * 16 : CQ__THREAD_LIMIT_DEFAULT_MIN;
    /* every band's base procs can run at once */
    uint32_t min_limit = 2 * workers + CQ__EXPRESS_PROCS;
    cq__pool.thread_limit =
        cq__env_u32_clamped("CQ_THREAD_LIMIT", dflt_limit, min_limit, CQ__THREAD_LIMIT_MAX);
    cq__thread_naming_from_env();
    for (uint32_t i = 0; i < CQ__INJECT_COUNT; i++) {
        cq__inject_init(&cq__pool.inject[i]);
    }
    cq__store(&cq__pool.high_hint, 0, relaxed);
    struct cq__proc *started[CQ__MAX_WORKERS];
    band_init(CQ__BAND_NORMAL, workers, workers, true, started);
    band_init(CQ__BAND_EXPRESS, CQ__EXPRESS_PROCS, 0, false, NULL);
    band_init(CQ__BAND_BACKGROUND, workers, 0, true, NULL);
    cq__store(&cq__pool.nthreads, workers, relaxed);
    cq__store(&cq__pool.threads_peak, workers, relaxed);
    /* release: pairs with the acquire loads of cq__pool_started; the pool is set up */
    cq__store(&cq__pool_started, true, release);
    for (uint32_t i = 0; i < workers; i++) {
        cq__pool_spawn_thread(started[i], false);
    }
    cq__monitor_start();
}

void cq__pool_ensure_started(void)
{
    /* pairs with the release store of cq__pool_started at the end of pool_init */
    if (cq__likely(cq__load(&cq__pool_started, acquire))) {
        return;
    }
    cq__fork_handlers_install();
    pthread_mutex_lock(&start_lock);
    bool first = !cq__load(&cq__pool_started, relaxed);
    if (first) {
        pool_init();
    }
    pthread_mutex_unlock(&start_lock);
    if (first && on_start) {
        on_start();
    }
}

void cq__pool_on_start_register(void (*fn)(void))
{
    on_start = fn;
}

/* fork(): no start-up and no pool-lock holder may be caught half-way (see fork.c). */
void cq__pool_fork_prepare(void)
{
    pthread_mutex_lock(&start_lock);
    pthread_mutex_lock(&cq__pool.lock);
}

void cq__pool_fork_parent(void)
{
    pthread_mutex_unlock(&cq__pool.lock);
    pthread_mutex_unlock(&start_lock);
}

/*
 * In the child, only the forking thread exists: the pool starts over, empty, on the next
 * submission. The old procs, their queued items and the threads' records are abandoned (their
 * work belongs to the parent's threads); the forking thread stops being a pool thread.
 */
void cq__pool_fork_child(void)
{
    pthread_mutex_unlock(&cq__pool.lock);
    pthread_mutex_unlock(&start_lock);
    uint32_t n = cq__load(&cq__pool.nprocs_seen, relaxed);
    for (uint32_t i = 0; i < n; i++) {
        cq__store(&cq__pool.procs[i], NULL, relaxed);
    }
    cq__store(&cq__pool.nprocs_seen, 0, relaxed);
    for (unsigned band = 0; band < CQ__BAND_COUNT; band++) {
        struct cq__band *b = &cq__pool.band[band];
        cq__store(&b->idle, 0, relaxed);
        b->idle_parked = b->idle_free = NULL;
        b->spares = NULL;
        b->nspares = 0;
    }
    for (uint32_t i = 0; i < CQ__INJECT_COUNT; i++) {
        cq__inject_init(&cq__pool.inject[i]);
    }
    cq__store(&cq__pool.high_hint, 0, relaxed);
    cq__store(&cq__pool.nthreads, 0, relaxed);
    cq__store(&cq__pool.blocked, 0, relaxed);
    cq__store(&cq__pool_started, false, relaxed);
    cq__tls.thread = NULL;
    cq__tls.proc = NULL;
    for (unsigned i = 0; i < sizeof cq__tls.inject / sizeof cq__tls.inject[0]; i++) {
        cq__tls.inject[i] = NULL;
    }
    cq__monitor_fork_child();
    cq__overcommit_fork_child();
}

uint32_t cq__pool_workers(void)
{
    cq__pool_ensure_started();
    return cq__pool.workers;
}

bool cq__pool_band_saturated(unsigned band)
{
    /* idle word: pairs with the parker's fence and re-check (park.c), design.md §10 */
    uint64_t s = cq__load(&cq__pool.band[band].idle, seq_cst);
    return CQ__IDLE_SEARCHING(s) == 0 && CQ__IDLE_UNPARKED(s) >= CQ__IDLE_NPROCS(s);
}

uint32_t cq__pool_proc_count(void)
{
    /* pairs with the release store of nprocs_seen in proc_new (cq__pool.c) */
    return cq__load(&cq__pool.nprocs_seen, acquire);
}

bool cq__pool_add_extra_proc(unsigned band)
{
    struct cq__band *b = &cq__pool.band[band];
    if (!b->extras) {
        return false;
    }
    pthread_mutex_lock(&cq__pool.lock);
    /* A parked spare of the band runs it if there is one (an extra proc's thread parks as a
     * spare when its proc retires): a thread per extra proc was a thread created and ended
     * for each burst of work behind a sleeping task, one per millisecond. */
    bool spare_parked = b->spares != NULL;
    if (!spare_parked && !cq__pool_thread_slot_reserve_locked()) {
        pthread_mutex_unlock(&cq__pool.lock);
        cq__pool_note_limit_reached();
        return false;
    }
    struct cq__proc *p = NULL;
    uint32_t n = cq__load(&cq__pool.nprocs_seen, relaxed);
    for (uint32_t i = 0; i < n; i++) {
        struct cq__proc *c = cq__pool_proc_at(i);
        if (c->band == band && cq__load(&c->retired, relaxed)) {
            p = c;
            break;
        }
    }
    bool out_of_procs = false;
    if (p == NULL) {
        out_of_procs = n >= CQ__MAX_PROCS;
        p = out_of_procs ? NULL : proc_new(band, true);
    }
    if (p == NULL) {
        if (!spare_parked) {
            cq__sub(&cq__pool.nthreads, 1, relaxed); /* the slot reserved above */
        }
        pthread_mutex_unlock(&cq__pool.lock);
        if (out_of_procs) {
            cq__add(&cq__pool.limit_reached, 1, relaxed);
            cq__report_once(&cq__pool.procs_reported,
                            "%u run queues in use, the most there can be: a task that sleeps in "
                            "the kernel gets no thread to take over its CPU any more (%u "
                            "threads, %u tasks asleep in the kernel); new work waits until "
                            "one returns.",
                            CQ__MAX_PROCS, cq__load(&cq__pool.nthreads, relaxed),
                            cq__load(&cq__pool.blocked_in_tasks, relaxed));
        }
        return false;
    }
    cq__store(&p->retired, 0, relaxed);
    p->idle = false;
    struct cq__thread *spare = spare_parked ? cq__pool_spare_take_locked(b, p, true) : NULL;
    /* idle word: pairs with the parker's fence and re-check (park.c), design.md §10 */
    cq__add(&b->idle, CQ__IDLE_NPROCS_ONE + CQ__IDLE_UNPARKED_ONE + CQ__IDLE_SEARCHING_ONE,
            seq_cst);
    pthread_mutex_unlock(&cq__pool.lock);
    cq__add(&cq__pool.monitor_spawns, 1, relaxed);
    if (spare) {
        cq__pool_unpark_thread(spare);
    } else {
        cq__pool_spawn_thread(p, true);
    }
    return true;
}

void cq_runtime_get_info(struct cq_runtime_info *info)
{
    cq__pool_ensure_started();
    uint64_t s = cq__load(&cq__pool.band[CQ__BAND_NORMAL].idle, relaxed);
    pthread_mutex_lock(&cq__pool.lock);
    info->spares_parked = 0;
    for (unsigned band = 0; band < CQ__BAND_COUNT; band++) {
        info->spares_parked += cq__pool.band[band].nspares;
    }
    pthread_mutex_unlock(&cq__pool.lock);
    info->workers = cq__pool.workers;
    info->procs = CQ__IDLE_NPROCS(s);
    info->threads = cq__load(&cq__pool.nthreads, relaxed);
    info->threads_peak = cq__load(&cq__pool.threads_peak, relaxed);
    info->thread_limit = cq__pool.thread_limit;
    info->blocked = cq__load(&cq__pool.blocked, relaxed);
    info->limit_reached = cq__load(&cq__pool.limit_reached, relaxed);
    info->handoffs = cq__load(&cq__pool.handoffs, relaxed);
    info->monitor_spawns = cq__load(&cq__pool.monitor_spawns, relaxed);
    info->blocked_in_tasks = cq__load(&cq__pool.blocked_in_tasks, relaxed);
    info->express_wakeups = cq__load(&cq__pool.express_wakeups, relaxed);
    info->background_procs =
        CQ__IDLE_NPROCS(cq__load(&cq__pool.band[CQ__BAND_BACKGROUND].idle, relaxed));
}

void cq__pool_introspect(void (*pool)(void *ctx, const struct cq_introspect_pool *d),
                         void (*worker)(void *ctx, const struct cq_introspect_worker *d), void *ctx)
{
    cq__pool_ensure_started();
    if (pool) {
        struct cq_runtime_info info;
        cq_runtime_get_info(&info);
        struct cq_introspect_pool d = {
            .workers = info.workers,
            .threads = info.threads,
            .thread_limit = info.thread_limit,
            .blocked = info.blocked,
            .spares_parked = info.spares_parked,
            .blocked_in_tasks = info.blocked_in_tasks,
        };
        pool(ctx, &d);
    }
    if (worker == NULL) {
        return;
    }
    uint32_t n = cq__pool_proc_count();
    for (uint32_t i = 0; i < n; i++) {
        struct cq__proc *p = cq__pool_proc_at(i);
        struct cq_introspect_worker d = {
            .index = p->index,
            .band = p->band,
            .tid = cq__load(&p->tid, relaxed),
            .extra = p->extra,
            .tasks_run = cq__load(&p->n_tasks, relaxed),
            .steals = cq__load(&p->n_steals, relaxed),
            .parks = cq__load(&p->n_parks, relaxed),
            .unparks = cq__load(&p->n_unparks, relaxed),
        };
        pthread_mutex_lock(&cq__pool.lock); /* p->idle and p->thread */
        if (p->thread != NULL && cq__load(&p->thread->tid, relaxed) != 0) {
            /* the thread that holds it now, running or parked (p->tid is set only when a task
             * runs: a worker that has parked without one would show none) */
            d.tid = cq__load(&p->thread->tid, relaxed);
        }
        if (cq__load(&p->retired, relaxed)) {
            d.state = CQ_INTROSPECT_WORKER_RETIRED;
        } else if (p->idle) {
            d.state = p->thread ? CQ_INTROSPECT_WORKER_PARKED : CQ_INTROSPECT_WORKER_IDLE;
        } else if (p->thread == NULL) {
            d.state = CQ_INTROSPECT_WORKER_IDLE;
        } else {
            d.state = cq__load(&p->running, relaxed) ? CQ_INTROSPECT_WORKER_RUNNING
                                                     : CQ_INTROSPECT_WORKER_SEARCHING;
        }
        pthread_mutex_unlock(&cq__pool.lock);
        worker(ctx, &d); /* outside the pool lock: the visitor may take its time */
    }
}

size_t cq_runtime_get_counters(struct cq_runtime_counters *out, size_t size)
{
    struct cq_runtime_counters c;
    memset(&c, 0, sizeof c);
    uint32_t n = cq__pool_proc_count();
    for (uint32_t i = 0; i < n; i++) {
        struct cq__proc *p = cq__pool_proc_at(i);
        c.tasks_run += cq__load(&p->n_tasks, relaxed);
        c.steals += cq__load(&p->n_steals, relaxed);
        c.parks += cq__load(&p->n_parks, relaxed);
        c.unparks += cq__load(&p->n_unparks, relaxed);
    }
    c.workers_counted = n;
    c.tasks_outside = cq__load(&cq__counters.tasks_outside, relaxed);
    c.tasks_run += c.tasks_outside;
    c.spare_threads = cq__load(&cq__counters.spares_started, relaxed);
    c.thread_limit_hits = cq__load(&cq__pool.limit_reached, relaxed);
    c.timer_fires = cq__load(&cq__counters.timer_fires, relaxed);
    c.source_events = cq__load(&cq__counters.source_events, relaxed);
    c.threads_started = cq__load(&cq__counters.threads_started, relaxed);
    c.overcommit_wakeups = cq__load(&cq__counters.overcommit_wakeups, relaxed);
    if (out == NULL) {
        return 0;
    }
    if (size > sizeof c) {
        size = sizeof c;
    }
    memcpy(out, &c, size);
    return size;
}

CQ__FORK_REGISTER(pool, CQ__FORK_RANK_POOL, cq__pool_fork_prepare, cq__pool_fork_parent,
                  cq__pool_fork_child)
