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
 *   The header inlines the done check into the caller (as libdispatch's does): a call through
 *   the name (`cq_once_f(...)`) is the load and a compare when the function has run; the
 *   exported function stays (its address, and callers from other languages, use it).
 */
CQ_EXPORT void cq_once_f(cq_once_t *predicate, void *context, cq_function_t function);

/* The inline done check (see cq_once_f). The predicate holds ~0 once the function has run
 * (stored with release ordering by the call that ran it). */
static inline void cq__once_f_inline(cq_once_t *predicate, void *context, cq_function_t function)
{
    if (__builtin_expect(predicate != 0 && __atomic_load_n(predicate, __ATOMIC_ACQUIRE) == ~0l,
                         1)) {
        return;
    }
    (cq_once_f)(predicate, context, function);
}
#define cq_once_f(predicate, context, function) cq__once_f_inline(predicate, context, function)

CQ_END_DECLS

#endif /* CQUEUECORE_ONCE_H */
