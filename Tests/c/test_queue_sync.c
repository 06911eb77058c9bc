/*
 * cq_sync_f / cq_barrier_sync_f: inline on the caller when uncontended, FIFO behind earlier
 * tasks, through target chains, from pool workers onto busy queues, onto global queues, and
 * nested syncs across several queues.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/syscall.h>

#include "cq_test.h"

static void noop(void *ctx)
{
    (void)ctx;
}

static pid_t gettid_(void)
{
    return (pid_t)syscall(SYS_gettid);
}

static void record_tid(void *ctx)
{
    *(pid_t *)ctx = gettid_();
}

static void test_sync_runs_inline(void)
{
    cq_queue_t q = cq_queue_create("inline", NULL);
    pid_t tid = 0;
    cq_sync_f(q, &tid, record_tid);
    CHECK_EQ(tid, gettid_());
    tid = 0;
    cq_barrier_sync_f(q, &tid, record_tid);
    CHECK_EQ(tid, gettid_());
    cq_queue_t c = cq_queue_create("inline-c", CQ_QUEUE_CONCURRENT);
    tid = 0;
    cq_sync_f(c, &tid, record_tid);
    CHECK_EQ(tid, gettid_());
    cq_release(q);
    cq_release(c);
}

/* ---- FIFO: a sync waits for the tasks submitted before it --------------------------------- */

struct counter {
    long n;
};

static void bump(void *ctx)
{
    ((struct counter *)ctx)->n++;
}

struct snap {
    struct counter *c;
    long seen;
};

static void snapshot(void *ctx)
{
    struct snap *s = ctx;
    s->seen = s->c->n;
}

static void test_sync_after_async(void)
{
    cq_queue_t q = cq_queue_create("fifo-sync", NULL);
    struct counter c = {0};
    for (int round = 1; round <= 100; round++) {
        for (int i = 0; i < 1000; i++) {
            cq_async_f(q, &c, bump);
        }
        struct snap s = {&c, -1};
        cq_sync_f(q, &s, snapshot);
        CHECK_EQ(s.seen, (long)round * 1000);
    }
    cq_release(q);
}

/* ---- many producers: each sync runs after that producer's own earlier asyncs ------------
 * (the first push onto an empty list announces itself only after its exchange; a sync must not
 * slip past an async of its own caller that sits behind such a push) */

#define FIFO_PRODUCERS 4
#define FIFO_ROUNDS 20000

static cq_queue_t fifo_q;
static long fifo_done[FIFO_PRODUCERS]; /* only touched on fifo_q */
static atomic_long fifo_violations;

static void fifo_async(void *ctx)
{
    fifo_done[(intptr_t)ctx]++;
}

struct fifo_check {
    intptr_t producer;
    long expected;
};

static void fifo_sync(void *ctx)
{
    struct fifo_check *c = ctx;
    if (fifo_done[c->producer] != c->expected) {
        atomic_fetch_add(&fifo_violations, 1);
    }
}

static bool fifo_concurrent;

static void *fifo_producer(void *arg)
{
    intptr_t p = (intptr_t)arg;
    for (long i = 1; i <= FIFO_ROUNDS; i++) {
        cq_async_f(fifo_q, (void *)p, fifo_async);
        struct fifo_check c = {p, i};
        /* On a concurrent queue only a barrier waits for the tasks before it. */
        if (i % 2 && !fifo_concurrent) {
            cq_sync_f(fifo_q, &c, fifo_sync);
        } else {
            cq_barrier_sync_f(fifo_q, &c, fifo_sync);
        }
    }
    return NULL;
}

static void test_sync_after_own_async_many_producers(void)
{
    for (int kind = 0; kind < 2; kind++) {
        fifo_concurrent = kind;
        fifo_q = cq_queue_create("fifo-mp", kind ? CQ_QUEUE_CONCURRENT : CQ_QUEUE_SERIAL);
        memset(fifo_done, 0, sizeof fifo_done);
        pthread_t th[FIFO_PRODUCERS];
        for (intptr_t p = 0; p < FIFO_PRODUCERS; p++) {
            pthread_create(&th[p], NULL, fifo_producer, (void *)p);
        }
        for (int p = 0; p < FIFO_PRODUCERS; p++) {
            pthread_join(th[p], NULL);
        }
        cq_barrier_sync_f(fifo_q, NULL, noop);
        CHECK_EQ(atomic_load(&fifo_violations), 0);
        cq_release(fifo_q);
    }
}

/* ---- sync through a target chain holds every level ---------------------------------------- */

struct chain {
    cq_queue_t a, b, c;
    int current_ok;
};

static void in_chain(void *ctx)
{
    struct chain *ch = ctx;
    ch->current_ok = cq_queue_is_current(ch->a) && cq_queue_is_current(ch->b) &&
                     cq_queue_is_current(ch->c) && cq_get_current_queue() == ch->a;
}

static atomic_int chain_overlap, chain_active;

static void chain_task(void *ctx)
{
    (void)ctx;
    if (atomic_fetch_add(&chain_active, 1) != 0) {
        atomic_fetch_add(&chain_overlap, 1);
    }
    for (volatile int i = 0; i < 100; i++) {
    }
    atomic_fetch_sub(&chain_active, 1);
}

static void test_sync_target_chain(void)
{
    struct chain ch;
    ch.c = cq_queue_create("c", NULL);
    ch.b = cq_queue_create("b", CQ_QUEUE_CONCURRENT);
    ch.a = cq_queue_create("a", NULL);
    cq_set_target_queue(ch.b, ch.c);
    cq_set_target_queue(ch.a, ch.b);
    ch.current_ok = 0;
    cq_sync_f(ch.a, &ch, in_chain);
    CHECK(ch.current_ok);
    /* syncs on a and tasks on c exclude each other: a's chain ends in serial c */
    for (int i = 0; i < 2000; i++) {
        cq_async_f(ch.c, NULL, chain_task);
        cq_sync_f(ch.a, NULL, chain_task);
        cq_async_f(ch.b, NULL, chain_task);
    }
    cq_sync_f(ch.c, NULL, chain_task);
    CHECK_EQ(atomic_load(&chain_overlap), 0);
    cq_release(ch.a);
    cq_release(ch.b);
    cq_release(ch.c);
}

/* ---- sync from pool workers onto a busy serial queue -------------------------------------- */

#define WORKER_SYNCS 200

static cq_queue_t busy_q;
static long busy_counter; /* only touched on busy_q */

static void busy_inc(void *ctx)
{
    (void)ctx;
    busy_counter++;
}

static void worker_syncs(void *ctx)
{
    (void)ctx;
    for (int i = 0; i < WORKER_SYNCS; i++) {
        cq_async_f(busy_q, NULL, busy_inc);
        cq_sync_f(busy_q, NULL, busy_inc);
    }
}

static void test_sync_from_workers(void)
{
    busy_q = cq_queue_create("busy", NULL);
    cq_group_t g = cq_group_create();
    for (int i = 0; i < 16; i++) {
        cq_group_async_f(g, cq_get_global_queue(0, 0), NULL, worker_syncs);
    }
    WAIT_GROUP(g);
    cq_sync_f(busy_q, NULL, busy_inc);
    CHECK_EQ(busy_counter, 16 * WORKER_SYNCS * 2 + 1);
    cq_release(g);
    cq_release(busy_q);
}

/* ---- nested syncs across queues (A -> B -> C) and back to a concurrent queue ------------- */

struct nest {
    cq_queue_t q[3];
    int depth_reached;
    int current_ok;
};

static struct nest nest;

static void nest_level(void *ctx)
{
    long level = (long)ctx;
    if (!cq_queue_is_current(nest.q[level])) {
        nest.current_ok = 0;
    }
    if (level + 1 < 3) {
        cq_sync_f(nest.q[level + 1], (void *)(level + 1), nest_level);
    } else {
        nest.depth_reached = 3;
        /* all three are current: the thread holds them all */
        nest.current_ok &= cq_queue_is_current(nest.q[0]) && cq_queue_is_current(nest.q[1]);
    }
}

static void test_nested_sync(void)
{
    nest.q[0] = cq_queue_create("n0", NULL);
    nest.q[1] = cq_queue_create("n1", CQ_QUEUE_CONCURRENT);
    nest.q[2] = cq_queue_create("n2", NULL);
    nest.current_ok = 1;
    cq_sync_f(nest.q[0], (void *)0l, nest_level);
    CHECK_EQ(nest.depth_reached, 3);
    CHECK(nest.current_ok);
    CHECK(!cq_queue_is_current(nest.q[0]));
    CHECK(cq_get_current_queue() == NULL);
    for (int i = 0; i < 3; i++) {
        cq_release(nest.q[i]);
    }
}

/* ---- sync onto a concurrent queue from inside one of its tasks is allowed ---------------- */

struct reentrant {
    cq_queue_t q;
    int ok;
};

static void inner_ok(void *ctx)
{
    ((struct reentrant *)ctx)->ok = 1;
}

static void outer_task(void *ctx)
{
    struct reentrant *r = ctx;
    cq_sync_f(r->q, r, inner_ok);
}

static void test_sync_reentrant_concurrent(void)
{
    struct reentrant r = {cq_queue_create("reentrant", CQ_QUEUE_CONCURRENT), 0};
    cq_sync_f(r.q, &r, outer_task);
    CHECK_EQ(r.ok, 1);
    cq_release(r.q);
}

/* ---- sync onto a global queue runs inline ----------------------------------------------- */

static void test_sync_global(void)
{
    pid_t tid = 0;
    cq_sync_f(cq_get_global_queue(CQ_QUEUE_PRIORITY_HIGH, 0), &tid, record_tid);
    CHECK_EQ(tid, gettid_());
}

/* ---- sync onto a suspended queue waits for resume ---------------------------------------- */

struct suspended_sync {
    cq_queue_t q;
    cq_semaphore_t started;
    atomic_int ran;
};

static void mark_ran(void *ctx)
{
    atomic_store(&((struct suspended_sync *)ctx)->ran, 1);
}

static void *sync_thread(void *arg)
{
    struct suspended_sync *s = arg;
    cq_semaphore_signal(s->started);
    cq_sync_f(s->q, s, mark_ran);
    return NULL;
}

static void test_sync_waits_for_resume(void)
{
    struct suspended_sync s = {cq_queue_create("suspended", NULL), cq_semaphore_create(0), 0};
    cq_suspend(s.q);
    pthread_t th;
    pthread_create(&th, NULL, sync_thread, &s);
    WAIT_SEMA(s.started);
    /* Give the thread time to reach the queue; it must not run while suspended. */
    cq_semaphore_wait(s.started, cq_time(CQ_TIME_NOW, 20 * 1000000ll));
    CHECK_EQ(atomic_load(&s.ran), 0);
    cq_resume(s.q);
    pthread_join(th, NULL);
    CHECK_EQ(atomic_load(&s.ran), 1);
    cq_release(s.q);
    cq_release(s.started);
}

/* ---- a sync hands the queue straight to the next thread's sync ---------------------------
 * A sync that leaves a serial queue whose next item is another thread's sync waiter hands the
 * queue to it (queue_sync.c). Threads taking turns through sync: every call runs, one at a
 * time. Then the hand-off must respect a suspension that came while the waiter waited. */

#define HANDOFF_THREADS 4
#define HANDOFF_CALLS 20000

static cq_queue_t handoff_q;
static long handoff_count;
static atomic_int handoff_inside, handoff_overlaps;

static void handoff_increment(void *ctx)
{
    (void)ctx;
    if (atomic_fetch_add(&handoff_inside, 1) != 0) {
        atomic_fetch_add(&handoff_overlaps, 1);
    }
    handoff_count++;
    atomic_fetch_sub(&handoff_inside, 1);
}

static void *handoff_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < HANDOFF_CALLS; i++) {
        cq_sync_f(handoff_q, NULL, handoff_increment);
    }
    return NULL;
}

struct held_sync {
    cq_queue_t q;
    cq_semaphore_t holding, release;
};

static void hold_queue(void *ctx)
{
    struct held_sync *h = ctx;
    cq_semaphore_signal(h->holding);
    WAIT_SEMA(h->release);
}

static void *holder_thread(void *arg)
{
    struct held_sync *h = arg;
    cq_sync_f(h->q, h, hold_queue);
    return NULL;
}

static void test_sync_handoff_between_threads(void)
{
    handoff_q = cq_queue_create("handoff", CQ_QUEUE_SERIAL);
    pthread_t th[HANDOFF_THREADS];
    for (int i = 0; i < HANDOFF_THREADS; i++) {
        pthread_create(&th[i], NULL, handoff_thread, NULL);
    }
    for (int i = 0; i < HANDOFF_THREADS; i++) {
        pthread_join(th[i], NULL);
    }
    CHECK_EQ(handoff_count, (long)HANDOFF_THREADS * HANDOFF_CALLS);
    CHECK_EQ(atomic_load(&handoff_overlaps), 0);
    cq_release(handoff_q);

    struct held_sync h = {cq_queue_create("held", CQ_QUEUE_SERIAL), cq_semaphore_create(0),
                          cq_semaphore_create(0)};
    struct suspended_sync waiter = {h.q, cq_semaphore_create(0), 0};
    pthread_t holder, second;
    pthread_create(&holder, NULL, holder_thread, &h);
    WAIT_SEMA(h.holding);
    pthread_create(&second, NULL, sync_thread, &waiter);
    WAIT_SEMA(waiter.started);
    cq_test_observe_window(); /* let the second thread queue its waiter behind the holder */
    cq_suspend(h.q);
    cq_semaphore_signal(h.release);
    pthread_join(holder, NULL); /* the holder has let the queue go, suspended */
    cq_test_observe_window();
    CHECK_EQ(atomic_load(&waiter.ran), 0);
    cq_resume(h.q);
    pthread_join(second, NULL);
    CHECK_EQ(atomic_load(&waiter.ran), 1);
    cq_release(h.q);
    cq_release(h.holding);
    cq_release(h.release);
    cq_release(waiter.started);
}

int main(void)
{
    RUN(test_sync_runs_inline);
    RUN(test_sync_after_async);
    RUN(test_sync_after_own_async_many_producers);
    RUN(test_sync_target_chain);
    RUN(test_sync_from_workers);
    RUN(test_nested_sync);
    RUN(test_sync_reentrant_concurrent);
    RUN(test_sync_global);
    RUN(test_sync_waits_for_resume);
    RUN(test_sync_handoff_between_threads);
    TEST_MAIN_END();
}
