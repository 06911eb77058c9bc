/*
 * CQueueCore — data objects: immutable, reference-counted byte containers made of regions.
 *
 * A data object is a sequence of bytes held in one or more contiguous regions. Building one
 * from others (concat, subrange) copies no bytes: the new object refers to the regions of the
 * old ones, which stay alive as long as something refers to them. Each region's memory is
 * released by its destructor once no data object refers to it any more.
 *
 * libdispatch: dispatch_data_* (dispatch/data.h) under the cq_ prefix, plus the function forms
 * of its private header (cq_data_create_f, cq_data_apply_f) and a few CQueueCore extensions
 * marked below. <cq_dispatch.h> maps the dispatch_data_* names.
 *
 * Objects: cq_retain / cq_release (object.h) count references, as for every CQueueCore object;
 * releasing more often than retained aborts with a message. cq_data_empty is a static object:
 * retain and release do nothing on it. Every call that returns a cq_data_t returns it with one
 * reference the caller owns (cq_data_empty too, where releasing it is harmless), never NULL:
 * cq_data_create* and cq_data_create_map return NULL with errno ENOMEM when memory runs out;
 * concat, subrange and copy_region abort with a message then (as libdispatch does).
 *
 * Thread-safety: data objects are immutable; every call may run on any thread, concurrently
 * with any other call on the same objects. No call blocks. A reference dropped on one thread
 * happens-before the destructor runs (the last release has acquire ordering).
 * A NULL object, or an object that is not a data object, aborts with a message naming the call.
 *
 * Costs: a data object with one region is one allocation (the object and, for
 * CQ_DATA_DESTRUCTOR_DEFAULT, the bytes inline after it). A composite (from concat or
 * subrange) is one allocation holding a flat array of (region, offset, length) records: a
 * composite of composites lists their regions directly, never nested. concat costs one
 * allocation and one retain per region; subrange one allocation and one retain per region it
 * covers; apply none.
 */
#ifndef CQUEUECORE_DATA_H
#define CQUEUECORE_DATA_H

#include <cqueuecore/base.h>
#include <cqueuecore/object.h>
#include <cqueuecore/queue.h>
#include <cqueuecore/blocks.h>

CQ_BEGIN_DECLS

typedef struct cq_data_s *cq_data_t;

/*
 * cq_data_empty
 *   The data object of size 0. Static: retain and release do nothing on it. Every call that
 *   would return an empty object returns this one. libdispatch: dispatch_data_empty.
 *   cq_data_get_empty returns the same object, for languages that cannot use the macro.
 */
CQ_EXPORT struct cq_data_s cq_data_empty_s;
#define cq_data_empty (&cq_data_empty_s)
CQ_EXPORT cq_data_t cq_data_get_empty(void);

/*
 * Destructors
 *   What happens to a buffer given to cq_data_create* once no data object refers to it:
 *   CQ_DATA_DESTRUCTOR_DEFAULT  the bytes are copied at creation; the caller keeps the buffer.
 *   CQ_DATA_DESTRUCTOR_FREE     free(buffer) (a malloc'd buffer; ownership passes to the data).
 *   CQ_DATA_DESTRUCTOR_MUNMAP   munmap(buffer, size) (an mmap'd buffer; ownership passes).
 *   CQ_DATA_DESTRUCTOR_NONE     nothing (the caller keeps the buffer alive and unchanged for as
 *                               long as any data object may refer to it). CQueueCore extension
 *                               (libdispatch has it privately).
 *   otherwise                   the block / function runs asynchronously on `queue` (NULL: the
 *                               default global queue): the caller frees the buffer there.
 *   FREE, MUNMAP and NONE act on the thread that drops the last reference, inside that
 *   cq_release; a block or function is submitted to its queue there.
 *   The constants are accepted by both cq_data_create (a block) and cq_data_create_f (a
 *   function): without blocks they are functions; under clang -fblocks they convert to either
 *   (in C they are `void *`: passing one to the function form is a conversion -Wpedantic
 *   mentions, which the _F names below, always functions, avoid). The functions behind them
 *   are markers, compared by address: never call them.
 */
#define CQ_DATA_DESTRUCTOR_DEFAULT NULL
CQ_EXPORT void cq__data_destructor_free(void *buffer);
CQ_EXPORT void cq__data_destructor_munmap(void *buffer);
CQ_EXPORT void cq__data_destructor_none(void *buffer);
#define CQ_DATA_DESTRUCTOR_FREE_F (&cq__data_destructor_free)
#define CQ_DATA_DESTRUCTOR_MUNMAP_F (&cq__data_destructor_munmap)
#define CQ_DATA_DESTRUCTOR_NONE_F (&cq__data_destructor_none)
#if defined(CQ_HAVE_BLOCKS) && defined(__cplusplus)
CQ_END_DECLS
/* Converts to a block (cq_data_create) and to a function (cq_data_create_f). Not API. */
struct cq__data_destructor_marker {
    cq_function_t function;
    operator cq_block_t() const { return (cq_block_t)(void *)(uintptr_t)function; }
    operator cq_function_t() const { return function; }
};
CQ_BEGIN_DECLS
#define CQ__DATA_DESTRUCTOR(name) (cq__data_destructor_marker{&cq__data_destructor_##name})
#elif defined(CQ_HAVE_BLOCKS)
#define CQ__DATA_DESTRUCTOR(name) ((void *)(uintptr_t)&cq__data_destructor_##name)
#else
#define CQ__DATA_DESTRUCTOR(name) (&cq__data_destructor_##name)
#endif
#define CQ_DATA_DESTRUCTOR_FREE CQ__DATA_DESTRUCTOR(free)
#define CQ_DATA_DESTRUCTOR_MUNMAP CQ__DATA_DESTRUCTOR(munmap)
#define CQ_DATA_DESTRUCTOR_NONE CQ__DATA_DESTRUCTOR(none)

/*
 * cq_data_create_f
 *   A data object holding `size` bytes at `buffer`, with the destructor above; a function
 *   destructor is called as destructor(buffer) on `queue`. `queue` is retained until then.
 *   size 0 (or buffer NULL): returns cq_data_empty, and the buffer is handed to its destructor
 *   at once (freed, unmapped, or the function submitted to the queue; DEFAULT: nothing).
 *   Returns NULL with errno ENOMEM if memory runs out (the destructor does not run then).
 *   libdispatch: dispatch_data_create_f (private header).
 */
CQ_EXPORT cq_data_t cq_data_create_f(const void *buffer, size_t size, cq_queue_t queue,
                                     cq_function_t destructor) CQ_WARN_RESULT;

/*
 * cq_data_create_ctx_f
 *   As cq_data_create_f with a function destructor, called as destructor(context) on `queue`
 *   (NULL: the default global queue). destructor must not be NULL or one of the constants.
 *   The block form and Swift build on it. CQueueCore extension.
 */
CQ_EXPORT cq_data_t cq_data_create_ctx_f(const void *buffer, size_t size, cq_queue_t queue,
                                         void *context, cq_function_t destructor) CQ_WARN_RESULT;

/*
 * cq_data_get_size
 *   The number of bytes. libdispatch: dispatch_data_get_size.
 */
CQ_EXPORT size_t cq_data_get_size(cq_data_t data);

/*
 * cq_data_create_concat
 *   `a` followed by `b`, without copying: a composite listing the regions of both (flattened).
 *   If one is empty, returns the other (retained). Neither argument is consumed.
 *   libdispatch: dispatch_data_create_concat.
 */
CQ_EXPORT cq_data_t cq_data_create_concat(cq_data_t a, cq_data_t b) CQ_WARN_RESULT;

/*
 * cq_data_create_subrange
 *   The bytes [offset, offset + length) of `data`, without copying. Clamped as libdispatch
 *   does: offset at or past the end, or length 0, gives cq_data_empty; a length running past
 *   the end stops at the end; the whole range returns `data` itself (retained).
 *   libdispatch: dispatch_data_create_subrange.
 */
CQ_EXPORT cq_data_t cq_data_create_subrange(cq_data_t data, size_t offset,
                                            size_t length) CQ_WARN_RESULT;

/*
 * cq_data_applier_function_t / cq_data_apply_f
 *   Calls applier(context, region, offset, buffer, size) for each contiguous region in order:
 *   `buffer`/`size` are the region's bytes, `offset` where they start in `data`, `region` the
 *   data object whose memory holds them (it may be larger than the bytes passed; valid during
 *   the call only, unless retained). Stops at the first call that returns false.
 *   Returns true if every call returned true (and for empty data, where nothing is called).
 *   Runs on the calling thread; allocates nothing. libdispatch: dispatch_data_apply_f
 *   (private header).
 */
typedef bool (*cq_data_applier_function_t)(void *context, cq_data_t region, size_t offset,
                                           const void *buffer, size_t size);
CQ_EXPORT bool cq_data_apply_f(cq_data_t data, void *context, cq_data_applier_function_t applier);

/*
 * cq_data_copy_region
 *   The region holding byte `location`, as a data object, and in *offset_out where that region
 *   starts in `data`. No copy: a region that is a whole buffer returns that buffer's object; a
 *   part of one returns a subrange. location at or past the end: returns cq_data_empty with
 *   *offset_out = size. libdispatch: dispatch_data_copy_region.
 */
CQ_EXPORT cq_data_t cq_data_copy_region(cq_data_t data, size_t location,
                                        size_t *offset_out) CQ_WARN_RESULT;

/*
 * cq_data_create_map
 *   One contiguous view of all the bytes: returns a data object with a single region, and its
 *   bytes and size in *buffer_out / *size_out (each may be NULL). Data that is already one
 *   region is returned itself (retained), with no copy; otherwise the bytes are copied once
 *   into a new object that owns the copy. The view stays valid while the returned object is
 *   retained. Empty data: cq_data_empty, *buffer_out NULL, *size_out 0. Returns NULL with
 *   errno ENOMEM if the copy cannot be allocated. libdispatch: dispatch_data_create_map.
 */
CQ_EXPORT cq_data_t cq_data_create_map(cq_data_t data, const void **buffer_out,
                                       size_t *size_out) CQ_WARN_RESULT;

/*
 * CQueueCore extensions: indexed access to the regions, without allocating (used by Swift's
 * SQData to walk the bytes).
 *
 * cq_data_get_region_count
 *   How many contiguous regions `data` has (0 for empty data).
 * cq_data_get_region
 *   Region `index` (0 <= index < count): returns its bytes and stores its size in *size_out
 *   and where it starts in `data` in *offset_out (each may be NULL). Aborts on an index out of
 *   range. The bytes are valid while `data` is retained.
 * cq_data_region_index
 *   The index of the region holding byte `location` (binary search: O(log regions)); the
 *   region count if location is at or past the end.
 * cq_data_copy_bytes
 *   Copies the bytes [offset, offset + length) of `data` to `destination`, clamped to the end
 *   of data; returns the number copied.
 */
CQ_EXPORT size_t cq_data_get_region_count(cq_data_t data);
CQ_EXPORT const void *cq_data_get_region(cq_data_t data, size_t index, size_t *size_out,
                                         size_t *offset_out);
CQ_EXPORT size_t cq_data_region_index(cq_data_t data, size_t location);
CQ_EXPORT size_t cq_data_copy_bytes(cq_data_t data, size_t offset, void *destination,
                                    size_t length);

/* ---- block forms (clang -fblocks; see blocks.h) ------------------------------------------- */
#if defined(CQ_HAVE_BLOCKS)

/* The block form of an applier. libdispatch: dispatch_data_applier_t. */
typedef bool (^cq_data_applier_t)(cq_data_t region, size_t offset, const void *buffer,
                                  size_t size);

/* Trampolines. Not API. */
static inline bool cq__data_applier_invoke(void *block, cq_data_t region, size_t offset,
                                           const void *buffer, size_t size)
{
    return ((cq_data_applier_t)block)(region, offset, buffer, size);
}

/*
 * cq_data_create
 *   cq_data_create_f with a block destructor (copied; run once on `queue`, then released), or
 *   one of the CQ_DATA_DESTRUCTOR_* constants. libdispatch: dispatch_data_create.
 */
static inline cq_data_t cq_data_create(const void *buffer, size_t size, cq_queue_t queue,
                                       cq_block_t destructor)
{
    uintptr_t d = (uintptr_t)(void *)destructor;
    if (d == 0 || d == (uintptr_t)&cq__data_destructor_free ||
        d == (uintptr_t)&cq__data_destructor_munmap ||
        d == (uintptr_t)&cq__data_destructor_none) {
        return cq_data_create_f(buffer, size, queue, (cq_function_t)d);
    }
    void *copy = _Block_copy((const void *)destructor);
    cq_data_t data = cq_data_create_ctx_f(buffer, size, queue, copy, cq__block_invoke_release);
    if (data == NULL) {
        _Block_release(copy);
    }
    return data;
}

/*
 * cq_data_apply
 *   cq_data_apply_f with a block (not copied: it runs before the call returns).
 *   libdispatch: dispatch_data_apply.
 */
static inline bool cq_data_apply(cq_data_t data, cq_data_applier_t applier)
{
    return cq_data_apply_f(data, (void *)applier, applier ? cq__data_applier_invoke : NULL);
}

#endif /* CQ_HAVE_BLOCKS */

CQ_END_DECLS

#endif /* CQUEUECORE_DATA_H */
