/*
 * The thread pool: run queues (procs), the threads that run them, the inject queues, and the
 * idle/searching bookkeeping that decides who wakes whom. pool.c holds the state and start-up,
 * idle.c the idle word and notify, park.c parking, worker.c the threads, block.c blocking
 * waits, find.c pushing and finding work, monitor.c the monitor.
 *
 * Threads and procs are separate (as Go's M and P): a proc is a CPU's worth of scheduling
 * state (rings, LIFO slot); a thread runs a proc. Procs come in bands by priority (see
 * enum below): `workers` normal procs, one per usable CPU, for high, default and low work;
 * one express proc for high work that would otherwise wait behind busy normal procs; and
 * `workers` background procs whose threads run at a low OS priority. The monitor adds extra
 * procs to a band while its workers are stuck in long tasks. A thread about to block in a
 * runtime wait gives its proc to a spare thread of its band (cq__pool_block_begin), so a
 * waiting task never takes a CPU's worth of scheduling away from the pool.
 *
 * Each band has an idle word (searching, unparked, nprocs). A producer wakes a proc of the
 * band only when nobody of it searches and some proc of it is idle; a searcher that finds
 * work stops searching and announces its backlog (so bursts fan out one worker at a time).
 * Before parking, a worker re-checks every source of its band's work after a full fence;
 * producers publish work with a seq_cst operation before reading the idle word.
 */
#ifndef CQ_POOL_INTERNAL_H
#define CQ_POOL_INTERNAL_H

#include <pthread.h>
#include <sys/types.h>

#include "platform/atomic_internal.h"
#include "platform/cpus_internal.h"
#include "platform/fork_internal.h"
#include "platform/parker_internal.h"
#include "platform/probes_internal.h"
#include "platform/thread_start_internal.h"
#include "scheduler/inject_internal.h"
#include "scheduler/item_internal.h"
#include "scheduler/runq_internal.h"

/* Run queues at most: the bands' workers, the express proc, and one extra proc for every task
 * the monitor finds asleep in the kernel (a thread that takes over its CPU needs one). The
 * array holds pointers and procs are allocated as they are made, so a large bound costs
 * nothing until used; with 512, tasks blocked in read() stopped getting threads at about 500
 * whatever CQ_THREAD_LIMIT said (test_blocked_in_kernel.c). */
#define CQ__MAX_PROCS 4096u
/* Workers per band at most (the normal and the background band each have this many procs at
 * most). CQ_WORKERS above this is clamped to it. */
#define CQ__MAX_WORKERS 128u
/* The default thread limit is the larger of this and 16 per worker. */
#define CQ__THREAD_LIMIT_DEFAULT_MIN 255u
/* The most threads CQ_THREAD_LIMIT may ask for (each costs a stack and a kernel task). */
#define CQ__THREAD_LIMIT_MAX 32768u
#define CQ__INJECT_INTERVAL 61u /* look at the inject queues first every this many ticks */
#define CQ__LIFO_STREAK_MAX 3u  /* consecutive runs from the LIFO slot before the ring's turn */
#define CQ__HIGH_STREAK_MAX 64u /* consecutive high items before one of the main level (find.c) */
#define CQ__HELP_DEPTH_MAX 64u  /* nesting of tasks run by a waiting task */

/* Priorities, highest first: the index of a global queue, an inject queue and a ring. */
enum {
    CQ__PRIO_HIGH = 0,
    CQ__PRIO_DEFAULT = 1,
    CQ__PRIO_LOW = 2,
    CQ__PRIO_BACKGROUND = 3,
    CQ__PRIO_COUNT = 4,
};
#define CQ__LEVEL(prio) (1u << (prio))
/* The inject queues: one per priority (index prio), then each priority's overcommit lane
 * (CQ__LANE(prio)): serial queues' drains submitted from outside the pool
 * (CQ__ITEM_OVERCOMMIT), which workers take before the priority's other items and the
 * overcommit threads take when every worker is stuck in a long task (overcommit.c). */
#define CQ__LANE(prio) (CQ__PRIO_COUNT + (prio))
#define CQ__INJECT_COUNT (2 * CQ__PRIO_COUNT)

/* The inject queue where item `it` of priority `prio` waits when it goes to one: a serial
 * queue's drain in its priority's lane, background ones excepted (their threads run at nice
 * 19, the lane's at the pool's); anything else in its priority's queue. */
CQ_INLINE unsigned cq__inject_slot(const struct cq__item *it, unsigned prio)
{
    return (it->flags & CQ__ITEM_OVERCOMMIT) && prio != CQ__PRIO_BACKGROUND ? CQ__LANE(prio) : prio;
}

/*
 * Bands: sets of procs whose threads run some of the priorities.
 *   NORMAL      `workers` procs; high, default and low work, in that order.
 *   EXPRESS     one proc for high-priority work alone, woken when a high item arrives while
 *               every normal proc is busy (so it starts at once instead of after the task in
 *               front of it); its thread runs at normal OS priority next to the busy ones.
 *   BACKGROUND  `workers` procs for background work; their threads run at nice 19, so the
 *               kernel runs anything else first, but never starves them outright.
 * A thread belongs to one band for life (an unprivileged thread cannot undo nice 19).
 */
enum {
    CQ__BAND_NORMAL = 0,
    CQ__BAND_EXPRESS = 1,
    CQ__BAND_BACKGROUND = 2,
    CQ__BAND_COUNT = 3,
};
#define CQ__EXPRESS_PROCS 1u
#define CQ__BACKGROUND_NICE 19
/* Express threads run at the pool's nice value minus this, where allowed (worker.c). */
#define CQ__EXPRESS_NICE_BELOW 2

/* The scheduler slice of the calling runtime thread (worker.c): `longer` for the threads that
 * run and deliver the program's work (normal workers, the reactor), CQ_THREAD_SLICE_US (4 ms
 * by default); the kernel's default otherwise (express and background workers, which must
 * preempt or yield promptly). A hint: ignored where the kernel has no custom slices. */
CQ_INTERNAL void cq__thread_set_slice(bool longer);

/* The band whose procs run work of priority `prio` (high also wakes the express band). */
CQ_INLINE unsigned cq__band_of_prio(unsigned prio)
{
    return prio == CQ__PRIO_BACKGROUND ? CQ__BAND_BACKGROUND : CQ__BAND_NORMAL;
}

struct cq__thread;

struct cq__proc {
    /* One ring per priority; a proc uses those of its band's levels. */
    struct cq__runq rq[CQ__PRIO_COUNT];
    /* The task made runnable last by the owner; the owner runs it next. Thieves take it only
     * from an owner that has been running the same task for a while. Holds only items of
     * `lifo_levels`. */
    _Atomic(struct cq__item *) lifo CQ_CACHE_ALIGNED;
    /* The serial queue's drain (CQ__ITEM_OVERCOMMIT) the owner last put in `lifo`, or NULL once
     * it put another kind of item there: the monitor takes the slot only while it still holds
     * exactly this item (a compare-exchange), so it never disturbs other items there
     * (overcommit.c, cq__overcommit_take_lifo). A hint: stale once the item left the slot. */
    _Atomic(struct cq__item *) lifo_oc;
    _Atomic uint64_t started;    /* items started; written by the owner, read by monitor/thieves
                                    (who compare its low 32 bits), and cq_runtime_get_counters */
    _Atomic uint32_t running;    /* 1 while the owner runs an item */
    _Atomic uint32_t retired;    /* 1 while an extra proc is out of use */
    _Atomic uint32_t kept;       /* 1 while its thread sleeps in a wait behind another waiter,
                                    keeping it (cq__event_wait_behind; the monitor's slow path) */
    _Atomic uint32_t kept_ended; /* such waits ended (the owner's; the monitor's sign that they
                                    move on, ALL_KEPT_TICKS) */
    _Atomic pid_t tid;           /* the thread running it (for the monitor's CPU-time reads) */
    /* counters for cq_runtime_get_counters: written by the owner only (cq__pool_count), read
     * relaxed and summed by readers */
    _Atomic uint64_t n_tasks;   /* items of `started` that were work, not containers (queue
                                   drains, redirects): tasks_run. Counted apart, not as a
                                   difference of two counters, which a reader between
                                   their updates saw go down */
    _Atomic uint64_t n_steals;  /* items taken from another proc's ring or LIFO slot */
    _Atomic uint64_t n_parks;   /* times its thread parked with it for want of work */
    _Atomic uint64_t n_unparks; /* times it was woken from a park */
    /* owner-private */
    uint32_t tick;
    uint32_t lifo_streak;
    uint32_t high_streak;
    uint32_t inject_turn_seen; /* P.inject_turn at its last inject turn */
    uint8_t spill_levels;      /* CQ__LEVEL bits: the running item overflowed that ring, so the rest
                                  of its pushes go to the inject queue (find.c, ring_push); cleared
                                  when it returns (worker.c, run_item) */
    uint32_t search_ns;        /* how long the next search spins (adaptive, see search()) */
    uint32_t batch_max;        /* items the next inject batch takes, 0 at first (see
                                  "Inject batches" in find.c) */
    uint32_t batch_items;      /* items of the batch being timed, taken at batch_since */
    uint64_t batch_since;      /* 0 when no batch is being timed */
    /* Per ring: its tail just after the last items that came from outside it (an inject batch,
     * a steal, an inject item put behind it). Once the ring's head has passed it, the ring
     * holds only what our own tasks pushed since: an inject item taken at a turn may run
     * before them (find.c, inject_take_levels). */
    uint32_t foreign_end[CQ__PRIO_COUNT];
    uint64_t rng;
    struct cq__proc *lifo_victim; /* LIFO-steal bookkeeping of this proc as a thief */
    uint32_t lifo_victim_started;
    uint64_t lifo_victim_since;
    /* monitor-private */
    uint32_t mon_started;
    uint32_t mon_ticks;
    uint32_t mon_asleep;     /* consecutive ticks its thread was seen asleep in the kernel */
    bool mon_futex;          /* at the last of them, in futex(): waiting for another thread */
    bool mon_running;        /* running a task (not kept) at the last tick */
    uint32_t mon_kept_ended; /* kept_ended at the last tick */
    uint32_t mon_often;      /* OFTEN_SAMPLES bits: seen asleep at the last samples, its tasks
                                changing (monitor.c, OFTEN_SAMPLE_TICKS) */
    /* written once, before the proc is published */
    uint32_t index;
    uint8_t band;        /* CQ__BAND_* */
    uint8_t main_level;  /* the priority most of its work has (its LIFO's and fast path's) */
    uint8_t levels;      /* CQ__LEVEL bits of the priorities it runs */
    uint8_t lifo_levels; /* CQ__LEVEL bits of the items its LIFO slot may hold */
    bool extra;
    /* protected by the pool lock */
    struct cq__thread *thread; /* the thread running (or parked with) this proc; NULL if none */
    struct cq__proc *next_idle;
    int park_cpu; /* the CPU its thread was on when it last parked with it */
    bool idle;
};

/* A worker parked for longer than this before an item woke it does not wake a second searcher
 * for a lone item (find.c, cq__pool_announce_backlog). */
#define CQ__SPECULATIVE_PARK_NS 100000u

enum cq__park_state { CQ__PARK_EMPTY = 0, CQ__PARK_PARKED = 1, CQ__PARK_NOTIFIED = 2 };

struct cq__thread {
    _Atomic uint32_t park; /* futex word, enum cq__park_state */
    struct cq__proc *proc; /* this thread's proc; assigned under the pool lock before an
                              unpark, otherwise changed only by the thread itself */
    bool searching;        /* owner-private: counted in its band's idle word's searching */
    bool wake_searching;   /* set by whoever unparks us: we were counted as searching */
    bool retire;           /* set under the pool lock: exit instead of running */
    bool procless;         /* owner-private: counted in its band's `procless` */
    uint8_t band;          /* written once: the band whose procs it runs */
    struct cq__thread *next_spare;
    pthread_t pthread;
    _Atomic pid_t tid;
    uint32_t index;
    char name[16]; /* its own name (cq-N), written once before it runs */
};

/*
 * A band's idle word packs three 16-bit counts:
 *   searching  threads of the band looking for work (spinning): at most half its procs
 *   unparked   procs of the band not in an idle list
 *   nprocs     procs of the band in use
 */
#define CQ__IDLE_SEARCHING(s) ((uint32_t)((s)&0xffffu))
#define CQ__IDLE_UNPARKED(s) ((uint32_t)(((s) >> 16) & 0xffffu))
#define CQ__IDLE_NPROCS(s) ((uint32_t)(((s) >> 32) & 0xffffu))
#define CQ__IDLE_SEARCHING_ONE 1ull
#define CQ__IDLE_UNPARKED_ONE (1ull << 16)
#define CQ__IDLE_NPROCS_ONE (1ull << 32)

struct cq__band {
    _Atomic uint64_t idle CQ_CACHE_ALIGNED; /* see above */
    /* written once at start-up */
    uint32_t levels;      /* CQ__LEVEL bits of the priorities its procs run */
    uint32_t base;        /* procs it keeps: extra ones above this retire when idle */
    uint32_t spare_limit; /* parked spare threads it keeps */
    bool extras;          /* the monitor may add procs to it */
    /* its threads that came back from a wait to run their task without a proc (none was
     * idle; block.c), until the task returns or waits again: the monitor's ALL_KEPT_TICKS */
    _Atomic uint32_t procless;
    /* protected by the pool lock */
    struct cq__proc *idle_parked; /* idle procs whose thread is parked with them */
    struct cq__proc *idle_free;   /* idle procs without a thread */
    struct cq__thread *spares;    /* its parked threads without a proc */
    uint32_t nspares;
};

/* The pool's shared state (pool.c owns it; the other scheduler files use it). */
struct cq__pool_state {
    struct cq__band band[CQ__BAND_COUNT];
    /* 1 when high-priority items may be waiting in some ring or the high inject queue. Set
     * by producers after publishing a high item; a consumer clears it only after finding no
     * high item anywhere, then looks once more (a seq_cst Dekker pair, as inject's hint). */
    _Atomic uint32_t high_hint CQ_CACHE_ALIGNED;
    /* Bumped by the monitor on a tick that finds items waiting in an inject queue; a worker
     * that sees it change takes the inject queues' turn at its next item (find.c, next_local;
     * monitor.c, inject_turns). Read on every item, written at most once a millisecond. */
    _Atomic uint32_t inject_turn CQ_CACHE_ALIGNED;
    struct cq__inject inject[CQ__INJECT_COUNT];    /* see CQ__LANE */
    _Atomic uint32_t nprocs_seen CQ_CACHE_ALIGNED; /* procs[0, nprocs_seen) are allocated */
    struct cq__proc *_Atomic procs[CQ__MAX_PROCS];
    uint32_t workers;
    /* protected by lock */
    pthread_mutex_t lock;
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
    _Atomic uint64_t express_wakeups;
    atomic_bool limit_reported;
    atomic_bool procs_reported; /* the proc array's bound was reported */
};

CQ_INTERNAL extern struct cq__pool_state cq__pool;
CQ_INTERNAL extern _Atomic bool cq__pool_started;

CQ_INLINE struct cq__proc *cq__pool_proc_at(uint32_t i)
{
    return cq__load(&cq__pool.procs[i], acquire); /* pairs with the release store in proc_new */
}

/* Counts a task start on the caller's proc (owner only). */
CQ_INLINE void cq__pool_note_progress(struct cq__proc *p)
{
    cq__store(&p->started, cq__load(&p->started, relaxed) + 1, relaxed);
}

/* Counts one event on a counter of the caller's own proc (no RMW: only the owner writes it). */
CQ_INLINE void cq__pool_count(_Atomic uint64_t *counter)
{
    cq__store(counter, cq__load(counter, relaxed) + 1, relaxed);
}

/* Push flags. */
enum {
    CQ__PUSH_TAIL = 0,
    CQ__PUSH_WAKEUP = 1u << 0, /* a queue just became runnable: LIFO slot of this worker */
    /* The calling worker's own drain gives its queue back (budget spent): nothing new became
     * runnable, and the worker looks for work right after, so pushed onto its own ring at its
     * top level (no task of its around it) the push wakes nobody. */
    CQ__PUSH_YIELD = 1u << 1,
};

CQ_INTERNAL void cq__pool_ensure_started(void);
/* Set before main (CQ_DUMP_SIGNAL, introspect.c): the first queue created starts the pool,
 * and the watch that starts with it. A process whose threads only sync onto queues (queues as
 * locks) never starts it otherwise, and its hangs, the commonest, could not be dumped. */
CQ_INTERNAL extern bool cq__pool_start_with_queues;

/* Makes `it` runnable at priority index `prio` (CQ__PRIO_*). */
CQ_INTERNAL void cq__pool_push(struct cq__item *it, unsigned prio, unsigned flags);

/*
 * Runs one item from this worker's own LIFO slot or the back of its rings if pred() accepts it
 * (a waiting task running its own children). Returns false if there was none, or the caller
 * is not a worker, or nesting is too deep.
 */
CQ_INTERNAL bool cq__pool_help(bool (*pred)(struct cq__item *, void *), void *arg);

/*
 * Brackets a blocking wait. On a pool thread, begin hands the thread's proc to a spare thread
 * (or parks it if there is no work) so the CPU keeps running tasks; end tries to get a proc
 * back without waiting. No-ops on other threads.
 */
/* struct cq__block is in parker_internal.h: cq__event_wait brackets its sleep with these
 * (registered with cq__sleep_hooks_register by pool.c). */
CQ_INTERNAL void cq__pool_block_begin(struct cq__block *b);
CQ_INTERNAL void cq__pool_block_end(struct cq__block *b);
/* block.c: thread t, counted in its band's `procless` since a wait, is no longer running its
 * task without a proc (the task returned, or waits again). */
CQ_INTERNAL void cq__pool_procless_end(struct cq__thread *t);

CQ_INTERNAL uint32_t cq__pool_workers(void);

/* The monitor (monitor.c). */
CQ_INTERNAL void cq__monitor_kick(void);
CQ_INTERNAL void cq__monitor_start(void);
CQ_INTERNAL void cq__monitor_fork_child(void);
/* Whether thread `tid` of this process sleeps in the kernel (state S or D, futex() included),
 * from /proc: a few microseconds. */
CQ_INTERNAL bool cq__monitor_thread_sleeps(pid_t tid);

/* Overcommit threads (overcommit.c): the monitor's look at the lanes at each tick; the fork
 * child's reset. */
CQ_INTERNAL void cq__overcommit_tick(void);
/* overcommit.c, OC_HOT: the workers are stuck, and a lane item pushed while they are busy
 * wakes an idle overcommit thread (cq__overcommit_wake_for_push: false if none was woken or
 * started, one being awake). */
CQ_INTERNAL extern _Atomic uint32_t cq__overcommit_hot;
CQ_INTERNAL bool cq__overcommit_wake_for_push(void);
/* Proc p has run one item for OC_STALL_TICKS ticks: a serial queue's drain in its LIFO slot
 * moves to its lane. */
CQ_INTERNAL void cq__overcommit_take_lifo(struct cq__proc *p);
#define CQ__OC_LIFO_TICKS 2u
CQ_INTERNAL void cq__overcommit_fork_child(void);

/* ---- between the scheduler's files: pool.c (state, limits), idle.c, park.c, worker.c,
 *      block.c and find.c (pushing, finding); not for use outside scheduler/ ---- */

/* pool.c */
CQ_INTERNAL const char *cq__pool_band_thread_name(unsigned band);
/* Reserves a thread slot (pool lock held); false at the thread limit. */
CQ_INTERNAL bool cq__pool_thread_slot_reserve_locked(void);
CQ_INTERNAL void cq__pool_note_limit_reached(void);
/* idle.c (pool lock held): p joins its band's threadless idle list / leaves `list`. */
CQ_INTERNAL void cq__pool_idle_push_free_locked(struct cq__proc *p);
CQ_INTERNAL bool cq__pool_idle_remove_locked(struct cq__proc **list, struct cq__proc *p);
/* park.c: the per-thread park word (t->park); parking with a proc; retiring an extra proc;
 * getting a proc for a thread without one (NULL: the thread should exit). */
CQ_INTERNAL void cq__pool_unpark_thread(struct cq__thread *t);
CQ_INTERNAL void cq__pool_park_thread(struct cq__thread *t);
CQ_INTERNAL void cq__pool_park(struct cq__thread *t, struct cq__proc *p);
CQ_INTERNAL bool cq__pool_retire_extra(struct cq__thread *t, struct cq__proc *p);
CQ_INTERNAL struct cq__proc *cq__pool_acquire_proc(struct cq__thread *t, bool may_wait);
/* Pool lock held: pops a parked spare of band `b`, if any, and gives it `p` (`searching`: it
 * wakes as a searcher); the caller unparks it once the lock is dropped. NULL: no spare. */
CQ_INTERNAL struct cq__thread *cq__pool_spare_take_locked(struct cq__band *b, struct cq__proc *p,
                                                          bool searching);
/* worker.c: starts a thread for `p` (a slot was reserved); on failure the slot is returned
 * and `p` goes to the threadless idle list. */
CQ_INTERNAL void cq__pool_spawn_thread(struct cq__proc *p, bool searching);

/* idle.c: wakes an idle proc of `band` (under the pool lock). Returns true if one was woken
 * or somebody of the band searches now. */
CQ_INTERNAL bool cq__pool_notify_slow(unsigned band);

/*
 * Someone may have work for `band`: returns true if a proc of the band is searching or was
 * woken for it, false if the band is saturated (every proc busy, nobody searching).
 */
CQ_INLINE bool cq__pool_notify_band(unsigned band)
{
    /* idle word: pairs with the parker's fence and re-check (park.c), design.md §10 */
    uint64_t s = cq__load(&cq__pool.band[band].idle, seq_cst);
    if (CQ__IDLE_SEARCHING(s) != 0) {
        return true;
    }
    return CQ__IDLE_UNPARKED(s) < CQ__IDLE_NPROCS(s) && cq__pool_notify_slow(band);
}

/* Work of priority `prio` was published: make sure someone runs it. High work that finds the
 * normal band saturated wakes the express band; work nobody can take kicks the monitor. */
CQ_INTERNAL void cq__pool_notify_prio(unsigned prio);

/* idle.c: counts the calling searcher in its band if fewer than half the procs search. */
CQ_INTERNAL bool cq__pool_try_searching(unsigned band);
CQ_INTERNAL void cq__pool_stop_searching(struct cq__thread *t, struct cq__proc *p);

/* find.c: the next item for thread t running proc p, or NULL (then t parks). */
CQ_INTERNAL struct cq__item *cq__pool_find_work(struct cq__thread *t, struct cq__proc *p);
/* find.c: pushes to the ring of it->prio (overflow to that priority's inject queue). */
CQ_INTERNAL void cq__pool_ring_push(struct cq__proc *p, struct cq__item *it);
CQ_INTERNAL struct cq__item *cq__pool_lifo_take(struct cq__proc *p);
CQ_INTERNAL bool cq__pool_proc_has_work(struct cq__proc *p);
/* Whether work that `band` runs waits anywhere (inject queues, rings, LIFO slots). Exact
 * after a seq_cst fence. */
CQ_INTERNAL bool cq__pool_band_work_waiting(unsigned band);
/* Announces a worker's leftover backlog (see find.c). */
CQ_INTERNAL void cq__pool_announce_backlog(struct cq__proc *p);

/* Used by the monitor. */
CQ_INTERNAL bool cq__pool_work_waiting(void); /* for any band */
CQ_INTERNAL bool cq__pool_band_saturated(unsigned band);
CQ_INTERNAL bool cq__pool_add_extra_proc(unsigned band);
/* How many procs the last tick found blocked in the kernel inside a task (for reports). */
CQ_INTERNAL void cq__pool_set_blocked_in_tasks(uint32_t n);
CQ_INTERNAL uint32_t cq__pool_proc_count(void);

/* Introspection (include/cqueuecore/introspect.h): the pool's summary, then every proc. */
struct cq_introspect_pool;
struct cq_introspect_worker;
CQ_INTERNAL void
cq__pool_introspect(void (*pool)(void *ctx, const struct cq_introspect_pool *d),
                    void (*worker)(void *ctx, const struct cq_introspect_worker *d), void *ctx);

/* Hooks run once after the pool first starts (outside its locks), registered by the layers
 * above from constructors (the dump signal's watch, events/introspect.c). */
CQ_INTERNAL void cq__pool_on_start_register(void (*fn)(void));

/* fork(): pool.c registers these (platform/fork_internal.h). */
CQ__FORK_HOOKS(pool)

#endif /* CQ_POOL_INTERNAL_H */
