/*
 * CQueueCore — the block forms of the _f calls, for C and C++ compiled with clang -fblocks.
 *
 * Header-only: each block form is a static inline wrapper over its _f call, so the library is
 * built without -fblocks (gcc builds it) and the same libcqueuecore serves both kinds of callers.
 * The forms are declared when the compiler has blocks (__BLOCKS__), except
 *   - in Swift's clang importer (__swift__): Swift code submits closures through SwiftQueues;
 *   - when the includer defines CQ_NO_BLOCKS.
 * CQ_HAVE_BLOCKS is defined to 1 when they are declared.
 *
 * Memory: a block that runs after the call returns (async, barrier_async, after, group_async,
 * group_notify, source handlers) is copied with Block_copy at the call and released with
 * Block_release after it has run — a handler when it is replaced or can no longer run. A block
 * that runs before the call returns (sync, barrier_sync, apply, once) is not copied. A NULL block
 * is passed on as a NULL function, so the _f call reports it (it aborts with a message).
 *
 * Linking: a program that uses blocks links the blocks runtime (-lBlocksRuntime: Debian's
 * libblocksruntime-dev, or libBlocksRuntime.so in the Swift toolchain's lib/swift/linux). This
 * header declares the two runtime entry points it calls itself, exactly as <Block.h> does, so
 * <Block.h> is not needed to compile it (including it too is fine).
 *
 * Ordering, blocking and thread-safety are those of the _f calls (queue.h, group.h, once.h,
 * apply.h, source.h).
 */
#ifndef CQUEUECORE_BLOCKS_H
#define CQUEUECORE_BLOCKS_H

#include <cqueuecore/base.h>
#include <cqueuecore/queue.h>
#include <cqueuecore/group.h>
#include <cqueuecore/once.h>
#include <cqueuecore/apply.h>
#include <cqueuecore/source.h>
#include <cqueuecore/work_item.h>

#if defined(__BLOCKS__) && !defined(__swift__) && !defined(CQ_NO_BLOCKS)
#define CQ_HAVE_BLOCKS 1

#include <errno.h>

CQ_BEGIN_DECLS

/* The block form of a unit of work. */
typedef void (^cq_block_t)(void);

/* The blocks runtime (libBlocksRuntime), declared as <Block.h> declares it. */
void *_Block_copy(const void *block);
void _Block_release(const void *block);
extern void *_NSConcreteStackBlock[32];

/* The source handler setters with their own context (cq_source_set_*_handler_ctx_f) are in
 * source.h: the block forms keep the copied block there. */

/* Trampolines: the context is the block. Not API. */
static inline void cq__block_invoke(void *block)
{
    ((cq_block_t)block)();
}

static inline void cq__block_invoke_release(void *block)
{
    ((cq_block_t)block)();
    _Block_release(block);
}

static inline void cq__block_release(void *block)
{
    _Block_release(block);
}

static inline void cq__block_apply_invoke(void *block, size_t iteration)
{
    ((void (^)(size_t))block)(iteration);
}

static inline void *cq__block_copy(cq_block_t block)
{
    return block ? _Block_copy((const void *)block) : NULL;
}

/* The work item of a block made by cq_block_create, or NULL (see work_item.h). */
static inline cq_work_item_t cq__block_work_item(cq_block_t block)
{
    const struct cq__block_head *head = (const struct cq__block_head *)(const void *)block;
    if (head == NULL || head->descriptor != (const void *)&cq__work_block_descriptor) {
        return NULL;
    }
    return ((const struct cq__work_block *)(const void *)block)->item;
}

/* cq_async_f: runs `block` on `queue` later; copied now, released after it has run. A block
 * from cq_block_create is submitted as its work item (so its BARRIER flag is honoured). */
static inline void cq_async(cq_queue_t queue, cq_block_t block)
{
    cq_work_item_t item = cq__block_work_item(block);
    if (item) {
        cq_async_work_item(queue, item);
        return;
    }
    cq_async_f(queue, cq__block_copy(block), block ? cq__block_invoke_release : NULL);
}

/* cq_sync_f: runs `block` on `queue` and returns after it has run. Not copied. A block from
 * cq_block_create is submitted as its work item. */
static inline void cq_sync(cq_queue_t queue, cq_block_t block)
{
    cq_work_item_t item = cq__block_work_item(block);
    if (item) {
        cq_sync_work_item(queue, item);
        return;
    }
    cq_sync_f(queue, (void *)block, block ? cq__block_invoke : NULL);
}

/* cq_barrier_async_f with a block (copied, released after it has run). */
static inline void cq_barrier_async(cq_queue_t queue, cq_block_t block)
{
    cq_barrier_async_f(queue, cq__block_copy(block), block ? cq__block_invoke_release : NULL);
}

/* cq_barrier_sync_f with a block (not copied). */
static inline void cq_barrier_sync(cq_queue_t queue, cq_block_t block)
{
    cq_barrier_sync_f(queue, (void *)block, block ? cq__block_invoke : NULL);
}

/*
 * cq_after_f with a block (copied, released after it has run). As in libdispatch, a block due at
 * CQ_TIME_FOREVER would never run: it is neither copied nor submitted.
 */
static inline void cq_after(cq_time_t when, cq_queue_t queue, cq_block_t block)
{
    if (when == CQ_TIME_FOREVER) {
        return;
    }
    cq_work_item_t item = cq__block_work_item(block);
    if (item) {
        cq_after_work_item(when, queue, item);
        return;
    }
    cq_after_f(when, queue, cq__block_copy(block), block ? cq__block_invoke_release : NULL);
}

/* cq_apply_f with a block called as block(i) (not copied). */
static inline void cq_apply(size_t iterations, cq_queue_t queue, void (^block)(size_t))
{
    cq_apply_f(iterations, queue, (void *)block, block ? cq__block_apply_invoke : NULL);
}

/* cq_once_f with a block (not copied). */
static inline void cq_once(cq_once_t *predicate, cq_block_t block)
{
    cq_once_f(predicate, (void *)block, block ? cq__block_invoke : NULL);
}

/* cq_group_async_f with a block (copied, released after it has run, before the group leave).
 * A block from cq_block_create is submitted as its work item. */
static inline void cq_group_async(cq_group_t group, cq_queue_t queue, cq_block_t block)
{
    cq_work_item_t item = cq__block_work_item(block);
    if (item) {
        cq_group_async_work_item(group, queue, item);
        return;
    }
    cq_group_async_f(group, queue, cq__block_copy(block), block ? cq__block_invoke_release : NULL);
}

/* cq_group_notify_f with a block (copied, released after it has run). A block from
 * cq_block_create is submitted as its work item. */
static inline void cq_group_notify(cq_group_t group, cq_queue_t queue, cq_block_t block)
{
    cq_work_item_t item = cq__block_work_item(block);
    if (item) {
        cq_group_notify_work_item(group, queue, item);
        return;
    }
    cq_group_notify_f(group, queue, cq__block_copy(block), block ? cq__block_invoke_release : NULL);
}

/*
 * The source handler setters with blocks: the block is copied and kept as the handler's own
 * context; it is released when the handler is replaced or can no longer run (see above). NULL
 * removes the handler. The source's context (cq_set_context) is left alone.
 */
static inline void cq_source_set_event_handler(cq_source_t source, cq_block_t handler)
{
    if (handler) {
        cq_source_set_event_handler_ctx_f(source, cq__block_copy(handler), cq__block_invoke,
                                          cq__block_release);
    } else {
        cq_source_set_event_handler_f(source, NULL);
    }
}

static inline void cq_source_set_cancel_handler(cq_source_t source, cq_block_t handler)
{
    if (handler) {
        cq_source_set_cancel_handler_ctx_f(source, cq__block_copy(handler), cq__block_invoke,
                                           cq__block_release);
    } else {
        cq_source_set_cancel_handler_f(source, NULL);
    }
}

static inline void cq_source_set_registration_handler(cq_source_t source, cq_block_t handler)
{
    if (handler) {
        cq_source_set_registration_handler_ctx_f(source, cq__block_copy(handler),
                                                 cq__block_invoke, cq__block_release);
    } else {
        cq_source_set_registration_handler_f(source, NULL);
    }
}

/* ---- work items as blocks (work_item.h; libdispatch: dispatch_block_create ...) ------------ */

static inline void cq__block_release_context(void *block)
{
    _Block_release(block);
}

/*
 * cq_block_create
 *   A new block that performs a new work item running `block` (copied; released with the
 *   item). Call it, submit it (cq_async, cq_sync, cq_after, cq_group_async and cq_group_notify
 *   honour its BARRIER flag), wait
 *   for it, observe it, cancel it with the cq_block_* calls below; release it with
 *   Block_release. Returns NULL with errno EINVAL for a NULL block or an unknown flag.
 *   libdispatch: dispatch_block_create.
 */
static inline cq_block_t cq_block_create(unsigned long flags, cq_block_t block)
{
    if (block == NULL) {
        errno = EINVAL;
        return NULL;
    }
    void *copy = _Block_copy((const void *)block);
    cq_work_item_t item = cq_work_item_create_f(flags, copy, cq__block_invoke);
    if (item == NULL) {
        _Block_release(copy);
        return NULL;
    }
    cq_set_context(item, copy);
    cq_set_finalizer_f(item, cq__block_release_context);
    /* A stack block of the blocks ABI; the runtime's copy calls the descriptor's copy helper,
     * which retains the item for the heap block. */
    struct cq__work_block literal = {(void *)_NSConcreteStackBlock, 1 << 25 /* HAS_COPY_DISPOSE */,
                                     0, cq__work_block_invoke, &cq__work_block_descriptor, item};
    cq_block_t result = (cq_block_t)_Block_copy(&literal);
    cq_release(item); /* the heap block holds it now */
    return result;
}

/* Makes, performs and releases a work block. libdispatch: dispatch_block_perform. */
static inline void cq_block_perform(unsigned long flags, cq_block_t block)
{
    cq_block_t b = cq_block_create(flags, block);
    if (b == NULL) {
        cq__work_block_item_check(NULL, "cq_block_perform");
    }
    b();
    _Block_release((const void *)b);
}

/* cq_work_item_wait of a block from cq_block_create. libdispatch: dispatch_block_wait. */
static inline intptr_t cq_block_wait(cq_block_t block, cq_time_t timeout)
{
    return cq_work_item_wait(cq__work_block_item_check((const void *)block, "cq_block_wait"),
                             timeout);
}

/* cq_work_item_notify_f with a notification block (copied, released after it has run).
 * libdispatch: dispatch_block_notify. */
static inline void cq_block_notify(cq_block_t block, cq_queue_t queue, cq_block_t notification)
{
    if (notification == NULL) {
        cq__work_block_item_check(NULL, "cq_block_notify: the notification"); /* stops */
    }
    cq_work_item_t item = cq__block_work_item(notification);
    if (item) { /* a block from cq_block_create: its flags (a barrier) hold */
        cq_work_item_notify_work_item(
            cq__work_block_item_check((const void *)block, "cq_block_notify"), queue, item);
        return;
    }
    cq_work_item_notify_f(cq__work_block_item_check((const void *)block, "cq_block_notify"),
                          queue, cq__block_copy(notification),
                          notification ? cq__block_invoke_release : NULL);
}

/* cq_work_item_cancel. libdispatch: dispatch_block_cancel. */
static inline void cq_block_cancel(cq_block_t block)
{
    cq_work_item_cancel(cq__work_block_item_check((const void *)block, "cq_block_cancel"));
}

/* cq_work_item_testcancel. libdispatch: dispatch_block_testcancel. */
static inline intptr_t cq_block_testcancel(cq_block_t block)
{
    return cq_work_item_testcancel(
        cq__work_block_item_check((const void *)block, "cq_block_testcancel"));
}

CQ_END_DECLS

#endif /* __BLOCKS__ && !__swift__ && !CQ_NO_BLOCKS */

#endif /* CQUEUECORE_BLOCKS_H */
