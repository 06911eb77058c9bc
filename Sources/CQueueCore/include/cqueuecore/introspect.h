/*
 * CQueueCore — introspection: what the runtime is doing right now, for tools, tests and a hung
 * service (docs/profiling.md).
 *
 * cq_introspect() walks the pool's workers, every live queue (the global queues, the main queue
 * and every queue created and not yet freed) and every live source, calling the visitor's
 * functions with a description of each. The descriptions are read without stopping anything:
 * each is a consistent-enough snapshot of a moving object, not of the runtime as a whole.
 * cq_introspect_dump() prints them. With CQ_DUMP_SIGNAL set in the environment (a signal
 * name or number: SIGUSR2, USR2, 12), the runtime's reactor thread writes the dump to stderr
 * whenever that signal arrives (the signal is taken over by the runtime's signalfd as a
 * SIGNAL source is; the watch starts when the thread pool first starts).
 */
#ifndef CQUEUECORE_INTROSPECT_H
#define CQUEUECORE_INTROSPECT_H

#include <cqueuecore/base.h>
#include <stdio.h>

CQ_BEGIN_DECLS

typedef enum cq_introspect_queue_kind {
    CQ_INTROSPECT_QUEUE_SERIAL = 1,
    CQ_INTROSPECT_QUEUE_CONCURRENT,
    CQ_INTROSPECT_QUEUE_GLOBAL,
    CQ_INTROSPECT_QUEUE_MAIN,
} cq_introspect_queue_kind_t;

struct cq_introspect_queue {
    const void *queue;        /* the queue (identity only: do not use it as a cq_queue_t) */
    const char *label;        /* valid during the call */
    const char *target_label; /* the queue it runs on ("" for global queues) */
    cq_introspect_queue_kind_t kind;
    uint32_t width;           /* tasks it may run at once: 1 serial and main, 0 unlimited
                                 (concurrent, global) */
    uint32_t suspend_count;   /* cq_suspend calls not yet resumed (1 for an inactive queue) */
    uint32_t running;         /* serial, main: 1 while its drain or a sync holds it; concurrent:
                                 its tasks handed to the pool and not finished */
    uint32_t queued;          /* items waiting in its list (tasks, barriers, sync callers, a
                                 source's turns, the wake-ups of queues that target it), a
                                 snapshot; 0 for global queues, whose items sit in the pool's
                                 run queues (see the workers) */
    bool inactive;            /* created inactive and not activated yet */
};

typedef enum cq_introspect_worker_state {
    CQ_INTROSPECT_WORKER_RUNNING = 1, /* running a task */
    CQ_INTROSPECT_WORKER_SEARCHING,   /* awake, looking for work (spinning) */
    CQ_INTROSPECT_WORKER_PARKED,      /* asleep with its run queue, waiting for work */
    CQ_INTROSPECT_WORKER_IDLE,        /* no thread: its last thread blocked or exited */
    CQ_INTROSPECT_WORKER_RETIRED,     /* an extra worker the monitor added, out of use now */
} cq_introspect_worker_state_t;

struct cq_introspect_worker {
    uint32_t index;                     /* run queue (proc) number */
    uint32_t band;                      /* 0 normal, 1 express, 2 background */
    cq_introspect_worker_state_t state;
    int32_t tid; /* the thread holding it (running or parked), else the one that ran it last
                  * (0: none yet) */
    bool extra;                         /* added by the monitor for blocked workers */
    uint64_t tasks_run, steals, parks, unparks; /* as struct cq_runtime_counters, this worker's */
};

struct cq_introspect_pool {
    uint32_t workers;        /* normal workers (CPUs usable) */
    uint32_t threads;        /* runtime threads alive */
    uint32_t thread_limit;
    uint32_t blocked;        /* pool threads blocked in a runtime wait (semaphore, group, sync) */
    uint32_t spares_parked;  /* spare threads parked, ready to replace a blocked worker */
    uint32_t blocked_in_tasks; /* as struct cq_runtime_info's */
};

struct cq_introspect_source {
    const void *source;       /* identity only */
    const char *type;         /* "timer", "read", "signal", ... */
    uint32_t kind;            /* cq_source_kind_t */
    uintptr_t handle, mask;
    const char *target_label; /* the queue its handlers run on */
    uint32_t suspend_count;   /* 1 for a source not activated yet */
    bool activated;           /* resumed once: registered (or being registered) with the reactor */
    bool cancelled;
    bool registered;          /* the reactor watches it now */
};

struct cq_introspect_visitor {
    /* Any may be NULL. Called on the caller's thread, with runtime locks held: they must not
     * create, release, suspend or resume queues or sources, nor wait for tasks, nor call
     * cq_introspect or cq_introspect_dump (that stops the process with a message). */
    void (*pool)(void *ctx, const struct cq_introspect_pool *pool);
    void (*queue)(void *ctx, const struct cq_introspect_queue *queue);
    void (*worker)(void *ctx, const struct cq_introspect_worker *worker);
    void (*source)(void *ctx, const struct cq_introspect_source *source);
};

/*
 * cq_introspect
 *   Calls the visitor for the pool (once), every worker, every live queue (global queues
 *   first, then the main queue, then created queues, oldest first), and every live source.
 *   Thread-safe; not async-signal-safe. Starts the thread pool if it is not running.
 */
CQ_EXPORT void cq_introspect(const struct cq_introspect_visitor *visitor, void *ctx);

/*
 * cq_introspect_dump
 *   Writes a human-readable report of the same to `out` (stderr if NULL).
 */
CQ_EXPORT void cq_introspect_dump(FILE *out);

CQ_END_DECLS

#endif /* CQUEUECORE_INTROSPECT_H */
