/*
 * CQueueCore — the thread pool's configuration and counters, for tests, tools and profilers.
 */
#ifndef CQUEUECORE_RUNTIME_H
#define CQUEUECORE_RUNTIME_H

#include <cqueuecore/base.h>

CQ_BEGIN_DECLS

struct cq_runtime_info {
    uint32_t workers;           /* workers: CPUs usable by this process (affinity, cgroup quota) */
    uint32_t procs;             /* run queues for high, default and low work: workers plus extra
                                   ones added by the monitor */
    uint32_t threads;           /* runtime threads alive now (workers, spares, blocked waiters) */
    uint32_t threads_peak;      /* the most runtime threads alive at once so far */
    uint32_t thread_limit;      /* hard cap on runtime threads (CQ_THREAD_LIMIT in the environment) */
    uint32_t spares_parked;     /* spare threads parked, ready to take over a blocked worker's CPU */
    uint32_t blocked;           /* pool threads blocked in a runtime wait right now */
    uint32_t limit_reached;     /* times the thread limit stopped the runtime from adding a thread */
    uint64_t handoffs;          /* CPUs handed to a spare thread by a worker about to block */
    uint64_t monitor_spawns;    /* extra run queues added by the monitor for blocked workers */
    uint32_t blocked_in_tasks;  /* workers whose task sleeps in the kernel (the monitor's last look) */
    uint32_t background_procs;  /* run queues for background work (their threads run at nice 19) */
    uint64_t express_wakeups;   /* high-priority arrivals that woke the express worker because
                                   every normal worker was busy */
};

/*
 * cq_runtime_get_info
 *   Fills `info` with a snapshot of the pool (starting the pool if it is not running yet).
 *   The counters are read without a lock, so they may be momentarily inconsistent.
 */
CQ_EXPORT void cq_runtime_get_info(struct cq_runtime_info *info);

CQ_END_DECLS

#endif /* CQUEUECORE_RUNTIME_H */
