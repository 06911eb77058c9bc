/*
 * Suspend / resume: no task starts while suspended, counts nest, the backlog runs in order on
 * resume, and suspend/resume under load from many threads never loses or repeats a task.
 */
#include <pthread.h>

#include "cq_test.h"

static void noop(void *ctx)
{
    (void)ctx;
}

/*
 * Tasks held by a suspension. No event can prove that a suspended queue never runs anything,
 * so the tests watch for a bounded window (cq_test_observe_window) and then resume; but each
 * held task also checks, whenever it runs, that the final resume had been called by then
 * (`released` is set just before it), so a task that slips through at any time is counted.
 */
struct held {
    atomic_long ran;
    atomic_long early;     /* tasks that ran before `released` was set */
    atomic_bool released;  /* set by the test right before the resume that frees the tasks */
};

static void held_task(void *ctx)
{
    struct held *h = ctx;
    if (!atomic_load(&h->released)) {
        atomic_fetch_add(&h->early, 1);
    }
    atomic_fetch_add(&h->ran, 1);
}

/* ---- no task starts while suspended; counts nest --------------------------------------- */

static void test_suspend_holds_tasks(void)
{
    cq_queue_t q = cq_queue_create("suspend", NULL);
    struct held h = {0};
    cq_suspend(q);
    cq_suspend(q);
    for (int i = 0; i < 1000; i++) {
        cq_async_f(q, &h, held_task);
    }
    cq_test_observe_window(); /* no event proves "nothing runs": a bounded window */
    CHECK_EQ(atomic_load(&h.ran), 0);
    cq_resume(q);
    cq_test_observe_window();
    CHECK_EQ(atomic_load(&h.ran), 0); /* still suspended once */
    atomic_store(&h.released, true);
    cq_resume(q);
    cq_sync_f(q, NULL, noop);
    CHECK_EQ(atomic_load(&h.ran), 1000);
    CHECK_EQ(atomic_load(&h.early), 0);
    cq_release(q);
}

/* ---- an inactive object suspended and resumed stays inactive until activated ------------- */

static void count_event(void *ctx)
{
    cq_semaphore_signal((cq_semaphore_t)ctx);
}

static void test_inactive_suspend_resume(void)
{
    /* libdispatch: a resume that balances a suspend leaves an inactive queue inactive; only
     * dispatch_activate starts it. (A resume used to clear the inactive state, so the activate
     * after it did nothing and the queue stayed suspended for ever.) */
    cq_queue_t q = cq_queue_create_inactive("inactive-suspended", NULL);
    struct held h = {0};
    cq_suspend(q);
    for (int i = 0; i < 100; i++) {
        cq_async_f(q, &h, held_task);
    }
    cq_resume(q);
    cq_test_observe_window(); /* no event proves "nothing runs": a bounded window */
    CHECK_EQ(atomic_load(&h.ran), 0);
    atomic_store(&h.released, true);
    cq_activate(q);
    cq_sync_f(q, NULL, noop);
    CHECK_EQ(atomic_load(&h.ran), 100);
    CHECK_EQ(atomic_load(&h.early), 0);
    cq_release(q);

    /* The same for a source (a new source is inactive); a resume that is not balancing a
     * suspend activates it, as libdispatch's does for sources. */
    cq_semaphore_t fired = cq_semaphore_create(0);
    cq_source_t s = cq_source_create(CQ_SOURCE_TYPE_DATA_ADD, 0, 0, NULL);
    cq_set_context(s, fired);
    cq_source_set_event_handler_f(s, count_event);
    cq_suspend(s);
    cq_resume(s);
    cq_source_merge_data(s, 1);
    CHECK(cq_semaphore_wait(fired, cq_time(CQ_TIME_NOW, 100 * 1000 * 1000)) != 0);
    cq_activate(s);
    WAIT_SEMA(fired);
    cq_source_cancel(s);
    cq_release(s);

    cq_source_t legacy = cq_source_create(CQ_SOURCE_TYPE_DATA_ADD, 0, 0, NULL);
    cq_set_context(legacy, fired);
    cq_source_set_event_handler_f(legacy, count_event);
    cq_resume(legacy);
    cq_source_merge_data(legacy, 1);
    WAIT_SEMA(fired);
    cq_activate(legacy); /* already active: nothing */
    cq_source_cancel(legacy);
    cq_release(legacy);
    cq_release(fired);
}

/* ---- suspending from inside a task stops the queue after that task ------------------------ */

struct self_suspend {
    cq_queue_t q;
    cq_semaphore_t suspended;
    struct held after;
};

static void suspend_self(void *ctx)
{
    struct self_suspend *s = ctx;
    cq_suspend(s->q);
    cq_semaphore_signal(s->suspended);
}

static void test_suspend_between_tasks(void)
{
    struct self_suspend s = {cq_queue_create("self-suspend", NULL), cq_semaphore_create(0), {0}};
    /* Everything is queued before the queue starts: the drain meets the next task right after
     * the suspending one (not only if the submissions happen to keep up). */
    cq_suspend(s.q);
    cq_async_f(s.q, &s, suspend_self);
    for (int i = 0; i < 100; i++) {
        cq_async_f(s.q, &s.after, held_task);
    }
    cq_resume(s.q);
    WAIT_SEMA(s.suspended);   /* the suspending task has run (an event, not a guess) */
    cq_test_observe_window(); /* then nothing after it may start: a bounded window */
    CHECK_EQ(atomic_load(&s.after.ran), 0);
    atomic_store(&s.after.released, true);
    cq_resume(s.q);
    cq_sync_f(s.q, NULL, noop);
    CHECK_EQ(atomic_load(&s.after.ran), 100);
    CHECK_EQ(atomic_load(&s.after.early), 0);
    cq_release(s.q);
    cq_release(s.suspended);
}

/* ---- FIFO across suspension ---------------------------------------------------------- */

static long order_next, order_bad;

static void ordered(void *ctx)
{
    long i = (long)ctx;
    if (i != order_next) {
        order_bad++;
    }
    order_next = i + 1;
}

static void test_backlog_in_order(void)
{
    cq_queue_t q = cq_queue_create("order", NULL);
    long i = 0;
    for (int round = 0; round < 50; round++) {
        cq_suspend(q);
        for (int k = 0; k < 200; k++, i++) {
            cq_async_f(q, (void *)i, ordered);
        }
        cq_resume(q);
        for (int k = 0; k < 100; k++, i++) {
            cq_async_f(q, (void *)i, ordered);
        }
    }
    cq_sync_f(q, NULL, noop);
    CHECK_EQ(order_next, i);
    CHECK_EQ(order_bad, 0);
    cq_release(q);
}

/* ---- concurrent queue: suspended tasks wait, barrier after resume ------------------------ */

static void test_concurrent_suspend(void)
{
    cq_queue_t q = cq_queue_create("c-suspend", CQ_QUEUE_CONCURRENT);
    struct held h = {0};
    cq_suspend(q);
    for (int i = 0; i < 500; i++) {
        cq_async_f(q, &h, held_task);
    }
    cq_test_observe_window(); /* no event proves "nothing runs": a bounded window */
    CHECK_EQ(atomic_load(&h.ran), 0);
    atomic_store(&h.released, true);
    cq_resume(q);
    cq_barrier_sync_f(q, NULL, noop);
    CHECK_EQ(atomic_load(&h.ran), 500);
    CHECK_EQ(atomic_load(&h.early), 0);
    cq_release(q);
}

/* ---- under load: producers, suspenders and resumers on many threads ---------------------- */

#define LOAD_QUEUES 8
#define LOAD_PRODUCERS 4
#define LOAD_TASKS 20000

static cq_queue_t load_q[LOAD_QUEUES];
static atomic_uchar *ran_count; /* one slot per task: each must end at exactly 1 */
static atomic_long ran_total;

static void load_task(void *ctx)
{
    uintptr_t id = (uintptr_t)ctx;
    atomic_fetch_add(&ran_count[id], 1);
    atomic_fetch_add(&ran_total, 1);
}

static void *load_producer(void *arg)
{
    uintptr_t p = (uintptr_t)arg;
    for (uintptr_t i = 0; i < LOAD_TASKS; i++) {
        uintptr_t id = p * LOAD_TASKS + i;
        cq_async_f(load_q[id % LOAD_QUEUES], (void *)id, load_task);
    }
    return NULL;
}

static atomic_bool load_done;

static void *suspender(void *arg)
{
    uintptr_t k = (uintptr_t)arg;
    unsigned seed = (unsigned)k;
    while (!atomic_load(&load_done)) {
        cq_queue_t q = load_q[rand_r(&seed) % LOAD_QUEUES];
        cq_suspend(q);
        for (volatile int i = 0; i < 1000; i++) {
        }
        cq_resume(q);
    }
    return NULL;
}

static void test_suspend_under_load(void)
{
    ran_count = calloc(LOAD_PRODUCERS * LOAD_TASKS, 1);
    for (int i = 0; i < LOAD_QUEUES; i++) {
        load_q[i] = cq_queue_create("load", i % 2 ? CQ_QUEUE_CONCURRENT : CQ_QUEUE_SERIAL);
    }
    pthread_t prod[LOAD_PRODUCERS], susp[3];
    for (uintptr_t i = 0; i < 3; i++) {
        pthread_create(&susp[i], NULL, suspender, (void *)i);
    }
    for (uintptr_t i = 0; i < LOAD_PRODUCERS; i++) {
        pthread_create(&prod[i], NULL, load_producer, (void *)i);
    }
    for (int i = 0; i < LOAD_PRODUCERS; i++) {
        pthread_join(prod[i], NULL);
    }
    atomic_store(&load_done, true);
    for (int i = 0; i < 3; i++) {
        pthread_join(susp[i], NULL);
    }
    for (int i = 0; i < LOAD_QUEUES; i++) {
        cq_barrier_sync_f(load_q[i], NULL, noop);
    }
    CHECK_EQ(atomic_load(&ran_total), LOAD_PRODUCERS * LOAD_TASKS);
    long bad = 0;
    for (long i = 0; i < LOAD_PRODUCERS * LOAD_TASKS; i++) {
        bad += atomic_load(&ran_count[i]) != 1;
    }
    CHECK_EQ(bad, 0);
    for (int i = 0; i < LOAD_QUEUES; i++) {
        cq_release(load_q[i]);
    }
    free(ran_count);
}

int main(void)
{
    RUN(test_suspend_holds_tasks);
    RUN(test_inactive_suspend_resume);
    RUN(test_suspend_between_tasks);
    RUN(test_backlog_in_order);
    RUN(test_concurrent_suspend);
    RUN(test_suspend_under_load);
    TEST_MAIN_END();
}
