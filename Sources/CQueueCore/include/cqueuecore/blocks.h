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

#if defined(__BLOCKS__) && !defined(__swift__) && !defined(CQ_NO_BLOCKS)
#define CQ_HAVE_BLOCKS 1

CQ_BEGIN_DECLS

/* The block form of a unit of work. */
typedef void (^cq_block_t)(void);

/* The blocks runtime (libBlocksRuntime), declared as <Block.h> declares it. */
void *_Block_copy(const void *block);
void _Block_release(const void *block);

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

/* cq_async_f: runs `block` on `queue` later; copied now, released after it has run. */
static inline void cq_async(cq_queue_t queue, cq_block_t block)
{
    cq_async_f(queue, cq__block_copy(block), block ? cq__block_invoke_release : NULL);
}

/* cq_sync_f: runs `block` on `queue` and returns after it has run. Not copied. */
static inline void cq_sync(cq_queue_t queue, cq_block_t block)
{
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

/* cq_group_async_f with a block (copied, released after it has run, before the group leave). */
static inline void cq_group_async(cq_group_t group, cq_queue_t queue, cq_block_t block)
{
    cq_group_async_f(group, queue, cq__block_copy(block), block ? cq__block_invoke_release : NULL);
}

/* cq_group_notify_f with a block (copied, released after it has run). */
static inline void cq_group_notify(cq_group_t group, cq_queue_t queue, cq_block_t block)
{
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

CQ_END_DECLS

#endif /* __BLOCKS__ && !__swift__ && !CQ_NO_BLOCKS */

#endif /* CQUEUECORE_BLOCKS_H */
