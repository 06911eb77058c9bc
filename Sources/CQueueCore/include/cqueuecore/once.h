/*
 * CQueueCore — run-once initialisation.
 */
#ifndef CQUEUECORE_ONCE_H
#define CQUEUECORE_ONCE_H

#include <cqueuecore/base.h>

CQ_BEGIN_DECLS

/* A predicate for cq_once_f: must be zero-initialised (static storage, or = 0). */
typedef long cq_once_t;

/*
 * cq_once_f
 *   Runs `function(context)` exactly once per predicate, however many threads call at once;
 *   every caller returns after it has completed, with acquire ordering on its effects. After
 *   completion the call is one acquire load. Callers that arrive while it runs wait without
 *   starving the pool. Calling cq_once_f on the same predicate from inside the function aborts
 *   with a message (it would deadlock).
 */
CQ_EXPORT void cq_once_f(cq_once_t *predicate, void *context, cq_function_t function);

CQ_END_DECLS

#endif /* CQUEUECORE_ONCE_H */
