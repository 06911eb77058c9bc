/*
 * Object lifetime and per-queue data: reference counts, finalizers (after every queued task, on
 * the target queue), context pointers, queue-specific keys (replace, remove, destructors,
 * lookup along the target chain).
 */
#include "cq_test.h"

static void noop(void *ctx)
{
    (void)ctx;
}

/* ---- releasing a queue with pending work: the work runs, then the finalizer ------------- */

struct fin {
    atomic_long ran;
    long ran_at_finalize;
    int finalizer_on_target;
    cq_queue_t target;
    cq_semaphore_t done;
    cq_semaphore_t gate;
};

static void gated(void *ctx)
{
    struct fin *f = ctx;
    cq_semaphore_wait(f->gate, cq_test_deadline());
    atomic_fetch_add(&f->ran, 1);
}

static void counted(void *ctx)
{
    atomic_fetch_add(&((struct fin *)ctx)->ran, 1);
}

static void finalizer(void *ctx)
{
    struct fin *f = ctx;
    f->ran_at_finalize = atomic_load(&f->ran);
    f->finalizer_on_target = cq_queue_is_current(f->target);
    cq_semaphore_signal(f->done);
}

static void test_finalizer_after_work(void)
{
    struct fin f = {0};
    f.done = cq_semaphore_create(0);
    f.gate = cq_semaphore_create(0);
    f.target = cq_queue_create("fin-target", NULL);
    cq_queue_t q = cq_queue_create("fin", NULL);
    cq_set_target_queue(q, f.target);
    cq_set_context(q, &f);
    CHECK(cq_get_context(q) == &f);
    cq_set_finalizer_f(q, finalizer);
    cq_async_f(q, &f, gated);
    for (int i = 0; i < 1000; i++) {
        cq_async_f(q, &f, counted);
    }
    cq_release(q); /* the last reference: the queue lives until its tasks have run */
    cq_semaphore_signal(f.gate);
    WAIT_SEMA(f.done);
    CHECK_EQ(f.ran_at_finalize, 1001);
    CHECK(f.finalizer_on_target);
    cq_release(f.target);
    cq_release(f.done);
    cq_release(f.gate);
}

/* ---- concurrent queue released while tasks are in flight --------------------------------- */

static void test_concurrent_release_in_flight(void)
{
    struct fin f = {0};
    f.done = cq_semaphore_create(0);
    f.gate = cq_semaphore_create(0);
    f.target = cq_get_global_queue(0, 0);
    cq_queue_t q = cq_queue_create("fin-c", CQ_QUEUE_CONCURRENT);
    cq_set_context(q, &f);
    cq_set_finalizer_f(q, finalizer);
    for (int i = 0; i < 4; i++) {
        cq_async_f(q, &f, gated);
    }
    cq_barrier_async_f(q, &f, counted);
    for (int i = 0; i < 100; i++) {
        cq_async_f(q, &f, counted);
    }
    cq_release(q);
    for (int i = 0; i < 4; i++) {
        cq_semaphore_signal(f.gate);
    }
    WAIT_SEMA(f.done);
    CHECK_EQ(f.ran_at_finalize, 105);
    cq_release(f.done);
    cq_release(f.gate);
}

/* ---- retain/release pairs; finalizers of several queues each run once -------------------- */

static atomic_int finalized;

static void count_finalize(void *ctx)
{
    atomic_fetch_add(&finalized, 1);
    cq_semaphore_signal(ctx);
}

static void test_retain_release(void)
{
    cq_semaphore_t s = cq_semaphore_create(0);
    enum { N = 100 };
    for (int i = 0; i < N; i++) {
        cq_queue_t q = cq_queue_create("rr", i % 2 ? CQ_QUEUE_CONCURRENT : NULL);
        cq_set_context(q, s);
        cq_set_finalizer_f(q, count_finalize);
        cq_retain(q);
        cq_retain(q);
        cq_async_f(q, NULL, noop);
        cq_release(q);
        cq_release(q);
        cq_release(q);
    }
    for (int i = 0; i < N; i++) {
        WAIT_SEMA(s);
    }
    CHECK_EQ(atomic_load(&finalized), N);
    cq_release(s);
}

/* ---- finalizers of other objects ------------------------------------------------------- */

static void test_other_finalizers(void)
{
    cq_semaphore_t s = cq_semaphore_create(0);
    atomic_store(&finalized, 0);
    cq_group_t g = cq_group_create();
    cq_set_context(g, s);
    cq_set_finalizer_f(g, count_finalize);
    cq_group_async_f(g, cq_get_global_queue(0, 0), NULL, noop);
    cq_release(g); /* its task keeps it alive */
    cq_semaphore_t sema = cq_semaphore_create(3);
    cq_set_context(sema, s);
    cq_set_finalizer_f(sema, count_finalize);
    cq_release(sema);
    WAIT_SEMA(s);
    WAIT_SEMA(s);
    CHECK_EQ(atomic_load(&finalized), 2);
    cq_release(s);
}

/* ---- finalizers of a hierarchy run child first: a queue keeps its target alive ---------- */

static atomic_int fin_seq;
static int fin_order[3];
static cq_semaphore_t fin_done;

static void ordered_finalizer(void *ctx)
{
    fin_order[(intptr_t)ctx - 1] = atomic_fetch_add(&fin_seq, 1);
    cq_semaphore_signal(fin_done);
}

static void test_finalizer_order(void)
{
    fin_done = cq_semaphore_create(0);
    cq_queue_t root = cq_queue_create("fin-root", NULL);
    cq_queue_t mid = cq_queue_create("fin-mid", CQ_QUEUE_CONCURRENT);
    cq_queue_t leaf = cq_queue_create("fin-leaf", NULL);
    cq_set_target_queue(mid, root);
    cq_set_target_queue(leaf, mid);
    cq_queue_t qs[3] = {leaf, mid, root};
    for (intptr_t i = 0; i < 3; i++) {
        cq_set_context(qs[i], (void *)(i + 1)); /* not NULL: a NULL context has no finalizer */
        cq_set_finalizer_f(qs[i], ordered_finalizer);
    }
    cq_async_f(leaf, NULL, noop);
    /* Released root first: each level still has the one below it holding it. */
    cq_release(root);
    cq_release(mid);
    cq_release(leaf);
    for (int i = 0; i < 3; i++) {
        WAIT_SEMA(fin_done);
    }
    CHECK_EQ(fin_order[0], 0); /* leaf */
    CHECK_EQ(fin_order[1], 1); /* mid */
    CHECK_EQ(fin_order[2], 2); /* root */
    cq_release(fin_done);
}

/* ---- queue-specific keys ------------------------------------------------------------- */

static int key_a, key_b, key_c;
static atomic_int destroyed;
static cq_semaphore_t destroyed_sema;

static void destroy_value(void *v)
{
    atomic_fetch_add(&destroyed, (int)(intptr_t)v);
    cq_semaphore_signal(destroyed_sema);
}

struct lookups {
    void *a, *b, *c;
};

static void look_up(void *ctx)
{
    struct lookups *l = ctx;
    l->a = cq_get_specific(&key_a);
    l->b = cq_get_specific(&key_b);
    l->c = cq_get_specific(&key_c);
}

static void test_specifics(void)
{
    destroyed_sema = cq_semaphore_create(0);
    cq_queue_t t = cq_queue_create("spec-target", NULL);
    cq_queue_t q = cq_queue_create("spec", NULL);
    cq_set_target_queue(q, t);
    cq_queue_set_specific(t, &key_a, (void *)1, NULL);
    cq_queue_set_specific(t, &key_b, (void *)2, NULL);
    cq_queue_set_specific(q, &key_b, (void *)20, destroy_value);
    CHECK(cq_queue_get_specific(q, &key_b) == (void *)20);
    CHECK(cq_queue_get_specific(q, &key_a) == NULL); /* not inherited by the direct lookup */
    CHECK(cq_queue_get_specific(t, &key_b) == (void *)2);
    CHECK(cq_get_specific(&key_a) == NULL);          /* not on a queue */

    struct lookups l = {0};
    cq_sync_f(q, &l, look_up);
    CHECK(l.a == (void *)1);  /* inherited from the target */
    CHECK(l.b == (void *)20); /* the queue's own value wins */
    CHECK(l.c == NULL);
    cq_group_t g = cq_group_create();
    memset(&l, 0, sizeof l);
    cq_group_async_f(g, q, &l, look_up);
    WAIT_GROUP(g);
    CHECK(l.a == (void *)1 && l.b == (void *)20 && l.c == NULL);

    /* Replacing runs the old value's destructor; NULL removes. */
    cq_queue_set_specific(q, &key_b, (void *)30, destroy_value);
    WAIT_SEMA(destroyed_sema);
    CHECK_EQ(atomic_load(&destroyed), 20);
    CHECK(cq_queue_get_specific(q, &key_b) == (void *)30);
    cq_queue_set_specific(q, &key_b, NULL, NULL);
    WAIT_SEMA(destroyed_sema);
    CHECK_EQ(atomic_load(&destroyed), 50);
    CHECK(cq_queue_get_specific(q, &key_b) == NULL);
    cq_sync_f(q, &l, look_up);
    CHECK(l.b == (void *)2); /* now inherited */

    /* Freeing the queue runs the remaining destructors. */
    cq_queue_set_specific(q, &key_c, (void *)100, destroy_value);
    cq_release(q);
    WAIT_SEMA(destroyed_sema);
    CHECK_EQ(atomic_load(&destroyed), 150);
    cq_release(t);
    cq_release(g);
    cq_release(destroyed_sema);
}

/* Many readers while a writer replaces values: lookups see a value that was set, never garbage
 * (RCU keeps the old array alive until the readers are done). */
#define SPEC_READERS 4
static atomic_bool spec_stop;
static cq_queue_t spec_q;
static atomic_long spec_bad, spec_reads;

static void spec_reader(void *ctx)
{
    cq_semaphore_signal(ctx); /* reading from now on */
    while (!atomic_load(&spec_stop)) {
        uintptr_t v = (uintptr_t)cq_queue_get_specific(spec_q, &key_a);
        if (v != 0 && (v < 1000 || v > 1000 + 100000)) {
            atomic_fetch_add(&spec_bad, 1);
        }
        atomic_fetch_add(&spec_reads, 1);
    }
}

static void test_specifics_concurrent(void)
{
    spec_q = cq_queue_create("spec-rcu", NULL);
    cq_group_t g = cq_group_create();
    cq_semaphore_t reading = cq_semaphore_create(0);
    for (int i = 0; i < SPEC_READERS; i++) {
        cq_group_async_f(g, cq_get_global_queue(0, 0), reading, spec_reader);
    }
    WAIT_SEMA(reading); /* at least one reader overlaps the writes (CPU-bound readers get no
                         * extra threads, so not all of them may run before the stop) */
    for (uintptr_t i = 0; i < 100000; i++) {
        cq_queue_set_specific(spec_q, &key_a, (void *)(1000 + i), NULL);
        cq_queue_set_specific(spec_q, &key_b, (void *)i, NULL);
    }
    atomic_store(&spec_stop, true);
    WAIT_GROUP(g);
    CHECK_EQ(atomic_load(&spec_bad), 0);
    CHECK(cq_queue_get_specific(spec_q, &key_a) == (void *)(1000 + 99999));
    fprintf(stderr, "   %ld lookups during the writes\n", atomic_load(&spec_reads));
    cq_release(spec_q);
    cq_release(g);
    cq_release(reading);
}

int main(void)
{
    RUN(test_finalizer_after_work);
    RUN(test_concurrent_release_in_flight);
    RUN(test_retain_release);
    RUN(test_other_finalizers);
    RUN(test_finalizer_order);
    RUN(test_specifics);
    RUN(test_specifics_concurrent);
    TEST_MAIN_END();
}
