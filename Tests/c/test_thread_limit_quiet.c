/*
 * At the thread limit, with every thread's task asleep in the kernel (a read on a pipe) and
 * work waiting behind them, the runtime can do nothing until a task returns; it must wait
 * quietly. The monitor read /proc for each of the 255 threads every millisecond there: two
 * thirds of a CPU for as long as the tasks slept (9.6 s of CPU over 15 s; found from the
 * user's side). The process's CPU time over half a second of that wait is checked: a
 * busy-polling monitor spends most of it, a quiet one next to nothing (a slow or busy machine
 * only lowers the figure; the sleep is the interval measured, not a wait for an event).
 */
#include <sys/resource.h>

#include "cq_test.h"

#define BLOCKERS 300 /* more than the default limit of 255 threads */

static int pipe_fds[2];
static atomic_int started;

static void blocker(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&started, 1);
    char c;
    REQUIRE(read(pipe_fds[0], &c, 1) == 1);
}

static void noop(void *ctx)
{
    (void)ctx;
}

static int64_t process_cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ll +
           ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ll;
}

static uint64_t limit_hits(void)
{
    struct cq_runtime_counters c;
    cq_runtime_get_counters(&c, sizeof c);
    return c.thread_limit_hits;
}

static void test_quiet_at_the_limit(void)
{
    REQUIRE(pipe(pipe_fds) == 0);
    cq_group_t g = cq_group_create();
    cq_queue_t q = cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0);
    for (int i = 0; i < BLOCKERS; i++) {
        cq_group_async_f(g, q, NULL, blocker);
    }
    for (int i = 0; i < 100; i++) {
        cq_group_async_f(g, q, NULL, noop); /* waits behind the blockers */
    }
    /* The limit is reached once the runtime has added threads for the sleeping tasks. */
    uint64_t deadline = cq_test_now_ns() + 60 * 1000000000ull;
    while (limit_hits() == 0 && cq_test_now_ns() < deadline) {
        usleep(1000);
    }
    REQUIRE(limit_hits() > 0);
    int before = atomic_load(&started);
    int64_t cpu0 = process_cpu_ns(), wall0 = (int64_t)cq_test_now_ns();
    usleep(500000); /* the point: time passing while nothing can run */
    int64_t cpu = process_cpu_ns() - cpu0, wall = (int64_t)cq_test_now_ns() - wall0;
    fprintf(stderr, "   %d tasks started, process CPU %.0f ms over %.0f ms at the limit\n", before,
            (double)cpu / 1e6, (double)wall / 1e6);
    CHECK(cpu < wall / 4);
    /* Let them all go: every task runs once. */
    char buf[BLOCKERS];
    memset(buf, 'x', sizeof buf);
    REQUIRE(write(pipe_fds[1], buf, sizeof buf) == (ssize_t)sizeof buf);
    WAIT_GROUP(g);
    CHECK_EQ(atomic_load(&started), BLOCKERS);
    cq_release(g);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
}

int main(void)
{
    RUN(test_quiet_at_the_limit);
    TEST_MAIN_END();
}
