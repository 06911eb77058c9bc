/*
 * Support for Swift concurrency on the main thread (include/cqueuecore/swift_support.h).
 *
 * Swift's MainActor runs on libdispatch's main queue on Linux. Two things make it meet ours:
 *   - cq_main_with_libdispatch(): cq_main(), plus a read source on the CQueueCore main queue
 *     watching libdispatch's main-queue eventfd; its handler drains libdispatch's main queue
 *     on the main thread (the same two hooks CoreFoundation's run loop uses on Linux).
 *   - a constructor that, when the Swift concurrency runtime is in the process, installs
 *     cq_main_with_libdispatch as the runtime's async-main drain (swift_task_asyncMainDrainQueue
 *     hook). Without it, a Swift program with an `async` main ends up in libdispatch's
 *     dispatch_main(), which parks the main thread for good, so our main queue would never run.
 * Nothing here links against libdispatch or the Swift runtime: both are looked up with dlsym.
 *
 * Who reads and writes what: dispatch_fd and dispatch_callback are written once, on the main
 * thread, before the bridge source is activated (its activation publishes them to the handler,
 * which runs on the main queue, i.e. on the main thread too). async_main_hooked is written by
 * the constructor, before main() and before any other thread exists.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "platform/atomic_internal.h"
#include "platform/diag_internal.h"
#include "platform/probes_internal.h"
#include "queue/queue_internal.h"
#include "queue/work_item_internal.h"
#include "scheduler/pool_internal.h"
#include "scheduler/task_internal.h"

#include <cqueuecore/queue.h>
#include <cqueuecore/source.h>
#include <cqueuecore/swift_support.h>
#include <dlfcn.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>

typedef int (*get_handle_fn)(void);
typedef void (*drain_fn)(void *);

static int dispatch_fd = -1;
static drain_fn dispatch_callback;
static bool bridge_installed;
static bool async_main_hooked;

/* A function pointer out of dlsym (ISO C has no cast from void * to a function pointer). */
static void *lookup(const char *name)
{
    return dlsym(RTLD_DEFAULT, name);
}

/* Runs on the main queue (the main thread): consumes the eventfd's count, then drains
 * libdispatch's main queue. The eventfd may already be reset (the initial drain, or an event
 * that coalesced with an earlier one): poll first so that the read never blocks. */
static void drain_dispatch_main(void *context)
{
    (void)context;
    struct pollfd p = {.fd = dispatch_fd, .events = POLLIN};
    if (poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) {
        eventfd_t ignored;
        (void)eventfd_read(dispatch_fd, &ignored);
    }
    dispatch_callback(NULL);
}

/* Main thread only (cq_main_with_libdispatch checks that through cq_main's checks first). */
static void bridge_install(void)
{
    if (bridge_installed) {
        return;
    }
    bridge_installed = true;
    get_handle_fn get_handle;
    drain_fn callback;
    void *g = lookup("_dispatch_get_main_queue_handle_4CF");
    void *c = lookup("_dispatch_main_queue_callback_4CF");
    if (g == NULL || c == NULL) {
        return; /* no libdispatch in the process: nothing to bridge */
    }
    memcpy(&get_handle, &g, sizeof get_handle);
    memcpy(&callback, &c, sizeof callback);
    int fd = get_handle();
    if (fd < 0) {
        fprintf(stderr,
                "CQueueCore: libdispatch's main queue has no descriptor (%d); its work "
                "(and Swift's MainActor) will not run on the main thread\n",
                fd);
        return;
    }
    dispatch_fd = fd;
    dispatch_callback = callback;
    cq_source_t s = cq_source_create(CQ_SOURCE_TYPE_READ, (uintptr_t)fd, 0, cq_get_main_queue());
    if (s == NULL) {
        fprintf(stderr,
                "CQueueCore: cannot watch libdispatch's main queue (descriptor %d): %m; "
                "its work (and Swift's MainActor) will not run on the main thread\n",
                fd);
        return;
    }
    cq_source_set_event_handler_f(s, drain_dispatch_main);
    cq_activate(s); /* the source lives for the rest of the process */
    /* Work queued before the descriptor existed was never announced on it. */
    cq_async_f(cq_get_main_queue(), NULL, drain_dispatch_main);
}

void cq_main_with_libdispatch(void)
{
    if (cq_thread_is_main() && cq_get_current_queue() == NULL) {
        bridge_install();
    }
    cq_main(); /* reports a call from the wrong thread or from inside a task */
}

bool cq_swift_async_main_hooked(void)
{
    return async_main_hooked;
}

/*
 * The runtime calls the hook as `void hook(original, compat_override)` with Swift's calling
 * convention. For two pointer arguments and no result it passes them as the C convention does
 * on x86-64 and AArch64 (rdi/rsi, x0/x1), and since the hook never returns, no register the
 * conventions disagree about is ever restored. clang can say swiftcall; gcc cannot.
 */
#if defined(__clang__) && defined(__has_attribute)
#if __has_attribute(swiftcall)
#define CQ_SWIFTCALL __attribute__((swiftcall))
#endif
#endif
#ifndef CQ_SWIFTCALL
#define CQ_SWIFTCALL
#endif

typedef CQ_SWIFTCALL void (*async_main_hook_fn)(void *, void *);

static CQ_SWIFTCALL CQ_NORETURN void async_main_drain(void *original, void *compat_override)
{
    (void)original;
    (void)compat_override;
    cq_main_with_libdispatch();
}

CQ_EARLY_INIT static void install_async_main_hook(void)
{
    void *slot = lookup("swift_task_asyncMainDrainQueue_hook");
    if (slot == NULL) {
        return; /* not a Swift program using concurrency */
    }
    void *volatile *hook = slot;
    if (*hook != NULL) {
        return; /* someone else drives the main thread */
    }
    async_main_hook_fn fn = async_main_drain;
    void *p;
    memcpy(&p, &fn, sizeof p);
    *hook = p;
    async_main_hooked = true;
}

void cq_swift_tsan_acquire(const void *address)
{
    cq__tsan_acquire(address);
}

void cq_swift_tsan_release(const void *address)
{
    cq__tsan_release(address);
}

/* The Swift runtime's (libswiftCore); weak, so that C programs without it link. Swift code may
 * not name runtime entry points itself (the compiler reserves them). */
extern void *swift_tryRetain(void *object) __attribute__((weak)); /* object, or NULL */

bool cq_swift_try_retain(void *object)
{
    if (swift_tryRetain == NULL) {
        cq__crash("cq_swift_try_retain: no Swift runtime in this process");
    }
    return swift_tryRetain(object) != NULL;
}

#ifdef CQ_TSAN
/*
 * ThreadSanitizer reads this at start-up. One suppression, for a report inside the Swift
 * runtime rather than about it: when a continuation is resumed before its task has suspended
 * (a job on another queue ran first), the task goes on without a hand-off through an executor,
 * synchronised only by an atomic of libswift_Concurrency, which is not built for the sanitizer;
 * the task's next `withUnsafeContinuation` then reuses the frame memory the resuming thread
 * read, and is reported against that read. Only that partial function of the standard library
 * (its Void/Never form, which SwiftQueues' async bridges use) is named.
 */
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void)
{
    /* A template: "$" would anchor it, so the name goes without its leading "$". */
    return "race:ss22withUnsafeContinuation9isolation_xScA_pSgYi_ySccyxs5NeverOGXEtYalFTY0_\n";
}
#endif

/* ---- closures carried inline in a task ------------------------------------------------------ */

_Static_assert(CQ_SWIFT_INLINE_BYTES == sizeof(((struct cq__task *)0)->inline_words),
               "the public size is the task's inline storage");

void *cq_swift_async_prepare(cq_queue_t q, cq_group_t g, cq_function_t fn)
{
    cq__queue_check(q, "cq_swift_async_prepare");
    if (cq__unlikely(fn == NULL)) {
        cq__crash("cq_swift_async_prepare: NULL function submitted to %s", CQ_DESCRIBE(q));
    }
    if (g != NULL) {
        cq_group_enter(g); /* checks the group; left after the function (group_task_run) */
    }
    struct cq__task *t = cq__task_alloc();
    cq__item_init(&t->item, g ? CQ__ITEM_GROUP_TASK : CQ__ITEM_TASK, CQ__ITEM_INLINE);
    t->function = fn;
    t->context = NULL;
    t->group = g;
    return t->inline_words;
}

void cq_swift_async_submit(cq_queue_t q, void *inline_bytes, bool barrier)
{
    struct cq__task *t =
        (struct cq__task *)((char *)inline_bytes - offsetof(struct cq__task, inline_words));
    if (barrier) {
        t->item.flags |= CQ__ITEM_BARRIER;
    }
    CQ__PROBE_ENQUEUE(q, &t->item);
    cq__queue_push(q, &t->item, CQ__PUSH_TAIL);
}

_Static_assert(CQ_SWIFT_INLINE_BYTES == CQ__WORK_ITEM_INLINE_BYTES,
               "the public size is the work item's inline storage");

cq_work_item_t cq_swift_work_item_create(unsigned long flags, cq_function_t call,
                                         cq_function_t destroy, void **inline_bytes)
{
    return cq__work_item_create_inline(flags, call, destroy, inline_bytes);
}

bool cq_probe_operation_enabled(void)
{
    return CQ_PROBE_ENABLED(operation_state);
}

void cq_probe_operation_state(const char *name, int state)
{
    CQ_PROBE2(operation_state, name ? name : "", state);
}

void cq_swift_count_tasks(uint64_t n)
{
    cq__count(tasks_outside, n);
}
