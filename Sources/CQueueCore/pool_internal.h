/*
 * The thread pool: run queues (procs), the threads that run them, the inject queues, and the
 * idle/searching bookkeeping that decides who wakes whom.
 *
 * Threads and procs are separate (as Go's M and P): a proc is a CPU's worth of scheduling
 * state (ring, LIFO slot); a thread runs a proc. There are `workers` procs, one per usable
 * CPU, plus extra ones the monitor adds while workers are stuck in long tasks. A thread about
 * to block in a runtime wait gives its proc to a spare thread (cq__pool_block_begin), so a
 * waiting task never takes a CPU's worth of scheduling away from the pool.
 *
 * The idle word packs three 16-bit counts:
 *   searching  threads looking for work (spinning) — at most half the procs
 *   unparked   procs not in an idle list
 *   nprocs     procs in use
 * A producer wakes a proc only when nobody searches and some proc is idle; a searcher that
 * finds work stops searching and, if it was the last searcher, wakes another (so bursts fan
 * out one worker at a time). Before parking, a worker re-checks every source of work after a
 * full fence; producers publish work with a seq_cst operation before reading the idle word.
 */
#ifndef CQ_POOL_INTERNAL_H
#define CQ_POOL_INTERNAL_H

#include <pthread.h>
#include <sys/types.h>

#include "atomic_internal.h"
#include "item_internal.h"
#include "runq_internal.h"

#define CQ__MAX_PROCS 256u
/* Workers take at most half the proc array: the other half is for the monitor's extra procs.
 * CQ_WORKERS above this is clamped to it. */
#define CQ__MAX_WORKERS (CQ__MAX_PROCS / 2)
/* The most threads CQ_THREAD_LIMIT may ask for (each costs a stack and a kernel task). */
#define CQ__THREAD_LIMIT_MAX 32768u
#define CQ__PRIO_COUNT 4u /* high, default, low, background */
#define CQ__PRIO_DEFAULT 1u
#define CQ__INJECT_INTERVAL 61u /* look at the inject queues first every this many ticks */
#define CQ__LIFO_STREAK_MAX 3u  /* consecutive runs from the LIFO slot before the ring's turn */
#define CQ__HELP_DEPTH_MAX 64u  /* nesting of tasks run by a waiting task */

struct cq__thread;

struct cq__proc {
    struct cq__runq rq;
    /* The task made runnable last by the owner; the owner runs it next. Thieves take it only
     * from an owner that has been running the same task for a while. */
    _Atomic(struct cq__item *) lifo CQ_CACHE_ALIGNED;
    _Atomic uint32_t started;   /* tasks started; written by the owner, read by monitor/thieves */
    _Atomic uint32_t running;   /* 1 while the owner runs an item */
    _Atomic uint32_t retired;   /* 1 while an extra proc is out of use */
    _Atomic pid_t tid;          /* the thread running it (for the monitor's CPU-time reads) */
    /* owner-private */
    uint32_t tick;
    uint32_t lifo_streak;
    uint32_t search_ns;         /* how long the next search spins (adaptive, see search()) */
    uint64_t rng;
    struct cq__proc *lifo_victim; /* LIFO-steal bookkeeping of this proc as a thief */
    uint32_t lifo_victim_started;
    uint64_t lifo_victim_since;
    /* monitor-private */
    uint32_t mon_started;
    uint32_t mon_ticks;
    uint32_t mon_asleep; /* consecutive ticks its thread was seen asleep in the kernel */
    /* written once */
    uint32_t index;
    bool extra;
    /* protected by the pool lock */
    struct cq__thread *thread; /* the thread running (or parked with) this proc; NULL if none */
    struct cq__proc *next_idle;
    bool idle;
};

enum cq__park_state { CQ__PARK_EMPTY = 0, CQ__PARK_PARKED = 1, CQ__PARK_NOTIFIED = 2 };

struct cq__thread {
    _Atomic uint32_t park;      /* futex word, enum cq__park_state */
    struct cq__proc *proc;      /* this thread's proc; assigned under the pool lock before an
                                   unpark, otherwise changed only by the thread itself */
    bool searching;             /* owner-private: counted in the idle word's searching */
    bool wake_searching;        /* set by whoever unparks us: we were counted as searching */
    bool retire;                /* set under the pool lock: exit instead of running */
    struct cq__thread *next_spare;
    pthread_t pthread;
    _Atomic pid_t tid;
    uint32_t index;
};

/* Counts a task start on the caller's proc (owner only). */
CQ_INLINE void cq__pool_note_progress(struct cq__proc *p)
{
    cq__store(&p->started, cq__load(&p->started, relaxed) + 1, relaxed);
}

/* Push flags. */
enum {
    CQ__PUSH_TAIL = 0,
    CQ__PUSH_WAKEUP = 1u << 0, /* a queue just became runnable: LIFO slot of this worker */
};

CQ_INTERNAL void cq__pool_ensure_started(void);

/* Makes `it` runnable at priority index `prio` (0 high .. 3 background). */
CQ_INTERNAL void cq__pool_push(struct cq__item *it, unsigned prio, unsigned flags);

/*
 * Runs one item from this worker's own LIFO slot or the back of its ring if pred() accepts it
 * (a waiting task running its own children). Returns false if there was none, or the caller
 * is not a worker, or nesting is too deep.
 */
CQ_INTERNAL bool cq__pool_help(bool (*pred)(struct cq__item *, void *), void *arg);

/*
 * Brackets a blocking wait. On a pool thread, begin hands the thread's proc to a spare thread
 * (or parks it if there is no work) so the CPU keeps running tasks; end tries to get a proc
 * back without waiting. No-ops on other threads.
 */
struct cq__block {
    bool active;
};
CQ_INTERNAL void cq__pool_block_begin(struct cq__block *b);
CQ_INTERNAL void cq__pool_block_end(struct cq__block *b);

CQ_INTERNAL uint32_t cq__pool_workers(void);

/* cpus.c: usable CPUs (affinity, cgroup quota, CQ_WORKERS); a positive number from the
 * environment, or `dflt`. */
CQ_INTERNAL uint32_t cq__usable_cpus(void);
CQ_INTERNAL uint32_t cq__env_u32(const char *name, uint32_t dflt);
/* The same, clamped to [min, max] with a one-line report when the value is outside. */
CQ_INTERNAL uint32_t cq__env_u32_clamped(const char *name, uint32_t dflt, uint32_t min,
                                         uint32_t max);

/* Starts a detached runtime thread running fn(arg). It starts with every asynchronous signal
 * blocked, so signals reach the application's threads and signalfd (faults stay deliverable).
 * Returns 0 or pthread_create's error. */
#include <pthread.h>
CQ_INTERNAL int cq__thread_start(pthread_t *thread, void *(*fn)(void *), void *arg);

/* The monitor (pool_monitor.c). */
CQ_INTERNAL void cq__monitor_kick(void);
CQ_INTERNAL void cq__monitor_start(void);
CQ_INTERNAL void cq__monitor_fork_child(void);

/* Used by the monitor. */
CQ_INTERNAL bool cq__pool_work_waiting(void);
CQ_INTERNAL bool cq__pool_saturated(void);
CQ_INTERNAL void cq__pool_notify(void); /* wake an idle proc if nobody searches */
CQ_INTERNAL bool cq__pool_add_extra_proc(void);
/* How many procs the last tick found blocked in the kernel inside a task (for reports). */
CQ_INTERNAL void cq__pool_set_blocked_in_tasks(uint32_t n);
CQ_INTERNAL uint32_t cq__pool_proc_count(void);
CQ_INTERNAL struct cq__proc *cq__pool_proc(uint32_t index);

#endif /* CQ_POOL_INTERNAL_H */
