/*
 * CQueueCore — counting semaphores.
 *
 * Thread-safety: every function here may be called from any thread, concurrently with the
 * others on the same semaphore, as long as the caller holds a reference to it.
 */
#ifndef CQUEUECORE_SEMAPHORE_H
#define CQUEUECORE_SEMAPHORE_H

#include <cqueuecore/base.h>
#include <cqueuecore/object.h>
#include <cqueuecore/time.h>

CQ_BEGIN_DECLS

typedef struct cq_semaphore_s *cq_semaphore_t;

/*
 * cq_semaphore_create
 *   A counting semaphore starting at `value`. A negative value is rejected: NULL, errno EINVAL,
 *   and a message on stderr. Releasing the semaphore while its count is below `value` aborts
 *   with a message (a waiter would be left behind or a resource leaked), as libdispatch does.
 *   Thread-safe.
 */
CQ_EXPORT cq_semaphore_t cq_semaphore_create(intptr_t value) CQ_WARN_RESULT;

/*
 * cq_semaphore_wait
 *   Decrements the count; if it was not positive, waits until a signal or `timeout` (a
 *   cq_time_t: CQ_TIME_NOW tries without waiting, CQ_TIME_FOREVER waits forever). Returns 0 when
 *   it got the resource, non-zero on timeout (-1 with errno ETIMEDOUT, as libdispatch on Linux;
 *   the count is then restored). One atomic operation
 *   when a resource is available; a bounded spin, then a futex sleep. A pool worker that has to
 *   sleep hands its CPU to a spare thread first. Acquire ordering. Thread-safe: any number of
 *   threads may wait at once; each signal wakes at most one of them.
 */
CQ_EXPORT intptr_t cq_semaphore_wait(cq_semaphore_t semaphore, cq_time_t timeout);

/*
 * cq_semaphore_signal
 *   Increments the count, waking one waiter if there is one. Returns non-zero if a waiter was
 *   woken, 0 otherwise. One atomic operation when nobody waits. Release ordering. Never blocks.
 *   Thread-safe: any thread, including threads the runtime did not start.
 */
CQ_EXPORT intptr_t cq_semaphore_signal(cq_semaphore_t semaphore);

CQ_END_DECLS

#endif /* CQUEUECORE_SEMAPHORE_H */
