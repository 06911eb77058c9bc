/*
 * cq_time_t arithmetic. Encoding (see cqueuecore/time.h): 0 = now, ~0 = forever, bit 63 clear =
 * CLOCK_MONOTONIC nanoseconds, bit 63 set = CLOCK_REALTIME nanoseconds since the epoch.
 */
#include "platform/time_internal.h"

#include <stddef.h>

#define CQ__MAX_NS ((uint64_t)INT64_MAX - 1) /* the largest finite value on either clock */

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* base + delta, saturating: above CQ__MAX_NS is "forever" (returns false), below min is min.
 * A monotonic base of INT64_MAX (Swift's `SQTime(uptimeNanoseconds: UInt64.max / 2)`, a common
 * "far future") is past CQ__MAX_NS already: checked first, the unsigned difference wrapped, and
 * the sum, with the wall clock's bit set, was a time in 1970 that every wait had passed. */
static bool add_saturating(uint64_t base, int64_t delta, uint64_t min, uint64_t *out)
{
    if (delta >= 0) {
        if (delta > 0 && (base > CQ__MAX_NS || (uint64_t)delta > CQ__MAX_NS - base)) {
            return false;
        }
        *out = base + (uint64_t)delta;
    } else {
        uint64_t d = delta == INT64_MIN ? (uint64_t)INT64_MAX + 1 : (uint64_t)-delta;
        *out = (d >= base || base - d < min) ? min : base - d;
    }
    return true;
}

cq_time_t cq_time(cq_time_t when, int64_t delta)
{
    if (when == CQ_TIME_FOREVER) {
        return CQ_TIME_FOREVER;
    }
    uint64_t v;
    if (when & CQ__WALL_BIT) {
        if (!add_saturating(when & ~CQ__WALL_BIT, delta, 0, &v)) {
            return CQ_TIME_FOREVER;
        }
        return v | CQ__WALL_BIT;
    }
    uint64_t base = when == CQ_TIME_NOW ? clock_ns(CLOCK_MONOTONIC) : when;
    /* 1 is the earliest monotonic time: 0 means "now". */
    if (!add_saturating(base, delta, 1, &v)) {
        return CQ_TIME_FOREVER;
    }
    return v;
}

cq_time_t cq_walltime(const struct timespec *when, int64_t delta)
{
    uint64_t base;
    if (when == NULL) {
        base = clock_ns(CLOCK_REALTIME);
    } else if (when->tv_sec < 0) {
        base = 0;
    } else if ((uint64_t)when->tv_sec > CQ__MAX_NS / 1000000000ull) {
        return CQ_TIME_FOREVER;
    } else {
        base = (uint64_t)when->tv_sec * 1000000000ull + (uint64_t)when->tv_nsec;
        if (base > CQ__MAX_NS) {
            return CQ_TIME_FOREVER;
        }
    }
    uint64_t v;
    if (!add_saturating(base, delta, 0, &v)) {
        return CQ_TIME_FOREVER;
    }
    return v | CQ__WALL_BIT;
}

bool cq_time_to_timespec(cq_time_t when, int *clock_id, struct timespec *out)
{
    if (when == CQ_TIME_FOREVER) {
        return false;
    }
    uint64_t ns;
    if (when & CQ__WALL_BIT) {
        *clock_id = CLOCK_REALTIME;
        ns = when & ~CQ__WALL_BIT;
    } else {
        *clock_id = CLOCK_MONOTONIC;
        ns = when == CQ_TIME_NOW ? clock_ns(CLOCK_MONOTONIC) : when;
    }
    out->tv_sec = (time_t)(ns / 1000000000ull);
    out->tv_nsec = (long)(ns % 1000000000ull);
    return true;
}

int64_t cq_time_nanoseconds_until(cq_time_t when)
{
    if (when == CQ_TIME_FOREVER) {
        return INT64_MAX;
    }
    if (when == CQ_TIME_NOW) {
        return 0;
    }
    uint64_t now, at;
    if (when & CQ__WALL_BIT) {
        now = clock_ns(CLOCK_REALTIME);
        at = when & ~CQ__WALL_BIT;
    } else {
        now = clock_ns(CLOCK_MONOTONIC);
        at = when;
    }
    return at > now ? (int64_t)(at - now) : 0;
}

void cq__deadline_init(struct cq__deadline *d, cq_time_t when)
{
    int clock = CLOCK_MONOTONIC;
    d->forever = !cq_time_to_timespec(when, &clock, &d->at);
    d->clock = clock;
}

bool cq__deadline_passed(const struct cq__deadline *d)
{
    if (d->forever) {
        return false;
    }
    struct timespec now;
    clock_gettime(d->clock, &now);
    return now.tv_sec > d->at.tv_sec ||
           (now.tv_sec == d->at.tv_sec && now.tv_nsec >= d->at.tv_nsec);
}
