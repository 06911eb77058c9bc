/*
 * Work items (include/cqueuecore/work_item.h).
 *
 * The state word:
 *   CANCELLED  set by cq_work_item_cancel
 *   FINISHED   set by whoever finishes the item (fetch_or: exactly one)
 *   STARTED    set by the first run that passed the cancel check
 *   LEFT       set by whoever leaves the completion group (fetch_or: exactly one)
 * A run sets STARTED and then looks for CANCELLED; a cancel sets CANCELLED and then looks for
 * STARTED (both seq_cst read-modify-writes): at least one of them sees the other, so either the
 * run goes ahead and the cancel leaves the finishing to it, or the run skips; an item cancelled
 * before any run started finishes in the cancel.
 *
 * Waiting and notifications are a group's, made only when first needed (most items are never
 * waited for): the group is created entered and installed with a CAS. The finisher sets
 * FINISHED and then looks for the group; the installer installs the group and then looks for
 * FINISHED (seq_cst on both sides): at least one of them sees the other, and LEFT makes sure the
 * group is left once. A waiter that finds FINISHED already set needs no group at all.
 */
#include <cqueuecore/source.h> /* cq_after_f */
#include <cqueuecore/swift_support.h>
#include <cqueuecore/work_item.h>

#include <errno.h>
#include <stdlib.h>

#include "platform/diag_internal.h"
#include "platform/object_internal.h"
#include "queue/queue_internal.h"
#include "queue/work_item_internal.h"

#define WI_CANCELLED 1u
#define WI_FINISHED 2u
#define WI_STARTED 4u
#define WI_LEFT 8u

#define WI_KNOWN_FLAGS                                                                             \
    (CQ_WORK_ITEM_BARRIER | CQ_WORK_ITEM_DETACHED | CQ_WORK_ITEM_ASSIGN_CURRENT |                  \
     CQ_WORK_ITEM_NO_QOS_CLASS | CQ_WORK_ITEM_INHERIT_QOS_CLASS | CQ_WORK_ITEM_ENFORCE_QOS_CLASS)

struct cq_work_item_s {
    struct cq__object obj;
    cq_function_t function; /* written once */
    void *context;          /* written once */
    unsigned long flags;    /* written once */
    _Atomic uint32_t state; /* WI_* bits, see above */
    /* entered until the item finishes; NULL until a waiter or a notification needs it, then
     * written once (CAS) */
    _Atomic(cq_group_t) done;
    /* The inline form (cq__work_item_create_inline): `context` points to `bytes`, and
     * destroy(bytes) runs when the item is freed. NULL for cq_work_item_create_f's items. */
    cq_function_t destroy;
    _Alignas(8) unsigned char bytes[CQ__WORK_ITEM_INLINE_BYTES];
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
    /* acquire: the installer's CAS published the group; pairs with its seq_cst CAS */
    cq_group_t done = cq__load(&w->done, acquire);
    if (done) {
        cq_release(done);
    }
    if (w->destroy) {
        w->destroy(w->bytes);
    }
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
    if (w == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    cq__object_init(&w->obj, &cq__work_item_class);
    w->function = function;
    w->context = context;
    w->flags = flags;
    atomic_init(&w->state, 0);
    atomic_init(&w->done, NULL);
    w->destroy = NULL;
    return w;
}

cq_work_item_t cq__work_item_create_inline(unsigned long flags, cq_function_t call,
                                           cq_function_t destroy, void **bytes)
{
    if (destroy == NULL) {
        errno = EINVAL;
        return NULL;
    }
    struct cq_work_item_s *w = cq_work_item_create_f(flags, NULL, call);
    if (w) {
        w->context = w->bytes;
        w->destroy = destroy;
        *bytes = w->bytes;
    }
    return w;
}

/* Leaves the completion group `done`, unless somebody else did. */
static void leave_once(struct cq_work_item_s *w, cq_group_t done)
{
    /* acq_rel: exactly one caller sees LEFT clear; pairs with the other party's or of LEFT */
    if ((cq__or(&w->state, WI_LEFT, acq_rel) & WI_LEFT) == 0) {
        cq_group_leave(done);
    }
}

static void finish(struct cq_work_item_s *w)
{
    /* seq_cst: releases the run's effects to waiters that find FINISHED (their acquire load in
     * cq_work_item_wait), exactly one caller sees FINISHED clear (pairs with the other
     * party's or of FINISHED: run or cq_work_item_cancel), and the store of the Dekker pair
     * with completion_group (see the top) */
    if ((cq__or(&w->state, WI_FINISHED, seq_cst) & WI_FINISHED) == 0) {
        /* seq_cst: the load of the Dekker pair with completion_group's CAS */
        cq_group_t done = cq__load(&w->done, seq_cst);
        if (done) {
            leave_once(w, done);
        }
    }
}

/* The item's completion group, made (entered) and installed on first use. */
static cq_group_t completion_group(struct cq_work_item_s *w)
{
    /* acquire: the group's initialisation by its installer; pairs with the seq_cst CAS below */
    cq_group_t done = cq__load(&w->done, acquire);
    if (done) {
        return done;
    }
    cq_group_t made = cq_group_create();
    if (made == NULL) {
        cq__crash("cq_work_item: out of memory for the item's completion group");
    }
    cq_group_enter(made);
    cq_group_t expected = NULL;
    /* seq_cst: the store of the Dekker pair with finish() (see the top) */
    if (!cq__cas(&w->done, &expected, made, seq_cst)) {
        cq_group_leave(made);
        cq_release(made);
        /* acquire: the installer's group; pairs with its seq_cst CAS */
        return cq__load(&w->done, acquire);
    }
    /* seq_cst: the load of the Dekker pair with finish()'s or of FINISHED */
    if (cq__load(&w->state, seq_cst) & WI_FINISHED) {
        leave_once(w, made);
    }
    return made;
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

bool cq__work_item_is_barrier(cq_work_item_t item, const char *call)
{
    return (item_check(item, call)->flags & CQ_WORK_ITEM_BARRIER) != 0;
}

cq_group_t cq__work_item_completion_group(cq_work_item_t item, const char *call)
{
    return completion_group(item_check(item, call));
}

void cq__work_item_submission(cq_work_item_t item, cq_function_t *fn, void **ctx)
{
    struct cq_work_item_s *w = item;
    cq__ref_retain(&w->obj);
    *fn = run_submitted;
    *ctx = w;
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
    /* acquire: everything the first run did; pairs with finish()'s or of FINISHED */
    if (cq__load(&w->state, acquire) & WI_FINISHED) {
        return 0;
    }
    return cq_group_wait(completion_group(w), timeout);
}

size_t cq_swift_work_item_notify_purge(cq_work_item_t item, cq_function_t fn, bool (*dead)(void *),
                                       void (*release)(void *))
{
    struct cq_work_item_s *w = item_check(item, "cq_swift_work_item_notify_purge");
    /* acquire: pairs with completion_group's seq_cst CAS that installs the group (its
     * initialisation) */
    cq_group_t done = cq__load(&w->done, acquire);
    return done ? cq_swift_group_notify_purge(done, fn, dead, release) : 0;
}

void cq_work_item_notify_f(cq_work_item_t item, cq_queue_t queue, void *context,
                           cq_function_t function)
{
    struct cq_work_item_s *w = item_check(item, "cq_work_item_notify_f");
    /* Checked here, under this call's name (the group's own checks named cq_group_notify_f,
     * which the program never called). */
    cq__queue_check(queue, "cq_work_item_notify_f");
    if (cq__unlikely(function == NULL)) {
        cq__crash("cq_work_item_notify_f: NULL function");
    }
    cq_group_notify_f(completion_group(w), queue, context, function);
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
    const struct cq__block_head *head = block; /* any block: only its head may be read */
    if (head == NULL || head->descriptor != (const void *)&cq__work_block_descriptor) {
        return NULL;
    }
    return ((const struct cq__work_block *)block)->item;
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
