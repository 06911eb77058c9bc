/*
 * Groups (see group_internal.h for the state word).
 */
#include "sync/group_internal.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "platform/diag_internal.h"
#include "platform/parker_internal.h"
#include "queue/queue_internal.h"
#include "queue/work_item_internal.h"
#include "scheduler/pool_internal.h"
#include "scheduler/task_internal.h"
#include "sync/wait_internal.h"

#include <cqueuecore/swift_support.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "the generation futex is the upper half of the state word");

struct cq__group_notify {
    struct cq__group_notify *next;
    uint32_t gen;             /* runs when the group empties in this generation */
    struct cq_queue_s *queue; /* holds an internal reference */
    void *context;
    cq_function_t function;
    bool barrier; /* queued with cq_barrier_async_f (a BARRIER work item) */
};

static void group_xref_dispose(struct cq__object *o);
static void group_dispose(struct cq__object *o);

static void group_set_target(struct cq__object *o, struct cq_queue_s *target)
{
    cq__finalizer_target_set(&((struct cq_group_s *)o)->fin_target, target);
}

static const struct cq__class cq__group_class = {
    .kind = CQ__KIND_GROUP,
    .name = "group",
    .xref_dispose = group_xref_dispose,
    .dispose = group_dispose,
    .set_target = group_set_target,
};
CQ__CLASS_REGISTER(cq__group_class)

static inline struct cq_group_s *group_check(cq_group_t g, const char *call)
{
    if (cq__unlikely(!cq__object_is(g, &cq__group_class))) {
        cq__object_check(g, CQ__KIND_GROUP, call);
    }
    return g;
}

static inline _Atomic uint32_t *gen_word(struct cq_group_s *g)
{
    return (_Atomic uint32_t *)((char *)&g->state + 4);
}

cq_group_t cq_group_create(void)
{
    struct cq_group_s *g = aligned_alloc(CQ_CACHELINE, sizeof *g);
    if (g == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    cq__object_init(&g->obj, &cq__group_class);
    atomic_init(&g->state, 0);
    pthread_mutex_init(&g->notify_lock, NULL);
    g->notify_head = g->notify_tail = NULL;
    g->flag_gen = g->wakes_due = g->wakes_done = 0;
    g->wake_ref = false;
    atomic_init(&g->notified_gen, 0);
    atomic_init(&g->fin_target, NULL);
    return g;
}

/*
 * The last cq_release. A busy group must outlive it (its tasks hold no reference): take an
 * internal one for the count and mark the word ORPHAN, which the emptying leave sees in its
 * add and drops it. An empty group goes at once, or when its wakers are done (they hold their
 * own reference).
 */
static void group_xref_dispose(struct cq__object *o)
{
    struct cq_group_s *g = (struct cq_group_s *)o;
    /* acquire: every leave's add (the last touch of a leave that saw no flag) happens-before
     * the free that may follow when we find the group empty; pairs with the leaves' acq_rel add in
     * cq_group_leave */
    uint64_t s = cq__load(&g->state, acquire);
    if (CQ__GS_COUNT(s) == 0) {
        return;
    }
    cq__ref_retain(&g->obj);
    /* release: our retain happens-before the emptying leave's drop (it acquires the add); pairs
     * with the emptying leave's acq_rel add */
    while (!cq__cas_weak(&g->state, &s, s | CQ__GS_ORPHAN, acq_rel)) {
        /* acquire, as above: a failed CAS reads relaxed (found by ThreadSanitizer); pairs with the
         * leaves' acq_rel add in cq_group_leave */
        s = cq__load(&g->state, acquire);
        if (CQ__GS_COUNT(s) == 0) {
            cq__ref_release(&g->obj); /* cannot be the last: the caller still holds one */
            return;
        }
    }
}

/* Under notify_lock: a CAS just set the first flag on a word `s` without any. */
static void flags_set(struct cq_group_s *g, uint64_t s)
{
    g->flag_gen = CQ__GS_GEN(s);
    if (!g->wake_ref) {
        g->wake_ref = true;
        cq__ref_retain(&g->obj); /* the caller's own reference keeps g alive until now */
    }
}

static void group_dispose(struct cq__object *o)
{
    struct cq_group_s *g = (struct cq_group_s *)o;
    cq_function_t fin = g->obj.finalizer;
    void *ctx = g->obj.context;
    /* relaxed: see cq__finalizer_run (the last reference drop orders the setters before us) */
    struct cq_queue_s *target = cq__load(&g->fin_target, relaxed);
    pthread_mutex_destroy(&g->notify_lock);
    g->obj.cls = NULL;
    free(g);
    cq__finalizer_run(target, ctx, fin);
}

static inline void enter(struct cq_group_s *g)
{
    uint64_t s = cq__load(&g->state, relaxed), n;
    do {
        if (cq__unlikely(CQ__GS_FIELD(s) == CQ__GS_COUNT_ONE)) { /* the count is at its maximum */
            cq__crash("cq_group_enter: too many outstanding enters on group %p", (void *)g);
        }
        /* minus one in bits 3-31; the upper half (the generation) is kept as it is */
        n = (s & ~0xffffffffull) | (uint32_t)((uint32_t)s - (uint32_t)CQ__GS_COUNT_ONE);
    } while (!cq__cas_weak(&g->state, &s, n, relaxed));
}

void cq_group_enter(cq_group_t g)
{
    enter(group_check(g, "cq_group_enter"));
}

/* Our leave emptied generation GEN(old) and saw WAITERS or NOTIFY in `old`. The wakers'
 * reference keeps g alive until we have counted ourselves done.
 *
 * The notifies are queued before the waiters wake, as libdispatch does: a thread that
 * returns from cq_group_wait and then submits to a notify's queue finds the notify queued
 * ahead of its work, and a notify registered after the wait returned (on an empty group:
 * queued at once) runs after the earlier ones on a serial queue. */
static CQ_NOINLINE void group_wake(struct cq_group_s *g, uint64_t old)
{
    uint32_t gen = CQ__GS_GEN(old);
    struct cq__group_notify *list = NULL, **tail = &list;
    if (old & CQ__GS_NOTIFY) {
        pthread_mutex_lock(&g->notify_lock);
        /* The notifies of our generation (and of earlier ones, whose wakers are late) are at
         * the front; those of a later generation wait for their own emptying. */
        while (g->notify_head && (int32_t)(g->notify_head->gen - gen) <= 0) {
            *tail = g->notify_head;
            tail = &g->notify_head->next;
            g->notify_head = g->notify_head->next;
        }
        *tail = NULL;
        if (g->notify_head == NULL) {
            g->notify_tail = NULL;
        }
        pthread_mutex_unlock(&g->notify_lock);
    }
    while (list) {
        struct cq__group_notify *next = list->next;
        if (list->barrier) {
            cq_barrier_async_f(list->queue, list->context, list->function);
        } else {
            cq_async_f(list->queue, list->context, list->function);
        }
        cq__ref_release(&list->queue->obj);
        free(list);
        list = next;
    }
    if (old & CQ__GS_NOTIFY) {
        uint32_t done = cq__load(&g->notified_gen, relaxed);
        /* release: the notifies' submissions happen-before a waiter that sees this; pairs with
         * settle's acquire load of notified_gen */
        while ((int32_t)(done - (gen + 1)) < 0 &&
               !cq__cas_weak(&g->notified_gen, &done, gen + 1, release)) {
        }
    }
    if (old & CQ__GS_WAITERS) {
        cq__futex_wake(gen_word(g), INT_MAX); /* our add moved the word they sleep on */
    }
    pthread_mutex_lock(&g->notify_lock);
    /* Clear what no later generation needs: NOTIFY once the list is empty (the list only
     * changes under the lock), WAITERS while the group is still empty (a waiter of a later
     * generation sets it again, and the leave that empties that one sees it). */
    uint64_t s = cq__load(&g->state, relaxed), n;
    do {
        n = s;
        if (g->notify_head == NULL) {
            n &= ~CQ__GS_NOTIFY;
        }
        if (CQ__GS_COUNT(s) == 0) {
            n &= ~CQ__GS_WAITERS;
        }
    } while (n != s && !cq__cas_weak(&g->state, &s, n, relaxed));
    if ((s & CQ__GS_FLAGS) && !(n & CQ__GS_FLAGS)) {
        /* we closed an interval: its emptyings are all counted, each one a group_wake */
        g->wakes_due += CQ__GS_GEN(s) - g->flag_gen;
    }
    g->wakes_done++;
    /* The flags only change under the lock: a flagless word stays so while we hold it. */
    bool drop = g->wake_ref && !(cq__load(&g->state, relaxed) & CQ__GS_FLAGS) &&
                g->wakes_done == g->wakes_due;
    if (drop) {
        g->wake_ref = false;
    }
    pthread_mutex_unlock(&g->notify_lock);
    if (drop) {
        cq__ref_release(&g->obj); /* the wakers' reference; may free g */
    }
}

/* Our leave emptied the group and saw a flag or ORPHAN in `s`. */
static CQ_NOINLINE void leave_emptied(struct cq_group_s *g, uint64_t s)
{
    if (s & CQ__GS_FLAGS) {
        group_wake(g, s);
    }
    if (s & CQ__GS_ORPHAN) {
        cq__ref_release(&g->obj); /* the count's reference (group_xref_dispose); may free g */
    }
}

static inline void leave(struct cq_group_s *g)
{
    /* release: the work done before leaving happens-before a waiter that sees the group empty;
     * acquire: for the emptying leave, the other leaves' work (and their last touch of g)
     * happens-before what it does next: waking, notifies, perhaps freeing g.
     * Adding one to minus the count: the emptying leave carries into the generation. Pairs with
     * the waiters' acquire loads of the word and the ORPHAN CAS in the last release */
    uint64_t s = cq__add(&g->state, CQ__GS_COUNT_ONE, acq_rel);
    /* No bit, and the count was not 0: nothing more to do, emptying or not. If we emptied it,
     * g may be freed from now on: do not touch it. */
    if (cq__likely(((uint32_t)s & (uint32_t)(CQ__GS_FLAGS | CQ__GS_ORPHAN)) == 0 &&
                   CQ__GS_FIELD(s) != 0)) {
        return;
    }
    if (cq__unlikely(CQ__GS_FIELD(s) == 0)) {
        cq__crash("cq_group_leave: unbalanced call on group %p (leave without a matching enter)",
                  (void *)g);
    }
    if (CQ__GS_FIELD(s) == (uint32_t)CQ__GS_COUNT_MASK) { /* the count was 1: we emptied it */
        leave_emptied(g, s);
    }
}

void cq_group_leave(cq_group_t g)
{
    leave(group_check(g, "cq_group_leave"));
}

void cq__group_task_done(struct cq_group_s *g)
{
    leave(g);
}

/* A pool thread gives group work to serial queue q: a wait for the group by the same item
 * helps drain q (cq_group_wait). The reference is dropped when the item returns (worker.c). */
static CQ_NOINLINE void note_group_queue(struct cq_queue_s *q)
{
    cq__ref_retain(&q->obj);
    struct cq__object *old = cq__tls.group_queue;
    cq__tls.group_queue = &q->obj;
    if (old != NULL) {
        cq__ref_release(old);
    }
}

void cq_group_async_f(cq_group_t g, cq_queue_t q, void *ctx, cq_function_t fn)
{
    group_check(g, "cq_group_async_f");
    cq__queue_check(q, "cq_group_async_f");
    if (cq__unlikely(fn == NULL)) {
        cq__crash("cq_group_async_f: NULL function");
    }
    enter(g);
    struct cq__task *t = cq__task_alloc();
    cq__item_init(&t->item, CQ__ITEM_GROUP_TASK, 0);
    t->function = fn;
    t->context = ctx;
    t->group = g;
    if (q->kind == CQ__QUEUE_SERIAL && cq__tls.group_queue != &q->obj && cq__tls.proc != NULL) {
        note_group_queue(q);
    }
    CQ__PROBE_ENQUEUE(q, &t->item);
    cq__queue_push(q, &t->item, CQ__PUSH_TAIL);
}

static bool is_task_of(struct cq__item *it, void *g)
{
    return it->kind == CQ__ITEM_GROUP_TASK && ((struct cq__task *)it)->group == g;
}

/* Sets WAITERS for a waiter of generation `gen` (under the lock: it may be the first flag); false
 * if the group emptied in that generation meanwhile. */
static bool set_waiters(struct cq_group_s *g, uint32_t gen)
{
    bool set = false;
    pthread_mutex_lock(&g->notify_lock);
    uint64_t s = cq__load(&g->state, relaxed);
    while (CQ__GS_COUNT(s) != 0 && CQ__GS_GEN(s) == gen) {
        if (s & CQ__GS_WAITERS) {
            set = true;
            break;
        }
        if (cq__cas_weak(&g->state, &s, s | CQ__GS_WAITERS, relaxed)) {
            if (!(s & CQ__GS_FLAGS)) {
                flags_set(g, s);
            }
            set = true;
            break;
        }
    }
    pthread_mutex_unlock(&g->notify_lock);
    return set;
}

/* ---- the slow path of a wait (sync/wait_internal.h) ---- */

struct group_wait {
    struct cq_group_s *g;
    uint32_t gen; /* the generation we wait to see end */
};

static bool group_done(void *ctx)
{
    struct group_wait *w = ctx;
    /* pairs with the leaves' acq_rel add in cq_group_leave */
    uint64_t s = cq__load(&w->g->state, acquire);
    return CQ__GS_COUNT(s) == 0 || CQ__GS_GEN(s) != w->gen;
}

static bool group_announce(void *ctx, _Atomic uint32_t **word, uint32_t *value)
{
    struct group_wait *w = ctx;
    uint64_t s = cq__load(&w->g->state, relaxed);
    if (!(s & CQ__GS_WAITERS) && !set_waiters(w->g, w->gen)) {
        return false; /* it emptied meanwhile: done() says so */
    }
    *word = gen_word(w->g);
    *value = w->gen;
    return true;
}

static bool group_timed_out(void *ctx)
{
    (void)ctx;
    return true; /* nothing to undo: a waiters flag left behind costs a leave one wake-up */
}

static const struct cq__wait_ops group_wait_ops = {
    .done = group_done, .announce = group_announce, .timed_out = group_timed_out};

/* A waiter saw the group empty. If that emptying's notifies may still be on their way to their
 * queues (NOTIFY is still set on an empty group: group_wake has not finished), waits until
 * they are queued, so that what the waiter submits next to a notify's queue comes after the
 * notify, as in libdispatch, whose leave queues the notifies before it wakes the waiters (and
 * whose waiters sleep, where ours may spin and see the count first). The leaver is past the
 * point of no return: a few of its instructions, unless it was preempted. Stops waiting if the
 * group is entered again. */
static CQ_NOINLINE void settle(struct cq_group_s *g)
{
    for (unsigned round = 0;; round++) {
        /* acquire: pairs with group_wake's release CAS of notified_gen */
        uint64_t s = cq__load(&g->state, acquire);
        if (!(s & CQ__GS_NOTIFY) || CQ__GS_COUNT(s) != 0 ||
            (int32_t)(cq__load(&g->notified_gen, acquire) - CQ__GS_GEN(s)) >= 0) {
            return;
        }
        if (round < 64) {
            sched_yield();
        } else {
            /* The leaver was preempted, perhaps a background worker (SCHED_IDLE), which a
             * yield does not let run: sleep, and leave it the CPU */
            struct timespec nap = {0, 20000};
            nanosleep(&nap, NULL);
        }
    }
}

static inline intptr_t emptied(struct cq_group_s *g, uint64_t s)
{
    if (cq__unlikely(s & CQ__GS_NOTIFY)) {
        settle(g);
    }
    return 0;
}

/* Another thread waits for the group already (it set WAITERS): this wait is behind it, and
 * keeps its proc once many pool threads wait (CQ__CROWDED_WAITS, scheduler/block.c). 500
 * tasks waiting for one group that a slow task leaves (or for one work item) grew the pool to
 * its limit of 255 threads with the message; libdispatch used 5. */
static bool behind(struct cq_group_s *g)
{
    return (cq__load(&g->state, relaxed) & CQ__GS_WAITERS) != 0;
}

/*
 * Helping the queue a group's work was given to. A task that gives work to a serial queue
 * through a group and waits for the group handed its CPU to a spare thread while it waited,
 * which took the next such task: 400 tasks each giving two 1 ms items to one serial queue grew
 * the process to the thread limit (255) with its message; libdispatch ran them on 6 threads in
 * the same time. The waiter now runs the queue's items itself, up to the last of its group (they
 * run before that one in any case: one that needs a queue the waiter holds would wait for it
 * on any thread), if the queue is due for a drain and not held (cq__queue_help_group); while
 * another thread holds the queue it waits behind it, keeping its CPU's proc as a sync behind
 * another sync does, and looks again after 1 ms, then twice the wait before, up to 64 ms: a
 * drain that stops (its budget, a retarget) queues the queue behind the waiting tasks, and
 * nothing else tells the waiter. Only unbounded waits by pool threads help.
 */
static intptr_t help_and_wait(struct cq_group_s *g, struct group_wait *w)
{
    struct cq_queue_s *q = (struct cq_queue_s *)cq__tls.group_queue; /* a serial queue */
    cq__ref_retain(&q->obj); /* an item run here may give group work elsewhere: the TLS one goes */
    int64_t poll_ns = CQ__HELP_POLL_FIRST_NS;
    for (;;) {
        enum cq__help_result h = cq__queue_help_group(q, is_task_of, g);
        if (group_done(w)) {
            break;
        }
        if (h == CQ__HELP_RAN) {
            continue; /* more of the group may have come due meanwhile */
        }
        if (h == CQ__HELP_NONE) {
            /* nothing of q to run (its part of the group done, or q suspended, or on another
             * queue): wait as any wait does */
            (void)cq__wait_keeping(&group_wait_ops, w, CQ_TIME_FOREVER, false, behind(w->g));
            break;
        }
        if (cq__wait_keeping(&group_wait_ops, w, cq_time(CQ_TIME_NOW, poll_ns), true, false) == 0) {
            break;
        }
        poll_ns = cq__help_poll_next(poll_ns);
    }
    cq__ref_release(&q->obj);
    return emptied(g, cq__load(&g->state, relaxed));
}

intptr_t cq_group_wait(cq_group_t g, cq_time_t timeout)
{
    group_check(g, "cq_group_wait");
    /* acquire: pairs with the release of the emptying leave */
    uint64_t s = cq__load(&g->state, acquire);
    if (CQ__GS_COUNT(s) == 0) {
        return emptied(g, s);
    }
    if (cq__unlikely(cq__tls.group == g) && timeout == CQ_TIME_FOREVER) {
        cq__crash("cq_group_wait: deadlock: called from a task of %s, which cannot empty while "
                  "its own task waits for it",
                  CQ_DESCRIBE(g));
    }
    uint32_t gen = CQ__GS_GEN(s);
    /* Fork-join: our own children are usually still in our run queue. Run them here. */
    while (cq__pool_help(is_task_of, g)) {
        /* pairs with the leaves' acq_rel add in cq_group_leave */
        s = cq__load(&g->state, acquire);
        if (CQ__GS_COUNT(s) == 0 || CQ__GS_GEN(s) != gen) {
            return emptied(g, s);
        }
    }
    struct group_wait w = {.g = g, .gen = gen};
    if (cq__tls.group_queue != NULL && timeout == CQ_TIME_FOREVER &&
        cq__tls.help_depth < CQ__HELP_DEPTH_MAX) {
        return help_and_wait(g, &w);
    }
    intptr_t r = cq__wait_keeping(&group_wait_ops, &w, timeout, false, behind(g));
    return r == 0 ? emptied(g, cq__load(&g->state, relaxed)) : r;
}

/* cq_group_notify_f's work, for a notify queued as a barrier too. */
static void group_notify(cq_group_t g, cq_queue_t q, void *ctx, cq_function_t fn, bool barrier)
{
    struct cq__group_notify *n = malloc(sizeof *n);
    if (n == NULL) {
        cq__crash("cq_group_notify_f: out of memory");
    }
    n->next = NULL;
    n->queue = q;
    n->context = ctx;
    n->function = fn;
    n->barrier = barrier;
    pthread_mutex_lock(&g->notify_lock);
    /* pairs with the leaves' acq_rel add in cq_group_leave */
    uint64_t s = cq__load(&g->state, acquire);
    for (;;) {
        if (CQ__GS_COUNT(s) == 0) {
            /* Empty now: the notifies still listed belong to generations that have ended. */
            pthread_mutex_unlock(&g->notify_lock);
            free(n);
            if (barrier) {
                cq_barrier_async_f(q, ctx, fn);
            } else {
                cq_async_f(q, ctx, fn);
            }
            return;
        }
        if (s & CQ__GS_NOTIFY) {
            break;
        }
        /* acq_rel: an emptying leave that sees NOTIFY takes the list after our append (it
         * locks). A CAS that fails because the group emptied meanwhile read the word relaxed:
         * load it again with acquire, so that a notify run at once sees the members' work. Pairs
         * with the emptying leave's acq_rel add, which then runs the notifies */
        if (cq__cas_weak(&g->state, &s, s | CQ__GS_NOTIFY, acq_rel)) {
            if (!(s & CQ__GS_FLAGS)) {
                flags_set(g, s);
            }
            break;
        }
        /* pairs with the leaves' acq_rel add in cq_group_leave */
        s = cq__load(&g->state, acquire);
    }
    n->gen = CQ__GS_GEN(s);
    cq__ref_retain(&q->obj);
    if (g->notify_tail) {
        g->notify_tail->next = n;
    } else {
        g->notify_head = n;
    }
    g->notify_tail = n;
    pthread_mutex_unlock(&g->notify_lock);
}

void cq_group_notify_f(cq_group_t g, cq_queue_t q, void *ctx, cq_function_t fn)
{
    group_check(g, "cq_group_notify_f");
    cq__queue_check(q, "cq_group_notify_f");
    if (cq__unlikely(fn == NULL)) {
        cq__crash("cq_group_notify_f: NULL function");
    }
    group_notify(g, q, ctx, fn, false);
}

/* A BARRIER item is queued as a barrier by the leave that empties the group, as libdispatch
 * does (it used to come due as a task on a global queue, which then submitted it: work
 * submitted to the queue meanwhile came before it). */
void cq_group_notify_work_item(cq_group_t group, cq_queue_t queue, cq_work_item_t item)
{
    bool barrier = cq__work_item_is_barrier(item, "cq_group_notify_work_item");
    group_check(group, "cq_group_notify_work_item");
    cq__queue_check(queue, "cq_group_notify_work_item");
    cq_function_t fn;
    void *ctx;
    cq__work_item_submission(item, &fn, &ctx);
    group_notify(group, queue, ctx, fn, barrier);
}

/* The notification through `item`'s completion group: a BARRIER one is queued as a barrier by
 * the thread that finishes `item` (Swift's SQWorkItem.notify used to hop through a global
 * queue to submit it, and work submitted meanwhile came first). */
void cq_work_item_notify_work_item(cq_work_item_t item, cq_queue_t queue,
                                   cq_work_item_t notification)
{
    cq_group_t done = cq__work_item_completion_group(item, "cq_work_item_notify_work_item");
    bool barrier = cq__work_item_is_barrier(notification, "cq_work_item_notify_work_item");
    cq__queue_check(queue, "cq_work_item_notify_work_item");
    cq_function_t fn;
    void *ctx;
    cq__work_item_submission(notification, &fn, &ctx);
    group_notify(done, queue, ctx, fn, barrier);
}

size_t cq_swift_group_notify_purge(cq_group_t g, cq_function_t fn, bool (*dead)(void *),
                                   void (*release)(void *))
{
    group_check(g, "cq_swift_group_notify_purge");
    struct cq__group_notify *gone = NULL;
    size_t left = 0;
    pthread_mutex_lock(&g->notify_lock);
    struct cq__group_notify **link = &g->notify_head, *last = NULL;
    while (*link) {
        struct cq__group_notify *n = *link;
        if (n->function == fn && dead(n->context)) {
            *link = n->next;
            n->next = gone;
            gone = n;
        } else {
            left++;
            last = n;
            link = &n->next;
        }
    }
    /* The NOTIFY flag stays: the leave that empties the group finds fewer notifies, or none. */
    g->notify_tail = last;
    pthread_mutex_unlock(&g->notify_lock);
    while (gone) {
        struct cq__group_notify *next = gone->next;
        release(gone->context);
        cq__ref_release(&gone->queue->obj);
        free(gone);
        gone = next;
    }
    return left;
}

/* ---- running a group's task ------------------------------------------------------------------ */

static void group_task_run(struct cq__item *it)
{
    struct cq__task *t = (struct cq__task *)it;
    cq_function_t fn = t->function;
    uint64_t words[CQ__TASK_INLINE_WORDS];
    void *ctx = cq__task_context(t, words);
    struct cq_group_s *g = t->group;
    cq__task_free(t); /* before the call: the function's own submissions reuse it */
    struct cq_group_s *outer = cq__tls.group; /* a task run by a waiting task */
    cq__tls.group = g;
    fn(ctx);
    cq__tls.group = outer;
    cq__group_task_done(g);
}
CQ__ITEM_KIND_REGISTER(CQ__ITEM_GROUP_TASK, group_task_run)
