/*
 * Many tasks asleep in the kernel, outside any runtime call: 600 tasks on the default global
 * queue each block in read() on their own pipe, and 600 tasks submitted after them write the
 * byte each reader waits for. Every writer needs a thread while the 600 readers sleep, so the
 * monitor must give each sleeping task's CPU to a new thread, up to CQ_THREAD_LIMIT (2000
 * here). With room for only 512 run queues, the pool stopped adding threads at about 500,
 * without a word, and the writers never ran (found from the user's side, with libdispatch's
 * names; libdispatch itself stops at its own thread cap on this program).
 */
#include <sys/resource.h>
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

int main(void)
{
    setenv("CQ_WORKERS", "2", 1);
    setenv("CQ_THREAD_LIMIT", "2000", 1);
    RUN(test_six_hundred_tasks_asleep_in_read);
    TEST_MAIN_END();
}
