/*
 * Groups: wait on an empty group, enter/leave, waits that time out, notify when empty (at once
 * if already empty), several notifies in registration order, reuse, waiters on many threads,
 * group tasks keeping a released group alive, a group re-entered while its emptying is handled,
 * the count (and the emptying's wake-up) keeping a released group alive without tasks.
 */
#include <pthread.h>
#include <time.h>

#include "cq_test.h"

static void noop(void *ctx)
{
    (void)ctx;
}

static void increment(void *ctx)
{
    atomic_fetch_add((atomic_long *)ctx, 1);
}

static void test_empty_and_enter_leave(void)
{
    cq_group_t g = cq_group_create();
    CHECK_EQ(cq_group_wait(g, CQ_TIME_NOW), 0);
    CHECK_EQ(cq_group_wait(g, CQ_TIME_FOREVER), 0);
    cq_group_enter(g);
    cq_group_enter(g);
    CHECK(cq_group_wait(g, CQ_TIME_NOW) != 0);
    cq_group_leave(g);
    CHECK(cq_group_wait(g, CQ_TIME_NOW) != 0);
    cq_group_leave(g);
    CHECK_EQ(cq_group_wait(g, CQ_TIME_NOW), 0);
    cq_release(g);
}

static void test_wait_times_out(void)
{
    cq_group_t g = cq_group_create();
    cq_group_enter(g);
    uint64_t t0 = cq_test_now_ns();
    CHECK(cq_group_wait(g, cq_time(CQ_TIME_NOW, 40 * 1000000ll)) != 0);
    CHECK(cq_test_now_ns() - t0 >= 40 * 1000000ull);
    CHECK(cq_group_wait(g, cq_walltime(NULL, 10 * 1000000ll)) != 0);
    cq_group_leave(g);
    CHECK_EQ(cq_group_wait(g, cq_time(CQ_TIME_NOW, 40 * 1000000ll)), 0);
    cq_release(g);
}

/* ---- group_async: the wait sees every task's effects --------------------------------- */

static void test_group_async_counts(void)
{
    cq_group_t g = cq_group_create();
    atomic_long n = 0;
    cq_queue_t serial = cq_queue_create("g-serial", NULL);
    cq_queue_t conc = cq_queue_create("g-conc", CQ_QUEUE_CONCURRENT);
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 1000; i++) {
            cq_group_async_f(g, cq_get_global_queue(0, 0), &n, increment);
            cq_group_async_f(g, serial, &n, increment);
            cq_group_async_f(g, conc, &n, increment);
        }
        WAIT_GROUP(g);
        CHECK_EQ(atomic_load(&n), (round + 1) * 3000l);
    }
    cq_release(serial);
    cq_release(conc);
    cq_release(g);
}

/* ---- notify: registration order, reuse, already-empty ---------------------------------- */

struct notify_log {
    int order[8];
    int len;
    cq_semaphore_t done;
    atomic_long *count_at_notify;
    long seen;
};

static struct notify_log nlog;

static void log_notify(void *ctx)
{
    nlog.order[nlog.len++] = (int)(intptr_t)ctx;
    if ((intptr_t)ctx == 0) {
        nlog.seen = atomic_load(nlog.count_at_notify);
    }
    cq_semaphore_signal(nlog.done);
}

static void slow_increment(void *ctx)
{
    for (volatile int i = 0; i < 10000; i++) {
    }
    increment(ctx);
}

static void test_notify_order_and_reuse(void)
{
    nlog.done = cq_semaphore_create(0);
    cq_queue_t serial = cq_queue_create("notify", NULL);
    cq_group_t g = cq_group_create();
    atomic_long n = 0;
    nlog.count_at_notify = &n;
    for (int round = 0; round < 3; round++) {
        nlog.len = 0;
        cq_group_enter(g); /* holds the group busy while the notifies are registered */
        for (int i = 0; i < 50; i++) {
            cq_group_async_f(g, cq_get_global_queue(0, 0), &n, slow_increment);
        }
        for (intptr_t k = 0; k < 4; k++) {
            cq_group_notify_f(g, serial, (void *)k, log_notify);
        }
        cq_group_leave(g);
        for (int k = 0; k < 4; k++) {
            WAIT_SEMA(nlog.done);
        }
        CHECK_EQ(nlog.len, 4);
        for (int k = 0; k < 4; k++) {
            CHECK_EQ(nlog.order[k], k);
        }
        CHECK_EQ(nlog.seen, (round + 1) * 50l); /* ran after every task of the group */
    }
    /* Already empty: the notify is scheduled at once. */
    nlog.len = 0;
    cq_group_notify_f(g, serial, (void *)7, log_notify);
    WAIT_SEMA(nlog.done);
    CHECK_EQ(nlog.order[0], 7);
    cq_release(g);
    cq_release(serial);
    cq_release(nlog.done);
}

/* ---- a released group lives until its tasks and notifies are done ------------------------- */

static void signal_it(void *ctx)
{
    cq_semaphore_signal(ctx);
}

static void test_released_group_alive(void)
{
    cq_semaphore_t done = cq_semaphore_create(0);
    atomic_long n = 0;
    for (int k = 0; k < 100; k++) {
        cq_group_t g = cq_group_create();
        for (int i = 0; i < 20; i++) {
            cq_group_async_f(g, cq_get_global_queue(0, 0), &n, increment);
        }
        cq_group_notify_f(g, cq_get_global_queue(0, 0), done, signal_it);
        cq_release(g);
    }
    for (int k = 0; k < 100; k++) {
        WAIT_SEMA(done);
    }
    CHECK_EQ(atomic_load(&n), 2000);
    cq_release(done);
}

/*
 * ---- an entered group outlives its last cq_release, until its last leave --------------------
 * Enter and leave touch no reference count: the last release of a busy group marks it, and
 * the leave that empties it frees it. The finalizer says when the group was freed: never
 * before the last leave began (the leaver sets `leaving` just before it). Variants: a plain
 * enter; a notify registered too (the emptying leave also wakes); a thread that waits on the
 * group and releases its own reference as soon as its wait returns (racing the emptying
 * leave's wake-up, which must still find the group). Under ASan a use after free shows too.
 */
enum { LIFETIME_ROUNDS = 1500 };
static atomic_long finalized_early, lifetime_waits_failed;

struct lifetime_round {
    cq_group_t g;
    atomic_bool leaving;
    cq_semaphore_t done; /* finalizer, notify and waiter each signal it once */
};

static void lifetime_finalizer(void *ctx)
{
    struct lifetime_round *r = ctx;
    if (!atomic_load(&r->leaving)) {
        atomic_fetch_add(&finalized_early, 1);
    }
    cq_semaphore_signal(r->done);
}

static void lifetime_leave(void *ctx)
{
    struct lifetime_round *r = ctx;
    atomic_store(&r->leaving, true);
    cq_group_leave(r->g);
}

/* As lifetime_leave, a little later: the waiter is usually asleep by then, so the leave has a
 * waiter to wake (only coverage depends on that, not the checks). */
static void lifetime_leave_later(void *ctx)
{
    cq_semaphore_t never = cq_semaphore_create(0);
    CHECK(cq_semaphore_wait(never, cq_time(CQ_TIME_NOW, 1000000)) != 0);
    cq_release(never);
    lifetime_leave(ctx);
}

static void *lifetime_waiter(void *ctx)
{
    struct lifetime_round *r = ctx;
    if (cq_group_wait(r->g, cq_test_deadline()) != 0) {
        atomic_fetch_add(&lifetime_waits_failed, 1);
    }
    cq_release(r->g); /* perhaps the last reference, while the leave is still waking us */
    cq_semaphore_signal(r->done);
    return NULL;
}

static void test_released_while_entered(void)
{
    cq_queue_t q = cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0);
    struct lifetime_round *rounds = calloc(LIFETIME_ROUNDS, sizeof *rounds);
    REQUIRE(rounds != NULL);
    for (int i = 0; i < LIFETIME_ROUNDS; i++) {
        struct lifetime_round *r = &rounds[i];
        int variant = i % 3;
        r->done = cq_semaphore_create(0);
        r->g = cq_group_create();
        cq_set_context(r->g, r);
        cq_set_finalizer_f(r->g, lifetime_finalizer);
        cq_group_enter(r->g);
        pthread_t th = 0;
        if (variant == 1) {
            cq_group_notify_f(r->g, q, r->done, signal_it);
        } else if (variant == 2) {
            cq_retain(r->g); /* the waiter's */
            REQUIRE(pthread_create(&th, NULL, lifetime_waiter, r) == 0);
        }
        cq_release(r->g); /* ours: the last one in variants 0 and 1 */
        cq_async_f(q, r, variant == 2 ? lifetime_leave_later : lifetime_leave);
        WAIT_SEMA(r->done); /* the finalizer */
        if (variant != 0) {
            WAIT_SEMA(r->done); /* the notify, or the waiter */
        }
        if (variant == 2) {
            pthread_join(th, NULL);
        }
        cq_release(r->done);
    }
    CHECK_EQ(atomic_load(&finalized_early), 0);
    CHECK_EQ(atomic_load(&lifetime_waits_failed), 0);
    free(rounds);
}

/* ---- several threads wait on one group -------------------------------------------------- */

static cq_group_t shared_group;
static atomic_int woke;

static void *group_waiter(void *p)
{
    (void)p;
    if (cq_group_wait(shared_group, cq_test_deadline()) == 0) {
        atomic_fetch_add(&woke, 1);
    }
    return NULL;
}

static void group_waiter_task(void *ctx)
{
    group_waiter(ctx);
}

static void release_gate(void *ctx)
{
    cq_semaphore_wait(ctx, cq_test_deadline());
}

static void test_many_waiters(void)
{
    shared_group = cq_group_create();
    cq_semaphore_t gate = cq_semaphore_create(0);
    cq_group_async_f(shared_group, cq_get_global_queue(0, 0), gate, release_gate);
    pthread_t th[6];
    for (int i = 0; i < 6; i++) {
        pthread_create(&th[i], NULL, group_waiter, NULL);
    }
    /* Waiters in the pool too. */
    cq_group_t inner = cq_group_create();
    for (int i = 0; i < 4; i++) {
        cq_group_async_f(inner, cq_get_global_queue(0, 0), NULL, group_waiter_task);
    }
    cq_semaphore_wait(gate, cq_time(CQ_TIME_NOW, 20 * 1000000ll)); /* let them sleep */
    cq_semaphore_signal(gate);
    for (int i = 0; i < 6; i++) {
        pthread_join(th[i], NULL);
    }
    WAIT_GROUP(inner);
    CHECK_EQ(atomic_load(&woke), 10);
    cq_release(inner);
    cq_release(shared_group);
    cq_release(gate);
}

/* ---- enter/leave from many threads: the group empties exactly once per cycle ------------ */

static cq_group_t hammer_g;

static void *hammer(void *p)
{
    (void)p;
    for (int i = 0; i < 100000; i++) {
        cq_group_enter(hammer_g);
        cq_group_leave(hammer_g);
    }
    return NULL;
}

static void test_enter_leave_threads(void)
{
    hammer_g = cq_group_create();
    cq_group_enter(hammer_g);
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        pthread_create(&th[i], NULL, hammer, NULL);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
    }
    CHECK(cq_group_wait(hammer_g, CQ_TIME_NOW) != 0); /* our own enter is still there */
    cq_group_leave(hammer_g);
    CHECK_EQ(cq_group_wait(hammer_g, CQ_TIME_NOW), 0);
    cq_sync_f(cq_get_global_queue(0, 0), NULL, noop);
    cq_release(hammer_g);
}

/*
 * A group that another thread keeps emptying and re-entering. A notify registered while we
 * hold an enter runs only after our leave, and a wait while we hold one cannot succeed, even
 * when the emptying just before our enter has not been reacted to yet: the emptying leave
 * used to bump the generation and take the notify list after its atomic decrement, so a
 * notify (or a waiter) of the next generation could be taken for the old one (found by
 * test_stress_mix).
 */
enum { REENTRY_ROUNDS = 100000 };
static atomic_bool flapping;
static atomic_long notified_early, waits_succeeded;

struct reentry_round {
    atomic_bool member_done;
    cq_semaphore_t ran;
};

static void *flapper(void *arg)
{
    cq_group_t g = arg;
    while (atomic_load(&flapping)) {
        cq_group_enter(g);
        cq_group_leave(g);
    }
    return NULL;
}

static void reentry_notify(void *ctx)
{
    struct reentry_round *r = ctx;
    if (!atomic_load(&r->member_done)) {
        atomic_fetch_add(&notified_early, 1);
    }
    cq_semaphore_signal(r->ran);
}

static void test_reentered_group(void)
{
    cq_group_t g = cq_group_create();
    cq_semaphore_t ran = cq_semaphore_create(0);
    struct reentry_round *rounds = calloc(REENTRY_ROUNDS, sizeof *rounds);
    REQUIRE(rounds != NULL);
    atomic_store(&flapping, true);
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, flapper, g) == 0);
    cq_queue_t q = cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0);
    for (int i = 0; i < REENTRY_ROUNDS; i++) {
        struct reentry_round *r = &rounds[i];
        r->ran = ran;
        cq_group_enter(g);
        cq_group_notify_f(g, q, r, reentry_notify);
        if (i % 8 == 0 && cq_group_wait(g, cq_time(CQ_TIME_NOW, 1000)) == 0) {
            atomic_fetch_add(&waits_succeeded, 1); /* impossible: we hold an enter */
        }
        atomic_store(&r->member_done, true);
        cq_group_leave(g);
    }
    atomic_store(&flapping, false);
    pthread_join(th, NULL);
    for (int i = 0; i < REENTRY_ROUNDS; i++) {
        WAIT_SEMA(ran); /* every notify ran */
    }
    CHECK_EQ(atomic_load(&notified_early), 0);
    CHECK_EQ(atomic_load(&waits_succeeded), 0);
    CHECK_EQ(cq_group_wait(g, CQ_TIME_NOW), 0);
    cq_release(ran);
    cq_release(g);
    free(rounds);
}

/* ---- tasks run by a waiting task keep their own context -------------------------------- */

#define HELPED_CHILDREN 64

static int helper_key;

struct helped {
    cq_queue_t s;
    cq_group_t g;
    atomic_int saw_waiter; /* children that saw the waiter's specific, queue or exclusivity */
    atomic_int ran;
};

static void helped_child(void *ctx)
{
    struct helped *h = ctx;
    bool wrong = cq_get_specific(&helper_key) != NULL || cq_get_current_queue() == h->s ||
                 cq_queue_is_current(h->s);
    if (wrong) {
        atomic_fetch_add(&h->saw_waiter, 1);
    }
    atomic_fetch_add(&h->ran, 1);
}

static void parent_on_s(void *ctx)
{
    struct helped *h = ctx;
    for (int i = 0; i < HELPED_CHILDREN; i++) {
        cq_group_async_f(h->g, cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), h,
                         helped_child);
    }
    /* While it waits, this worker runs the group's children (its own run queue's newest). */
    cq_group_wait(h->g, CQ_TIME_FOREVER);
    /* And the waiter's own context is back afterwards. */
    if (cq_get_specific(&helper_key) != (void *)h || cq_get_current_queue() != h->s) {
        atomic_fetch_add(&h->saw_waiter, 1000);
    }
}

static void test_helped_tasks_keep_their_context(void)
{
    struct helped h = {.s = cq_queue_create("waiter", NULL), .g = cq_group_create()};
    cq_queue_set_specific(h.s, &helper_key, &h, NULL);
    cq_group_t outer = cq_group_create();
    for (int round = 0; round < 4; round++) {
        cq_group_async_f(outer, h.s, &h, parent_on_s);
        WAIT_GROUP(outer);
    }
    fprintf(stderr, "   %d children ran, %d saw the waiter's queue\n", atomic_load(&h.ran),
            atomic_load(&h.saw_waiter));
    CHECK_EQ(atomic_load(&h.ran), 4 * HELPED_CHILDREN);
    CHECK_EQ(atomic_load(&h.saw_waiter), 0);
    cq_release(outer);
    cq_release(h.g);
    cq_release(h.s);
}

/* ---- a waiter runs the work it gave a serial queue ----------------------------------------- */

#define SERIAL_WAITERS 200
#define SERIAL_ITEMS 3

static int serial_key;
static cq_queue_t serial_q;
static atomic_int serial_inside, serial_overlap, serial_wrong, serial_ran, serial_on_waiter;
static __thread bool serial_waiting; /* the thread is in the waiter's cq_group_wait */

static void serial_item(void *ctx)
{
    (void)ctx;
    if (atomic_fetch_add(&serial_inside, 1) != 0) {
        atomic_fetch_add(&serial_overlap, 1);
    }
    /* run as serial_q's work wherever it runs: its specific, its exclusivity, no group of the
     * waiter's (a wait for it here would not be a wait from one of its own tasks) */
    if (cq_get_specific(&serial_key) != &serial_key || !cq_queue_is_current(serial_q) ||
        cq_get_current_queue() != serial_q) {
        atomic_fetch_add(&serial_wrong, 1);
    }
    if (serial_waiting) {
        atomic_fetch_add(&serial_on_waiter, 1);
    }
    atomic_fetch_add(&serial_ran, 1);
    atomic_fetch_sub(&serial_inside, 1);
}

static void serial_waiter(void *ctx)
{
    (void)ctx;
    cq_group_t g = cq_group_create();
    for (int i = 0; i < SERIAL_ITEMS; i++) {
        cq_group_async_f(g, serial_q, NULL, serial_item);
    }
    serial_waiting = true;
    REQUIRE(cq_group_wait(g, CQ_TIME_FOREVER) == 0);
    serial_waiting = false;
    if (cq_get_current_queue() != cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0)) {
        atomic_fetch_add(&serial_wrong, 1000); /* the waiter's own context is back */
    }
    cq_release(g);
}

/*
 * Many tasks waiting for one group that a slow task leaves, or for one work item (whose wait is
 * a group's): each wait that blocked gave its worker's CPU to a spare thread, which took the
 * next task only to wait too. 500 of them grew the pool to its thread limit (255) with the
 * message in 0.3 s; libdispatch used 5 threads. Past a few waiting threads, a wait behind
 * another waiter keeps its CPU (block.c, CQ__CROWDED_WAITS): 12-15 threads on a quiet machine.
 * Runs first: it reads the peak.
 */
static cq_group_t crowd_group;
static cq_work_item_t crowd_item;
static atomic_int crowd_done;

static void crowd_leave(void *ctx)
{
    (void)ctx;
    struct timespec d = {0, 300000000};
    nanosleep(&d, NULL);
    cq_group_leave(crowd_group);
}

static void crowd_slow(void *ctx)
{
    (void)ctx;
    struct timespec d = {0, 300000000};
    nanosleep(&d, NULL);
}

static void crowd_waiter(void *ctx)
{
    if (ctx != NULL) {
        REQUIRE(cq_work_item_wait(crowd_item, CQ_TIME_FOREVER) == 0);
    } else {
        REQUIRE(cq_group_wait(crowd_group, CQ_TIME_FOREVER) == 0);
    }
    atomic_fetch_add(&crowd_done, 1);
}

static void test_a_crowd_waiting_for_one_group_keeps_the_pool_small(void)
{
    crowd_group = cq_group_create();
    crowd_item = cq_work_item_create_f(0, NULL, crowd_slow);
    cq_group_enter(crowd_group);
    cq_queue_t slow = cq_queue_create("crowd-slow", NULL);
    cq_async_f(slow, NULL, crowd_leave);
    cq_async_work_item(slow, crowd_item);
    cq_group_t all = cq_group_create();
    for (int i = 0; i < 500; i++) {
        cq_group_async_f(all, cq_get_global_queue(0, 0), i % 2 ? &crowd_item : NULL,
                         crowd_waiter);
    }
    WAIT_GROUP(all);
    CHECK_EQ(atomic_load(&crowd_done), 500);
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    printf("  threads at most %u\n", info.threads_peak);
    CHECK(info.threads_peak <= 64); /* the old code: the limit, 255 */
    cq_release(all);
    cq_release(slow);
    cq_release(crowd_item);
    cq_release(crowd_group);
}

/* Tasks that give work to one serial queue through a group and wait for it: the waiter runs
 * the queue's items up to its group's last when the queue is due for a drain and not held
 * (one thread per waiting task before, up to the limit). The items keep the queue's context
 * and exclusivity wherever they run, every one runs once, and the pool stays small. */
static void test_wait_runs_its_serial_queue_work(void)
{
    serial_q = cq_queue_create("given", NULL);
    cq_queue_set_specific(serial_q, &serial_key, &serial_key, NULL);
    cq_group_t all = cq_group_create();
    for (int i = 0; i < SERIAL_WAITERS; i++) {
        cq_group_async_f(all, cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), NULL,
                         serial_waiter);
    }
    WAIT_GROUP(all);
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    fprintf(stderr, "   %d items, %d run by a waiting task; threads at most %u\n",
            atomic_load(&serial_ran), atomic_load(&serial_on_waiter), info.threads_peak);
    CHECK_EQ(atomic_load(&serial_ran), SERIAL_WAITERS * SERIAL_ITEMS);
    CHECK_EQ(atomic_load(&serial_overlap), 0);
    CHECK_EQ(atomic_load(&serial_wrong), 0);
    cq_release(all);
    cq_release(serial_q);
}

int main(void)
{
    RUN(test_a_crowd_waiting_for_one_group_keeps_the_pool_small); /* first: reads the peak */
    RUN(test_empty_and_enter_leave);
    RUN(test_wait_times_out);
    RUN(test_group_async_counts);
    RUN(test_notify_order_and_reuse);
    RUN(test_released_group_alive);
    RUN(test_released_while_entered);
    RUN(test_many_waiters);
    RUN(test_enter_leave_threads);
    RUN(test_reentered_group);
    RUN(test_helped_tasks_keep_their_context);
    RUN(test_wait_runs_its_serial_queue_work);
    TEST_MAIN_END();
}
