/*
 * Queues through libdispatch's names: serial order, concurrency, barriers, sync, targets,
 * suspension, inactive queues, attributes, labels, the current queue, specifics, contexts and
 * finalizers, global queues.
 */
#include "compat_test.h"

#define N_TASKS 1000

/* ---- serial queues run one task at a time, in order --------------------------------------- */

struct order {
    long seen[N_TASKS];
    long next;
    long inside;
    long max_inside;
};

struct order_task {
    struct order *order;
    long index;
};

static struct order_task order_tasks[N_TASKS];

static void record_order(void *context)
{
    struct order_task *t = (struct order_task *)context;
    compat_max(&t->order->max_inside, compat_add(&t->order->inside, 1));
    t->order->seen[t->order->next++] = t->index;
    compat_add(&t->order->inside, -1);
}

static void test_serial_order(void)
{
    static struct order order;
    dispatch_queue_t q = dispatch_queue_create("compat.serial", DISPATCH_QUEUE_SERIAL);
    long i;
    REQUIRE(q != NULL);
    for (i = 0; i < N_TASKS; i++) {
        order_tasks[i].order = &order;
        order_tasks[i].index = i;
        dispatch_async_f(q, &order_tasks[i], record_order);
    }
    dispatch_sync_f(q, NULL, compat_noop);
    CHECK_EQ(order.next, N_TASKS);
    for (i = 0; i < N_TASKS; i++) {
        if (order.seen[i] != i) {
            CHECK_EQ(order.seen[i], i);
            break;
        }
    }
    CHECK_EQ(order.max_inside, 1);
    dispatch_release(q);
}

/* ---- concurrent queues run tasks at the same time ----------------------------------------- */

struct pair {
    dispatch_semaphore_t a, b;
    long met;
};

static void meet_a(void *context)
{
    struct pair *p = (struct pair *)context;
    if (compat_rendezvous(p->a, p->b)) {
        compat_add(&p->met, 1);
    }
}

static void meet_b(void *context)
{
    struct pair *p = (struct pair *)context;
    if (compat_rendezvous(p->b, p->a)) {
        compat_add(&p->met, 1);
    }
}

static void check_concurrent(dispatch_queue_t q)
{
    struct pair p;
    dispatch_group_t g = dispatch_group_create();
    p.a = dispatch_semaphore_create(0);
    p.b = dispatch_semaphore_create(0);
    p.met = 0;
    dispatch_group_async_f(g, q, &p, meet_a);
    dispatch_group_async_f(g, q, &p, meet_b);
    WAIT_GROUP(g);
    CHECK_EQ(p.met, 2);
    dispatch_release(p.a);
    dispatch_release(p.b);
    dispatch_release(g);
}

static void test_concurrent(void)
{
    dispatch_queue_t q = dispatch_queue_create("compat.concurrent", DISPATCH_QUEUE_CONCURRENT);
    REQUIRE(q != NULL);
    check_concurrent(q);
    check_concurrent(compat_global());
    dispatch_release(q);
}

/* ---- barriers ------------------------------------------------------------------------------- */

struct barrier_state {
    long before, after, barrier_saw_before, barrier_saw_after, after_saw_barrier, barrier_done;
};

static void barrier_before(void *context)
{
    compat_add(&((struct barrier_state *)context)->before, 1);
}

static void barrier_fn(void *context)
{
    struct barrier_state *s = (struct barrier_state *)context;
    s->barrier_saw_before = compat_load(&s->before);
    s->barrier_saw_after = compat_load(&s->after);
    compat_store(&s->barrier_done, 1);
}

static void barrier_after(void *context)
{
    struct barrier_state *s = (struct barrier_state *)context;
    if (compat_load(&s->barrier_done)) {
        compat_add(&s->after_saw_barrier, 1);
    }
    compat_add(&s->after, 1);
}

static void test_barriers(void)
{
    struct barrier_state s;
    dispatch_queue_t q = dispatch_queue_create("compat.barrier", DISPATCH_QUEUE_CONCURRENT);
    dispatch_group_t g = dispatch_group_create();
    int i;
    memset(&s, 0, sizeof s);
    for (i = 0; i < 50; i++) {
        dispatch_group_async_f(g, q, &s, barrier_before);
    }
    dispatch_barrier_async_f(q, &s, barrier_fn);
    for (i = 0; i < 50; i++) {
        dispatch_group_async_f(g, q, &s, barrier_after);
    }
    WAIT_GROUP(g);
    CHECK_EQ(s.barrier_done, 1);
    CHECK_EQ(s.barrier_saw_before, 50);
    CHECK_EQ(s.barrier_saw_after, 0);
    CHECK_EQ(s.after_saw_barrier, 50);

    /* barrier_sync: after everything before it, and it has run when it returns */
    memset(&s, 0, sizeof s);
    for (i = 0; i < 50; i++) {
        dispatch_async_f(q, &s, barrier_before);
    }
    dispatch_barrier_sync_f(q, &s, barrier_fn);
    CHECK_EQ(s.barrier_done, 1);
    CHECK_EQ(s.barrier_saw_before, 50);
    dispatch_release(g);
    dispatch_release(q);
}

/* ---- sync ----------------------------------------------------------------------------------- */

struct nested {
    dispatch_queue_t inner;
    long ran_inner, ran_outer;
};

static void set_flag(void *context)
{
    compat_store((long *)context, 1);
}

static void sync_outer(void *context)
{
    struct nested *n = (struct nested *)context;
    dispatch_sync_f(n->inner, &n->ran_inner, set_flag);
    n->ran_outer = compat_load(&n->ran_inner) + 1;
}

static void test_sync(void)
{
    struct nested n;
    long flag = 0;
    dispatch_queue_t a = dispatch_queue_create("compat.sync.a", NULL);
    n.inner = dispatch_queue_create("compat.sync.b", DISPATCH_QUEUE_CONCURRENT);
    n.ran_inner = n.ran_outer = 0;
    dispatch_sync_f(a, &flag, set_flag);
    CHECK_EQ(flag, 1);
    dispatch_sync_f(a, &n, sync_outer);
    CHECK_EQ(n.ran_outer, 2);
    flag = 0;
    dispatch_barrier_sync_f(n.inner, &flag, set_flag);
    CHECK_EQ(flag, 1);
    dispatch_release(a);
    dispatch_release(n.inner);
}

/* ---- target queues and specifics ------------------------------------------------------------ */

static char key_a, key_b;

struct lookup {
    void *found_a, *found_b;
    const char *label;
    dispatch_queue_t current;
};

static void do_lookup(void *context)
{
    struct lookup *l = (struct lookup *)context;
    l->found_a = dispatch_get_specific(&key_a);
    l->found_b = dispatch_get_specific(&key_b);
    l->label = dispatch_queue_get_label(DISPATCH_CURRENT_QUEUE_LABEL);
    l->current = dispatch_get_current_queue();
}

static long destructor_calls;
static dispatch_semaphore_t destructor_sema;

static void specific_destructor(void *context)
{
    compat_add(&destructor_calls, 1);
    CHECK(context == (void *)&key_b);
    dispatch_semaphore_signal(destructor_sema);
}

static void count_inside(void *context)
{
    struct order *o = (struct order *)context;
    compat_max(&o->max_inside, compat_add(&o->inside, 1));
    compat_add(&o->next, 1);
    compat_add(&o->inside, -1);
}

static void check_serial(dispatch_queue_t q)
{
    static struct order o;
    dispatch_group_t g = dispatch_group_create();
    int i;
    memset(&o, 0, sizeof o);
    for (i = 0; i < N_TASKS; i++) {
        dispatch_group_async_f(g, q, &o, count_inside);
    }
    WAIT_GROUP(g);
    CHECK_EQ(o.next, N_TASKS);
    CHECK_EQ(o.max_inside, 1);
    dispatch_release(g);
}

static void test_targets_and_specifics(void)
{
    struct lookup l;
    int va = 1;
    dispatch_queue_t root = dispatch_queue_create("compat.root", DISPATCH_QUEUE_SERIAL);
    dispatch_queue_t child = dispatch_queue_create("compat.child", DISPATCH_QUEUE_CONCURRENT);
    dispatch_queue_t with_target;
    REQUIRE(root != NULL && child != NULL);

    dispatch_queue_set_specific(root, &key_a, &va, NULL);
    dispatch_queue_set_specific(child, &key_b, &key_b, NULL);
    CHECK(dispatch_queue_get_specific(root, &key_a) == &va);
    CHECK(dispatch_queue_get_specific(child, &key_a) == NULL);
    CHECK(dispatch_get_specific(&key_a) == NULL); /* not on any queue */

    dispatch_set_target_queue(child, root);
    memset(&l, 0, sizeof l);
    dispatch_sync_f(child, &l, do_lookup);
    CHECK(l.found_a == &va); /* found along the target chain */
    CHECK(l.found_b == &key_b);
    CHECK(l.label != NULL && strcmp(l.label, "compat.child") == 0);
    CHECK(l.current == child);

    /* a concurrent queue targeting a serial queue is serial */
    check_serial(child);

    with_target =
        dispatch_queue_create_with_target("compat.with-target", DISPATCH_QUEUE_SERIAL, root);
    REQUIRE(with_target != NULL);
    memset(&l, 0, sizeof l);
    dispatch_sync_f(with_target, &l, do_lookup);
    CHECK(l.found_a == &va);
    CHECK(l.found_b == NULL);

    /* replacing a value runs the old value's destructor */
    destructor_sema = dispatch_semaphore_create(0);
    dispatch_queue_set_specific(child, &key_b, &key_b, specific_destructor);
    dispatch_queue_set_specific(child, &key_b, NULL, NULL);
    WAIT_SEMA(destructor_sema);
    CHECK_EQ(compat_load(&destructor_calls), 1);
    CHECK(dispatch_queue_get_specific(child, &key_b) == NULL);

    dispatch_release(with_target);
    dispatch_release(child);
    dispatch_release(root);
    dispatch_release(destructor_sema);
}

/* ---- suspension and inactive queues --------------------------------------------------------- */

enum { BY_RESUME, BY_ACTIVATE };

/* A task held by a suspended or inactive queue: it records whether the queue had been let go
 * (`released`, set just before the resume or activation) by the time it ran. */
struct held {
    long ran;
    long released;
    long early;
};

static void held_task(void *context)
{
    struct held *h = (struct held *)context;
    if (!compat_load(&h->released)) {
        compat_add(&h->early, 1);
    }
    compat_add(&h->ran, 1);
}

static void check_held_then_runs(dispatch_queue_t q, int how)
{
    struct held h;
    dispatch_group_t g = dispatch_group_create();
    memset(&h, 0, sizeof h);
    dispatch_group_async_f(g, q, &h, held_task);
    /* Held: no event can show "it does not run", so this is a bounded window; the task also
     * checks, whenever it runs, that the queue had been let go by then. */
    CHECK(dispatch_group_wait(g, compat_short()) != 0);
    CHECK_EQ(compat_load(&h.ran), 0);
    compat_store(&h.released, 1);
    if (how == BY_RESUME) {
        dispatch_resume(q);
    } else {
        dispatch_activate(q);
    }
    WAIT_GROUP(g);
    CHECK_EQ(compat_load(&h.ran), 1);
    CHECK_EQ(compat_load(&h.early), 0);
    dispatch_release(g);
}

static void test_suspend_and_inactive(void)
{
    dispatch_queue_t q = dispatch_queue_create("compat.suspend", NULL);
    dispatch_queue_t inactive =
        dispatch_queue_create("compat.inactive", DISPATCH_QUEUE_SERIAL_INACTIVE);
    dispatch_queue_t inactive_c =
        dispatch_queue_create("compat.inactive-concurrent", DISPATCH_QUEUE_CONCURRENT_INACTIVE);
    dispatch_queue_t made = dispatch_queue_create(
        "compat.made-inactive", dispatch_queue_attr_make_initially_inactive(DISPATCH_QUEUE_SERIAL));
    REQUIRE(q != NULL && inactive != NULL && inactive_c != NULL && made != NULL);

    dispatch_suspend(q);
    check_held_then_runs(q, BY_RESUME);
    check_held_then_runs(inactive, BY_ACTIVATE);
    check_held_then_runs(inactive_c, BY_ACTIVATE);
    check_held_then_runs(made, BY_ACTIVATE);
    check_concurrent(inactive_c);

    /* Activating an active object does nothing (libdispatch documents it): a queue activated
     * twice, and one that was never inactive, still run their work. */
    dispatch_activate(made);
    dispatch_activate(q);
    check_concurrent(inactive_c);
    {
        long ran = 0;
        dispatch_sync_f(made, &ran, set_flag);
        dispatch_sync_f(q, &ran, set_flag);
        CHECK_EQ(compat_load(&ran), 1);
    }

    dispatch_release(q);
    dispatch_release(inactive);
    dispatch_release(inactive_c);
    dispatch_release(made);
}

/* ---- attributes ----------------------------------------------------------------------------- */

static void test_attributes(void)
{
    dispatch_queue_attr_t utility =
        dispatch_queue_attr_make_with_qos_class(DISPATCH_QUEUE_CONCURRENT, QOS_CLASS_UTILITY, -1);
    dispatch_queue_attr_t pool = dispatch_queue_attr_make_with_autorelease_frequency(
        DISPATCH_QUEUE_SERIAL, DISPATCH_AUTORELEASE_FREQUENCY_WORK_ITEM);
    dispatch_queue_t q;
    long flag = 0;

    /* invalid QoS classes and relative priorities leave the attribute as it was */
    CHECK(dispatch_queue_attr_make_with_qos_class(DISPATCH_QUEUE_CONCURRENT, 7, 0) ==
          DISPATCH_QUEUE_CONCURRENT);
    CHECK(dispatch_queue_attr_make_with_qos_class(DISPATCH_QUEUE_CONCURRENT, QOS_CLASS_UTILITY,
                                                  1) == DISPATCH_QUEUE_CONCURRENT);
    CHECK(dispatch_queue_attr_make_initially_inactive(NULL) == DISPATCH_QUEUE_SERIAL_INACTIVE);

    q = dispatch_queue_create("compat.utility", utility);
    REQUIRE(q != NULL);
    check_concurrent(q); /* still concurrent */
    dispatch_release(q);

    q = dispatch_queue_create("compat.utility-inactive",
                              dispatch_queue_attr_make_initially_inactive(utility));
    REQUIRE(q != NULL);
    check_held_then_runs(q, BY_ACTIVATE);
    dispatch_release(q);

    q = dispatch_queue_create("compat.autorelease", pool);
    REQUIRE(q != NULL);
    dispatch_sync_f(q, &flag, set_flag);
    CHECK_EQ(flag, 1);
    dispatch_release(q);
}

/* ---- labels, current queue, asserts --------------------------------------------------------- */

static dispatch_queue_t unrelated_queue;

static void check_asserts(void *context)
{
    dispatch_queue_t q = (dispatch_queue_t)context;
    dispatch_assert_queue(q);
    dispatch_assert_queue_barrier(q); /* a serial queue's task runs alone */
    dispatch_assert_queue_not(unrelated_queue);
    dispatch_assert_queue_debug(q);
    dispatch_assert_queue_not_debug(unrelated_queue);
    CHECK(dispatch_get_current_queue() == q);
}

static void *thread_current(void *arg)
{
    (void)arg;
    /* outside any queue: some queue (libdispatch: a global one), never NULL */
    return (void *)dispatch_get_current_queue();
}

static void test_labels_and_current(void)
{
    struct lookup l;
    dispatch_queue_t q = dispatch_queue_create("compat.label", NULL);
    dispatch_queue_t unnamed = dispatch_queue_create(NULL, NULL);
    pthread_t thread;
    void *current = NULL;
    REQUIRE(q != NULL && unnamed != NULL);
    CHECK(strcmp(dispatch_queue_get_label(q), "compat.label") == 0);
    CHECK(strcmp(dispatch_queue_get_label(unnamed), "") == 0);
    memset(&l, 0, sizeof l);
    dispatch_sync_f(q, &l, do_lookup);
    CHECK(l.label != NULL && strcmp(l.label, "compat.label") == 0);
    CHECK(l.current == q);
    unrelated_queue = dispatch_queue_create("compat.unrelated", NULL);
    dispatch_sync_f(q, q, check_asserts);
    dispatch_release(unrelated_queue);
    REQUIRE(pthread_create(&thread, NULL, thread_current, NULL) == 0);
    REQUIRE(pthread_join(thread, &current) == 0);
    CHECK(current != NULL);
    dispatch_release(q);
    dispatch_release(unnamed);
}

/* ---- contexts, finalizers, retain/release --------------------------------------------------- */

static dispatch_semaphore_t finalized;
static void *finalized_context;

static void finalizer(void *context)
{
    finalized_context = context;
    dispatch_semaphore_signal(finalized);
}

static void test_context_and_finalizer(void)
{
    static int value = 42;
    dispatch_queue_t q = dispatch_queue_create("compat.finalize", NULL);
    dispatch_group_t g = dispatch_group_create();
    dispatch_semaphore_t s = dispatch_semaphore_create(1);
    finalized = dispatch_semaphore_create(0);
    REQUIRE(q != NULL && g != NULL && s != NULL && finalized != NULL);

    dispatch_set_context(q, &value);
    CHECK(dispatch_get_context(q) == &value);
    dispatch_set_context(g, &value);
    CHECK(dispatch_get_context(g) == &value);
    dispatch_set_context(s, &value);
    CHECK(dispatch_get_context(s) == &value);
    dispatch_set_finalizer_f(q, finalizer);

    dispatch_retain(q);
    dispatch_release(q);
    CHECK(dispatch_get_context(q) == &value); /* still alive: one reference left */
    dispatch_release(q);
    WAIT_SEMA(finalized);
    CHECK(finalized_context == &value);

    dispatch_release(g);
    dispatch_release(s);
    dispatch_release(finalized);
}

/* A finalizer is not called when the context is NULL: it exists to free the context. Both
 * queues target one serial queue, where their finalizers run in release order; the second
 * one's (with a context) tells that the first one's would have run by then. */
static long null_context_calls;

static void count_null_context(void *context)
{
    if (context == NULL) {
        compat_add(&null_context_calls, 1);
    }
}

static void test_no_finalizer_without_context(void)
{
    static int value = 7;
    dispatch_queue_t order = dispatch_queue_create("compat.finalizer-order", NULL);
    dispatch_queue_t without = dispatch_queue_create("compat.no-context", NULL);
    dispatch_queue_t with = dispatch_queue_create("compat.context", NULL);
    finalized = dispatch_semaphore_create(0);
    REQUIRE(order != NULL && without != NULL && with != NULL && finalized != NULL);
    dispatch_set_target_queue(without, order);
    dispatch_set_target_queue(with, order);
    dispatch_set_finalizer_f(without, count_null_context);
    dispatch_set_context(with, &value);
    dispatch_set_finalizer_f(with, finalizer);
    dispatch_release(without);
    dispatch_release(with);
    WAIT_SEMA(finalized);
    CHECK(finalized_context == &value);
    dispatch_sync_f(order, NULL, compat_noop); /* anything queued on `order` before has run */
    CHECK_EQ(compat_load(&null_context_calls), 0);
    dispatch_release(order);
    dispatch_release(finalized);
}

/* On a group or a semaphore, dispatch_set_target_queue says where the finalizer runs (ours
 * aborted: "is not a queue"). The last target set counts, and the one it replaced is given
 * back: its own finalizer runs once the program releases it. */
static char finalizer_key;

struct finalizer_place {
    dispatch_semaphore_t done;
    long on_target; /* the finalizer ran with the target's specific value */
};

static void finalizer_on_target(void *context)
{
    struct finalizer_place *p = (struct finalizer_place *)context;
    p->on_target = dispatch_get_specific(&finalizer_key) == (void *)&finalizer_key;
    dispatch_semaphore_signal(p->done);
}

/* Retargets `object` twice, sets its finalizer and releases it: the finalizer runs on
 * `target`. */
static void finalize_on(dispatch_object_t object, dispatch_queue_t replaced,
                        dispatch_queue_t target)
{
    struct finalizer_place place = {dispatch_semaphore_create(0), 0};
    REQUIRE(place.done != NULL);
    dispatch_set_target_queue(object, replaced);
    dispatch_set_target_queue(object, target); /* the last one counts */
    dispatch_set_context(object, &place);
    dispatch_set_finalizer_f(object, finalizer_on_target);
    dispatch_release(object);
    WAIT_SEMA(place.done);
    CHECK_EQ(place.on_target, 1);
    dispatch_release(place.done);
}

static void test_finalizer_target_queue(void)
{
    static int value = 3;
    dispatch_queue_t replaced = dispatch_queue_create("compat.finalizer-replaced", NULL);
    dispatch_queue_t target = dispatch_queue_create("compat.finalizer-target", NULL);
    dispatch_group_t group = dispatch_group_create();
    dispatch_semaphore_t sema = dispatch_semaphore_create(0);
    REQUIRE(replaced != NULL && target != NULL && group != NULL && sema != NULL);
    dispatch_queue_set_specific(target, &finalizer_key, &finalizer_key, NULL);
    finalize_on(group, replaced, target);
    finalize_on(sema, replaced, target);
    /* `replaced` is not held by the objects any more: released, it is finalized */
    finalized = dispatch_semaphore_create(0);
    REQUIRE(finalized != NULL);
    dispatch_set_context(replaced, &value);
    dispatch_set_finalizer_f(replaced, finalizer);
    dispatch_release(replaced);
    WAIT_SEMA(finalized);
    CHECK(finalized_context == &value);
    dispatch_release(target);
    dispatch_release(finalized);
}

/* ---- global queues -------------------------------------------------------------------------- */

/* Work submitted straight to a global queue runs on it: the current label is the queue's, the
 * queue is the current one, and dispatch_assert_queue holds (it used to abort: "running on no
 * queue"). */
struct on_global {
    dispatch_queue_t queue;
    const char *label;
    dispatch_queue_t current;
    dispatch_group_t group; /* for the dispatch_after_f run */
};

static void look_on_global(void *context)
{
    struct on_global *g = (struct on_global *)context;
    dispatch_assert_queue(g->queue);
    g->label = dispatch_queue_get_label(DISPATCH_CURRENT_QUEUE_LABEL);
    g->current = dispatch_get_current_queue();
    if (g->group != NULL) {
        dispatch_group_leave(g->group);
    }
}

static void check_work_on_global(dispatch_queue_t queue)
{
    struct on_global by_async, by_after;
    dispatch_group_t g = dispatch_group_create();
    memset(&by_async, 0, sizeof by_async);
    memset(&by_after, 0, sizeof by_after);
    by_async.queue = by_after.queue = queue;
    by_after.group = g;
    dispatch_group_async_f(g, queue, &by_async, look_on_global);
    dispatch_group_enter(g);
    dispatch_after_f(dispatch_time(DISPATCH_TIME_NOW, 1000000), queue, &by_after, look_on_global);
    WAIT_GROUP(g);
    CHECK(by_async.label != NULL && strcmp(by_async.label, dispatch_queue_get_label(queue)) == 0);
    CHECK(by_after.label != NULL && strcmp(by_after.label, dispatch_queue_get_label(queue)) == 0);
    CHECK(by_async.current == queue);
    CHECK(by_after.current == queue);
    dispatch_release(g);
}

/* ---- concurrent queues start tasks in the order they were submitted ------------------------
 * Parallel work whose results are written in order: each task waits (on a condition variable,
 * outside the runtime) until the task submitted before it has written. That needs each task
 * to start only after every earlier one has (libdispatch's queues are FIFO), or a thread for
 * each task started early. Ours once started tasks out of order: a worker ran an item of the
 * inject queue ahead of older ones of its own ring, a full ring sent the newest item to the
 * inject queue ahead of the ring's newer half, and a thief ran the newest item it stole. The
 * tasks that came early then waited for ones queued behind them, on every thread the pool
 * would start: 2,000 such tasks hung at the thread limit (libdispatch: 0.01 s). Submitted from
 * the main thread and from a task (whose pushes go to its worker's ring), onto a global and
 * a concurrent queue. A waiting task gives up after the patience, so a failure ends. */

#define N_TURNS 2000

static struct turns {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    long turn;
    long gave_up;
    struct timespec deadline;
} turns = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, {0, 0}};

static void take_turn(void *context)
{
    long mine = (long)(intptr_t)context;
    pthread_mutex_lock(&turns.lock);
    while (turns.turn != mine && !turns.gave_up) {
        if (pthread_cond_timedwait(&turns.changed, &turns.lock, &turns.deadline) == ETIMEDOUT) {
            turns.gave_up = 1;
        }
    }
    if (turns.turn == mine) {
        turns.turn++;
    }
    pthread_cond_broadcast(&turns.changed);
    pthread_mutex_unlock(&turns.lock);
}

struct turn_submission {
    dispatch_queue_t q;
    dispatch_group_t g;
};

static void submit_turns(void *context)
{
    struct turn_submission *s = (struct turn_submission *)context;
    long i;
    for (i = 0; i < N_TURNS; i++) {
        dispatch_group_async_f(s->g, s->q, (void *)(intptr_t)i, take_turn);
    }
}

/* One run; true if every task took its turn. */
static bool run_turns(dispatch_queue_t q, bool from_a_task)
{
    struct turn_submission s = {q, dispatch_group_create()};
    pthread_mutex_lock(&turns.lock);
    turns.turn = 0;
    turns.gave_up = 0;
    clock_gettime(CLOCK_REALTIME, &turns.deadline);
    turns.deadline.tv_sec += COMPAT_PATIENCE_NS / 1000000000ll / 2;
    pthread_mutex_unlock(&turns.lock);
    if (from_a_task) {
        dispatch_group_async_f(s.g, compat_global(), &s, submit_turns);
    } else {
        submit_turns(&s);
    }
    WAIT_GROUP(s.g);
    bool ok = turns.turn == N_TURNS && !turns.gave_up;
    if (!ok) {
        fprintf(stderr, "   %s queue, submitted from %s: stopped at turn %ld\n",
                q == compat_global() ? "global" : "concurrent", from_a_task ? "a task" : "main",
                turns.turn);
    }
    dispatch_release(s.g);
    return ok;
}

/* Submitted from a task, the tasks go through the submitting worker's ring, which overflows
 * into the inject queue while the other workers wake: the order depends on timing, and a run
 * that started an old task behind newer ones (1 in 40 before the spill of find.c's
 * ring_push) is repeated until it would show. */
#define TURNS_FROM_A_TASK_RUNS 25

static void test_tasks_start_in_submission_order(void)
{
    dispatch_queue_t c = dispatch_queue_create("compat.turns", DISPATCH_QUEUE_CONCURRENT);
    REQUIRE(c != NULL);
    CHECK(run_turns(compat_global(), false));
    CHECK(run_turns(c, false));
    for (int i = 0; i < TURNS_FROM_A_TASK_RUNS; i++) {
        if (!run_turns(compat_global(), true) || !run_turns(c, true)) {
            CHECK(false);
            break;
        }
    }
    dispatch_release(c);
}

static void test_global_queues(void)
{
    dispatch_queue_t high = dispatch_get_global_queue(DISPATCH_QUEUE_PRIORITY_HIGH, 0);
    dispatch_queue_t def = dispatch_get_global_queue(DISPATCH_QUEUE_PRIORITY_DEFAULT, 0);
    dispatch_queue_t low = dispatch_get_global_queue(DISPATCH_QUEUE_PRIORITY_LOW, 0);
    dispatch_queue_t bg = dispatch_get_global_queue(DISPATCH_QUEUE_PRIORITY_BACKGROUND, 0);
    REQUIRE(high != NULL && def != NULL && low != NULL && bg != NULL);
    CHECK(high != def && def != low && low != bg && high != bg);
    CHECK(dispatch_get_global_queue(QOS_CLASS_USER_INTERACTIVE, 0) == high);
    CHECK(dispatch_get_global_queue(QOS_CLASS_USER_INITIATED, 0) == high);
    CHECK(dispatch_get_global_queue(QOS_CLASS_DEFAULT, 0) == def);
    CHECK(dispatch_get_global_queue(QOS_CLASS_UTILITY, 0) == low);
    CHECK(dispatch_get_global_queue(QOS_CLASS_BACKGROUND, 0) == bg);
    CHECK(dispatch_get_global_queue(QOS_CLASS_UNSPECIFIED, 0) == def);
    /* Apple's private QOS_CLASS_MAINTENANCE: background (ours rounded 5 to the high queue) */
    CHECK(dispatch_get_global_queue(0x05, 0) == bg);
    CHECK(dispatch_get_global_queue(DISPATCH_QUEUE_PRIORITY_DEFAULT, 1) == NULL);
    /* global queues ignore retain, release, suspend, resume */
    dispatch_retain(def);
    dispatch_release(def);
    dispatch_release(def);
    check_concurrent(low);
    check_concurrent(bg);
    check_work_on_global(high);
    check_work_on_global(def);
    check_work_on_global(low);
    check_work_on_global(bg);
}

int main(void)
{
    RUN(test_serial_order);
    RUN(test_concurrent);
    RUN(test_barriers);
    RUN(test_sync);
    RUN(test_targets_and_specifics);
    RUN(test_suspend_and_inactive);
    RUN(test_attributes);
    RUN(test_labels_and_current);
    RUN(test_context_and_finalizer);
    RUN(test_no_finalizer_without_context);
    RUN(test_finalizer_target_queue);
    RUN(test_global_queues);
    RUN(test_tasks_start_in_submission_order);
    TEST_MAIN_END();
}
