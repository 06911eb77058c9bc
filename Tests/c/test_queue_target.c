/*
 * Target queues: queues targeting one serial queue never overlap; the current-queue checks see
 * the whole hierarchy; retargeting a busy queue takes effect between tasks; priorities.
 */
#include "cq_test.h"

static void noop(void *ctx)
{
    (void)ctx;
}

/* ---- several queues (serial and concurrent) targeting one serial queue ----------------- */

#define SUBQUEUES 8
#define SUBTASKS 5000

static atomic_int active, overlaps;
static long per_queue_next[SUBQUEUES];
static long per_queue_bad;

static void sub_task(void *ctx)
{
    uintptr_t v = (uintptr_t)ctx;
    int qi = (int)(v >> 32);
    long seq = (long)(v & 0xffffffff);
    if (atomic_fetch_add(&active, 1) != 0) {
        atomic_fetch_add(&overlaps, 1);
    }
    if (qi % 2 == 0) { /* serial subqueues keep their own FIFO order */
        if (seq != per_queue_next[qi]) {
            per_queue_bad++;
        }
        per_queue_next[qi] = seq + 1;
    }
    atomic_fetch_sub(&active, 1);
}

static void test_queues_sharing_a_serial_target(void)
{
    cq_queue_t root = cq_queue_create("shared-target", NULL);
    cq_queue_t subs[SUBQUEUES];
    for (int i = 0; i < SUBQUEUES; i++) {
        subs[i] = cq_queue_create("sub", i % 2 ? CQ_QUEUE_CONCURRENT : CQ_QUEUE_SERIAL);
        cq_set_target_queue(subs[i], root);
    }
    cq_group_t g = cq_group_create();
    for (uintptr_t s = 0; s < SUBTASKS; s++) {
        for (uintptr_t i = 0; i < SUBQUEUES; i++) {
            cq_group_async_f(g, subs[i], (void *)((i << 32) | s), sub_task);
        }
    }
    WAIT_GROUP(g);
    CHECK_EQ(atomic_load(&overlaps), 0);
    CHECK_EQ(per_queue_bad, 0);
    for (int i = 0; i < SUBQUEUES; i += 2) {
        CHECK_EQ(per_queue_next[i], SUBTASKS);
    }
    for (int i = 0; i < SUBQUEUES; i++) {
        cq_release(subs[i]);
    }
    cq_release(root);
    cq_release(g);
}

/* ---- cq_queue_is_current / cq_assert_queue see the hierarchy ----------------------------- */

struct hier {
    cq_queue_t q, t;
    int q_current, t_current, other_current;
    cq_queue_t other;
    const char *label;
};

static void hier_task(void *ctx)
{
    struct hier *h = ctx;
    h->q_current = cq_queue_is_current(h->q);
    h->t_current = cq_queue_is_current(h->t);
    h->other_current = cq_queue_is_current(h->other);
    h->label = cq_queue_get_label(NULL);
    cq_assert_queue(h->q);
    cq_assert_queue(h->t);
    cq_assert_queue_not(h->other);
}

static void test_current_queue_hierarchy(void)
{
    struct hier h = {0};
    h.t = cq_queue_create("hier.target", NULL);
    h.q = cq_queue_create("hier.q", NULL);
    h.other = cq_queue_create("hier.other", NULL);
    cq_set_target_queue(h.q, h.t);
    cq_group_t g = cq_group_create();
    cq_group_async_f(g, h.q, &h, hier_task);
    WAIT_GROUP(g);
    CHECK(h.q_current);
    CHECK(h.t_current);
    CHECK(!h.other_current);
    CHECK(h.label && strcmp(h.label, "hier.q") == 0);
    CHECK(strcmp(cq_queue_get_label(h.t), "hier.target") == 0);
    CHECK(strcmp(cq_queue_get_label(NULL), "") == 0);
    CHECK(!cq_queue_is_current(h.q));
    cq_release(g);
    cq_release(h.q);
    cq_release(h.t);
    cq_release(h.other);
}

/* ---- retargeting a busy queue: tasks after the change run on the new target -------------- */

struct retarget {
    cq_queue_t q, t1, t2;
    int before_on_t1, after_on_t2, after_on_t1;
    cq_semaphore_t gate;
};

static void gate_task(void *ctx)
{
    struct retarget *r = ctx;
    cq_semaphore_wait(r->gate, cq_test_deadline());
    r->before_on_t1 = cq_queue_is_current(r->t1);
}

static void after_task(void *ctx)
{
    struct retarget *r = ctx;
    r->after_on_t2 = cq_queue_is_current(r->t2);
    r->after_on_t1 = cq_queue_is_current(r->t1);
}

static void test_retarget_busy_queue(void)
{
    struct retarget r = {0};
    r.t1 = cq_queue_create("t1", NULL);
    r.t2 = cq_queue_create("t2", NULL);
    r.q = cq_queue_create("retarget", NULL);
    r.gate = cq_semaphore_create(0);
    cq_set_target_queue(r.q, r.t1); /* idle: immediate */
    cq_async_f(r.q, &r, gate_task); /* busy while the gate is closed */
    cq_set_target_queue(r.q, r.t2); /* applied as a barrier, between tasks */
    cq_async_f(r.q, &r, after_task);
    cq_semaphore_signal(r.gate);
    cq_sync_f(r.q, NULL, noop);
    CHECK(r.before_on_t1);
    CHECK(r.after_on_t2);
    CHECK(!r.after_on_t1);
    cq_release(r.q);
    cq_release(r.t1);
    cq_release(r.t2);
    cq_release(r.gate);
}

/* ---- the target stays alive while a queue uses it ----------------------------------------- */

/* Each queue's finalizer runs (as a task on its target) before the queue lets go of its
 * target; so if `q` keeps `t` alive, `t`'s finalizer runs after `q`'s. The finalizer of `t`
 * records what it saw: a definite check at the moment `t` goes, however late that is. */
struct kept {
    cq_semaphore_t finalized;
    atomic_int user_finalized;        /* q's finalizer has run */
    atomic_int user_gone_before_target; /* what t's finalizer saw; -1 until it runs */
};

static void user_finalizer(void *ctx)
{
    struct kept *k = ctx;
    atomic_store(&k->user_finalized, 1);
    cq_semaphore_signal(k->finalized);
}

static void target_finalizer(void *ctx)
{
    struct kept *k = ctx;
    atomic_store(&k->user_gone_before_target, atomic_load(&k->user_finalized));
    cq_semaphore_signal(k->finalized);
}

static void test_target_kept_alive(void)
{
    struct kept k = {cq_semaphore_create(0), 0, -1};
    cq_queue_t t = cq_queue_create("kept", NULL);
    cq_queue_t q = cq_queue_create("user", NULL);
    cq_set_context(t, &k);
    cq_set_finalizer_f(t, target_finalizer);
    cq_set_context(q, &k);
    cq_set_finalizer_f(q, user_finalizer);
    cq_set_target_queue(q, t);
    cq_release(t); /* q still holds it */
    cq_sync_f(q, NULL, noop); /* and runs through it */
    cq_release(q); /* now t goes too */
    WAIT_SEMA(k.finalized);
    WAIT_SEMA(k.finalized);
    CHECK_EQ(atomic_load(&k.user_gone_before_target), 1);
    cq_release(k.finalized);
}

static void increment(void *ctx)
{
    atomic_fetch_add((atomic_int *)ctx, 1);
}

/* ---- global queues by priority -------------------------------------------------------- */

static void test_global_priorities(void)
{
    cq_queue_t h = cq_get_global_queue(CQ_QUEUE_PRIORITY_HIGH, 0);
    cq_queue_t d = cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0);
    cq_queue_t l = cq_get_global_queue(CQ_QUEUE_PRIORITY_LOW, 0);
    cq_queue_t b = cq_get_global_queue(CQ_QUEUE_PRIORITY_BACKGROUND, 0);
    CHECK(h && d && l && b);
    CHECK(h != d && d != l && l != b && h != b);
    CHECK(cq_get_global_queue(0, 0) == d);
    CHECK(cq_get_global_queue(5, 0) == h);
    CHECK(cq_get_global_queue(-3, 0) == l);
    CHECK(cq_get_global_queue(-20000, 0) == b);
    errno = 0;
    CHECK(cq_get_global_queue(0, 1) == NULL && errno == EINVAL);
    /* Global queues ignore retain/release/suspend/resume. */
    cq_retain(d);
    cq_release(d);
    cq_release(d);
    cq_suspend(d);
    cq_group_t g = cq_group_create();
    atomic_int n = 0;
    cq_queue_t all[4] = {h, d, l, b};
    for (int i = 0; i < 4; i++) {
        for (int k = 0; k < 100; k++) {
            cq_group_async_f(g, all[i], &n, increment);
        }
    }
    WAIT_GROUP(g);
    CHECK_EQ(atomic_load(&n), 400);
    cq_release(g);
}

int main(void)
{
    RUN(test_queues_sharing_a_serial_target);
    RUN(test_current_queue_hierarchy);
    RUN(test_retarget_busy_queue);
    RUN(test_target_kept_alive);
    RUN(test_global_priorities);
    TEST_MAIN_END();
}
