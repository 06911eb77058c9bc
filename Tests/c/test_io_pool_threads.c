/*
 * The blocking I/O pool keeps at most CQ__IO_POOL_MAX (3) "cq-io-pool" threads once it is idle.
 * Each open of a path channel is a job that may block for ever (a FIFO without a writer), and
 * a thread that took one while other work waited started another thread at once: 1,000 quick
 * opens grew the pool to 64 threads, which stayed for ever (libdispatch's pool went back to
 * one thread). Now a job gets a thread of its own only if it is still running a while later,
 * and threads beyond three leave once idle. A blocked open still holds nothing back
 * (test_io_file: test_write_beside_blocked_opens).
 */
#include "cq_test.h"

#include <fcntl.h>
#include <unistd.h>

#define OPENS 1000
#define POOL_KEEPS 3 /* CQ__IO_POOL_MAX */

static void count_done(void *ctx, bool done, cq_data_t data, int error)
{
    (void)data;
    (void)error;
    if (done) {
        cq_group_leave(ctx);
    }
}

static void count_cleanup(void *ctx, int error)
{
    (void)error;
    cq_group_leave(ctx);
}

static void test_pool_shrinks_after_a_burst_of_opens(void)
{
    char path[] = "/tmp/cq-test-io-pool-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, "0123456789abcdef", 16) == 16);
    close(fd);
    cq_queue_t q = cq_queue_create("io-pool-burst", NULL);
    cq_group_t g = cq_group_create();
    for (int i = 0; i < OPENS; i++) {
        cq_group_enter(g);
        cq_io_t channel =
            cq_io_create_with_path_f(CQ_IO_RANDOM, path, O_RDONLY, 0, q, g, count_cleanup);
        REQUIRE(channel != NULL);
        cq_group_enter(g);
        cq_io_read_f(channel, 0, 16, q, g, count_done);
        cq_io_close(channel, 0);
        cq_release(channel);
    }
    WAIT_GROUP(g);
    int after_burst = cq_test_thread_count_named("cq-io-pool");
    /* Threads beyond three leave once idle: wait for that (the pool's own idle time). */
    uint64_t deadline = cq_test_now_ns() + CQ_TEST_PATIENCE_NS;
    int threads;
    while ((threads = cq_test_thread_count_named("cq-io-pool")) > POOL_KEEPS &&
           cq_test_now_ns() < deadline) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    CHECK(threads <= POOL_KEEPS);
    if (threads > POOL_KEEPS) {
        fprintf(stderr, "   %d cq-io-pool threads after the burst, %d a minute later\n",
                after_burst, threads);
    }
    cq_release(g);
    cq_release(q);
    unlink(path);
}

int main(void)
{
    RUN(test_pool_shrinks_after_a_burst_of_opens);
    TEST_MAIN_END();
}
