/*
 * The pool's size follows what the work does, as a user sees it from outside:
 *   - CPU-bound tasks on a global queue never add threads: at most 2 x workers + 4 runtime
 *     threads in all (libdispatch stays at 4 on 2 CPUs), and the monitor adds no run queue;
 *   - tasks that sleep in the kernel (outside the runtime) do get replaced, so queued work runs
 *     (test_no_starvation.c has more of these);
 *   - serial queues' work gets an overcommit thread while CPU-bound global work holds every
 *     worker (as libdispatch's serial queues do), at most one per worker, and global or
 *     concurrent queues' work never does (compat_serial_busy.c shows it from libdispatch's
 *     side).
 */
#include "cq_test.h"

#define CPU_TASK_NS (50 * 1000000ull)

static void burn(void *ctx)
{
    (void)ctx;
    cq_test_burn_cpu_ns(CPU_TASK_NS);
}

static uint64_t overcommit_wakeups(void)
{
    struct cq_runtime_counters c;
    cq_runtime_get_counters(&c, sizeof c);
    return c.overcommit_wakeups;
}

/* Waits for g while sampling the runtime's thread count (and, if `oc_peak`, its overcommit
 * threads'); returns the peak seen. */
static int wait_sampling_threads_oc(cq_group_t g, int *oc_peak)
{
    int peak = cq_test_runtime_thread_count();
    uint64_t deadline = cq_test_now_ns() + (uint64_t)CQ_TEST_PATIENCE_NS;
    while (cq_group_wait(g, cq_time(CQ_TIME_NOW, 2 * 1000000ll)) != 0) {
        REQUIRE(cq_test_now_ns() < deadline);
        int n = cq_test_runtime_thread_count();
        peak = n > peak ? n : peak;
        if (oc_peak) {
            n = cq_test_thread_count_named("cq-oc-");
            *oc_peak = n > *oc_peak ? n : *oc_peak;
        }
    }
    return peak;
}

static int wait_sampling_threads(cq_group_t g)
{
    return wait_sampling_threads_oc(g, NULL);
}

static void test_cpu_bound_tasks_add_no_threads(void)
{
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    /* Enough work for about 20 monitor ticks of 10 ms CPU each per worker, several times over. */
    int tasks = (int)info.workers * 12;
    uint64_t oc_before = overcommit_wakeups();
    /* a concurrent queue's work goes to the global queues' workers as theirs does */
    cq_queue_t conc = cq_queue_create("pool_bounds.concurrent", CQ_QUEUE_CONCURRENT);
    cq_group_t g = cq_group_create();
    for (int i = 0; i < tasks; i++) {
        cq_group_async_f(g, i % 3 ? cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0) : conc, NULL,
                         burn);
    }
    int peak = wait_sampling_threads(g);
    cq_runtime_get_info(&info);
    int bound = 2 * (int)info.workers + 4;
    uint64_t oc = overcommit_wakeups() - oc_before;
    fprintf(stderr,
            "   %d tasks of 50 ms CPU on %u workers: runtime threads peak %d (bound %d), "
            "pool peak %u, monitor added %llu, overcommit threads woken %llu\n",
            tasks, info.workers, peak, bound, info.threads_peak,
            (unsigned long long)info.monitor_spawns, (unsigned long long)oc);
    CHECK(peak <= bound);
    CHECK(info.threads_peak <= info.workers + 2);
    CHECK_EQ(info.monitor_spawns, 0);
    CHECK_EQ(info.limit_reached, 0);
    CHECK_EQ(oc, 0);
    cq_release(g);
    cq_release(conc);
}

/* CPU-bound work on many serial queues beside CPU-bound global work: every queue's work runs,
 * the serial queues' on overcommit threads too while the global tasks hold the workers, and
 * those stay at one per worker, so the process stays within workers x 3 + 4 threads. */
#define SERIAL_QUEUES 8

static void test_cpu_bound_serial_queues(void)
{
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    cq_queue_t q[SERIAL_QUEUES];
    cq_group_t g = cq_group_create();
    for (int i = 0; i < (int)info.workers * 6; i++) {
        cq_group_async_f(g, cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), NULL, burn);
    }
    for (int i = 0; i < SERIAL_QUEUES; i++) {
        q[i] = cq_queue_create("pool_bounds.serial", CQ_QUEUE_SERIAL);
        for (int k = 0; k < 3; k++) {
            cq_group_async_f(g, q[i], NULL, burn);
        }
    }
    int oc_peak = 0;
    int peak = wait_sampling_threads_oc(g, &oc_peak);
    int bound = 3 * (int)info.workers + 4;
    fprintf(stderr,
            "   %u x 6 global and %d x 3 serial tasks of 50 ms CPU: runtime threads peak %d "
            "(bound %d), overcommit threads peak %d (bound %u)\n",
            info.workers, SERIAL_QUEUES, peak, bound, oc_peak, info.workers);
    CHECK(peak <= bound);
    CHECK(oc_peak <= (int)info.workers);
    for (int i = 0; i < SERIAL_QUEUES; i++) {
        cq_release(q[i]);
    }
    cq_release(g);
}

/* The same with the work spread over every priority: each band computes on its own procs
 * (normal, express, background), and the total stays within the bound. */
static void test_cpu_bound_tasks_of_every_priority(void)
{
    static const long prios[] = {CQ_QUEUE_PRIORITY_HIGH, CQ_QUEUE_PRIORITY_DEFAULT,
                                 CQ_QUEUE_PRIORITY_LOW, CQ_QUEUE_PRIORITY_BACKGROUND};
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    int tasks = (int)info.workers * 12;
    cq_group_t g = cq_group_create();
    for (int i = 0; i < tasks; i++) {
        cq_group_async_f(g, cq_get_global_queue(prios[i % 4], 0), NULL, burn);
    }
    int peak = wait_sampling_threads(g);
    cq_runtime_get_info(&info);
    int bound = 2 * (int)info.workers + 4;
    fprintf(stderr,
            "   %d tasks of 50 ms CPU over 4 priorities: runtime threads peak %d (bound %d)\n",
            tasks, peak, bound);
    CHECK(peak <= bound);
    CHECK_EQ(info.limit_reached, 0);
    cq_release(g);
}

/* ---- a task sleeping in the kernel is replaced ------------------------------------------- */

struct sleepers {
    cq_semaphore_t started;
    atomic_bool go;
    atomic_int done;
};

static void sleep_until_go(void *ctx)
{
    struct sleepers *s = ctx;
    cq_semaphore_signal(s->started);
    while (!atomic_load(&s->go)) {
        struct timespec pause = {0, 1000000}; /* 1 ms asleep in the kernel, state S */
        nanosleep(&pause, NULL);
    }
    atomic_fetch_add(&s->done, 1);
}

static void set_go(void *ctx)
{
    struct sleepers *s = ctx;
    atomic_store(&s->go, true);
}

static void test_sleeping_tasks_are_replaced(void)
{
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    uint64_t spawns_before = info.monitor_spawns;
    struct sleepers s = {.started = cq_semaphore_create(0)};
    int n = (int)info.workers;
    cq_group_t g = cq_group_create();
    for (int i = 0; i < n; i++) {
        cq_group_async_f(g, cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), &s, sleep_until_go);
    }
    for (int i = 0; i < n; i++) {
        WAIT_SEMA(s.started); /* every worker now runs a task that sleeps until go */
    }
    /* Only a thread added for the sleeping ones can run this. */
    cq_group_async_f(g, cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), &s, set_go);
    WAIT_GROUP(g);
    CHECK_EQ(atomic_load(&s.done), n);
    cq_runtime_get_info(&info);
    fprintf(stderr, "   %d sleeping tasks: monitor added %llu run queue(s)\n", n,
            (unsigned long long)(info.monitor_spawns - spawns_before));
    CHECK(info.monitor_spawns > spawns_before);
    cq_release(s.started);
    cq_release(g);
}

int main(void)
{
    RUN(test_cpu_bound_tasks_add_no_threads);
    RUN(test_cpu_bound_serial_queues);
    RUN(test_cpu_bound_tasks_of_every_priority);
    RUN(test_sleeping_tasks_are_replaced);
    TEST_MAIN_END();
}
