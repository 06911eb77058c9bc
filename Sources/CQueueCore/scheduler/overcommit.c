/*
 * Overcommit threads: serial queues' drains while every worker is stuck in a long task.
 *
 * CPU-bound tasks never add workers (monitor.c: more threads than CPUs would only make them
 * take turns), so a pool whose workers all compute for seconds ran nothing else meanwhile: a
 * service's serial queue fed by requests from another thread waited for a batch task to end
 * (2.9 s behind tasks of 1.5 s on the default global queue, 2 CPUs). libdispatch puts serial
 * queues on "overcommit" root queues, which start a thread for a drain whenever no thread is
 * idle: 0-30 ms there. Here:
 *   - a serial queue's drain submitted from outside the pool (an application thread, the
 *     reactor's sources and timers, a thread below) waits in its priority's overcommit lane
 *     (CQ__LANE, pool_internal.h) rather than the inject queue, and workers take lane items
 *     before the priority's other items from outside;
 *   - a drain that a task made runnable waits in its worker's LIFO slot, for the task to end;
 *     once the task has run for CQ__OC_LIFO_TICKS ticks, the monitor moves such a drain to its
 *     lane (cq__overcommit_take_lifo): a long task that reports its progress to a serial
 *     queue no longer holds the queue's work until it ends;
 *   - at each tick the monitor looks whether lane items wait and no lane item was taken since
 *     its last look; after OC_STALL_TICKS such ticks in a row (workers serve the inject queues
 *     at their next item after a tick, inject_turns in monitor.c, so only workers stuck in one
 *     item for that long miss them) it wakes an idle overcommit thread, or starts one, up to
 *     one per worker, and looks again OC_STALL_TICKS later;
 *   - an overcommit thread takes lane items only, highest priority first, one at a time, and
 *     runs them as a thread outside the pool: what its drains submit goes through the inject
 *     queues and lanes (it has no run queue that work could wait in behind a long drain); it
 *     parks when the lanes are empty or a worker has taken a lane item since it last did
 *     (the workers serve the lanes again); those beyond one per worker end after
 *     OC_IDLE_EXIT_NS without work.
 * Global queues' work and concurrent queues' work never get one (libdispatch's are not
 * overcommit either), so CPU-bound work of those still runs on the workers alone; background
 * serial queues neither (their threads run at nice 19, these at the pool's value).
 * The cost: at most `workers` more threads computing beside the workers, and only while a
 * serial queue's work would otherwise wait for a long task to end.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "platform/diag_internal.h"
#include "platform/fork_internal.h"
#include "platform/parker_internal.h"
#include "platform/probes_internal.h"
#include "platform/thread_start_internal.h"
#include "platform/time_internal.h"
#include "scheduler/pool_internal.h"
#include "scheduler/task_internal.h"
#include "scheduler/thread_internal.h"

#define OC_STALL_TICKS 2u
#define OC_IDLE_EXIT_NS 5000000000ll
/* OC_HOT: once the monitor has woken an overcommit thread, the workers are known to be stuck,
 * and until they take lane items again (the thread sees it, or the monitor with no thread
 * awake) a lane item pushed while every worker is busy wakes an idle overcommit thread at
 * once (cq__overcommit_wake_for_push) instead of waiting OC_STALL_TICKS for the monitor: a
 * service answering one request per few milliseconds beside CPU-bound work took 2-3 ms per
 * request, each waiting for the monitor's look, where libdispatch's idle overcommit thread
 * took it at once. */

struct oc_thread {
    _Atomic uint32_t woken;      /* futex: 1 once taken off the idle list by a wake */
    struct oc_thread *next;      /* in the idle list, under `lock` */
    struct oc_thread *next_live; /* in the list of live threads, under `lock` */
    _Atomic pid_t tid;           /* for the monitor's look at whether it sleeps */
    bool parked;                 /* in the idle list, under `lock` */
    uint32_t index;
    char name[16]; /* cq-oc-N, its own name (thread naming, thread_internal.h) */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct oc_thread *idle; /* parked threads, under `lock` */
static struct oc_thread *all;  /* live threads, under `lock` */
/* Records of threads that ended, for the next thread to reuse, under `lock`. Never freed: a
 * waker wakes its thread after dropping the lock, when the thread may have ended already (a
 * stray wake of a reused record's futex word is harmless: see park). */
static struct oc_thread *ended;
static uint32_t live;       /* threads alive, under `lock` */
static uint32_t next_index; /* under `lock` */
static uint32_t active;     /* threads not parked, under `lock` */

/* See OC_HOT: set by the monitor's wakes, cleared once workers take lane items again. */
_Atomic uint32_t cq__overcommit_hot;

static _Atomic uint32_t oc_takes; /* lane items overcommit threads took */

/* monitor-private */
static uint32_t stalled_ticks;
static uint32_t takes_seen;
static uint32_t worker_takes_seen;

static uint32_t lane_takes(void)
{
    uint32_t takes = 0;
    for (unsigned prio = 0; prio < CQ__PRIO_BACKGROUND; prio++) {
        takes += cq__load(&cq__pool.inject[CQ__LANE(prio)].takes, relaxed);
    }
    return takes;
}

/* The next lane item, highest priority first; NULL if none (or a consumer holds a lane's
 * lock: the monitor looks again). */
static struct cq__item *lane_take(void)
{
    for (unsigned prio = 0; prio < CQ__PRIO_BACKGROUND; prio++) {
        struct cq__item *it = cq__inject_take(&cq__pool.inject[CQ__LANE(prio)], NULL, 1);
        if (it) {
            return it;
        }
    }
    return NULL;
}

/* Takes `t`, whose thread ends or never started, off the list of live threads and keeps its
 * record for the next thread (lock held). */
static void record_ended_locked(struct oc_thread *t)
{
    struct oc_thread **l = &all;
    while (*l != t) {
        l = &(*l)->next_live;
    }
    *l = t->next_live;
    live--;
    t->next = ended;
    ended = t;
}

/* Parks `t` until a wake; false: it left the idle list on its own (the thread ends). Threads
 * beyond one per worker end after OC_IDLE_EXIT_NS without a wake; the others stay parked, as
 * the pool's spares do: each end was a wake-up of an idle process (test_source's idle case saw
 * one, 5 s after an earlier case had used them). */
static bool park(struct oc_thread *t)
{
    /* Our free tasks go to the depot first, as a worker's do when it parks (park.c): a thread
     * that stays parked kept the tasks its drains freed in its cache, and with them their
     * arenas (2 MiB each) mapped for good. Beside busy CPUs, where these threads run the
     * drains, 4-5 arenas stayed after bursts of tasks to a serial queue (test_memory_trim_race,
     * 1 run in 10 beside two CPU hogs). */
    cq__task_idle();
    pthread_mutex_lock(&lock);
    cq__store(&t->woken, 0, relaxed);
    t->next = idle;
    idle = t;
    t->parked = true;
    active--;
    bool may_end = live > cq__pool_workers();
    pthread_mutex_unlock(&lock);
    for (;;) {
        struct cq__deadline d = {.forever = !may_end, .clock = CLOCK_MONOTONIC};
        uint64_t until = cq__now_ns() + OC_IDLE_EXIT_NS;
        d.at.tv_sec = (time_t)(until / 1000000000u);
        d.at.tv_nsec = (long)(until % 1000000000u);
        /* acquire: pairs with oc_wake's release store (made under the lock, as our push) */
        while (cq__load(&t->woken, acquire) == 0) {
            if (cq__futex_wait(&t->woken, 0, &d) == ETIMEDOUT) {
                break;
            }
        }
        /* Woken: oc_wake took `t` off the idle list (under the lock) before it set `woken`, so
         * there is nothing to take the lock for. (It used to be taken here while the waker
         * still held it: the woken thread, on the waker's CPU, preempted the waker, blocked on
         * the lock, and left the CPU to a worker that computes, which kept it for its slice;
         * requests to a serial queue beside CPU-bound tasks waited 1-5 ms in 1-4 % of them,
         * libdispatch's under 0.1 ms.) acquire (the load above): pairs with oc_wake's release
         * store. A stray wake (a record's earlier owner's waker, see `ended`) finds `woken` 0
         * and waits again. */
        if (cq__load(&t->woken, relaxed) != 0) {
            return true;
        }
        pthread_mutex_lock(&lock);
        if (cq__load(&t->woken, relaxed) != 0) { /* set only under the lock */
            pthread_mutex_unlock(&lock);
            return true;
        }
        if (live <= cq__pool_workers()) {
            may_end = false; /* one of those that stay */
            pthread_mutex_unlock(&lock);
            continue;
        }
        struct oc_thread **l = &idle;
        while (*l != t) {
            l = &(*l)->next;
        }
        *l = t->next;
        cq__tls.own_name = NULL;
        record_ended_locked(t); /* the caller touches `t` no more */
        pthread_mutex_unlock(&lock);
        return false;
    }
}

static void *oc_main(void *arg)
{
    struct oc_thread *t = arg;
    snprintf(t->name, sizeof t->name, "cq-oc-%u", t->index);
    pthread_setname_np(pthread_self(), t->name);
    cq__tls.own_name = t->name; /* drains name it after their queues, as a worker */
    cq__store(&t->tid, (pid_t)syscall(SYS_gettid), relaxed);
    /* The kernel's default slice, shorter than the workers' (worker.c): woken beside workers
     * that compute, it preempts one at once, where with theirs it waited for one's slice to
     * end (serial_busy_p99: 0.8-5 ms; libdispatch 0.04-2.5 ms). */
    cq__thread_set_slice(false);
    cq__tls.main_thread = 2;
    uint32_t gen = cq__fork_gen;
    do {
        /* Lane items are taken while the workers take none: once one does, they serve the
         * lanes again and this thread parks (see OC_STALL_TICKS: a client on the same CPUs
         * that kept both workers off them for 2 ms woke one under an HTTP load, which then
         * stayed a third consumer and doubled the p99 at 16 connections). */
        uint32_t takes = lane_takes();
        struct cq__item *it;
        for (;;) {
            if (lane_takes() != takes) {
                cq__store(&cq__overcommit_hot, 0, relaxed); /* workers serve the lanes again */
                break;
            }
            /* counted before the take (and given back if there was none), so that the
             * monitor never sees a take of ours as one of the workers' (see OC_HOT) */
            cq__add(&oc_takes, 1, relaxed);
            if ((it = lane_take()) == NULL) {
                cq__sub(&oc_takes, 1, relaxed);
                break;
            }
            takes++;
            if (cq__unlikely(cq__tls.named != NULL) &&
                (it->kind != CQ__ITEM_QUEUE || cq__load(&cq__thread_naming_ms, relaxed) == 0)) {
                cq__thread_name_slow(NULL); /* as a worker's run_item */
            }
            cq__item_invoke(it);
            if (cq__unlikely(cq__fork_gen != gen)) {
                cq__fork_child_task_returned(); /* the task forked: this is the child */
            }
        }
        cq__thread_name_note(NULL); /* asleep under its own name, as a parked worker is */
    } while (park(t));
    return NULL; /* park put `t` among the ended records */
}

/* Whether at least `bound` overcommit threads are awake and not asleep in the kernel (lock
 * held). Stops at the bound: each look reads /proc (a few microseconds). */
static bool running_at_least_locked(uint32_t bound)
{
    uint32_t n = 0;
    for (struct oc_thread *t = all; t && n < bound; t = t->next_live) {
        pid_t tid = cq__load(&t->tid, relaxed);
        n += !t->parked && (tid == 0 || !cq__monitor_thread_sleeps(tid));
    }
    return n >= bound;
}

/* Wakes an idle overcommit thread or starts one; false at the bound, or with `unless_active`
 * when one is awake (it takes the lanes' items in turn). The bound is a thread per worker
 * that runs: threads asleep in a task (a wait, a read, a sleep) do not count, up to the pool's
 * thread limit in all. Counting them, serial queues whose work waited for one another stalled
 * for as long as the workers' tasks ran (a serial queue's work that signalled two others
 * waiting on a semaphore never ran beside spinning tasks; libdispatch: at once). */
static bool oc_wake(bool unless_active)
{
    pthread_mutex_lock(&lock);
    if (unless_active && active != 0) {
        pthread_mutex_unlock(&lock);
        return false;
    }
    struct oc_thread *t = idle;
    if (t) {
        idle = t->next;
        t->parked = false;
        active++;
        /* release: pairs with park's acquire load */
        cq__store(&t->woken, 1, release);
        pthread_mutex_unlock(&lock);
        /* After the unlock: woken under the lock, a thread on this CPU preempted this one and
         * then blocked on the lock it held (see park). The record is never freed. */
        cq__futex_wake(&t->woken, 1);
        return true;
    }
    if (live >= cq__pool_workers() && (unless_active || live >= cq__pool.thread_limit ||
                                       running_at_least_locked(cq__pool_workers()))) {
        pthread_mutex_unlock(&lock);
        return false;
    }
    t = ended;
    if (t != NULL) {
        ended = t->next;
        memset(t, 0, sizeof *t); /* `woken` 0: a stray wake still due finds nothing to do */
    } else if ((t = calloc(1, sizeof *t)) == NULL) {
        pthread_mutex_unlock(&lock);
        return false;
    }
    t->index = next_index++;
    t->next_live = all;
    all = t;
    live++;
    active++;
    pthread_mutex_unlock(&lock);
    pthread_t thread;
    int err = cq__thread_start(&thread, oc_main, t);
    if (err != 0) {
        static atomic_bool reported;
        cq__report_once(&reported,
                        "cannot start an overcommit thread (%s): serial queues wait for "
                        "workers stuck in long tasks",
                        strerror(err));
        pthread_mutex_lock(&lock);
        active--;
        record_ended_locked(t);
        pthread_mutex_unlock(&lock);
        return false;
    }
    return true;
}

void cq__overcommit_take_lifo(struct cq__proc *p)
{
    struct cq__item *it = cq__load(&p->lifo_oc, relaxed);
    if (it == NULL) {
        return;
    }
    /* Only the drain the owner noted, and only if the slot still holds it: claiming whatever
     * the slot held and putting back what was not a drain let the owner, looking meanwhile,
     * find the slot empty and run an item of its ring first (tasks that each wait for the ones
     * submitted before them hung, compat_queue's turns under ThreadSanitizer, 2 runs in 5).
     * acquire: pairs with the owner's seq_cst exchange that filled the slot */
    struct cq__item *expected = it;
    if (!cq__cas(&p->lifo, &expected, NULL, acquire)) {
        return;
    }
    expected = it;
    (void)cq__cas(&p->lifo_oc, &expected, NULL, relaxed); /* unless the owner noted another */
    unsigned prio = cq__load(&it->prio, relaxed);
    if (cq__unlikely(!(it->flags & CQ__ITEM_OVERCOMMIT))) {
        /* Not a drain: the noted queue was freed and another object took its memory, whose
         * item the owner put in the slot after we read the note. Moved to the inject queue, a
         * concurrent queue's drain let newer items of the owner's ring start before the
         * queue's older ones (compat_queue's turns hung once, 1 full ctest run in 4). Put
         * back; if the owner filled the slot meanwhile, the inject queue is all that is left.
         * release: pairs with the owner's acquire exchange (cq__pool_lifo_take) */
        expected = NULL;
        if (cq__cas(&p->lifo, &expected, it, release)) {
            return;
        }
    }
    /* A serial queue's drain goes to its lane (anything else, see above, to the inject queue,
     * where any worker finds it). */
    unsigned slot = cq__inject_slot(it, prio);
    cq__inject_push(&cq__pool.inject[slot], slot, it);
    cq__pool_notify_prio(prio);
}

void cq__overcommit_tick(void)
{
    uint32_t takes = 0;
    bool waiting = false;
    for (unsigned prio = 0; prio < CQ__PRIO_BACKGROUND; prio++) {
        struct cq__inject *lane = &cq__pool.inject[CQ__LANE(prio)];
        takes += cq__load(&lane->takes, relaxed);
        waiting |= cq__inject_maybe_work(lane) && cq__inject_has_items(lane);
    }
    bool moved = takes != takes_seen;
    takes_seen = takes;
    /* A hint (see OC_HOT): ours are counted before they happen, so this dips below the workers'
     * takes while one of ours is under way; only a rise above the highest seen is theirs. */
    uint32_t worker_takes = takes - cq__load(&oc_takes, relaxed);
    bool workers_took = (int32_t)(worker_takes - worker_takes_seen) > 0;
    if (workers_took) {
        worker_takes_seen = worker_takes;
    }
    stalled_ticks = waiting && !moved ? stalled_ticks + 1 : 0;
    if (stalled_ticks >= OC_STALL_TICKS) {
        stalled_ticks = 0;
        if (oc_wake(false)) {
            cq__count(overcommit_wakeups, 1);
            cq__store(&cq__overcommit_hot, 1, relaxed); /* see OC_HOT */
        }
    } else if (workers_took) {
        cq__store(&cq__overcommit_hot, 0, relaxed); /* the workers serve the lanes again */
    }
}

bool cq__overcommit_wake_for_push(void)
{
    if (!oc_wake(true)) {
        return false;
    }
    cq__count(overcommit_wakeups, 1);
    return true;
}

void cq__overcommit_fork_child(void)
{
    /* only the forking thread exists: the records of the others are abandoned */
    pthread_mutex_init(&lock, NULL);
    idle = NULL;
    all = NULL;
    ended = NULL; /* possibly mid-change in the parent: left behind */
    live = 0;
    active = 0;
    cq__store(&cq__overcommit_hot, 0, relaxed);
    stalled_ticks = 0;
    takes_seen = 0;
    worker_takes_seen = 0;
    cq__store(&oc_takes, 0, relaxed);
}
