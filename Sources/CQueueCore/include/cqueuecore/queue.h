/*
 * CQueueCore — dispatch queues.
 *
 * A queue runs functions submitted to it on the runtime's thread pool:
 *   - serial queues run one task at a time, in submission (FIFO) order;
 *   - concurrent queues start tasks in FIFO order and run them in parallel; a barrier task runs
 *     alone, after every task submitted before it and before every task submitted after it;
 *   - global queues (one per priority) are concurrent queues at the root of every hierarchy;
 *   - the main queue is serial and runs on the main thread once it calls cq_main().
 * A queue's target queue decides where its tasks actually run: a queue targeting a serial queue
 * becomes serial with it. Different serial queues run in parallel.
 *
 * Every call validates its arguments: a NULL queue or function, or an object that is not a
 * queue, aborts with a message naming the call.
 */
#ifndef CQUEUECORE_QUEUE_H
#define CQUEUECORE_QUEUE_H

#include <cqueuecore/base.h>
#include <cqueuecore/object.h>

CQ_BEGIN_DECLS

typedef struct cq_queue_s *cq_queue_t;
typedef const struct cq_queue_attr_s *cq_queue_attr_t;

/* Attribute values for cq_queue_create. */
#define CQ_QUEUE_SERIAL ((cq_queue_attr_t)0)
CQ_EXPORT const struct cq_queue_attr_s cq_queue_attr_concurrent_s;
#define CQ_QUEUE_CONCURRENT (&cq_queue_attr_concurrent_s)
/* The same value as CQ_QUEUE_CONCURRENT, for languages that cannot use the macro. */
CQ_EXPORT cq_queue_attr_t cq_queue_attr_concurrent(void);

/* Priorities of the global queues (the values libdispatch uses). */
#define CQ_QUEUE_PRIORITY_HIGH 2
#define CQ_QUEUE_PRIORITY_DEFAULT 0
#define CQ_QUEUE_PRIORITY_LOW (-2)
#define CQ_QUEUE_PRIORITY_BACKGROUND (-32768)

/*
 * cq_queue_create
 *   A new serial (attr CQ_QUEUE_SERIAL / NULL) or concurrent (CQ_QUEUE_CONCURRENT) queue with
 *   one reference, targeting the default-priority global queue. `label` is copied (NULL means
 *   ""); it names the queue in error messages and cq_queue_get_label. Returns NULL with errno
 *   ENOMEM if memory is exhausted, or EINVAL for an unknown attribute. Thread-safe.
 */
CQ_EXPORT cq_queue_t cq_queue_create(const char *label, cq_queue_attr_t attr) CQ_WARN_RESULT;

/*
 * cq_queue_create_inactive
 *   As cq_queue_create, but the queue starts inactive (libdispatch's
 *   dispatch_queue_attr_make_initially_inactive): it accepts work, runs none, and may be
 *   retargeted freely until cq_activate (or a cq_resume) activates it. Releasing it before
 *   activation aborts, as releasing a suspended queue does. Thread-safe.
 */
CQ_EXPORT cq_queue_t cq_queue_create_inactive(const char *label,
                                              cq_queue_attr_t attr) CQ_WARN_RESULT;

/*
 * cq_get_global_queue
 *   The global concurrent queue of a priority: one of CQ_QUEUE_PRIORITY_*; other values are
 *   rounded to the nearest one. `flags` is reserved and must be 0 (otherwise NULL, errno
 *   EINVAL). Workers prefer higher-priority work when they look for new work. Global queues
 *   ignore retain, release, suspend and resume; a barrier on them behaves as a plain task.
 */
CQ_EXPORT cq_queue_t cq_get_global_queue(intptr_t priority, uintptr_t flags);

/*
 * cq_get_main_queue / cq_main
 *   The serial queue bound to the main thread. Its tasks run only on the main thread, inside
 *   cq_main(), which must be called from the main thread, drains the main queue forever and
 *   never returns (end the process with exit() from a task). cq_sync_f onto the main queue from
 *   another thread runs the function on the main thread and waits for it. If the main thread
 *   ends with pthread_exit() instead (as libdispatch's dispatch_main does), pool threads drain
 *   the main queue from then on, still one task at a time, as in libdispatch.
 */
CQ_EXPORT cq_queue_t cq_get_main_queue(void);
CQ_EXPORT CQ_NORETURN void cq_main(void);

/*
 * cq_async_f
 *   Submits `function(context)` to run on `queue` and returns at once. Every submitted task runs
 *   exactly once. Everything the caller did before cq_async_f happens-before the task starts.
 *   Thread-safe; never blocks; at most one allocation (from a per-thread cache).
 */
CQ_EXPORT void cq_async_f(cq_queue_t queue, void *context, cq_function_t function);

/*
 * cq_sync_f
 *   Runs `function(context)` on `queue` and returns after it has run. On an idle queue the
 *   function runs inline on the calling thread without any hand-off or allocation; on a busy
 *   serial queue the caller waits for the tasks submitted before it. On a concurrent queue it
 *   runs alongside other non-barrier tasks. Waiting never starves the pool (a worker that waits
 *   hands its CPU to a spare thread). Calling cq_sync_f onto a queue the calling thread is
 *   already running exclusively (directly, through a chain of syncs, or through a target
 *   queue) would deadlock; it aborts with a message instead.
 */
CQ_EXPORT void cq_sync_f(cq_queue_t queue, void *context, cq_function_t function);

/*
 * cq_barrier_async_f / cq_barrier_sync_f
 *   As cq_async_f / cq_sync_f, but on a concurrent queue the function runs alone: after every
 *   task submitted before it has finished and before any task submitted after it starts. On a
 *   serial queue they are the same as the plain calls; on a global queue a barrier is a plain
 *   task.
 */
CQ_EXPORT void cq_barrier_async_f(cq_queue_t queue, void *context, cq_function_t function);
CQ_EXPORT void cq_barrier_sync_f(cq_queue_t queue, void *context, cq_function_t function);

/*
 * cq_set_target_queue
 *   Makes `object` (a queue) run its tasks through `target` (NULL: the default global queue).
 *   Takes effect between tasks: on a busy queue it is applied as a barrier. Creating a cycle,
 *   or retargeting a global queue or the main queue, aborts with a message. The queue keeps a
 *   reference to its target. On a source, the queue its handlers run on. On a group or a
 *   semaphore, as in libdispatch, only the queue its finalizer runs on (the default global
 *   queue until set); the object keeps a reference to it. Other objects abort with a message.
 */
CQ_EXPORT void cq_set_target_queue(void *object, cq_queue_t target);

/*
 * cq_queue_get_label
 *   The label given at creation. NULL means the queue the caller is running on; "" if the
 *   caller is not running on a queue. The string lives as long as the queue.
 */
CQ_EXPORT const char *cq_queue_get_label(cq_queue_t queue);

/*
 * cq_queue_set_specific / cq_queue_get_specific / cq_get_specific
 *   Per-queue key/value pairs, compared by the key's address. Setting a key again replaces the
 *   value; the old value's destructor (if any) then runs asynchronously on the default global
 *   queue, as do all remaining destructors when the queue is freed. A NULL value removes the
 *   key. cq_get_specific looks the key up on the queue the caller is running on, then along
 *   that queue's target chain, and returns NULL if nothing is found.
 *   Lookups take no lock (RCU-protected); thread-safe; set may allocate.
 */
CQ_EXPORT void cq_queue_set_specific(cq_queue_t queue, const void *key, void *context,
                                     cq_function_t destructor);
CQ_EXPORT void *cq_queue_get_specific(cq_queue_t queue, const void *key);
CQ_EXPORT void *cq_get_specific(const void *key);

/*
 * cq_assert_queue / cq_assert_queue_not / cq_queue_is_current
 *   Whether the calling thread is running on `queue`: a task of it, a task of a queue that
 *   targets it, or inside a sync onto it. A task submitted straight to a global queue runs
 *   on that global queue (as in libdispatch; also its label is the current one). The main
 *   thread outside any queue's work counts as on the main queue (as in libdispatch: main()
 *   before cq_main). The asserts abort with a message naming the queue when the check fails.
 */
CQ_EXPORT bool cq_queue_is_current(cq_queue_t queue);
CQ_EXPORT void cq_assert_queue(cq_queue_t queue);
CQ_EXPORT void cq_assert_queue_not(cq_queue_t queue);

/*
 * cq_assert_queue_barrier
 *   The calling thread runs on `queue` exclusively: a task of a serial queue, a barrier of a
 *   concurrent one, or inside a sync / barrier sync that holds it alone. Aborts with a message
 *   otherwise.
 */
CQ_EXPORT void cq_assert_queue_barrier(cq_queue_t queue);

/*
 * cq_queue_is_current_barrier
 *   Whether cq_assert_queue_barrier(queue) would pass, without aborting (for callers that
 *   report the failure themselves, e.g. Swift's sqPrecondition with its file and line).
 *   Reads only the calling thread's state: thread-safe, lock-free, never blocks.
 */
CQ_EXPORT bool cq_queue_is_current_barrier(cq_queue_t queue);

/* cq_thread_is_main: whether the calling thread is the process's main thread. */
CQ_EXPORT bool cq_thread_is_main(void);

/*
 * cq_get_current_queue
 *   The innermost queue the caller is running on, or NULL. For debugging and for the
 *   libdispatch compatibility header; prefer queue-specific keys for logic.
 */
CQ_EXPORT cq_queue_t cq_get_current_queue(void);

CQ_END_DECLS

#endif /* CQUEUECORE_QUEUE_H */
