/*
 * CQueueCore — reference counting, context pointers and finalizers shared by every object
 * (queues, semaphores, groups, sources).
 */
#ifndef CQUEUECORE_OBJECT_H
#define CQUEUECORE_OBJECT_H

#include <cqueuecore/base.h>

CQ_BEGIN_DECLS

/*
 * cq_retain / cq_release
 *   Add or drop one reference. An object is created with one reference. When the last one is
 *   dropped the object lives on until its queued work has run (a queue keeps itself alive while
 *   it has tasks; a task keeps its group alive), then its finalizer runs and it is freed.
 *   Global queues and the main queue ignore both calls.
 *   Thread-safe; never blocks. A release has release ordering, the final one acquire ordering.
 *   A group with outstanding enters stays alive until they are left (so releasing a group
 *   right after submitting its tasks is fine).
 *   Misuse (aborts with a message naming the call and the object): releasing more often than
 *   retained, retaining an object whose last reference is gone, releasing a suspended queue,
 *   releasing a semaphore whose count is below its initial value, a pointer that is not a
 *   CQueueCore object.
 */
CQ_EXPORT void cq_retain(void *object);
CQ_EXPORT void cq_release(void *object);

/*
 * cq_set_context / cq_get_context
 *   An application pointer stored in the object, passed to the finalizer. Not synchronised:
 *   set it before the object is shared, or synchronise the accesses yourself. Global queues
 *   and the main queue are shared by the whole process and take none: setting it does nothing
 *   and getting it returns NULL (as in libdispatch).
 */
CQ_EXPORT void cq_set_context(void *object, void *context);
CQ_EXPORT void *cq_get_context(void *object);

/*
 * cq_set_finalizer_f
 *   `finalizer(context)` runs once, after the last reference is gone and all the object's
 *   queued work has run, if the object's context is not NULL (as in libdispatch: a finalizer
 *   exists to free the context). For a queue it runs asynchronously on that queue's target queue; for
 *   other objects on the default global queue. NULL removes it. Set before the last release.
 *   Global queues and the main queue are never finalized: setting one does nothing.
 */
CQ_EXPORT void cq_set_finalizer_f(void *object, cq_function_t finalizer);

/*
 * cq_suspend / cq_resume
 *   Counted: a queue runs no new task while its suspend count is above zero. A task that is
 *   already running finishes; suspension takes effect between tasks. Each cq_suspend must be
 *   balanced by a cq_resume before the last release. Resuming an object that is not suspended
 *   aborts with a message. On an inactive object, a resume that balances a cq_suspend leaves
 *   it inactive; otherwise it activates a source (libdispatch's old way of starting one) and
 *   aborts for a queue (start it with cq_activate). Global queues and the main queue ignore
 *   both calls.
 *   Thread-safe; never blocks.
 */
CQ_EXPORT void cq_suspend(void *object);
CQ_EXPORT void cq_resume(void *object);

/*
 * cq_activate
 *   Activates an inactive object: a source that was never resumed, or a queue made with
 *   cq_queue_create_inactive. On an object that is already active it does nothing (also when
 *   two threads activate at once: one of them resumes). A cq_resume of an inactive source
 *   activates it too (see cq_resume). libdispatch: dispatch_activate. Thread-safe; never
 *   blocks.
 */
CQ_EXPORT void cq_activate(void *object);

CQ_END_DECLS

#endif /* CQUEUECORE_OBJECT_H */
