/*
 * Semaphores: counting, timeouts that actually time out and restore the count, signal return
 * values, many waiters and signallers with exact totals, ping-pong between threads.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "cq_test.h"

static void test_counting(void)
{
    cq_semaphore_t s = cq_semaphore_create(3);
    REQUIRE(s != NULL);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(cq_semaphore_wait(s, CQ_TIME_NOW), 0);
    }
    CHECK(cq_semaphore_wait(s, CQ_TIME_NOW) != 0); /* exhausted: a try fails */
    CHECK_EQ(cq_semaphore_signal(s), 0);           /* nobody waits: returns 0 */
    CHECK_EQ(cq_semaphore_wait(s, CQ_TIME_NOW), 0);
    for (int i = 0; i < 3; i++) {
        cq_semaphore_signal(s);
    }
    cq_release(s); /* back at its initial value: fine */
}

static void test_timeout_restores_count(void)
{
    cq_semaphore_t s = cq_semaphore_create(0);
    uint64_t t0 = cq_test_now_ns();
    CHECK(cq_semaphore_wait(s, cq_time(CQ_TIME_NOW, 50 * 1000000ll)) != 0);
    uint64_t waited = cq_test_now_ns() - t0;
    CHECK(waited >= 50 * 1000000ull);
    /* The timed-out waiter gave its decrement back: one signal makes one resource. */
    cq_semaphore_signal(s);
    CHECK_EQ(cq_semaphore_wait(s, CQ_TIME_NOW), 0);
    CHECK(cq_semaphore_wait(s, CQ_TIME_NOW) != 0);
    /* Many short timeouts in a row leave the count intact. */
    for (int i = 0; i < 100; i++) {
        CHECK(cq_semaphore_wait(s, cq_time(CQ_TIME_NOW, 10000)) != 0);
    }
    cq_semaphore_signal(s);
    cq_semaphore_signal(s);
    CHECK_EQ(cq_semaphore_wait(s, CQ_TIME_NOW), 0);
    CHECK_EQ(cq_semaphore_wait(s, CQ_TIME_NOW), 0);
    CHECK(cq_semaphore_wait(s, CQ_TIME_NOW) != 0);
    cq_release(s);
}

struct waiter_arg {
    cq_semaphore_t s;
    cq_semaphore_t ready;
    intptr_t result;
};

static void *blocked_waiter(void *p)
{
    struct waiter_arg *a = p;
    cq_semaphore_signal(a->ready);
    a->result = cq_semaphore_wait(a->s, cq_test_deadline());
    return NULL;
}

static void test_signal_wakes_sleeper(void)
{
    struct waiter_arg a = {cq_semaphore_create(0), cq_semaphore_create(0), -1};
    pthread_t th;
    pthread_create(&th, NULL, blocked_waiter, &a);
    WAIT_SEMA(a.ready);
    /* Let it go to sleep (past its spin phase); the signal must still reach it. */
    cq_semaphore_wait(a.ready, cq_time(CQ_TIME_NOW, 50 * 1000000ll));
    CHECK(cq_semaphore_signal(a.s) != 0); /* a waiter was there: non-zero */
    pthread_join(th, NULL);
    CHECK_EQ(a.result, 0);
    cq_release(a.s);
    cq_release(a.ready);
}

/* ---- many threads: every signal is consumed by exactly one wait --------------------------- */

#define THREADS 6
#define PER_THREAD 20000

static cq_semaphore_t shared;
static atomic_long consumed;

static void *consumer(void *p)
{
    (void)p;
    for (int i = 0; i < PER_THREAD; i++) {
        if (cq_semaphore_wait(shared, cq_test_deadline()) == 0) {
            atomic_fetch_add(&consumed, 1);
        }
    }
    return NULL;
}

static void *producer(void *p)
{
    (void)p;
    for (int i = 0; i < PER_THREAD; i++) {
        cq_semaphore_signal(shared);
    }
    return NULL;
}

static void test_many_threads_exact(void)
{
    shared = cq_semaphore_create(0);
    pthread_t c[THREADS], p[THREADS];
    for (int i = 0; i < THREADS; i++) {
        pthread_create(&c[i], NULL, consumer, NULL);
        pthread_create(&p[i], NULL, producer, NULL);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(p[i], NULL);
        pthread_join(c[i], NULL);
    }
    CHECK_EQ(atomic_load(&consumed), THREADS * PER_THREAD);
    CHECK(cq_semaphore_wait(shared, CQ_TIME_NOW) != 0); /* nothing left over */
    cq_release(shared);
}

/* ---- timeouts racing with signals: the count stays exact ------------------------------ */

static atomic_long got;
static cq_semaphore_t racy;

static void *timed_consumer(void *p)
{
    (void)p;
    for (int i = 0; i < 5000; i++) {
        if (cq_semaphore_wait(racy, cq_time(CQ_TIME_NOW, 2000)) == 0) {
            atomic_fetch_add(&got, 1);
        }
    }
    return NULL;
}

static void test_timeouts_racing_signals(void)
{
    racy = cq_semaphore_create(0);
    pthread_t c[4];
    for (int i = 0; i < 4; i++) {
        pthread_create(&c[i], NULL, timed_consumer, NULL);
    }
    long signals = 0;
    for (int i = 0; i < 20000; i++) {
        cq_semaphore_signal(racy);
        signals++;
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(c[i], NULL);
    }
    /* Every signal was either consumed by a wait that returned 0, or is still available. */
    long left = 0;
    while (cq_semaphore_wait(racy, CQ_TIME_NOW) == 0) {
        left++;
    }
    CHECK_EQ(atomic_load(&got) + left, signals);
    cq_release(racy);
}

/* ---- ping-pong between two threads ----------------------------------------------------- */

static cq_semaphore_t ping, pong;
#define ROUNDS 20000

static void *ponger(void *p)
{
    (void)p;
    for (int i = 0; i < ROUNDS; i++) {
        WAIT_SEMA(ping);
        cq_semaphore_signal(pong);
    }
    return NULL;
}

static void test_ping_pong(void)
{
    ping = cq_semaphore_create(0);
    pong = cq_semaphore_create(0);
    pthread_t th;
    pthread_create(&th, NULL, ponger, NULL);
    for (int i = 0; i < ROUNDS; i++) {
        cq_semaphore_signal(ping);
        WAIT_SEMA(pong);
    }
    pthread_join(th, NULL);
    CHECK(cq_semaphore_wait(ping, CQ_TIME_NOW) != 0);
    CHECK(cq_semaphore_wait(pong, CQ_TIME_NOW) != 0);
    cq_release(ping);
    cq_release(pong);
}

/* ---- waits inside pool tasks do not starve the pool ------------------------------------ */

static void wait_in_task(void *ctx)
{
    cq_semaphore_wait(ctx, cq_test_deadline());
}

static void signal_all(void *ctx)
{
    for (int i = 0; i < 64; i++) {
        cq_semaphore_signal(ctx);
    }
}

static void test_waiters_in_pool(void)
{
    cq_semaphore_t s = cq_semaphore_create(0);
    cq_group_t g = cq_group_create();
    /* Far more waiting tasks than workers; the signaller is submitted last. */
    for (int i = 0; i < 64; i++) {
        cq_group_async_f(g, cq_get_global_queue(0, 0), s, wait_in_task);
    }
    cq_group_async_f(g, cq_get_global_queue(0, 0), s, signal_all);
    WAIT_GROUP(g);
    CHECK(cq_semaphore_wait(s, CQ_TIME_NOW) != 0);
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    CHECK(info.threads_peak <= info.thread_limit);
    cq_release(g);
    cq_release(s);
}

/*
 * The common limiter: tasks on a global queue that take a semaphore of 1 around a little work.
 * Each wait that blocked gave its worker's CPU to a spare thread, which took the next task only
 * to wait behind the others: 300 such tasks grew the pool to its thread limit (255) with the
 * message, where libdispatch used 5-6 threads. Past a few waiting threads, a wait behind
 * another waiter of the same semaphore keeps its CPU (block.c, CQ__CROWDED_WAITS); 5-6
 * threads on a quiet machine, and the monitor adds more if the waits stop moving while work
 * waits, which a loaded machine can make look so (hence the loose bound). Runs first: it reads
 * the peak.
 */
static cq_semaphore_t limiter;
static atomic_int limited_in, limited_most, limited_done;

static void limited_task(void *ctx)
{
    (void)ctx;
    CHECK_EQ(cq_semaphore_wait(limiter, CQ_TIME_FOREVER), 0);
    int in = atomic_fetch_add(&limited_in, 1) + 1;
    int most = atomic_load(&limited_most);
    while (in > most && !atomic_compare_exchange_weak(&limited_most, &most, in)) {
    }
    struct timespec d = {0, 500000};
    nanosleep(&d, NULL);
    atomic_fetch_sub(&limited_in, 1);
    cq_semaphore_signal(limiter);
    atomic_fetch_add(&limited_done, 1);
}

static void test_a_crowd_behind_a_semaphore_keeps_the_pool_small(void)
{
    limiter = cq_semaphore_create(1);
    cq_group_t g = cq_group_create();
    for (int i = 0; i < 300; i++) {
        cq_group_async_f(g, cq_get_global_queue(0, 0), NULL, limited_task);
    }
    WAIT_GROUP(g);
    CHECK_EQ(atomic_load(&limited_done), 300);
    CHECK_EQ(atomic_load(&limited_most), 1);
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    printf("  threads at most %u\n", info.threads_peak);
    CHECK(info.threads_peak <= 64); /* the old code: the limit, 255 */
    cq_release(g);
    cq_release(limiter);
}

/*
 * A wait with CQ_TIME_NOW returns at once. It used to count itself as a waiter first, and when
 * a signal raced its timeout it had to wait for that signal's token, which another waiter
 * could take: it then waited for the next signal. Here a giver passes a unit and looks for it
 * again with such waits, while a taker that catches the unit keeps it until it has seen the
 * giver's waits return, then gives it back: a wait that blocked held both for ever (the
 * taker gives up after the patience). Swift's waitForSignal() retries this way, and two tasks
 * taking turns through two semaphores stopped for good.
 */
static cq_semaphore_t now_sema;
static atomic_long now_returns, now_stop, now_taker_done, now_stuck, now_caught;

static void *now_giver(void *arg)
{
    (void)arg;
    while (!atomic_load(&now_taker_done)) {
        cq_semaphore_signal(now_sema);
        do {
            atomic_fetch_add(&now_returns, 1);
        } while (cq_semaphore_wait(now_sema, CQ_TIME_NOW) != 0 && !atomic_load(&now_taker_done));
    }
    return NULL;
}

static void *now_taker(void *arg)
{
    (void)arg;
    while (!atomic_load(&now_stop)) {
        long seen = atomic_load(&now_returns);
        if (cq_semaphore_wait(now_sema, CQ_TIME_NOW) != 0) {
            continue;
        }
        atomic_fetch_add(&now_caught, 1);
        uint64_t patience = cq_test_now_ns() + 30ull * 1000000000ull;
        while (atomic_load(&now_returns) < seen + 3) {
            if (cq_test_now_ns() > patience) {
                atomic_fetch_add(&now_stuck, 1);
                break;
            }
        }
        cq_semaphore_signal(now_sema);
    }
    atomic_store(&now_taker_done, 1);
    return NULL;
}

static void test_wait_now_never_blocks(void)
{
    now_sema = cq_semaphore_create(0);
    REQUIRE(now_sema != NULL);
    pthread_t giver, taker;
    REQUIRE(pthread_create(&giver, NULL, now_giver, NULL) == 0);
    REQUIRE(pthread_create(&taker, NULL, now_taker, NULL) == 0);
    struct timespec d = {0, 10000000};
    for (int i = 0; i < 300 && !atomic_load(&now_stuck); i++) { /* 3 s */
        nanosleep(&d, NULL);
    }
    atomic_store(&now_stop, 1);
    REQUIRE(pthread_join(taker, NULL) == 0);
    cq_semaphore_signal(now_sema); /* a giver stuck in its wait (the old code) leaves */
    REQUIRE(pthread_join(giver, NULL) == 0);
    printf("  %ld returns, unit caught %ld times\n", atomic_load(&now_returns),
           atomic_load(&now_caught));
    CHECK_EQ(atomic_load(&now_stuck), 0);
    CHECK(atomic_load(&now_caught) > 0);
    /* The giver's unit, if the taker gave it back last, and the one signalled above. */
    while (cq_semaphore_wait(now_sema, CQ_TIME_NOW) == 0) {
    }
    cq_release(now_sema);
}

int main(void)
{
    RUN(test_a_crowd_behind_a_semaphore_keeps_the_pool_small); /* first: reads the peak */
    RUN(test_counting);
    RUN(test_timeout_restores_count);
    RUN(test_signal_wakes_sleeper);
    RUN(test_many_threads_exact);
    RUN(test_timeouts_racing_signals);
    RUN(test_ping_pong);
    RUN(test_waiters_in_pool);
    RUN(test_wait_now_never_blocks);
    TEST_MAIN_END();
}
