/*
 * Many tasks asleep in the kernel, outside any runtime call: 600 tasks on the default global
 * queue each block in read() on their own pipe, and 600 tasks submitted after them write the
 * byte each reader waits for. Every writer needs a thread while the 600 readers sleep, so the
 * monitor must give each sleeping task's CPU to a new thread, up to CQ_THREAD_LIMIT (2000
 * here). With room for only 512 run queues, the pool stopped adding threads at about 500,
 * without a word, and the writers never ran (found from the user's side, with libdispatch's
 * names; libdispatch itself stops at its own thread cap on this program).
 */
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cq_test.h"

#define TASKS 600

static int pipes[TASKS][2];
static atomic_int reads_done;

static void reader(void *ctx)
{
    int *p = ctx;
    char c;
    if (read(p[0], &c, 1) == 1) {
        atomic_fetch_add(&reads_done, 1);
    }
}

static void writer(void *ctx)
{
    int *p = ctx;
    CHECK(write(p[1], "x", 1) == 1);
}

static void test_six_hundred_tasks_asleep_in_read(void)
{
    struct rlimit rl;
    CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    rlim_t need = 2 * TASKS + 64;
    if (rl.rlim_cur < need) {
        rl.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
        CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
    }
    if (rl.rlim_cur < need) {
        printf("  skipped: RLIMIT_NOFILE %llu is under %llu\n", (unsigned long long)rl.rlim_cur,
               (unsigned long long)need);
        return;
    }
    for (int i = 0; i < TASKS; i++) {
        REQUIRE(pipe(pipes[i]) == 0);
    }
    cq_queue_t q = cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0);
    cq_group_t g = cq_group_create();
    for (int i = 0; i < TASKS; i++) {
        cq_group_async_f(g, q, pipes[i], reader);
    }
    for (int i = 0; i < TASKS; i++) {
        cq_group_async_f(g, q, pipes[i], writer);
    }
    /* The monitor adds the threads within a second or two here. */
    long waited = cq_group_wait(g, cq_test_deadline());
    CHECK_EQ(waited, 0);
    CHECK_EQ(atomic_load(&reads_done), TASKS);
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    CHECK(info.threads_peak > 512);
    CHECK(info.threads_peak <= 2000);
    if (waited != 0) {
        /* Let the stuck readers go, so the process can end. */
        for (int i = 0; i < TASKS; i++) {
            (void)!write(pipes[i][1], "x", 1);
        }
        cq_group_wait(g, CQ_TIME_FOREVER);
    }
    cq_release(g);
    for (int i = 0; i < TASKS; i++) {
        close(pipes[i][0]);
        close(pipes[i][1]);
    }
}

/*
 * Tasks that each sleep briefly (1 ms here; a short read from a slow device, say): no task is
 * seen asleep on two ticks, so only the monitor's sampling of the running threads (monitor.c,
 * OFTEN_SAMPLE_TICKS) finds that the band's CPUs idle while work waits. Before it, 20,000 tasks
 * of 300 us ran on the two workers, 1.5 times as long as on libdispatch, which added threads;
 * the pool never grew (a peak of 2 threads in this test). It grows now, to at most twice its
 * workers for this rule.
 */
static atomic_int sleeps_done;

static void short_sleep(void *ctx)
{
    (void)ctx;
    struct timespec d = {0, 1000000};
    nanosleep(&d, NULL);
    atomic_fetch_add(&sleeps_done, 1);
}

static void test_tasks_that_each_sleep_briefly_get_more_threads(void)
{
    struct cq_runtime_info before, after;
    cq_runtime_get_info(&before);
    cq_queue_t q = cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0);
    cq_group_t g = cq_group_create();
    enum { SLEEPERS = 3000 };
    for (int i = 0; i < SLEEPERS; i++) {
        cq_group_async_f(g, q, NULL, short_sleep);
    }
    CHECK_EQ(cq_group_wait(g, cq_test_deadline()), 0);
    CHECK_EQ(atomic_load(&sleeps_done), SLEEPERS);
    cq_runtime_get_info(&after);
    printf("  %u workers; threads at most %u before, %u after\n", after.workers,
           before.threads_peak, after.threads_peak);
    CHECK(after.threads_peak > after.workers);
    CHECK(after.threads_peak <= 2 * after.workers + 2);
    cq_release(g);
}

/*
 * Tasks taking turns at one mutex: a waiting task sleeps in futex() for milliseconds, since the
 * thread that unlocks takes the mutex again for its next task before the waiter wakes. Counted
 * as blocked like a read, each such wait earned new threads at once, each new thread waited as
 * long, and 50,000 tasks that held the mutex for 20 us grew the pool to its thread limit (255
 * by default; libdispatch: 4-5). A wait in futex() earns no thread while tasks keep ending, and
 * otherwise one per doubling gap (monitor.c, FUTEX_FIRST_NS): 4 threads on a quiet machine, 6-11
 * beside two CPU hogs.
 */
static pthread_mutex_t turns = PTHREAD_MUTEX_INITIALIZER;
static atomic_int turns_done;

static void take_a_turn(void *ctx)
{
    (void)ctx;
    CHECK_EQ(pthread_mutex_lock(&turns), 0);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do { /* 20 us of work under the lock */
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 20000);
    atomic_fetch_add(&turns_done, 1);
    CHECK_EQ(pthread_mutex_unlock(&turns), 0);
}

/* Runs `n` tasks of `fn` on the default global queue, each adding one to turns_done, and checks
 * that the pool stayed small meanwhile. */
static void run_turns(cq_function_t fn, int n)
{
    cq_queue_t q = cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0);
    cq_group_t g = cq_group_create();
    atomic_store(&turns_done, 0);
    for (int i = 0; i < n; i++) {
        cq_group_async_f(g, q, NULL, fn);
    }
    CHECK_EQ(cq_group_wait(g, cq_test_deadline()), 0);
    CHECK_EQ(atomic_load(&turns_done), n);
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    printf("  threads at most %u\n", info.threads_peak);
    CHECK(info.threads_peak <= 24);
    cq_release(g);
}

static void test_tasks_taking_turns_at_a_mutex_do_not_grow_the_pool_to_its_limit(void)
{
    run_turns(take_a_turn, 30000);
}

/* The same with the holder asleep in the kernel while it holds the mutex: the holder counted
 * as blocked (a sleep, not futex()) and earned threads at once, up to two for each blocked
 * task, the waiters in futex() included (400 tasks sleeping 5 ms under one mutex: 257
 * threads, libdispatch 6). Only tasks asleep elsewhere than in futex() count there now. */
static void sleep_holding_the_mutex(void *ctx)
{
    (void)ctx;
    CHECK_EQ(pthread_mutex_lock(&turns), 0);
    struct timespec d = {0, 3000000};
    nanosleep(&d, NULL);
    atomic_fetch_add(&turns_done, 1);
    CHECK_EQ(pthread_mutex_unlock(&turns), 0);
}

static void test_a_holder_asleep_under_a_mutex_does_not_grow_the_pool_for_its_waiters(void)
{
    run_turns(sleep_holding_the_mutex, 150);
}

int main(void)
{
    setenv("CQ_WORKERS", "2", 1);
    setenv("CQ_THREAD_LIMIT", "2000", 1);
    /* These first: they read the peak. */
    RUN(test_tasks_that_each_sleep_briefly_get_more_threads);
    RUN(test_tasks_taking_turns_at_a_mutex_do_not_grow_the_pool_to_its_limit);
    RUN(test_a_holder_asleep_under_a_mutex_does_not_grow_the_pool_for_its_waiters);
    RUN(test_six_hundred_tasks_asleep_in_read);
    TEST_MAIN_END();
}
