/*
 * CQueueCore — dispatch sources: timers, signals, descriptors, processes, file-system events and
 * custom data, all on one epoll reactor thread; handlers run on the source's target queue.
 *
 * A source is created suspended: set its handlers (and timer), then cq_resume() it. Events that
 * arrive while a handler is queued or running, or while the source is suspended, coalesce into
 * the data the next handler reads with cq_source_get_data() (a count, a byte count, or the OR
 * of flags — see each type). After cq_source_cancel() no new event handler starts; once a
 * running one has returned, the cancel handler runs exactly once on the target queue.
 * Descriptors stay the caller's: close them in the cancel handler, not before. Releasing the
 * last reference to an active source that was not cancelled cancels it without its cancel
 * handler (as libdispatch): keep a reference while it should fire.
 *
 * Handlers are called with the source's context (cq_set_context). Every source retains its
 * target queue; cq_set_target_queue changes it. All calls are thread-safe.
 */
#ifndef CQUEUECORE_SOURCE_H
#define CQUEUECORE_SOURCE_H

#include <cqueuecore/base.h>
#include <cqueuecore/object.h>
#include <cqueuecore/queue.h>
#include <cqueuecore/time.h>

CQ_BEGIN_DECLS

typedef struct cq_source_s *cq_source_t;
typedef const struct cq_source_type_s *cq_source_type_t;

/*
 * Source types (handle, mask, data):
 *   TIMER         0, 0; fires per cq_source_set_timer; data: fires since the last handler
 *   SIGNAL        signal number, 0; data: signals delivered since the last handler (signalfd)
 *   READ          descriptor, 0; data: bytes available to read (an estimate; 0 at EOF)
 *   WRITE         descriptor, 0; data: an estimate of the room to write (1 if unknown)
 *   PROC          pid, CQ_PROC_*; data: the events seen (exit through pidfd)
 *   VNODE         open descriptor of a file or directory, CQ_VNODE_*; data: events seen (inotify)
 *   DATA_ADD      0, 0; data: the sum of cq_source_merge_data values
 *   DATA_OR       0, 0; data: the OR of cq_source_merge_data values
 *   DATA_REPLACE  0, 0; data: the last cq_source_merge_data value
 */
CQ_EXPORT const struct cq_source_type_s cq_source_type_timer_s, cq_source_type_signal_s,
    cq_source_type_read_s, cq_source_type_write_s, cq_source_type_proc_s, cq_source_type_vnode_s,
    cq_source_type_data_add_s, cq_source_type_data_or_s, cq_source_type_data_replace_s;

#define CQ_SOURCE_TYPE_TIMER (&cq_source_type_timer_s)
#define CQ_SOURCE_TYPE_SIGNAL (&cq_source_type_signal_s)
#define CQ_SOURCE_TYPE_READ (&cq_source_type_read_s)
#define CQ_SOURCE_TYPE_WRITE (&cq_source_type_write_s)
#define CQ_SOURCE_TYPE_PROC (&cq_source_type_proc_s)
#define CQ_SOURCE_TYPE_VNODE (&cq_source_type_vnode_s)
#define CQ_SOURCE_TYPE_DATA_ADD (&cq_source_type_data_add_s)
#define CQ_SOURCE_TYPE_DATA_OR (&cq_source_type_data_or_s)
#define CQ_SOURCE_TYPE_DATA_REPLACE (&cq_source_type_data_replace_s)

/* The same values, for languages that cannot use the macros. */
typedef enum cq_source_kind {
    CQ_SOURCE_KIND_TIMER = 1,
    CQ_SOURCE_KIND_SIGNAL,
    CQ_SOURCE_KIND_READ,
    CQ_SOURCE_KIND_WRITE,
    CQ_SOURCE_KIND_PROC,
    CQ_SOURCE_KIND_VNODE,
    CQ_SOURCE_KIND_DATA_ADD,
    CQ_SOURCE_KIND_DATA_OR,
    CQ_SOURCE_KIND_DATA_REPLACE,
} cq_source_kind_t;
CQ_EXPORT cq_source_type_t cq_source_type(cq_source_kind_t kind);

/* PROC masks. EXIT is exact (pidfd). FORK, EXEC and SIGNAL cannot be observed for another
 * process on Linux without ptrace or the proc connector: they are accepted, never reported. */
#define CQ_PROC_EXIT 0x80000000ul
#define CQ_PROC_FORK 0x40000000ul
#define CQ_PROC_EXEC 0x20000000ul
#define CQ_PROC_SIGNAL 0x08000000ul

/* VNODE masks and the inotify events they come from (see docs/sources.md). */
#define CQ_VNODE_DELETE 0x1ul  /* IN_DELETE_SELF */
#define CQ_VNODE_WRITE 0x2ul   /* IN_MODIFY (and, for directories, entries created/removed) */
#define CQ_VNODE_EXTEND 0x4ul  /* IN_MODIFY when the size grew */
#define CQ_VNODE_ATTRIB 0x8ul  /* IN_ATTRIB */
#define CQ_VNODE_LINK 0x10ul   /* IN_ATTRIB when the link count changed */
#define CQ_VNODE_RENAME 0x20ul /* IN_MOVE_SELF */
#define CQ_VNODE_REVOKE 0x40ul /* IN_UNMOUNT (the file system went away) */

/*
 * cq_source_create
 *   A new, suspended source with one reference: resume it to start. `queue` NULL means the
 *   default global queue. Returns NULL with errno set on bad input (a `queue` that is not a
 *   queue is misuse, and aborts like every call given a wrong object):
 *     EINVAL  unknown type, a mask bit the type does not know, a non-zero handle or mask where
 *             the type takes none, a signal number out of range or not catchable (SIGKILL,
 *             SIGSTOP, and 32 up to SIGRTMIN, which the C library keeps for itself)
 *     EBADF   READ/WRITE/VNODE: the descriptor is not open
 *     ESRCH   PROC: no such process
 *     ENOMEM, EMFILE, ...  the kernel refused a resource (errno as it reported)
 */
CQ_EXPORT cq_source_t cq_source_create(cq_source_type_t type, uintptr_t handle, uintptr_t mask,
                                       cq_queue_t queue) CQ_WARN_RESULT;

/*
 * Handlers, called as handler(context of the source) on the target queue. Set them before the
 * first resume; setting one later takes effect for the next event. NULL removes it.
 *   event         runs for a batch of coalesced events; never concurrently with itself
 *   cancel        runs exactly once, after cancel and after any running event handler
 *   registration  runs once, when the source is first resumed (its descriptor is registered);
 *                 one set after that runs once, as soon as it can (libdispatch: "invoked
 *                 immediately"), on the target queue like the others
 */
CQ_EXPORT void cq_source_set_event_handler_f(cq_source_t source, cq_function_t handler);
CQ_EXPORT void cq_source_set_cancel_handler_f(cq_source_t source, cq_function_t handler);
CQ_EXPORT void cq_source_set_registration_handler_f(cq_source_t source, cq_function_t handler);

/*
 * Handlers with their own context: handler(handler_context) is called instead of
 * handler(context of the source); otherwise as the setter above. `destructor(handler_context)`,
 * if not NULL, runs exactly once, when the handler can no longer be called and no call of it is
 * running: after a later set of the same handler (any form) replaced it, right after a
 * registration or cancel handler has run (each runs at most once), after the cancel handler for
 * the event handler, or when the source is freed. It runs on the source's target queue or on the
 * thread that drops the last reference, and must not call back into the source. A NULL handler
 * removes the handler; a non-NULL destructor then runs at once. (The block forms use these.)
 */
CQ_EXPORT void cq_source_set_event_handler_ctx_f(cq_source_t source, void *handler_context,
                                                 cq_function_t handler, cq_function_t destructor);
CQ_EXPORT void cq_source_set_cancel_handler_ctx_f(cq_source_t source, void *handler_context,
                                                  cq_function_t handler, cq_function_t destructor);
CQ_EXPORT void cq_source_set_registration_handler_ctx_f(cq_source_t source, void *handler_context,
                                                        cq_function_t handler,
                                                        cq_function_t destructor);

/* Stops the source asynchronously (see above). Idempotent. */
CQ_EXPORT void cq_source_cancel(cq_source_t source);
/* Whether the source's handlers run as barriers on a concurrent target queue: alone, after the
 * tasks submitted to it before, and before those submitted after (a Swift source's event
 * handler given as a barrier work item or with the .barrier flag, as Dispatch does). Off by
 * default; no effect on a serial or a global target. Takes effect from the next handler call. */
CQ_EXPORT void cq_source_set_handler_barrier(cq_source_t source, bool barrier);

/* Non-zero once cq_source_cancel has been called. */
CQ_EXPORT intptr_t cq_source_testcancel(cq_source_t source);

/* The data of the events the running event handler was called for (see the types); outside an
 * event handler, that of the last call (0 before the first, and 0 from the cancel handler on),
 * as in libdispatch. */
CQ_EXPORT uintptr_t cq_source_get_data(cq_source_t source);
CQ_EXPORT uintptr_t cq_source_get_handle(cq_source_t source);
CQ_EXPORT uintptr_t cq_source_get_mask(cq_source_t source);

/* DATA_ADD / DATA_OR / DATA_REPLACE: merges `value` into the pending data and schedules the
 * event handler (a 0 to DATA_ADD or DATA_OR changes nothing and fires nothing). Any thread;
 * not async-signal-safe. Aborts on a source of another type. */
CQ_EXPORT void cq_source_merge_data(cq_source_t source, uintptr_t value);

/*
 * cq_source_set_timer
 *   A TIMER source fires first at `start` (a cq_time_t on either clock; CQ_TIME_NOW: now), then
 *   every `interval` nanoseconds (CQ_TIME_FOREVER or 0: once; libdispatch takes 0 for 1 ns and
 *   fires again as soon as each handler returns). `leeway` lets the reactor fire it up
 *   to that many nanoseconds late to fire it together with other timers (fewer wake-ups).
 *   Calling it again (also from the event handler) replaces the schedule and discards fires
 *   not yet handled. Intervals are not drift-prone: fire n is due at start + n * interval; a
 *   timer that fell behind reports the missed fires in its data instead of firing in a storm.
 */
CQ_EXPORT void cq_source_set_timer(cq_source_t source, cq_time_t start, uint64_t interval,
                                   uint64_t leeway);

/*
 * cq_after_f
 *   Submits `function(context)` to `queue` at `when` (a one-shot timer; CQ_TIME_NOW: at once).
 *   It may run up to a tenth of the delay late, at most 10 us, so that timers due close together
 *   share a wake-up. Never blocks. Functions due at the same time run in the order they were
 *   submitted.
 */
CQ_EXPORT void cq_after_f(cq_time_t when, cq_queue_t queue, void *context,
                          cq_function_t function);

CQ_END_DECLS

#endif /* CQUEUECORE_SOURCE_H */
