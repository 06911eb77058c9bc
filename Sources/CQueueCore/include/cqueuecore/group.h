/*
 * CQueueCore — groups: wait for, or be notified of, the completion of a set of tasks.
 *
 * Thread-safety: every function here may be called from any thread, concurrently with the
 * others on the same group (enters, leaves, waits and notifies from many threads at once), as
 * long as the caller holds a reference to the group or has entered it.
 */
#ifndef CQUEUECORE_GROUP_H
#define CQUEUECORE_GROUP_H

#include <cqueuecore/base.h>
#include <cqueuecore/object.h>
#include <cqueuecore/queue.h>
#include <cqueuecore/time.h>

CQ_BEGIN_DECLS

typedef struct cq_group_s *cq_group_t;

/* cq_group_create: an empty group with one reference; NULL with errno ENOMEM on exhaustion.
 * Thread-safe. */
CQ_EXPORT cq_group_t cq_group_create(void) CQ_WARN_RESULT;

/*
 * cq_group_enter / cq_group_leave
 *   Count outstanding work by hand: one atomic operation each. The leave that brings the count
 *   to zero wakes the waiters (no system call when nobody waits) and schedules the notify
 *   functions. A leave without a matching enter aborts with a message. Release ordering on
 *   leave; a waiter that sees the group empty has acquire ordering with every leave. An entered
 *   group stays alive until its last leave, even if its last reference is released before.
 *   Thread-safe; neither waits for anything (the leave that empties a group with waiters or
 *   notifies takes the group's notify lock for a moment).
 */
CQ_EXPORT void cq_group_enter(cq_group_t group);
CQ_EXPORT void cq_group_leave(cq_group_t group);

/*
 * cq_group_async_f
 *   Enters the group, submits `function(context)` to `queue`, and leaves the group after the
 *   function returns. The task keeps the group alive. Thread-safe; never blocks.
 */
CQ_EXPORT void cq_group_async_f(cq_group_t group, cq_queue_t queue, void *context,
                                cq_function_t function);

/*
 * cq_group_wait
 *   Waits until the group is empty or `timeout` passes. Returns 0 if the group was empty,
 *   non-zero on timeout (-1 with errno ETIMEDOUT, as libdispatch on Linux). Returns at once for an empty group. A pool worker that waits first
 *   runs the group's own tasks from its local run queue (fork-join children come straight back
 *   to their parent), then hands its CPU to a spare thread, so waiting inside tasks never
 *   starves the pool. Thread-safe: any number of threads may wait on one group at once.
 */
CQ_EXPORT intptr_t cq_group_wait(cq_group_t group, cq_time_t timeout);

/*
 * cq_group_notify_f
 *   Schedules `function(context)` onto `queue` once the group is empty: at once if it is empty
 *   now. Notifies registered while the group is busy run, in registration order, when it next
 *   becomes empty. The group can be reused afterwards. Thread-safe; does not wait for the
 *   group (it takes the group's notify lock for a moment).
 */
CQ_EXPORT void cq_group_notify_f(cq_group_t group, cq_queue_t queue, void *context,
                                 cq_function_t function);

CQ_END_DECLS

#endif /* CQUEUECORE_GROUP_H */
