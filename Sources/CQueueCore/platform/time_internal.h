/*
 * Deadlines for the runtime's own waits, built from cq_time_t values.
 */
#ifndef CQ_TIME_INTERNAL_H
#define CQ_TIME_INTERNAL_H

#include <cqueuecore/time.h>
#include <time.h>

#include "platform/atomic_internal.h"

#define CQ__WALL_BIT (1ull << 63)

struct cq__deadline {
    bool forever;       /* CQ_TIME_FOREVER: no deadline */
    clockid_t clock;    /* CLOCK_MONOTONIC or CLOCK_REALTIME */
    struct timespec at; /* absolute, on `clock` */
};

CQ_INTERNAL void cq__deadline_init(struct cq__deadline *d, cq_time_t when);
CQ_INTERNAL bool cq__deadline_passed(const struct cq__deadline *d);

/* Current CLOCK_MONOTONIC time in nanoseconds. */
CQ_INLINE uint64_t cq__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif /* CQ_TIME_INTERNAL_H */
