/*
 * CQueueCore — support for Swift concurrency on the main thread.
 *
 * On Linux, Swift's MainActor and Dispatch's `DispatchQueue.main` put their work on
 * libdispatch's main queue, which only `dispatch_main()` (or a run loop that drains it, as
 * Foundation's RunLoop does) runs. cq_main() runs the CQueueCore main queue only. The calls
 * here run both on the main thread (the SwiftQueues article "Swift concurrency" explains how).
 */
#ifndef CQUEUECORE_SWIFT_SUPPORT_H
#define CQUEUECORE_SWIFT_SUPPORT_H

#include <cqueuecore/base.h>
#include <cqueuecore/group.h>
#include <cqueuecore/queue.h>
#include <cqueuecore/work_item.h>

CQ_BEGIN_DECLS

/*
 * cq_main_with_libdispatch
 *   As cq_main() (same preconditions: the main thread, not inside a task; never returns), and
 *   in the same loop also runs libdispatch's main queue on the main thread whenever it has
 *   work: the main queue's wake-up descriptor (libdispatch's _dispatch_get_main_queue_handle_4CF,
 *   an eventfd) is watched by a read source on the CQueueCore main queue whose handler drains
 *   it (_dispatch_main_queue_callback_4CF, the hook CoreFoundation's run loop uses). Work that
 *   was already on libdispatch's main queue runs first. Without libdispatch in the process it
 *   is cq_main(). SwiftQueues' `SQQueue.runMain()` calls it.
 */
CQ_EXPORT CQ_NORETURN void cq_main_with_libdispatch(void);

/*
 * cq_swift_async_main_hooked
 *   Whether this library installed itself as the Swift runtime's async-main drain (see
 *   swift_support.c): in a Swift program with an `async` main, the main thread then runs
 *   cq_main_with_libdispatch() once main first suspends, instead of libdispatch's
 *   dispatch_main(). False in processes without the Swift concurrency runtime, or when another
 *   library had installed the hook first. Thread-safe (written once before main runs).
 */
CQ_EXPORT bool cq_swift_async_main_hooked(void);

/*
 * cq_swift_main_set_orphan_handoff / cq_swift_main_orphan_drain
 *   Where the main queue runs once the main thread has ended with pthread_exit() (libdispatch's
 *   dispatch_main() ends it that way, and so does Swift's `dispatchMain()`, which code ported
 *   from Dispatch keeps: it compiles wherever Foundation is imported). A C program's orphaned
 *   main queue drains on the pool, one drain at a time (queue_main.c). SwiftQueues registers
 *   `hand_off` instead, from SQQueue.main's initialiser: each time a drain of the orphaned main
 *   queue is due, hand_off() is called (on any thread, possibly inside a task or a drain; it
 *   must not block or call into this library) and must see to it that
 *   cq_swift_main_orphan_drain() is called later, at least once, from the place the main queue
 *   should run: SwiftQueues calls it from libdispatch's main queue, where Swift's MainActor and
 *   DispatchQueue.main run after dispatchMain(), so that SQQueue.main work takes turns with
 *   theirs and keeps the main actor's isolation. cq_swift_main_orphan_drain() runs what the
 *   main queue has due (a call that finds nothing due, its drain taken by an earlier call, does
 *   nothing) and aborts if the main thread has not exited. The last registration counts; a
 *   NULL hand_off aborts. Thread-safe.
 */
CQ_EXPORT void cq_swift_main_set_orphan_handoff(void (*hand_off)(void));
CQ_EXPORT void cq_swift_main_orphan_drain(void);

/*
 * cq_swift_tsan_acquire / cq_swift_tsan_release
 *   Happens-before annotations for ThreadSanitizer: a release on an address happens before
 *   every later acquire on it. No-ops unless CQueueCore itself is built with ThreadSanitizer.
 *   SwiftQueues brackets the critical sections of the standard library's `Mutex` with them:
 *   its contended path hands the lock over inside libswiftSynchronization, which is not built
 *   for the sanitizer, so without them `swift test --sanitize=thread` reports races between
 *   critical sections of one mutex. Thread-safe; never block.
 */
CQ_EXPORT void cq_swift_tsan_acquire(const void *address);
CQ_EXPORT void cq_swift_tsan_release(const void *address);

/*
 * cq_swift_try_retain
 *   The Swift runtime's try-retain (swift_tryRetain, which its weak and unowned references
 *   use), for SwiftQueues: takes a strong reference to the Swift object at `object` and returns
 *   true, unless the object's deinitialization has begun; then it returns false and takes
 *   nothing. SwiftQueues holds an operation's dependents unretained and takes them with it.
 *   Only in processes with the Swift runtime (aborts with a message otherwise). Thread-safe.
 */
CQ_EXPORT bool cq_swift_try_retain(void *object);

/*
 * cq_swift_group_notify_purge
 *   Takes out of `group`'s registered notifies (those waiting for it to empty) every one with
 *   function `fn` whose context `dead` says is no longer wanted, and calls `release` with each
 *   such context after dropping the group's notify lock; their functions never run. `dead` runs
 *   under that lock: it must only look (no call into this library). Returns how many notifies
 *   are still registered. SwiftQueues calls it from time to time for the notifies of cancelled
 *   `SQGroup.waitUntilEmpty()` calls, which would otherwise stay until the group empties.
 *   Thread-safe; O(notifies registered).
 */
CQ_EXPORT size_t cq_swift_group_notify_purge(cq_group_t group, cq_function_t fn,
                                             bool (*dead)(void *context),
                                             void (*release)(void *context));

/*
 * cq_swift_work_item_notify_purge
 *   cq_swift_group_notify_purge for the notifies of a work item (cq_work_item_notify_f), which
 *   wait for the item's run: for the notifies of cancelled `SQWorkItem.waitUntilFinished()`
 *   calls, which would otherwise stay until the item runs (or for ever, if it never does).
 *   Returns how many are still registered (0 if none ever was). Thread-safe; O(notifies).
 */
CQ_EXPORT size_t cq_swift_work_item_notify_purge(cq_work_item_t item, cq_function_t fn,
                                                 bool (*dead)(void *context),
                                                 void (*release)(void *context));

/*
 * cq_swift_async_prepare / cq_swift_async_submit
 *   cq_async_f without a context allocation, for callers that carry up to CQ_SWIFT_INLINE_BYTES
 *   bytes of their own (SwiftQueues puts the submitted closure there). prepare checks `queue`
 *   and `function` as cq_async_f does (aborting on misuse), takes a task and returns the address
 *   of its inline storage (8-byte aligned, uninitialised); the caller writes at most
 *   CQ_SWIFT_INLINE_BYTES bytes there and passes the address to submit, exactly once, with the
 *   same queue. When the task runs, function(p) is called, where p points to a copy of those
 *   bytes on the running thread's stack (the task itself is reused by then); p is valid until
 *   function returns. `barrier` submits as cq_barrier_async_f. A non-NULL `group` is entered by
 *   prepare and left after function returns, as with cq_group_async_f (and a barrier in a group
 *   waits for the group as any member does). Thread-safe; never block.
 */
#define CQ_SWIFT_INLINE_BYTES 16
CQ_EXPORT void *cq_swift_async_prepare(cq_queue_t queue, cq_group_t group, cq_function_t function);
CQ_EXPORT void cq_swift_async_submit(cq_queue_t queue, void *inline_bytes, bool barrier);

/*
 * cq_swift_work_item_create
 *   cq_work_item_create_f without a context allocation: the item holds CQ_SWIFT_INLINE_BYTES
 *   bytes (8-byte aligned, uninitialised) whose address is stored in *inline_bytes; the caller
 *   writes its state there before it shares the item (SwiftQueues' SQWorkItem puts its closure
 *   there). Every run calls call(p) with p that address; destroy(p) is called once,
 *   synchronously, by whichever thread drops the item's last reference (cq_release, or the end
 *   of a submission's run), before the memory is freed. NULL with errno EINVAL for a NULL call or
 *   destroy or an unknown flag, ENOMEM without memory. Thread-safe; never blocks.
 */
CQ_EXPORT cq_work_item_t cq_swift_work_item_create(unsigned long flags, cq_function_t call,
                                                   cq_function_t destroy,
                                                   void **inline_bytes) CQ_WARN_RESULT;

/*
 * cq_probe_operation_enabled / cq_probe_operation_state
 *   The `swiftqueues:operation_state` USDT probe (docs/profiling.md) for SwiftQueues'
 *   SQOperation: `enabled` says whether a tracer is attached (one load; call it before building
 *   the name), `state` fires the probe with the operation's name (NUL-terminated, may be NULL)
 *   and its new state (1 executing: its main() starts; 2 finished). Both are no-ops in a
 *   library built without <sys/sdt.h>. Thread-safe.
 */
CQ_EXPORT bool cq_probe_operation_enabled(void);
CQ_EXPORT void cq_probe_operation_state(const char *name, int state);

/*
 * cq_swift_count_tasks
 *   Adds `n` to the tasks the runtime counts as run (cq_runtime_get_counters' tasks_run):
 *   SwiftQueues' operation queues start many operations inside one pool work item (operations
 *   handed from one to the next), and count each of them as a task, as one submitted on its
 *   own is. Thread-safe; one atomic add.
 */
CQ_EXPORT void cq_swift_count_tasks(uint64_t n);

/*
 * cq_swift_async_overcommit_f
 *   As cq_async_f, for a task that overcommits as a serial queue's drain does (docs/design.md
 *   §5, overcommit lanes): submitted from outside the pool, it may run on an overcommit thread
 *   while every worker is stuck in a long task. For SwiftQueues' operation queues of width 1,
 *   whose Foundation counterpart runs on a serial dispatch queue. Thread-safe; never blocks.
 */
CQ_EXPORT void cq_swift_async_overcommit_f(cq_queue_t queue, void *context, cq_function_t function);

CQ_END_DECLS

#endif /* CQUEUECORE_SWIFT_SUPPORT_H */
