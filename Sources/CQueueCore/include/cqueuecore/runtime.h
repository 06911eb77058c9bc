/*
 * CQueueCore — the thread pool's configuration and counters, for tests, tools and profilers.
 */
#ifndef CQUEUECORE_RUNTIME_H
#define CQUEUECORE_RUNTIME_H

#include <cqueuecore/base.h>

CQ_BEGIN_DECLS

struct cq_runtime_info {
    uint32_t workers;      /* workers: CPUs usable by this process (affinity, cgroup quota) */
    uint32_t procs;        /* run queues for high, default and low work: workers plus extra
                              ones added by the monitor */
    uint32_t threads;      /* pool threads alive now (workers, spares, blocked waiters); the
                              runtime's other threads (reactor, monitor, I/O, trimmer) are not
                              counted here (threads_started in cq_runtime_counters counts them) */
    uint32_t threads_peak; /* the most pool threads alive at once so far */
    /* Hard cap on pool threads: CQ_THREAD_LIMIT in the environment (default
     * max(255, 16 x workers)), clamped to at least 2 x workers + 1 (every band's workers must
     * be able to run) with a one-line message (docs/misuse.md). The runtime's few threads of
     * its own (the reactor, the monitor, the I/O pool's, the trimmer) come on top */
    uint32_t thread_limit;
    uint32_t spares_parked;  /* spare threads parked, ready to take over a blocked worker's CPU */
    uint32_t blocked;        /* pool threads blocked in a runtime wait right now */
    uint32_t limit_reached;  /* times the thread limit stopped the runtime from adding a thread */
    uint64_t handoffs;       /* CPUs handed to a spare thread by a worker about to block */
    uint64_t monitor_spawns; /* extra run queues added by the monitor for blocked workers */
    /* Workers whose task the monitor found asleep in the kernel (2 ms, two looks in a row) while
     * work of their band waited behind them, at its last look. The monitor looks only while
     * work waits: once an extra worker has taken that work, or with nothing waiting, this is
     * 0 even if a task still sleeps (its worker shows as running). */
    uint32_t blocked_in_tasks;
    uint32_t background_procs; /* run queues for background work (their threads run at nice 19) */
    uint64_t express_wakeups;  /* high-priority arrivals that woke the express worker because
                                  every normal worker was busy */
};

/*
 * cq_runtime_get_info
 *   Fills `info` with a snapshot of the pool (starting the pool if it is not running yet).
 *   The counters are read without a lock, so they may be momentarily inconsistent.
 */
CQ_EXPORT void cq_runtime_get_info(struct cq_runtime_info *info);

/*
 * Event counts since the process started, for metrics and profilers (in a fork() child the
 * per-worker counts start over with its new pool). Per-worker counts are kept on each worker
 * without shared atomics and summed when read; the rare ones are global. Fields are only ever added
 * at the end.
 */
struct cq_runtime_counters {
    uint64_t tasks_run;         /* work items run: tasks, group tasks, sources' turns on their
                                   queues (a handler each, but the activation's turn may run
                                   none), apply helpers (not the drains that run them), each
                                   operation of a SwiftQueues operation queue */
    uint64_t steals;            /* items a worker took from another worker's run queue */
    uint64_t parks;             /* times a worker went to sleep for want of work */
    uint64_t unparks;           /* times a parked worker was woken */
    uint64_t spare_threads;     /* spare threads woken or started to take a blocked worker's
                                   CPU as it blocked, with work waiting (a worker that blocks
                                   with none gives its CPU back to the idle workers; a thread
                                   woken or started for it when work comes is not counted
                                   here, only in threads_started if it is new) */
    uint64_t thread_limit_hits; /* times the thread limit stopped the runtime adding a thread */
    uint64_t timer_fires;       /* cq_after_f calls that came due on a timer, plus timer source
                                   fires (a cq_after_f whose deadline has passed is queued at
                                   once, as cq_async_f: not counted) */
    uint64_t source_events;     /* source event handlers run (each may carry many events) */
    uint64_t workers_counted;   /* worker run queues whose counts are summed above */
    uint64_t threads_started;   /* runtime threads created so far, of every kind (workers,
                                   spares, extra workers, the reactor, the monitor, the
                                   trimmer, liburcu's callback thread "cq-rcu"): a figure
                                   that grows while the process runs is thread churn */
    uint64_t tasks_outside;     /* of tasks_run, those no worker's count has: run by threads
                                   other than workers (the main thread, a thread waiting in a
                                   sync or a group wait that runs what it waits for), and
                                   SwiftQueues operations started inside another's work item */
    uint64_t overcommit_wakeups; /* overcommit threads woken or started because a serial
                                    queue's work waited while every worker was stuck in a
                                    long task (libdispatch's serial queues overcommit too;
                                    docs/design.md); their tasks count in tasks_outside */
};

/*
 * cq_runtime_get_counters
 *   Fills the first `size` bytes of `*out` (pass sizeof(struct cq_runtime_counters): a caller
 *   built against an older, shorter struct gets the fields it knows) and returns the number of
 *   bytes written. Reads every worker's counters without a lock: each count is exact as of
 *   some moment during the call, and never goes down. Does not start the pool. Thread-safe.
 */
CQ_EXPORT size_t cq_runtime_get_counters(struct cq_runtime_counters *out, size_t size);

/*
 * cq_runtime_set_thread_naming
 *   When on, a pool thread that drains a serial queue takes the queue's label as its thread
 *   name (the label's last 15 characters, what the kernel keeps) and takes its own name
 *   (cq-worker-N, cq-high-N, cq-bg-N) back when it next runs other work or sleeps, so `perf report
 * --sort comm`, `top -H` and /proc/PID/task/TID/comm show which queue runs. Each change is one
 * prctl() (a microsecond or two): free while a worker stays on one queue, up to two per task when
 * every task is a drain of its own on alternating queues; off, the cost is a load per task. Off by
 * default; the environment variable CQ_THREAD_NAMES=1 turns it on when the pool starts (unless this
 * was called before), and CQ_THREAD_NAMES=N (1 < N <= 99999) renames a thread after a label at most
 * once per N ms (cheaper, but drains that come sooner run under the thread's own name: a sample,
 * not a full account); other values are reported (docs/misuse.md). Thread-safe.
 */
CQ_EXPORT void cq_runtime_set_thread_naming(bool on);

CQ_END_DECLS

#endif /* CQUEUECORE_RUNTIME_H */
