/*
 * USDT probes (provider `swiftqueues`) and the runtime's rare global counters.
 *
 * Probes are <sys/sdt.h> markers (Debian: systemtap-sdt-dev): a nop in the code and a note in
 * .note.stapsdt that perf, bpftrace and SystemTap read. Every probe has a semaphore (section
 * .probes) that a tracer increments while attached, and CQ_PROBE tests it first: with no
 * tracer attached a probe costs one load and a not-taken branch, and its arguments are never
 * computed. Without <sys/sdt.h> at build time (or with CQ_NO_PROBES) they compile to nothing.
 *
 * Probes (arguments in order; strings are NUL-terminated C strings):
 *   task_enqueue   label, item, priority (CQ__PRIO_* of the root the queue runs on)
 *   task_start     label, item, kind (enum cq__item_kind)
 *   task_finish    label, item
 *   steal          victim proc index, thief proc index, priority
 *   worker_park    proc index, band
 *   worker_unpark  proc index, band
 *   spare_start    band, 1 if a new thread was started (0: a parked spare was woken)
 *   thread_limit   threads alive, thread limit
 *   source_event   source kind (enum cq_source_kind), data, source, label of its target queue
 *   timer_fire     0 cq_after_f (data: calls in the window) / 1 timer source (data: fires), data
 *   operation_state  name, state (the Swift SQOperation: 0 ready .. see SQOperation)
 *   label_change   the thread's new label (thread naming on, see cq__thread_label_note)
 */
#ifndef CQ_PROBES_INTERNAL_H
#define CQ_PROBES_INTERNAL_H

#include <stdint.h>

#include "platform/atomic_internal.h"

#if !defined(CQ_NO_PROBES) && defined(__has_include)
#if __has_include(<sys/sdt.h>)
#define CQ_HAVE_PROBES 1
#endif
#endif

/* X-macros: every probe (declarations), and those with a semaphore of their own (probes.c
 * defines them; task_finish shares task_start's). */
#define CQ__PROBES(X)                                                                              \
    X(task_finish)                                                                                 \
    CQ__PROBES_OWN_SEMAPHORE(X)
#define CQ__PROBES_OWN_SEMAPHORE(X)                                                                \
    X(task_enqueue)                                                                                \
    X(task_start)                                                                                  \
    X(steal)                                                                                       \
    X(worker_park)                                                                                 \
    X(worker_unpark)                                                                               \
    X(spare_start)                                                                                 \
    X(thread_limit)                                                                                \
    X(source_event)                                                                                \
    X(timer_fire)                                                                                  \
    X(operation_state)                                                                             \
    X(label_change)

#ifdef CQ_HAVE_PROBES
#ifndef _SDT_HAS_SEMAPHORES
#define _SDT_HAS_SEMAPHORES 1
#endif
/* Registers or constants only: by default an argument may also be a memory operand, which the
 * compiler writes as `offset+symbol(%rip)` for a global (thread_limit's), a form perf's
 * argument parser rejects (the event then has no fields). */
#if !defined(STAP_SDT_ARG_CONSTRAINT) && (defined(__x86_64__) || defined(__aarch64__))
#define STAP_SDT_ARG_CONSTRAINT nr
#endif
#include <sys/sdt.h>

#define CQ__PROBE_SEM(name) swiftqueues_##name##_semaphore
#define CQ__PROBE_DECLARE(name) CQ_INTERNAL extern volatile unsigned short CQ__PROBE_SEM(name);
CQ__PROBES(CQ__PROBE_DECLARE)

/* Whether a tracer is attached to probe `name`. */
#define CQ_PROBE_ENABLED(name) cq__unlikely(CQ__PROBE_SEM(name) != 0)

#define CQ_PROBE1(name, a)                                                                         \
    do {                                                                                           \
        if (CQ_PROBE_ENABLED(name)) {                                                              \
            STAP_PROBE1(swiftqueues, name, a);                                                     \
        }                                                                                          \
    } while (0)
#define CQ_PROBE2(name, a, b)                                                                      \
    do {                                                                                           \
        if (CQ_PROBE_ENABLED(name)) {                                                              \
            STAP_PROBE2(swiftqueues, name, a, b);                                                  \
        }                                                                                          \
    } while (0)
#define CQ_PROBE3(name, a, b, c)                                                                   \
    do {                                                                                           \
        if (CQ_PROBE_ENABLED(name)) {                                                              \
            STAP_PROBE3(swiftqueues, name, a, b, c);                                               \
        }                                                                                          \
    } while (0)
#define CQ_PROBE4(name, a, b, c, d)                                                                \
    do {                                                                                           \
        if (CQ_PROBE_ENABLED(name)) {                                                              \
            STAP_PROBE4(swiftqueues, name, a, b, c, d);                                            \
        }                                                                                          \
    } while (0)
#else
#define CQ_PROBE_ENABLED(name) 0
#define CQ_PROBE1(name, a)                                                                         \
    do {                                                                                           \
        if (0) {                                                                                   \
            (void)(a);                                                                             \
        }                                                                                          \
    } while (0)
#define CQ_PROBE2(name, a, b)                                                                      \
    do {                                                                                           \
        if (0) {                                                                                   \
            (void)(a), (void)(b);                                                                  \
        }                                                                                          \
    } while (0)
#define CQ_PROBE3(name, a, b, c)                                                                   \
    do {                                                                                           \
        if (0) {                                                                                   \
            (void)(a), (void)(b), (void)(c);                                                       \
        }                                                                                          \
    } while (0)
#define CQ_PROBE4(name, a, b, c, d)                                                                \
    do {                                                                                           \
        if (0) {                                                                                   \
            (void)(a), (void)(b), (void)(c), (void)(d);                                            \
        }                                                                                          \
    } while (0)
#endif

/*
 * Rare events, counted for cq_runtime_get_counters (runtime.h): shared atomics, incremented
 * relaxed, and only off the hot path (a spare thread, the thread limit, a timer window, a
 * source handler run, a task run by a thread without a proc). The frequent counts (tasks run
 * by workers, steals, parks) are per proc (scheduler/pool_internal.h).
 */
struct cq__global_counters {
    _Atomic uint64_t spares_started;     /* spare threads woken or started for a blocked worker */
    _Atomic uint64_t timer_fires;        /* cq_after_f calls run and timer source fires */
    _Atomic uint64_t source_events;      /* source event handlers run */
    _Atomic uint64_t tasks_outside;      /* items run on threads without a proc (main, waiters),
                                            and operations run inside another one (Swift) */
    _Atomic uint64_t threads_started;    /* runtime threads created, all kinds */
    _Atomic uint64_t overcommit_wakeups; /* overcommit threads woken or started */
};
CQ_INTERNAL extern struct cq__global_counters cq__counters;

#define cq__count(field, n) ((void)cq__add(&cq__counters.field, (n), relaxed))

#endif /* CQ_PROBES_INTERNAL_H */
