/*
 * Running one item of any kind (item_internal.h): what a worker, a drain or a helper calls.
 * The kinds register how they run (a table owned here); the scheduler knows none of them.
 */
#include "platform/diag_internal.h"
#include "platform/probes_internal.h"
#include "scheduler/item_internal.h"
#include "scheduler/pool_internal.h"
#include "scheduler/thread_internal.h"

static cq__item_run_fn kind_run[CQ__ITEM_KIND_COUNT];
static void (*owner_done)(struct cq_queue_s *owner);
static const char *(*label_of)(struct cq_queue_s *q, unsigned prio);

void cq__item_kind_register(enum cq__item_kind kind, cq__item_run_fn run)
{
    kind_run[kind] = run;
}

static struct cq_queue_s *roots[4];

void cq__item_roots_register(struct cq_queue_s *const r[4])
{
    for (unsigned i = 0; i < 4; i++) {
        roots[i] = r[i];
    }
}

void cq__item_owner_done_register(void (*done)(struct cq_queue_s *owner))
{
    owner_done = done;
}

void cq__item_label_register(const char *(*label)(struct cq_queue_s *q, unsigned prio))
{
    label_of = label;
}

const char *cq__item_label(const struct cq__item *it)
{
    struct cq__frame *f = cq__tls.frame;
    if (label_of == NULL) {
        return "";
    }
    return label_of(f ? f->queue : NULL, cq__load(&it->prio, relaxed));
}

/* Whether an item of each kind counts as work run (tasks_run): all but the containers, which
 * run other items (a queue's drain, a redirect wrapper). Workers count every item (`started`,
 * the monitor's progress mark) and the work items apart (n_tasks: each counter only grows, so
 * their sum read at any time never goes down); threads without a proc count work items in a
 * global counter. */
static const uint8_t kind_is_work[CQ__ITEM_KIND_COUNT] = {
    [CQ__ITEM_TASK] = 1,  [CQ__ITEM_SYNC_WAITER] = 1, [CQ__ITEM_EXEC_WAITER] = 1,
    [CQ__ITEM_APPLY] = 1, [CQ__ITEM_SOURCE] = 1,      [CQ__ITEM_GROUP_TASK] = 1,
};

/* run(it) between the task_start and task_finish probes (a tracer is attached): out of line,
 * so the common path keeps no label across the call. */
static CQ_NOINLINE void invoke_probed(struct cq__item *it, cq__item_run_fn run, unsigned kind)
{
    if (!kind_is_work[kind]) {
        run(it);
        return;
    }
    const char *label = cq__item_label(it);
    CQ_PROBE3(task_start, label, it, kind);
    run(it); /* may free it: only its address is reported after */
    CQ_PROBE2(task_finish, label, it);
}

static CQ_NOINLINE void unknown_kind(struct cq__item *it)
{
    cq__crash("internal error: unknown item kind %u at %p", it->kind, (void *)it);
}

void cq__item_invoke(struct cq__item *it)
{
    struct cq__proc *p = cq__tls.proc;
    unsigned kind = it->kind;
    cq__item_run_fn run = kind < CQ__ITEM_KIND_COUNT ? kind_run[kind] : NULL;
    if (cq__unlikely(run == NULL)) {
        unknown_kind(it);
    }
    if (p) {
        cq__pool_note_progress(p); /* the monitor tells stuck workers by this counter */
        if (kind_is_work[kind]) {
            cq__pool_count(&p->n_tasks);
        }
    } else if (kind_is_work[kind]) {
        cq__count(tasks_outside, 1);
    }
    struct cq_queue_s *owner = it->owner;
    struct cq__frame f;
    bool root = false;
    if (owner) {
        /* The width is ours to release now. A queue's embedded item is pushed again later,
         * maybe to another target: it must not carry this owner along. */
        it->owner = NULL;
        cq__frame_push(&f, owner, false);
    } else if (kind_is_work[kind] && cq__tls.frame == NULL && roots[0] != NULL) {
        /* Work submitted straight to a global queue runs on it, as in libdispatch: its label
         * is the current one, cq_assert_queue(global) holds (and cq_assert_queue_not fails).
         * (Work of a serial queue runs inside its drain's frame; a concurrent queue's work has
         * its owner; a worker that helps while it waits clears its frame first.) */
        cq__frame_push(&f, roots[cq__load(&it->prio, relaxed) & 3u], false);
        root = true;
    }
    /* task_finish shares task_start's semaphore (probes.c): one test for both */
    if (CQ_PROBE_ENABLED(task_start)) {
        invoke_probed(it, run, kind);
    } else {
        run(it);
    }
    if (owner) {
        cq__frame_pop(&f);
        owner_done(owner);
    } else if (root) {
        cq__frame_pop(&f);
    }
}
