/*
 * Running one item of any kind (item_internal.h): what a worker, a drain or a helper calls.
 * The kinds register how they run (a table owned here); the scheduler knows none of them.
 */
#include "platform/diag_internal.h"
#include "scheduler/item_internal.h"
#include "scheduler/pool_internal.h"
#include "scheduler/thread_internal.h"

static cq__item_run_fn kind_run[CQ__ITEM_KIND_COUNT];
static void (*owner_done)(struct cq_queue_s *owner);

void cq__item_kind_register(enum cq__item_kind kind, cq__item_run_fn run)
{
    kind_run[kind] = run;
}

void cq__item_owner_done_register(void (*done)(struct cq_queue_s *owner))
{
    owner_done = done;
}

static CQ_NOINLINE void unknown_kind(struct cq__item *it)
{
    cq__crash("internal error: unknown item kind %u at %p", it->kind, (void *)it);
}

void cq__item_invoke(struct cq__item *it)
{
    struct cq__proc *p = cq__tls.proc;
    if (p) {
        cq__pool_note_progress(p); /* the monitor tells stuck workers by this counter */
    }
    struct cq_queue_s *owner = it->owner;
    struct cq__frame f;
    if (owner) {
        /* The width is ours to release now. A queue's embedded item is pushed again later,
         * maybe to another target: it must not carry this owner along. */
        it->owner = NULL;
        cq__frame_push(&f, owner, false);
    }
    unsigned kind = it->kind;
    cq__item_run_fn run = kind < CQ__ITEM_KIND_COUNT ? kind_run[kind] : NULL;
    if (cq__unlikely(run == NULL)) {
        unknown_kind(it);
    }
    run(it);
    if (owner) {
        cq__frame_pop(&f);
        owner_done(owner);
    }
}
