/*
 * Work items (include/cqueuecore/work_item.h).
 *
 * The item's completion is an internal group, entered once at creation and left once when the
 * item finishes: waiting and notifications are the group's. The state word:
 *   CANCELLED  set by cq_work_item_cancel
 *   FINISHED   set by whoever leaves the group (fetch_or: exactly one)
 *   STARTED    set by the first run that passed the cancel check
 * A run sets STARTED and then looks for CANCELLED; a cancel sets CANCELLED and then looks for
 * STARTED (both seq_cst read-modify-writes): at least one of them sees the other, so either the
 * run goes ahead and the cancel leaves the finishing to it, or the run skips; an item cancelled
 * before any run started finishes in the cancel.
 */
#include <cqueuecore/source.h> /* cq_after_f */
#include <cqueuecore/work_item.h>

#include <errno.h>
#include <stdlib.h>

#include "platform/diag_internal.h"
#include "platform/object_internal.h"

#define WI_CANCELLED 1u
#define WI_FINISHED 2u
#define WI_STARTED 4u

#define WI_KNOWN_FLAGS                                                                             \
    (CQ_WORK_ITEM_BARRIER | CQ_WORK_ITEM_DETACHED | CQ_WORK_ITEM_ASSIGN_CURRENT |                  \
     CQ_WORK_ITEM_NO_QOS_CLASS | CQ_WORK_ITEM_INHERIT_QOS_CLASS | CQ_WORK_ITEM_ENFORCE_QOS_CLASS)

struct cq_work_item_s {
    struct cq__object obj;
    cq_function_t function; /* written once */
    void *context;          /* written once */
    unsigned long flags;    /* written once */
    _Atomic uint32_t state; /* WI_* bits, see above */
    cq_group_t done;        /* entered until the item finishes; written once */
};

static void finish(struct cq_work_item_s *w);

static void work_item_dispose(struct cq__object *o)
{
    struct cq_work_item_s *w = (struct cq_work_item_s *)o;
    cq_function_t fin = o->finalizer;
    void *ctx = o->context;
    /* Released without ever running (nor being cancelled): leave its group now, as libdispatch
     * does, so notifications still run and the group, kept alive while entered, goes too. */
    finish(w);
    cq_release(w->done);
    o->cls = NULL;
    free(w);
    if (fin && ctx) { /* as libdispatch: no context, no finalizer */
        cq_async_f(cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), ctx, fin);
    }
}

static const struct cq__class cq__work_item_class = {
    .kind = CQ__KIND_WORK_ITEM,
    .name = "work item",
    .dispose = work_item_dispose,
};
CQ__CLASS_REGISTER(cq__work_item_class)

static inline struct cq_work_item_s *item_check(cq_work_item_t item, const char *call)
{
    return (struct cq_work_item_s *)cq__object_check(item, CQ__KIND_WORK_ITEM, call);
}

cq_work_item_t cq_work_item_create_f(unsigned long flags, void *context, cq_function_t function)
{
    if (function == NULL || (flags & ~(unsigned long)WI_KNOWN_FLAGS) != 0) {
        errno = EINVAL;
        return NULL;
    }
    struct cq_work_item_s *w = malloc(sizeof *w);
    cq_group_t done = w ? cq_group_create() : NULL;
    if (done == NULL) {
        free(w);
        errno = ENOMEM;
        return NULL;
    }
    cq__object_init(&w->obj, &cq__work_item_class);
    w->function = function;
    w->context = context;
    w->flags = flags;
    atomic_init(&w->state, 0);
    w->done = done;
    cq_group_enter(done);
    return w;
}

static void finish(struct cq_work_item_s *w)
{
    /* acq_rel: the run's effects are released to the group's waiters by the leave; exactly
     * one caller sees FINISHED clear; pairs with the other party's or of FINISHED (run or
     * cq_work_item_cancel): one of them finishes */
    if ((cq__or(&w->state, WI_FINISHED, acq_rel) & WI_FINISHED) == 0) {
        cq_group_leave(w->done);
    }
}

/* One run (perform, or a submission reached): skipped once cancelled. */
static void run(struct cq_work_item_s *w)
{
    uint32_t s = cq__load(&w->state, relaxed);
    if (!(s & WI_STARTED)) {
        /* seq_cst: the store of the Dekker pair with cq_work_item_cancel (see the top) */
        s = cq__or(&w->state, WI_STARTED, seq_cst);
    }
    if (s & WI_CANCELLED) {
        finish(w); /* a no-op unless the cancel left it to us */
        return;
    }
    w->function(w->context);
    finish(w);
}

void cq_work_item_perform(cq_work_item_t item)
{
    run(item_check(item, "cq_work_item_perform"));
}

/* A submission: holds a reference, dropped after the run. */
static void run_submitted(void *ctx)
{
    struct cq_work_item_s *w = ctx;
    run(w);
    cq__ref_release(&w->obj);
}

static void run_synchronously(void *ctx)
{
    run(ctx);
}

void cq_async_work_item(cq_queue_t queue, cq_work_item_t item)
{
    struct cq_work_item_s *w = item_check(item, "cq_async_work_item");
    cq__ref_retain(&w->obj);
    if (w->flags & CQ_WORK_ITEM_BARRIER) {
        cq_barrier_async_f(queue, w, run_submitted);
    } else {
        cq_async_f(queue, w, run_submitted);
    }
}

void cq_sync_work_item(cq_queue_t queue, cq_work_item_t item)
{
    struct cq_work_item_s *w = item_check(item, "cq_sync_work_item");
    if (w->flags & CQ_WORK_ITEM_BARRIER) {
        cq_barrier_sync_f(queue, w, run_synchronously);
    } else {
        cq_sync_f(queue, w, run_synchronously);
    }
}

void cq_after_work_item(cq_time_t when, cq_queue_t queue, cq_work_item_t item)
{
    struct cq_work_item_s *w = item_check(item, "cq_after_work_item");
    cq__ref_retain(&w->obj);
    cq_after_f(when, queue, w, run_submitted);
}

/* A barrier submission in a group: the C API has no group form of cq_barrier_async_f. */
struct group_barrier {
    struct cq_work_item_s *item;
    cq_group_t group;
};

static void run_group_barrier(void *ctx)
{
    struct group_barrier *gb = ctx;
    run_submitted(gb->item);
    cq_group_leave(gb->group);
    cq_release(gb->group);
    free(gb);
}

void cq_group_async_work_item(cq_group_t group, cq_queue_t queue, cq_work_item_t item)
{
    struct cq_work_item_s *w = item_check(item, "cq_group_async_work_item");
    if (w->flags & CQ_WORK_ITEM_BARRIER) {
        struct group_barrier *gb = malloc(sizeof *gb);
        if (gb == NULL) {
            cq__crash("cq_group_async_work_item: out of memory");
        }
        cq_group_enter(group);
        cq_retain(group);
        cq__ref_retain(&w->obj);
        gb->item = w;
        gb->group = group;
        cq_barrier_async_f(queue, gb, run_group_barrier);
        return;
    }
    cq__ref_retain(&w->obj);
    cq_group_async_f(group, queue, w, run_submitted);
}

intptr_t cq_work_item_wait(cq_work_item_t item, cq_time_t timeout)
{
    struct cq_work_item_s *w = item_check(item, "cq_work_item_wait");
    return cq_group_wait(w->done, timeout);
}

void cq_work_item_notify_f(cq_work_item_t item, cq_queue_t queue, void *context,
                           cq_function_t function)
{
    struct cq_work_item_s *w = item_check(item, "cq_work_item_notify_f");
    cq_group_notify_f(w->done, queue, context, function);
}

void cq_work_item_cancel(cq_work_item_t item)
{
    struct cq_work_item_s *w = item_check(item, "cq_work_item_cancel");
    /* seq_cst: the other store of the Dekker pair with run() */
    uint32_t s = cq__or(&w->state, WI_CANCELLED, seq_cst);
    if (!(s & WI_STARTED)) {
        finish(w); /* no run started, and none will */
    }
}

intptr_t cq_work_item_testcancel(cq_work_item_t item)
{
    struct cq_work_item_s *w = item_check(item, "cq_work_item_testcancel");
    /* pairs with the seq_cst or of WI_CANCELLED in cq_work_item_cancel */
    return (cq__load(&w->state, acquire) & WI_CANCELLED) != 0;
}

/* ---- blocks from cq_block_create (blocks.h) -------------------------------------------- */

static void work_block_copy(struct cq__work_block *dst, const struct cq__work_block *src)
{
    (void)src;
    cq_retain(dst->item); /* the heap copy's reference */
}

static void work_block_dispose(const struct cq__work_block *block)
{
    cq_release(block->item);
}

const struct cq__work_block_descriptor cq__work_block_descriptor = {
    .reserved = 0,
    .size = sizeof(struct cq__work_block),
    .copy = work_block_copy,
    .dispose = work_block_dispose,
};

void cq__work_block_invoke(struct cq__work_block *block)
{
    cq_work_item_perform(block->item);
}

cq_work_item_t cq__work_block_item(const void *block)
{
    const struct cq__work_block *b = block;
    return b && b->descriptor == &cq__work_block_descriptor ? b->item : NULL;
}

cq_work_item_t cq__work_block_item_check(const void *block, const char *call)
{
    cq_work_item_t item = cq__work_block_item(block);
    if (item == NULL) {
        cq__crash("%s: %s", call,
                  block ? "the block was not made by cq_block_create (dispatch_block_create)"
                        : "NULL block");
    }
    return item;
}
