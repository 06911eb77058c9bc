/*
 * CQueueCore — time values.
 *
 * A cq_time_t is an absolute point in time on one of two clocks:
 *   - CQ_TIME_NOW (0): "now", resolved when the value is used.
 *   - CQ_TIME_FOREVER (all bits set): never.
 *   - monotonic: bit 63 clear, nanoseconds of CLOCK_MONOTONIC. Made by cq_time(). Does not
 *     move when the wall clock is set; does not advance while the machine is suspended.
 *   - wall clock: bit 63 set, the low 63 bits are nanoseconds since the Unix epoch on
 *     CLOCK_REALTIME. Made by cq_walltime(). A wait on it follows changes of the wall clock.
 * Arithmetic saturates: a result beyond the representable range is CQ_TIME_FOREVER, a result
 * before the clock's origin is the earliest time on that clock.
 */
#ifndef CQUEUECORE_TIME_H
#define CQUEUECORE_TIME_H

#include <cqueuecore/base.h>

struct timespec;

CQ_BEGIN_DECLS

typedef uint64_t cq_time_t;

#define CQ_TIME_NOW (0ull)
#define CQ_TIME_FOREVER (~0ull)

#define CQ_NSEC_PER_SEC 1000000000ull
#define CQ_NSEC_PER_MSEC 1000000ull
#define CQ_NSEC_PER_USEC 1000ull
#define CQ_USEC_PER_SEC 1000000ull
#define CQ_MSEC_PER_SEC 1000ull

/*
 * cq_time
 *   `when` plus `delta` nanoseconds, on the clock of `when`. `when` == CQ_TIME_NOW means the
 *   current monotonic time. CQ_TIME_FOREVER plus anything stays CQ_TIME_FOREVER. Saturates.
 *   Thread-safe, never blocks.
 */
CQ_EXPORT cq_time_t cq_time(cq_time_t when, int64_t delta);

/*
 * cq_walltime
 *   A wall-clock time: `when` (NULL means the current CLOCK_REALTIME time) plus `delta`
 *   nanoseconds. Saturates. Thread-safe, never blocks.
 */
CQ_EXPORT cq_time_t cq_walltime(const struct timespec *when, int64_t delta);

/*
 * cq_time_to_timespec
 *   Splits a time into its clock (CLOCK_MONOTONIC or CLOCK_REALTIME, written to *clock_id) and
 *   absolute timespec. Returns false for CQ_TIME_FOREVER (nothing written). CQ_TIME_NOW is
 *   resolved to the current monotonic time.
 */
CQ_EXPORT bool cq_time_to_timespec(cq_time_t when, int *clock_id, struct timespec *out);

/*
 * cq_time_nanoseconds_until
 *   Nanoseconds from now until `when` on its own clock: 0 if it has passed, INT64_MAX for
 *   CQ_TIME_FOREVER.
 */
CQ_EXPORT int64_t cq_time_nanoseconds_until(cq_time_t when);

CQ_END_DECLS

#endif /* CQUEUECORE_TIME_H */
