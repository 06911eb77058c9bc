/*
 * CQueueCore — work items: a function and its context as an object that can be submitted,
 * performed, waited for, observed and cancelled (libdispatch: dispatch_block_create and the
 * dispatch_block_* calls; Swift: DispatchWorkItem, SQWorkItem).
 *
 * An item is *finished* once its first run has returned, or once it was cancelled before any
 * run started. cq_work_item_wait returns and the cq_work_item_notify_f functions are submitted
 * when it finishes, exactly once. A cancelled item never starts again: a submission of it that
 * is reached after the cancel returns at once. An item may be submitted and performed any number
 * of times; every run happens as for a plain function with the same submission call.
 *
 * Objects: retained and released with cq_retain/cq_release; a submission holds a reference
 * until its run (or skip) is over, so an item may be released right after submitting it.
 */
#ifndef CQUEUECORE_WORK_ITEM_H
#define CQUEUECORE_WORK_ITEM_H

#include <cqueuecore/base.h>
#include <cqueuecore/group.h>
#include <cqueuecore/object.h>
#include <cqueuecore/queue.h>
#include <cqueuecore/time.h>

CQ_BEGIN_DECLS

typedef struct cq_work_item_s *cq_work_item_t;

/* Flags (libdispatch's dispatch_block_flags_t values). Only BARRIER changes how the item runs;
 * the QoS flags are accepted and ignored (priority comes from the queue). */
enum {
    CQ_WORK_ITEM_BARRIER = 0x1,           /* submitted to a concurrent queue, it runs alone */
    CQ_WORK_ITEM_DETACHED = 0x2,
    CQ_WORK_ITEM_ASSIGN_CURRENT = 0x4,
    CQ_WORK_ITEM_NO_QOS_CLASS = 0x8,
    CQ_WORK_ITEM_INHERIT_QOS_CLASS = 0x10,
    CQ_WORK_ITEM_ENFORCE_QOS_CLASS = 0x20,
};

/*
 * cq_work_item_create_f
 *   A new item running `function(context)` (function must not be NULL). Returns NULL with errno
 *   EINVAL for a NULL function or an unknown flag, ENOMEM without memory. The context is the
 *   caller's: to free it with the item, give the item that context with cq_set_context and a
 *   finalizer with cq_set_finalizer_f. Thread-safe; never blocks.
 */
CQ_EXPORT cq_work_item_t cq_work_item_create_f(unsigned long flags, void *context,
                                               cq_function_t function) CQ_WARN_RESULT;

/*
 * cq_work_item_perform
 *   Runs the item on the calling thread, now, unless it was cancelled (then returns at once).
 *   Everything the item's function did happens-before the return.
 */
CQ_EXPORT void cq_work_item_perform(cq_work_item_t item);

/*
 * Submitting: as cq_async_f, cq_sync_f, cq_after_f, cq_group_async_f and cq_group_notify_f with
 * the item's function and context (as cq_barrier_async_f / cq_barrier_sync_f for a BARRIER
 * item: a BARRIER item due later, or at a group's notification, is submitted as a barrier
 * then, by the thread that fires the timer or empties the group, as libdispatch does: work
 * submitted to the queue after that comes after the barrier). The submission holds
 * a reference to the item until the run is over (an item due at CQ_TIME_FOREVER is dropped at
 * once, as cq_after_f drops the call). A run that finds the item cancelled returns at once.
 */
CQ_EXPORT void cq_async_work_item(cq_queue_t queue, cq_work_item_t item);
CQ_EXPORT void cq_sync_work_item(cq_queue_t queue, cq_work_item_t item);
CQ_EXPORT void cq_after_work_item(cq_time_t when, cq_queue_t queue, cq_work_item_t item);
CQ_EXPORT void cq_group_async_work_item(cq_group_t group, cq_queue_t queue, cq_work_item_t item);
CQ_EXPORT void cq_group_notify_work_item(cq_group_t group, cq_queue_t queue,
                                         cq_work_item_t item);

/*
 * cq_work_item_wait
 *   Blocks until the item has finished (above) or `timeout` passes. Returns 0 once finished,
 *   non-zero on timeout (-1 with errno ETIMEDOUT, as libdispatch on Linux). May be called any
 *   number of times, from any thread; waiting for an
 *   item from its own run would wait for ever and is not detected. Everything the first run
 *   did happens-before a 0 return.
 */
CQ_EXPORT intptr_t cq_work_item_wait(cq_work_item_t item, cq_time_t timeout);

/*
 * cq_work_item_notify_f
 *   Submits `function(context)` to `queue` once the item has finished (at once if it has).
 *   Any number of notifications may be registered; each runs once.
 */
CQ_EXPORT void cq_work_item_notify_f(cq_work_item_t item, cq_queue_t queue, void *context,
                                     cq_function_t function);

/*
 * cq_work_item_notify_work_item
 *   Submits the work item `notification` to `queue` once `item` has finished (at once if it
 *   has), as cq_async_work_item would: a BARRIER notification is queued as a barrier by the
 *   thread that finishes `item`, so work submitted to `queue` after that comes after it. The
 *   submission holds a reference to `notification` until its run is over.
 */
CQ_EXPORT void cq_work_item_notify_work_item(cq_work_item_t item, cq_queue_t queue,
                                             cq_work_item_t notification);

/*
 * cq_work_item_cancel
 *   Marks the item cancelled: no run starts after this (submissions still queued return at
 *   once). A run already in progress is not interrupted; the item finishes when it returns.
 *   If no run had started, the item finishes now (waiters return, notifications run).
 *   Idempotent; thread-safe; never blocks.
 */
CQ_EXPORT void cq_work_item_cancel(cq_work_item_t item);

/* cq_work_item_testcancel: non-zero once the item was cancelled. */
CQ_EXPORT intptr_t cq_work_item_testcancel(cq_work_item_t item);

/*
 * Not API: the blocks cq_block_create (blocks.h) makes. Such a block is a real block of the
 * blocks ABI ("Block-ABI-Apple"), laid out by hand so that it can hold its work item: the
 * header builds it on the stack with this library's descriptor, and the blocks runtime's
 * _Block_copy moves it to the heap and calls the descriptor's copy helper (which retains the
 * item); its last _Block_release calls the dispose helper (which releases it). Calling the
 * block performs the item. The descriptor's address tells such a block from any other.
 */
struct cq__work_block;
struct cq__work_block_descriptor {
    unsigned long reserved;
    unsigned long size;
    void (*copy)(struct cq__work_block *dst, const struct cq__work_block *src);
    void (*dispose)(const struct cq__work_block *block);
};
/* The head every block starts with (the blocks ABI): what may be read of any block. A block
 * that captures nothing is only this (32 bytes); read through cq__work_block, its descriptor
 * was an access beyond the object for UBSan's object-size check. */
struct cq__block_head {
    void *isa;
    int flags;
    int reserved;
    void (*invoke)(void *block);
    const void *descriptor;
};
struct cq__work_block {
    void *isa;
    int flags;
    int reserved;
    void (*invoke)(struct cq__work_block *block);
    const struct cq__work_block_descriptor *descriptor;
    cq_work_item_t item;
};
CQ_EXPORT const struct cq__work_block_descriptor cq__work_block_descriptor;
CQ_EXPORT void cq__work_block_invoke(struct cq__work_block *block);
/* The item of a block from cq_block_create, or NULL for any other block. */
CQ_EXPORT cq_work_item_t cq__work_block_item(const void *block);
/* The same, or abort naming `call` if it is not one. */
CQ_EXPORT cq_work_item_t cq__work_block_item_check(const void *block, const char *call);

CQ_END_DECLS

#endif /* CQUEUECORE_WORK_ITEM_H */
