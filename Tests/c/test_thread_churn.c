/*
 * Thread churn: while every worker's task sleeps in the kernel, light work arriving every
 * millisecond makes the monitor add an extra worker each time (the light task has nobody else
 * to run it). Each extra worker's thread ended as soon as its task was done, so every
 * millisecond cost a thread creation and exit: 1,287 threads in 1.5 s (perf stat -e
 * syscalls:sys_enter_clone3). Now a retired extra worker's thread parks as a spare and the
 * next extra worker reuses it. Checked with cq_runtime_counters.threads_started: a handful of
 * threads, not one per burst; every light task still runs exactly once.
 */
#include <stdatomic.h>

#include "cq_test.h"

#define SLEEP_US 400000 /* each worker's task sleeps this long */
#define TICKS 300       /* light tasks, one per millisecond */

static atomic_int ticks_left = TICKS;
static atomic_int light_ran;
static cq_group_t light_group;
static cq_semaphore_t ticks_done;

static void sleeper(void *ctx)
{
    (void)ctx;
    usleep(SLEEP_US); /* asleep in the kernel: the monitor replaces this worker */
}

static void light(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&light_ran, 1);
}

static void tick(void *ctx)
{
    cq_source_t timer = ctx;
    int left = atomic_fetch_sub(&ticks_left, 1);
    if (left <= 0) {
        if (left == 0) {
            cq_source_cancel(timer);
            cq_semaphore_signal(ticks_done);
        }
        return;
    }
    cq_group_async_f(light_group, cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), NULL, light);
}

static uint64_t threads_started(void)
{
    struct cq_runtime_counters c;
    memset(&c, 0, sizeof c);
    cq_runtime_get_counters(&c, sizeof c);
    return c.threads_started;
}

static void test_extra_workers_reuse_threads(void)
{
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    cq_group_t sleepers = cq_group_create();
    light_group = cq_group_create();
    ticks_done = cq_semaphore_create(0);
    for (uint32_t i = 0; i < info.workers; i++) {
        cq_group_async_f(sleepers, cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), NULL,
                         sleeper);
    }
    uint64_t before = threads_started();
    cq_queue_t q = cq_queue_create("churn.ticker", NULL);
    cq_source_t timer = cq_source_create(CQ_SOURCE_TYPE_TIMER, 0, 0, q);
    REQUIRE(timer != NULL);
    cq_set_context(timer, timer);
    cq_source_set_timer(timer, cq_time(CQ_TIME_NOW, 0), 1000000, 0);
    cq_source_set_event_handler_f(timer, tick);
    cq_resume(timer);
    CHECK(cq_group_wait(sleepers, cq_test_deadline()) == 0);
    CHECK(cq_semaphore_wait(ticks_done, cq_test_deadline()) == 0);
    CHECK(cq_group_wait(light_group, cq_test_deadline()) == 0);
    uint64_t started = threads_started() - before;
    cq_runtime_get_info(&info);
    fprintf(stderr, "   %d light tasks ran, %llu threads started, %llu extra workers added\n",
            atomic_load(&light_ran), (unsigned long long)started,
            (unsigned long long)info.monitor_spawns);
    CHECK_EQ(atomic_load(&light_ran), TICKS);
    /* A few threads for the extra workers (and maybe a spare or two), not one per tick. */
    CHECK(started <= 8 + info.workers);
    cq_release(timer);
    cq_release(q);
    cq_release(sleepers);
    cq_release(light_group);
    cq_release(ticks_done);
}

int main(void)
{
    RUN(test_extra_workers_reuse_threads);
    TEST_MAIN_END();
}
