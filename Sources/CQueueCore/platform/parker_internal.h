/*
 * Futex wrappers, calibrated spinning, and the one-shot event every runtime wait is built on.
 *
 * Waking a sleeping thread through a futex costs tens of microseconds on small VMs while a
 * spinning hand-off costs tens of nanoseconds, so every wait spins for a bounded time first.
 * A pool worker that has to sleep hands its CPU to a spare thread (cq__pool_block_begin).
 */
#ifndef CQ_PARKER_INTERNAL_H
#define CQ_PARKER_INTERNAL_H

#include "platform/atomic_internal.h"
#include "platform/time_internal.h"

/*
 * Sleeps while *word == expected, until woken or the deadline (NULL: none) passes.
 * Returns 0 when woken (or the value differed, or a signal interrupted), ETIMEDOUT when the
 * deadline passed. Spurious returns are normal: callers re-check their condition.
 */
CQ_INTERNAL int cq__futex_wait(_Atomic uint32_t *word, uint32_t expected,
                               const struct cq__deadline *deadline);
CQ_INTERNAL void cq__futex_wake(_Atomic uint32_t *word, int count);

/* How many cq__cpu_relax() calls take about `ns` nanoseconds on this machine (calibrated once). */
CQ_INTERNAL uint32_t cq__spin_iterations(uint32_t ns);

/* Default spin budgets (nanoseconds), against the futex wake cost described above. */
#define CQ__SPIN_WAIT_NS 20000u /* a thread waiting for an event (sync hand-off, semaphore) */
/* The longest an idle worker searches before it parks: a third of a futex wake-up, not the
 * classic competitive bound of one, because a preempted spinner still holds its proc (the
 * measurements and the reasoning: design.md §4, "Searchers"). */
#define CQ__SPIN_SEARCH_NS 8000u
#define CQ__SPIN_SEARCH_MIN_NS 1000u /* the shortest (the adaptive spin: scheduler/find.c) */
#define CQ__SPIN_PURE_NS 300u        /* the first part of a spin: CPU pauses only */
/* A yield inside a spin that kept the thread off the CPU this long means other threads wait
 * for it (cq__spin_next): the spin ends, and the thread's spins skip yielding for
 * CQ__YIELD_COSTLY_FOR_NS. */
#define CQ__YIELD_LOST_NS 50000u
#define CQ__YIELD_COSTLY_FOR_NS 100000000u

/*
 * A bounded, adaptive spin. For the first CQ__SPIN_PURE_NS it only pauses the CPU: a partner on
 * another CPU answers within that. After that it yields the CPU between checks, so a partner
 * that shares this CPU gets to run instead of watching us spin; unless a yield showed that
 * other threads take the CPU for long (then the caller sleeps at once, see CQ__YIELD_LOST_NS).
 *     struct cq__spin sp; cq__spin_init(&sp, CQ__SPIN_WAIT_NS);
 *     while (!condition()) { if (!cq__spin_next(&sp)) { sleep...; break; } }
 */
struct cq__spin {
    uint32_t pure; /* pause rounds left in the pure phase */
    uint64_t deadline;
};

CQ_INTERNAL void cq__spin_init(struct cq__spin *sp, uint32_t ns);
/* Waits a little; false once the budget is spent. */
CQ_INTERNAL bool cq__spin_next(struct cq__spin *sp);

/*
 * One-shot event: one waiter, one signaller.
 *   state: CQ__EVENT_PENDING -> (waiter) CQ__EVENT_SLEEPING -> (signaller) CQ__EVENT_SIGNALLED.
 * The signaller's exchange has release ordering, the waiter's load acquire: everything before
 * cq__event_signal happens-before cq__event_wait returns. A nudge (cq__event_nudge) sets
 * CQ__EVENT_NUDGED instead of PENDING or SLEEPING: the waiter wakes, and a wait behind another
 * (cq__event_wait_behind) stops keeping its proc; then it waits on.
 */
enum {
    CQ__EVENT_PENDING = 0,
    CQ__EVENT_SLEEPING = 1,
    CQ__EVENT_SIGNALLED = 2,
    CQ__EVENT_NUDGED = 3
};

struct cq__event {
    _Atomic uint32_t state;
};

CQ_INLINE void cq__event_init(struct cq__event *e)
{
    atomic_init(&e->state, CQ__EVENT_PENDING);
}

/* Spins, then sleeps (handing the CPU to a spare if on a worker), until signalled. */
/*
 * A pool thread about to sleep in a runtime wait tells the scheduler, which hands its CPU to a
 * spare thread (cq__pool_block_begin / end). Waits in higher layers call those directly;
 * cq__event_wait, below the scheduler, calls the hooks the scheduler registers at load time.
 */
struct cq__block {
    bool active;    /* set by begin: a pool thread's wait, which end must undo */
    bool keep_proc; /* given to begin: the wait is behind another waiter of the same thing (see
                       cq__event_wait_behind), so the thread keeps its CPU's proc */
    bool keep_if_crowded; /* given to begin: as keep_proc once many pool threads wait in the
                             runtime (a semaphore wait behind another, cq__pool_block_begin) */
};
CQ_INTERNAL void cq__sleep_hooks_register(void (*begin)(struct cq__block *),
                                          void (*end)(struct cq__block *));

CQ_INTERNAL void cq__event_wait(struct cq__event *e);

/* As cq__event_wait, for a waiter queued behind another thread's wait for the same thing (a
 * sync onto a queue that another sync already waits for): on a pool thread it keeps its proc
 * instead of handing it to a spare. A spare would only take the next task, which in the
 * common case (tasks taking turns at a queue through sync) waits there too: one thread per
 * waiting task, up to the thread limit. The monitor still adds a proc, slowly, if work waits
 * behind such waits for long (monitor.c). */
CQ_INTERNAL void cq__event_wait_behind(struct cq__event *e);

/* cq__event_wait (or, with `behind`, cq__event_wait_behind) that gives up once the monotonic
 * clock reaches until_ns: returns false then, with e pending again (a later signal is kept). */
CQ_INTERNAL bool cq__event_wait_until(struct cq__event *e, bool behind, uint64_t until_ns);

CQ_INLINE void cq__event_signal(struct cq__event *e)
{
    /* release: pairs with the acquire load in cq__event_wait */
    uint32_t old = cq__xchg(&e->state, CQ__EVENT_SIGNALLED, release);
    if (old == CQ__EVENT_SLEEPING || old == CQ__EVENT_NUDGED) {
        cq__futex_wake(&e->state, 1);
    }
}

/* Tells the waiter of e (not yet signalled: the caller keeps it from being signalled meanwhile)
 * that what it waits for now needs a worker: a wait behind another hands its proc on (see
 * cq__event_wait_behind). */
CQ_INLINE void cq__event_nudge(struct cq__event *e)
{
    uint32_t s = cq__load(&e->state, relaxed);
    while (s == CQ__EVENT_PENDING || s == CQ__EVENT_SLEEPING) {
        /* relaxed: the nudge carries no data */
        if (cq__cas_weak(&e->state, &s, CQ__EVENT_NUDGED, relaxed)) {
            if (s == CQ__EVENT_SLEEPING) {
                cq__futex_wake(&e->state, 1);
            }
            return;
        }
    }
}

#endif /* CQ_PARKER_INTERNAL_H */
