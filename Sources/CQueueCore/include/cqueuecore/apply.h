/*
 * CQueueCore — parallel loops.
 */
#ifndef CQUEUECORE_APPLY_H
#define CQUEUECORE_APPLY_H

#include <cqueuecore/base.h>
#include <cqueuecore/queue.h>

CQ_BEGIN_DECLS

/*
 * cq_apply_f
 *   Calls `function(context, i)` for every i in [0, iterations) and returns when all calls have
 *   returned. On a concurrent or global queue the iterations run in parallel: the caller takes
 *   part, and the range is split into chunks that idle workers take; on a serial queue (or one
 *   targeting a serial queue) they run one after another, as a sync onto that queue. Nested
 *   applies and applies from inside tasks work; the call completes even when every worker is
 *   busy or blocked, because the caller can run every chunk itself.
 */
CQ_EXPORT void cq_apply_f(size_t iterations, cq_queue_t queue, void *context,
                          cq_apply_function_t function);

/* A range of iterations: calls for every i in [start, end). */
typedef void (*cq_apply_range_function_t)(void *context, size_t start, size_t end);

/*
 * cq_apply_ranges_f
 *   As cq_apply_f, but `function(context, start, end)` is called once per chunk, covering the
 *   iterations [start, end); the chunks cover [0, iterations) exactly once. For callers whose
 *   per-iteration call is costly to set up (a Swift closure is loaded once per chunk, not once
 *   per iteration). Not in libdispatch.
 */
CQ_EXPORT void cq_apply_ranges_f(size_t iterations, cq_queue_t queue, void *context,
                                 cq_apply_range_function_t function);

CQ_END_DECLS

#endif /* CQUEUECORE_APPLY_H */
