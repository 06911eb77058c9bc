/*
 * cq_dispatch.h — libdispatch's public C names, mapped onto CQueueCore.
 *
 * Existing C and C++ code written for libdispatch includes this header instead of
 * <dispatch/dispatch.h> and links libcqueuecore (plus -lBlocksRuntime when compiled with clang
 * -fblocks). Types are typedefs of the cq_ types, constants are macros, functions are static
 * inline wrappers over the cq_ calls, and the block forms come from cqueuecore/blocks.h.
 *
 * Every libdispatch name and what it maps to, including what maps differently or not at all, is
 * in docs/libdispatch-compat.md. In short:
 *   - workloops,
 *     mach and memory-pressure sources, dispatch_debug: not provided. Using one of their
 *     functions or types is a compile error whose message names the function and the reason.
 *   - dispatch_object_t is void *: every object type converts to it in C and C++.
 *   - QoS classes map onto the four global-queue priorities; autorelease frequencies are accepted
 *     and ignored (there are no autorelease pools on Linux).
 *   - dispatch_activate is cq_activate: it activates an inactive queue or a new source once,
 *     and does nothing on an active object.
 *   - dispatch_fd_t is int, as on Linux; dispatch I/O maps onto cq_io_* (cqueuecore/io.h).
 *
 * This header and libdispatch's cannot be used in one translation unit: including it after
 * <dispatch/dispatch.h> is an #error; including <dispatch/dispatch.h> after it fails on the
 * poisoned identifier __DISPATCH_PUBLIC__ ("attempt to use poisoned").
 *
 * Not part of the Swift module (module.modulemap excludes it): Swift code uses SwiftQueues.
 */
#ifndef CQ_DISPATCH_H
#define CQ_DISPATCH_H

#if defined(__DISPATCH_PUBLIC__) || defined(DISPATCH_API_VERSION) || defined(__DISPATCH_INDIRECT__)
/* It maps the same names onto CQueueCore: include one of the two. */
#error "cq_dispatch.h cannot be used together with libdispatch's <dispatch/dispatch.h>"
#else

#if defined(__GNUC__) || defined(__clang__)
/* cq_dispatch.h and libdispatch's headers cannot be mixed: a later #include of
 * <dispatch/dispatch.h> (or of one of its parts) fails with "attempt to use poisoned
 * __DISPATCH_PUBLIC__" (or __DISPATCH_INDIRECT__). */
#pragma GCC poison __DISPATCH_PUBLIC__ __DISPATCH_INDIRECT__
#endif

/* What <dispatch/dispatch.h> includes on Linux, which code written for it may rely on (its
 * os/generic_unix_base.h brings <sys/param.h> and <sys/sysmacros.h>, its source.h
 * <signal.h>: `signal(SIGPIPE, SIG_IGN)` compiles with the dispatch header alone). */
#include <sys/param.h>
#include <sys/types.h>
#if defined(__has_include)
#if __has_include(<sys/sysmacros.h>)
#include <sys/sysmacros.h>
#endif
#endif
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cqueuecore.h>

/* The libdispatch API revision whose names this header maps (libdispatch 6.x on Linux). */
#define DISPATCH_API_VERSION 20180109
/* Defined: the dispatch_* names come from CQueueCore. */
#define CQ_DISPATCH_COMPAT 1

CQ_BEGIN_DECLS

/* ==== base, objects ========================================================================= */

typedef cq_function_t dispatch_function_t;

/* libdispatch: a transparent union of the object pointers (C) or a base class (C++). Here every
 * object function takes void *, which any object pointer converts to. */
typedef void *dispatch_object_t;

#ifdef CQ_HAVE_BLOCKS
typedef cq_block_t dispatch_block_t;
#endif

static inline void dispatch_retain(dispatch_object_t object)
{
    cq_retain(object);
}

static inline void dispatch_release(dispatch_object_t object)
{
    cq_release(object);
}

static inline void *dispatch_get_context(dispatch_object_t object)
{
    return cq_get_context(object);
}

static inline void dispatch_set_context(dispatch_object_t object, void *context)
{
    cq_set_context(object, context);
}

/* As in libdispatch, not called when the context is NULL. */
static inline void dispatch_set_finalizer_f(dispatch_object_t object, dispatch_function_t finalizer)
{
    cq_set_finalizer_f(object, finalizer);
}

static inline void dispatch_suspend(dispatch_object_t object)
{
    cq_suspend(object);
}

static inline void dispatch_resume(dispatch_object_t object)
{
    cq_resume(object);
}

/* Inactive objects: new sources, queues made with an _INACTIVE attribute. Activating an active
 * object does nothing, as in libdispatch. */
static inline void dispatch_activate(dispatch_object_t object)
{
    cq_activate(object);
}

/* ==== time ================================================================================== */

typedef cq_time_t dispatch_time_t;

#ifdef NSEC_PER_SEC
#undef NSEC_PER_SEC
#endif
#ifdef USEC_PER_SEC
#undef USEC_PER_SEC
#endif
#ifdef NSEC_PER_USEC
#undef NSEC_PER_USEC
#endif
#ifdef NSEC_PER_MSEC
#undef NSEC_PER_MSEC
#endif
#define NSEC_PER_SEC 1000000000ull
#define NSEC_PER_MSEC 1000000ull
#define USEC_PER_SEC 1000000ull
#define NSEC_PER_USEC 1000ull

#define DISPATCH_TIME_NOW CQ_TIME_NOW
#define DISPATCH_TIME_FOREVER CQ_TIME_FOREVER
/* libdispatch: a constant (~1ull) resolved when used. Here: the wall-clock time now, an
 * expression (not usable where a constant expression is required). */
#define DISPATCH_WALLTIME_NOW (cq_walltime(NULL, 0))

static inline dispatch_time_t dispatch_time(dispatch_time_t when, int64_t delta)
{
    return cq_time(when, delta);
}

static inline dispatch_time_t dispatch_walltime(const struct timespec *when, int64_t delta)
{
    return cq_walltime(when, delta);
}

/* ==== queues ================================================================================ */

typedef cq_queue_t dispatch_queue_t;
typedef cq_queue_t dispatch_queue_global_t;
typedef cq_queue_t dispatch_queue_serial_t;
typedef cq_queue_t dispatch_queue_concurrent_t;
typedef cq_queue_t dispatch_queue_main_t;
typedef cq_queue_attr_t dispatch_queue_attr_t;
typedef long dispatch_queue_priority_t;
typedef unsigned int dispatch_qos_class_t;
typedef unsigned long dispatch_autorelease_frequency_t;

#define DISPATCH_QUEUE_PRIORITY_HIGH CQ_QUEUE_PRIORITY_HIGH
#define DISPATCH_QUEUE_PRIORITY_DEFAULT CQ_QUEUE_PRIORITY_DEFAULT
#define DISPATCH_QUEUE_PRIORITY_LOW CQ_QUEUE_PRIORITY_LOW
#define DISPATCH_QUEUE_PRIORITY_BACKGROUND CQ_QUEUE_PRIORITY_BACKGROUND

/* QoS classes (Apple's values; libdispatch on Linux does not define them). They select the
 * global queue of the matching priority: USER_INTERACTIVE and USER_INITIATED -> HIGH,
 * DEFAULT and UNSPECIFIED -> DEFAULT, UTILITY -> LOW, BACKGROUND -> BACKGROUND. */
#ifndef QOS_CLASS_USER_INTERACTIVE
#define QOS_CLASS_USER_INTERACTIVE 0x21u
#define QOS_CLASS_USER_INITIATED 0x19u
#define QOS_CLASS_DEFAULT 0x15u
#define QOS_CLASS_UTILITY 0x11u
#define QOS_CLASS_BACKGROUND 0x09u
#define QOS_CLASS_UNSPECIFIED 0x00u
#endif
#ifndef QOS_MIN_RELATIVE_PRIORITY
#define QOS_MIN_RELATIVE_PRIORITY (-15)
#endif

/* Autorelease frequencies: accepted and ignored. */
#define DISPATCH_AUTORELEASE_FREQUENCY_INHERIT 0ul
#define DISPATCH_AUTORELEASE_FREQUENCY_WORK_ITEM 1ul
#define DISPATCH_AUTORELEASE_FREQUENCY_NEVER 2ul

#define DISPATCH_QUEUE_SERIAL CQ_QUEUE_SERIAL
#define DISPATCH_QUEUE_CONCURRENT CQ_QUEUE_CONCURRENT
#define DISPATCH_QUEUE_SERIAL_INACTIVE \
    dispatch_queue_attr_make_initially_inactive(DISPATCH_QUEUE_SERIAL)
#define DISPATCH_QUEUE_CONCURRENT_INACTIVE \
    dispatch_queue_attr_make_initially_inactive(DISPATCH_QUEUE_CONCURRENT)
#define DISPATCH_QUEUE_SERIAL_WITH_AUTORELEASE_POOL DISPATCH_QUEUE_SERIAL
#define DISPATCH_QUEUE_CONCURRENT_WITH_AUTORELEASE_POOL DISPATCH_QUEUE_CONCURRENT
#define DISPATCH_TARGET_QUEUE_DEFAULT ((dispatch_queue_t)0)
#define DISPATCH_CURRENT_QUEUE_LABEL ((dispatch_queue_t)0)
/* dispatch_apply's "pick the queue for me": the default-priority global queue. */
#define DISPATCH_APPLY_AUTO ((dispatch_queue_t)0)

/*
 * Attributes libdispatch composes (initially inactive, with a QoS class) are small tagged values
 * here, below the first page (no object lives there), that dispatch_queue_create decodes:
 * CQ__DQA_TAG | CONCURRENT | INACTIVE | priority slot << 2 (0 none, 1 high, 2 default, 3 low,
 * 4 background). cq_queue_create itself knows only CQ_QUEUE_SERIAL and CQ_QUEUE_CONCURRENT.
 */
#define CQ__DQA_TAG 0x100u
#define CQ__DQA_CONCURRENT 0x1u
#define CQ__DQA_INACTIVE 0x2u
#define CQ__DQA_SLOT_SHIFT 2
#define CQ__DQA_SLOT_MASK (0x7u << CQ__DQA_SLOT_SHIFT)

/* The tag bits of an attribute; 0 for a value this header does not know (passed on as is). */
static inline uintptr_t cq__dqa_bits(dispatch_queue_attr_t attr)
{
    uintptr_t v = (uintptr_t)attr;
    if (v == 0) {
        return CQ__DQA_TAG;
    }
    if (attr == CQ_QUEUE_CONCURRENT) {
        return CQ__DQA_TAG | CQ__DQA_CONCURRENT;
    }
    if (v < 0x1000u && (v & CQ__DQA_TAG)) {
        return v;
    }
    return 0;
}

/* The priority slot of a QoS class (0 if it is not one), and the priority of a slot. */
static inline unsigned cq__dispatch_qos_slot(unsigned long qos)
{
    switch (qos) {
    case 0x21u: /* USER_INTERACTIVE */
    case 0x19u: /* USER_INITIATED */
        return 1;
    case 0x15u: /* DEFAULT */
        return 2;
    case 0x11u: /* UTILITY */
        return 3;
    case 0x09u: /* BACKGROUND */
    case 0x05u: /* MAINTENANCE (Apple's private class): background, as libdispatch */
        return 4;
    default:
        return 0;
    }
}

static inline intptr_t cq__dispatch_slot_priority(unsigned slot)
{
    switch (slot) {
    case 1:
        return CQ_QUEUE_PRIORITY_HIGH;
    case 3:
        return CQ_QUEUE_PRIORITY_LOW;
    case 4:
        return CQ_QUEUE_PRIORITY_BACKGROUND;
    default:
        return CQ_QUEUE_PRIORITY_DEFAULT;
    }
}

static inline dispatch_queue_attr_t dispatch_queue_attr_make_initially_inactive(
    dispatch_queue_attr_t attr)
{
    uintptr_t bits = cq__dqa_bits(attr);
    return bits ? (dispatch_queue_attr_t)(bits | CQ__DQA_INACTIVE) : attr;
}

/* The QoS class picks the global queue the new queue targets; the relative priority is checked
 * (QOS_MIN_RELATIVE_PRIORITY..0) and otherwise ignored. Invalid values return `attr`, as
 * libdispatch does. */
static inline dispatch_queue_attr_t dispatch_queue_attr_make_with_qos_class(
    dispatch_queue_attr_t attr, dispatch_qos_class_t qos_class, int relative_priority)
{
    uintptr_t bits = cq__dqa_bits(attr);
    unsigned slot = cq__dispatch_qos_slot(qos_class);
    if (!bits || relative_priority > 0 || relative_priority < QOS_MIN_RELATIVE_PRIORITY ||
        (slot == 0 && qos_class != 0)) {
        return attr;
    }
    bits = (bits & ~(uintptr_t)CQ__DQA_SLOT_MASK) | ((uintptr_t)slot << CQ__DQA_SLOT_SHIFT);
    return (dispatch_queue_attr_t)bits;
}

static inline dispatch_queue_attr_t dispatch_queue_attr_make_with_autorelease_frequency(
    dispatch_queue_attr_t attr, dispatch_autorelease_frequency_t frequency)
{
    (void)frequency;
    return attr;
}

/* cq_queue_create, after decoding the attributes above: an inactive queue is created inactive
 * (dispatch_activate activates it), a QoS class sets the target global queue. */
static inline dispatch_queue_t dispatch_queue_create(const char *label, dispatch_queue_attr_t attr)
{
    uintptr_t bits = cq__dqa_bits(attr);
    cq_queue_t queue;
    unsigned slot;
    if (bits == 0) {
        return cq_queue_create(label, attr); /* not ours: cq_queue_create judges it */
    }
    queue = ((bits & CQ__DQA_INACTIVE) ? cq_queue_create_inactive : cq_queue_create)(
        label, (bits & CQ__DQA_CONCURRENT) ? CQ_QUEUE_CONCURRENT : CQ_QUEUE_SERIAL);
    if (queue == NULL) {
        return NULL;
    }
    slot = (unsigned)((bits & CQ__DQA_SLOT_MASK) >> CQ__DQA_SLOT_SHIFT);
    if (slot != 0) {
        cq_set_target_queue(queue, cq_get_global_queue(cq__dispatch_slot_priority(slot), 0));
    }
    return queue;
}

/* dispatch_queue_create, then retargeted at `target` (NULL: the default for the attributes). */
static inline dispatch_queue_t dispatch_queue_create_with_target(const char *label,
                                                                 dispatch_queue_attr_t attr,
                                                                 dispatch_queue_t target)
{
    dispatch_queue_t queue = dispatch_queue_create(label, attr);
    if (queue != NULL && target != NULL) {
        cq_set_target_queue(queue, target);
    }
    return queue;
}

/* `identifier` is a DISPATCH_QUEUE_PRIORITY_* or a QOS_CLASS_* value (mapped as above). */
static inline dispatch_queue_global_t dispatch_get_global_queue(intptr_t identifier,
                                                                uintptr_t flags)
{
    unsigned slot = identifier > 0 ? cq__dispatch_qos_slot((unsigned long)identifier) : 0;
    return cq_get_global_queue(slot ? cq__dispatch_slot_priority(slot) : identifier, flags);
}

static inline dispatch_queue_main_t dispatch_get_main_queue(void)
{
    return cq_get_main_queue();
}

/* Deprecated in libdispatch. The innermost queue the caller runs on; outside any queue the main
 * queue on the main thread and the default global queue elsewhere, as libdispatch answers. */
static inline dispatch_queue_t dispatch_get_current_queue(void)
{
    cq_queue_t queue = cq_get_current_queue();
    if (queue) {
        return queue;
    }
    return cq_thread_is_main() ? cq_get_main_queue()
                               : cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0);
}

static inline CQ_NORETURN void dispatch_main(void)
{
    cq_main();
}

static inline void dispatch_async_f(dispatch_queue_t queue, void *context, dispatch_function_t work)
{
    cq_async_f(queue, context, work);
}

static inline void dispatch_sync_f(dispatch_queue_t queue, void *context, dispatch_function_t work)
{
    cq_sync_f(queue, context, work);
}

static inline void dispatch_barrier_async_f(dispatch_queue_t queue, void *context,
                                            dispatch_function_t work)
{
    cq_barrier_async_f(queue, context, work);
}

static inline void dispatch_barrier_sync_f(dispatch_queue_t queue, void *context,
                                           dispatch_function_t work)
{
    cq_barrier_sync_f(queue, context, work);
}

static inline void dispatch_apply_f(size_t iterations, dispatch_queue_t queue, void *context,
                                    void (*work)(void *context, size_t iteration))
{
    cq_apply_f(iterations, queue ? queue : cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0),
               context, work);
}

static inline void dispatch_after_f(dispatch_time_t when, dispatch_queue_t queue, void *context,
                                    dispatch_function_t work)
{
    cq_after_f(when, queue, context, work);
}

static inline void dispatch_set_target_queue(dispatch_object_t object, dispatch_queue_t queue)
{
    cq_set_target_queue(object, queue);
}

/* NULL (DISPATCH_CURRENT_QUEUE_LABEL): the queue the caller runs on; "" outside any queue. */
static inline const char *dispatch_queue_get_label(dispatch_queue_t queue)
{
    return cq_queue_get_label(queue);
}

static inline void dispatch_queue_set_specific(dispatch_queue_t queue, const void *key,
                                               void *context, dispatch_function_t destructor)
{
    cq_queue_set_specific(queue, key, context, destructor);
}

static inline void *dispatch_queue_get_specific(dispatch_queue_t queue, const void *key)
{
    return cq_queue_get_specific(queue, key);
}

static inline void *dispatch_get_specific(const void *key)
{
    return cq_get_specific(key);
}

static inline void dispatch_assert_queue(dispatch_queue_t queue)
{
    cq_assert_queue(queue);
}

/* Checks that the caller runs on `queue`; whether it runs there alone (as a barrier) is not
 * checked (the core has no such query yet). */
static inline void dispatch_assert_queue_barrier(dispatch_queue_t queue)
{
    cq_assert_queue_barrier(queue);
}

static inline void dispatch_assert_queue_not(dispatch_queue_t queue)
{
    cq_assert_queue_not(queue);
}

#ifdef NDEBUG
#define dispatch_assert_queue_debug(q) ((void)(0 && (q)))
#define dispatch_assert_queue_barrier_debug(q) ((void)(0 && (q)))
#define dispatch_assert_queue_not_debug(q) ((void)(0 && (q)))
#else
#define dispatch_assert_queue_debug(q) dispatch_assert_queue(q)
#define dispatch_assert_queue_barrier_debug(q) dispatch_assert_queue_barrier(q)
#define dispatch_assert_queue_not_debug(q) dispatch_assert_queue_not(q)
#endif

/* ==== semaphores, groups, once ============================================================== */

typedef cq_semaphore_t dispatch_semaphore_t;

static inline dispatch_semaphore_t dispatch_semaphore_create(intptr_t value)
{
    return cq_semaphore_create(value);
}

static inline intptr_t dispatch_semaphore_wait(dispatch_semaphore_t dsema, dispatch_time_t timeout)
{
    return cq_semaphore_wait(dsema, timeout);
}

static inline intptr_t dispatch_semaphore_signal(dispatch_semaphore_t dsema)
{
    return cq_semaphore_signal(dsema);
}

typedef cq_group_t dispatch_group_t;

static inline dispatch_group_t dispatch_group_create(void)
{
    return cq_group_create();
}

static inline void dispatch_group_async_f(dispatch_group_t group, dispatch_queue_t queue,
                                          void *context, dispatch_function_t work)
{
    cq_group_async_f(group, queue, context, work);
}

static inline intptr_t dispatch_group_wait(dispatch_group_t group, dispatch_time_t timeout)
{
    return cq_group_wait(group, timeout);
}

static inline void dispatch_group_notify_f(dispatch_group_t group, dispatch_queue_t queue,
                                           void *context, dispatch_function_t work)
{
    cq_group_notify_f(group, queue, context, work);
}

static inline void dispatch_group_enter(dispatch_group_t group)
{
    cq_group_enter(group);
}

static inline void dispatch_group_leave(dispatch_group_t group)
{
    cq_group_leave(group);
}

typedef cq_once_t dispatch_once_t;

static inline void dispatch_once_f(dispatch_once_t *predicate, void *context,
                                   dispatch_function_t function)
{
    cq_once_f(predicate, context, function);
}

/* ==== sources =============================================================================== */

typedef cq_source_t dispatch_source_t;
typedef cq_source_type_t dispatch_source_type_t;
typedef unsigned long dispatch_source_proc_flags_t;
typedef unsigned long dispatch_source_vnode_flags_t;
typedef unsigned long dispatch_source_timer_flags_t;

#define DISPATCH_SOURCE_TYPE_DATA_ADD CQ_SOURCE_TYPE_DATA_ADD
#define DISPATCH_SOURCE_TYPE_DATA_OR CQ_SOURCE_TYPE_DATA_OR
#define DISPATCH_SOURCE_TYPE_DATA_REPLACE CQ_SOURCE_TYPE_DATA_REPLACE
#define DISPATCH_SOURCE_TYPE_PROC CQ_SOURCE_TYPE_PROC
#define DISPATCH_SOURCE_TYPE_READ CQ_SOURCE_TYPE_READ
#define DISPATCH_SOURCE_TYPE_SIGNAL CQ_SOURCE_TYPE_SIGNAL
#define DISPATCH_SOURCE_TYPE_TIMER CQ_SOURCE_TYPE_TIMER
#define DISPATCH_SOURCE_TYPE_VNODE CQ_SOURCE_TYPE_VNODE
#define DISPATCH_SOURCE_TYPE_WRITE CQ_SOURCE_TYPE_WRITE

#define DISPATCH_PROC_EXIT CQ_PROC_EXIT
#define DISPATCH_PROC_FORK CQ_PROC_FORK
#define DISPATCH_PROC_EXEC CQ_PROC_EXEC
#define DISPATCH_PROC_SIGNAL CQ_PROC_SIGNAL

#define DISPATCH_VNODE_DELETE CQ_VNODE_DELETE
#define DISPATCH_VNODE_WRITE CQ_VNODE_WRITE
#define DISPATCH_VNODE_EXTEND CQ_VNODE_EXTEND
#define DISPATCH_VNODE_ATTRIB CQ_VNODE_ATTRIB
#define DISPATCH_VNODE_LINK CQ_VNODE_LINK
#define DISPATCH_VNODE_RENAME CQ_VNODE_RENAME
#define DISPATCH_VNODE_REVOKE CQ_VNODE_REVOKE

/* Accepted for timers and then dropped (the mask of the source reads 0): pass a leeway of 0 for
 * the tightest timing. */
#define DISPATCH_TIMER_STRICT 0x1ul

/* A NULL queue means the default global queue. */
static inline dispatch_source_t dispatch_source_create(dispatch_source_type_t type,
                                                       uintptr_t handle, uintptr_t mask,
                                                       dispatch_queue_t queue)
{
    if (type == CQ_SOURCE_TYPE_TIMER) {
        mask &= ~(uintptr_t)DISPATCH_TIMER_STRICT;
    }
    return cq_source_create(type, handle, mask, queue);
}

static inline void dispatch_source_set_event_handler_f(dispatch_source_t source,
                                                       dispatch_function_t handler)
{
    cq_source_set_event_handler_f(source, handler);
}

static inline void dispatch_source_set_cancel_handler_f(dispatch_source_t source,
                                                        dispatch_function_t handler)
{
    cq_source_set_cancel_handler_f(source, handler);
}

static inline void dispatch_source_set_registration_handler_f(dispatch_source_t source,
                                                              dispatch_function_t handler)
{
    cq_source_set_registration_handler_f(source, handler);
}

static inline void dispatch_source_cancel(dispatch_source_t source)
{
    cq_source_cancel(source);
}

static inline intptr_t dispatch_source_testcancel(dispatch_source_t source)
{
    return cq_source_testcancel(source);
}

static inline uintptr_t dispatch_source_get_handle(dispatch_source_t source)
{
    return cq_source_get_handle(source);
}

static inline uintptr_t dispatch_source_get_mask(dispatch_source_t source)
{
    return cq_source_get_mask(source);
}

static inline uintptr_t dispatch_source_get_data(dispatch_source_t source)
{
    return cq_source_get_data(source);
}

static inline void dispatch_source_merge_data(dispatch_source_t source, uintptr_t value)
{
    cq_source_merge_data(source, value);
}

static inline void dispatch_source_set_timer(dispatch_source_t source, dispatch_time_t start,
                                             uint64_t interval, uint64_t leeway)
{
    cq_source_set_timer(source, start, interval, leeway);
}

/* ==== data objects (cqueuecore/data.h) ======================================================= */

typedef cq_data_t dispatch_data_t;
#define dispatch_data_empty cq_data_empty
#define DISPATCH_DATA_DESTRUCTOR_DEFAULT CQ_DATA_DESTRUCTOR_DEFAULT
#define DISPATCH_DATA_DESTRUCTOR_FREE CQ_DATA_DESTRUCTOR_FREE
#define DISPATCH_DATA_DESTRUCTOR_MUNMAP CQ_DATA_DESTRUCTOR_MUNMAP

static inline size_t dispatch_data_get_size(dispatch_data_t data)
{
    return cq_data_get_size(data);
}

static inline dispatch_data_t dispatch_data_create_map(dispatch_data_t data,
                                                       const void **buffer_ptr, size_t *size_ptr)
{
    return cq_data_create_map(data, buffer_ptr, size_ptr);
}

static inline dispatch_data_t dispatch_data_create_concat(dispatch_data_t data1,
                                                          dispatch_data_t data2)
{
    return cq_data_create_concat(data1, data2);
}

static inline dispatch_data_t dispatch_data_create_subrange(dispatch_data_t data, size_t offset,
                                                            size_t length)
{
    return cq_data_create_subrange(data, offset, length);
}

static inline dispatch_data_t dispatch_data_copy_region(dispatch_data_t data, size_t location,
                                                        size_t *offset_ptr)
{
    return cq_data_copy_region(data, location, offset_ptr);
}

/* ==== block forms (clang -fblocks) ========================================================== */

#ifdef CQ_HAVE_BLOCKS

static inline void dispatch_async(dispatch_queue_t queue, dispatch_block_t block)
{
    cq_async(queue, block);
}

static inline void dispatch_sync(dispatch_queue_t queue, dispatch_block_t block)
{
    cq_sync(queue, block);
}

static inline void dispatch_barrier_async(dispatch_queue_t queue, dispatch_block_t block)
{
    cq_barrier_async(queue, block);
}

static inline void dispatch_barrier_sync(dispatch_queue_t queue, dispatch_block_t block)
{
    cq_barrier_sync(queue, block);
}

static inline void dispatch_apply(size_t iterations, dispatch_queue_t queue,
                                  void (^block)(size_t iteration))
{
    cq_apply(iterations, queue ? queue : cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), block);
}

static inline void dispatch_after(dispatch_time_t when, dispatch_queue_t queue,
                                  dispatch_block_t block)
{
    cq_after(when, queue, block);
}

static inline void dispatch_once(dispatch_once_t *predicate, dispatch_block_t block)
{
    cq_once(predicate, block);
}

static inline void dispatch_group_async(dispatch_group_t group, dispatch_queue_t queue,
                                        dispatch_block_t block)
{
    cq_group_async(group, queue, block);
}

static inline void dispatch_group_notify(dispatch_group_t group, dispatch_queue_t queue,
                                         dispatch_block_t block)
{
    cq_group_notify(group, queue, block);
}

static inline void dispatch_source_set_event_handler(dispatch_source_t source,
                                                     dispatch_block_t handler)
{
    cq_source_set_event_handler(source, handler);
}

static inline void dispatch_source_set_cancel_handler(dispatch_source_t source,
                                                      dispatch_block_t handler)
{
    cq_source_set_cancel_handler(source, handler);
}

static inline void dispatch_source_set_registration_handler(dispatch_source_t source,
                                                            dispatch_block_t handler)
{
    cq_source_set_registration_handler(source, handler);
}

/* ---- data objects: the block forms (cqueuecore/data.h) ---- */

typedef cq_data_applier_t dispatch_data_applier_t;

static inline dispatch_data_t dispatch_data_create(const void *buffer, size_t size,
                                                   dispatch_queue_t queue,
                                                   dispatch_block_t destructor)
{
    return cq_data_create(buffer, size, queue, destructor);
}

static inline bool dispatch_data_apply(dispatch_data_t data, dispatch_data_applier_t applier)
{
    return cq_data_apply(data, applier);
}

/* ---- dispatch block objects: work items as blocks (cqueuecore/work_item.h, blocks.h) ---- */

typedef unsigned long dispatch_block_flags_t;
#define DISPATCH_BLOCK_BARRIER ((dispatch_block_flags_t)CQ_WORK_ITEM_BARRIER)
#define DISPATCH_BLOCK_DETACHED ((dispatch_block_flags_t)CQ_WORK_ITEM_DETACHED)
#define DISPATCH_BLOCK_ASSIGN_CURRENT ((dispatch_block_flags_t)CQ_WORK_ITEM_ASSIGN_CURRENT)
#define DISPATCH_BLOCK_NO_QOS_CLASS ((dispatch_block_flags_t)CQ_WORK_ITEM_NO_QOS_CLASS)
#define DISPATCH_BLOCK_INHERIT_QOS_CLASS ((dispatch_block_flags_t)CQ_WORK_ITEM_INHERIT_QOS_CLASS)
#define DISPATCH_BLOCK_ENFORCE_QOS_CLASS ((dispatch_block_flags_t)CQ_WORK_ITEM_ENFORCE_QOS_CLASS)

/* A block that performs a work item; the QoS flags are accepted and ignored. */
static inline dispatch_block_t dispatch_block_create(dispatch_block_flags_t flags,
                                                     dispatch_block_t block)
{
    return cq_block_create(flags, block);
}

/* The QoS class and relative priority are accepted and ignored: priority comes from the queue
 * the block is submitted to. */
static inline dispatch_block_t dispatch_block_create_with_qos_class(dispatch_block_flags_t flags,
                                                                    dispatch_qos_class_t qos_class,
                                                                    int relative_priority,
                                                                    dispatch_block_t block)
{
    (void)qos_class;
    (void)relative_priority;
    return cq_block_create(flags, block);
}

static inline void dispatch_block_perform(dispatch_block_flags_t flags, dispatch_block_t block)
{
    cq_block_perform(flags, block);
}

static inline intptr_t dispatch_block_wait(dispatch_block_t block, dispatch_time_t timeout)
{
    return cq_block_wait(block, timeout);
}

static inline void dispatch_block_notify(dispatch_block_t block, dispatch_queue_t queue,
                                         dispatch_block_t notification_block)
{
    cq_block_notify(block, queue, notification_block);
}

static inline void dispatch_block_cancel(dispatch_block_t block)
{
    cq_block_cancel(block);
}

static inline intptr_t dispatch_block_testcancel(dispatch_block_t block)
{
    return cq_block_testcancel(block);
}

/* libdispatch's type-generic forms (C11 only). */
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define dispatch_wait(object, timeout)                                                          \
    _Generic((object), dispatch_block_t: dispatch_block_wait,                                   \
             dispatch_group_t: dispatch_group_wait,                                             \
             dispatch_semaphore_t: dispatch_semaphore_wait)((object), (timeout))
#define dispatch_notify(object, queue, notification_block)                                      \
    _Generic((object), dispatch_block_t: dispatch_block_notify,                                 \
             dispatch_group_t: dispatch_group_notify)((object), (queue), (notification_block))
#define dispatch_cancel(object)                                                                 \
    _Generic((object), dispatch_block_t: dispatch_block_cancel,                                 \
             dispatch_source_t: dispatch_source_cancel)((object))
#define dispatch_testcancel(object)                                                             \
    _Generic((object), dispatch_block_t: dispatch_block_testcancel,                             \
             dispatch_source_t: dispatch_source_testcancel)((object))
#endif

#endif /* CQ_HAVE_BLOCKS */

/* ==== dispatch I/O (cqueuecore/io.h) ====================================================== */

typedef cq_io_t dispatch_io_t;
typedef cq_io_type_t dispatch_io_type_t;
typedef cq_io_close_flags_t dispatch_io_close_flags_t;
typedef cq_io_interval_flags_t dispatch_io_interval_flags_t;
#define DISPATCH_IO_STREAM CQ_IO_STREAM
#define DISPATCH_IO_RANDOM CQ_IO_RANDOM
#define DISPATCH_IO_STOP CQ_IO_STOP
#define DISPATCH_IO_STRICT_INTERVAL CQ_IO_STRICT_INTERVAL

static inline void dispatch_io_close(dispatch_io_t channel, dispatch_io_close_flags_t flags)
{
    cq_io_close(channel, flags);
}

static inline int dispatch_io_get_descriptor(dispatch_io_t channel)
{
    return cq_io_get_descriptor(channel);
}

static inline void dispatch_io_set_high_water(dispatch_io_t channel, size_t high_water)
{
    cq_io_set_high_water(channel, high_water);
}

static inline void dispatch_io_set_low_water(dispatch_io_t channel, size_t low_water)
{
    cq_io_set_low_water(channel, low_water);
}

static inline void dispatch_io_set_interval(dispatch_io_t channel, uint64_t interval,
                                            dispatch_io_interval_flags_t flags)
{
    cq_io_set_interval(channel, interval, flags);
}

#if defined(CQ_HAVE_BLOCKS)
typedef cq_io_handler_t dispatch_io_handler_t;

static inline dispatch_io_t dispatch_io_create(dispatch_io_type_t type, int fd,
                                               dispatch_queue_t queue,
                                               void (^cleanup_handler)(int error))
{
    return cq_io_create(type, fd, queue, cleanup_handler);
}

static inline dispatch_io_t dispatch_io_create_with_path(dispatch_io_type_t type,
                                                         const char *path, int oflag,
                                                         mode_t mode, dispatch_queue_t queue,
                                                         void (^cleanup_handler)(int error))
{
    return cq_io_create_with_path(type, path, oflag, mode, queue, cleanup_handler);
}

static inline dispatch_io_t dispatch_io_create_with_io(dispatch_io_type_t type,
                                                       dispatch_io_t io, dispatch_queue_t queue,
                                                       void (^cleanup_handler)(int error))
{
    return cq_io_create_with_io(type, io, queue, cleanup_handler);
}

static inline void dispatch_io_read(dispatch_io_t channel, off_t offset, size_t length,
                                    dispatch_queue_t queue, dispatch_io_handler_t io_handler)
{
    cq_io_read(channel, offset, length, queue, io_handler);
}

static inline void dispatch_io_write(dispatch_io_t channel, off_t offset, dispatch_data_t data,
                                     dispatch_queue_t queue, dispatch_io_handler_t io_handler)
{
    cq_io_write(channel, offset, data, queue, io_handler);
}

static inline void dispatch_io_barrier(dispatch_io_t channel, dispatch_block_t barrier)
{
    cq_io_barrier(channel, barrier);
}

static inline void dispatch_read(int fd, size_t length, dispatch_queue_t queue,
                                 void (^handler)(dispatch_data_t data, int error))
{
    cq_read(fd, length, queue, handler);
}

static inline void dispatch_write(int fd, dispatch_data_t data, dispatch_queue_t queue,
                                  void (^handler)(dispatch_data_t data, int error))
{
    cq_write(fd, data, queue, handler);
}
#endif /* CQ_HAVE_BLOCKS */

/* ==== not provided ========================================================================== */

/*
 * Using one of these is a compile error naming the function and why ("... is unavailable: ...").
 * Compilers without the `unavailable` attribute report the cq_dispatch_unsupported_* name as
 * undeclared instead. Their constants (DISPATCH_IO_STREAM, DISPATCH_MEMORYPRESSURE_*, ...) are
 * not defined.
 */
#if defined(__has_attribute)
#if __has_attribute(__unavailable__)
#define CQ__DISPATCH_HAVE_UNAVAILABLE 1
#endif
#endif

#ifdef CQ__DISPATCH_HAVE_UNAVAILABLE
#define CQ__DISPATCH_UNSUPPORTED(name, why)                                                     \
    extern int cq_dispatch_unsupported_##name __attribute__((__unavailable__(#name ": " why)))
#define CQ__DISPATCH_UNSUPPORTED_TYPE(name, why)                                                \
    typedef struct cq_dispatch_unsupported_s *cq_dispatch_unsupported_##name                    \
        __attribute__((__unavailable__(#name ": " why)))
#else
#define CQ__DISPATCH_UNSUPPORTED(name, why) struct cq_dispatch_unsupported_s
#define CQ__DISPATCH_UNSUPPORTED_TYPE(name, why) struct cq_dispatch_unsupported_s
#endif

#define CQ__SEE_DOC " (see docs/libdispatch-compat.md)"
#define CQ__WHY_QOS "CQueueCore has priorities, not QoS classes" CQ__SEE_DOC
#define CQ__WHY_SOURCE "this source type does not exist on Linux" CQ__SEE_DOC
#define CQ__WHY_APPLE "an Apple-only libdispatch call, not provided by CQueueCore" CQ__SEE_DOC
#define CQ__WHY_DEBUG "not provided by CQueueCore" CQ__SEE_DOC
#define CQ__WHY_FUNLOCK "file-lock events cannot be observed with inotify" CQ__SEE_DOC


/* A descriptor, as libdispatch defines it on Linux: helper headers declare functions with it
 * even where no dispatch I/O is used. */
typedef int dispatch_fd_t;


CQ__DISPATCH_UNSUPPORTED(dispatch_queue_get_qos_class, CQ__WHY_QOS);
CQ__DISPATCH_UNSUPPORTED(dispatch_set_qos_class_floor, CQ__WHY_QOS);
#define dispatch_queue_get_qos_class(...) (cq_dispatch_unsupported_dispatch_queue_get_qos_class)
#define dispatch_set_qos_class_floor(...) (cq_dispatch_unsupported_dispatch_set_qos_class_floor)

CQ__DISPATCH_UNSUPPORTED_TYPE(dispatch_source_mach_send_flags_t, CQ__WHY_SOURCE);
CQ__DISPATCH_UNSUPPORTED_TYPE(dispatch_source_mach_recv_flags_t, CQ__WHY_SOURCE);
CQ__DISPATCH_UNSUPPORTED_TYPE(dispatch_source_memorypressure_flags_t, CQ__WHY_SOURCE);
CQ__DISPATCH_UNSUPPORTED(DISPATCH_SOURCE_TYPE_MACH_SEND, CQ__WHY_SOURCE);
CQ__DISPATCH_UNSUPPORTED(DISPATCH_SOURCE_TYPE_MACH_RECV, CQ__WHY_SOURCE);
CQ__DISPATCH_UNSUPPORTED(DISPATCH_SOURCE_TYPE_MEMORYPRESSURE, CQ__WHY_SOURCE);
CQ__DISPATCH_UNSUPPORTED(DISPATCH_VNODE_FUNLOCK, CQ__WHY_FUNLOCK);
#define dispatch_source_mach_send_flags_t cq_dispatch_unsupported_dispatch_source_mach_send_flags_t
#define dispatch_source_mach_recv_flags_t cq_dispatch_unsupported_dispatch_source_mach_recv_flags_t
#define dispatch_source_memorypressure_flags_t                                                  \
    cq_dispatch_unsupported_dispatch_source_memorypressure_flags_t
#define DISPATCH_SOURCE_TYPE_MACH_SEND (cq_dispatch_unsupported_DISPATCH_SOURCE_TYPE_MACH_SEND)
#define DISPATCH_SOURCE_TYPE_MACH_RECV (cq_dispatch_unsupported_DISPATCH_SOURCE_TYPE_MACH_RECV)
#define DISPATCH_SOURCE_TYPE_MEMORYPRESSURE                                                     \
    (cq_dispatch_unsupported_DISPATCH_SOURCE_TYPE_MEMORYPRESSURE)
#define DISPATCH_VNODE_FUNLOCK (cq_dispatch_unsupported_DISPATCH_VNODE_FUNLOCK)

CQ__DISPATCH_UNSUPPORTED_TYPE(dispatch_workloop_t, CQ__WHY_APPLE);
CQ__DISPATCH_UNSUPPORTED(dispatch_workloop_create, CQ__WHY_APPLE);
CQ__DISPATCH_UNSUPPORTED(dispatch_workloop_create_inactive, CQ__WHY_APPLE);
CQ__DISPATCH_UNSUPPORTED(dispatch_workloop_set_autorelease_frequency, CQ__WHY_APPLE);
#define dispatch_workloop_t cq_dispatch_unsupported_dispatch_workloop_t
#define dispatch_workloop_create(...) (cq_dispatch_unsupported_dispatch_workloop_create)
#define dispatch_workloop_create_inactive(...)                                                  \
    (cq_dispatch_unsupported_dispatch_workloop_create_inactive)
#define dispatch_workloop_set_autorelease_frequency(...)                                        \
    (cq_dispatch_unsupported_dispatch_workloop_set_autorelease_frequency)

CQ__DISPATCH_UNSUPPORTED(dispatch_debug, CQ__WHY_DEBUG);
CQ__DISPATCH_UNSUPPORTED(dispatch_debugv, CQ__WHY_DEBUG);
#define dispatch_debug(...) (cq_dispatch_unsupported_dispatch_debug)
#define dispatch_debugv(...) (cq_dispatch_unsupported_dispatch_debugv)

CQ_END_DECLS

#endif /* not included together with <dispatch/dispatch.h> */
#endif /* CQ_DISPATCH_H */
