/*
 * Writing to a pipe whose reader has gone, in a program that keeps SIGPIPE's default action
 * (it terminates the process), through cq_write_f and a stream channel: the handler gets EPIPE
 * and the program goes on (io.h: "Errors never crash"). A write that ran on the calling
 * thread, whose mask does not block SIGPIPE, killed the process with it (libdispatch dies
 * there too). The calling thread's signal mask is left as it was and no SIGPIPE is left
 * pending for it.
 */
#define _GNU_SOURCE
#include <signal.h>

#include "cq_test.h"

struct write_result {
    cq_semaphore_t done;
    int error;
};

static void oneshot_done(void *ctx, cq_data_t data, int error)
{
    (void)data;
    struct write_result *r = ctx;
    r->error = error;
    cq_semaphore_signal(r->done);
}

static void channel_done(void *ctx, bool done, cq_data_t data, int error)
{
    (void)data;
    if (done) {
        oneshot_done(ctx, NULL, error);
    }
}

static void cleaned(void *ctx, int error)
{
    (void)error;
    cq_semaphore_signal(ctx);
}

static cq_data_t some_bytes(void)
{
    static const char text[] = "a line nobody reads\n";
    return cq_data_create_f(text, sizeof text - 1, NULL, CQ_DATA_DESTRUCTOR_DEFAULT);
}

static void check_no_sigpipe_left(const sigset_t *mask_before)
{
    sigset_t mask, pending;
    REQUIRE(pthread_sigmask(SIG_SETMASK, NULL, &mask) == 0);
    CHECK(sigismember(&mask, SIGPIPE) == sigismember(mask_before, SIGPIPE));
    REQUIRE(sigpending(&pending) == 0);
    CHECK(!sigismember(&pending, SIGPIPE));
}

static void test_oneshot_write(void)
{
    sigset_t before;
    REQUIRE(pthread_sigmask(SIG_SETMASK, NULL, &before) == 0);
    int p[2];
    REQUIRE(pipe(p) == 0);
    close(p[0]);
    cq_queue_t q = cq_queue_create("sigpipe.oneshot", CQ_QUEUE_SERIAL);
    struct write_result r = {cq_semaphore_create(0), -1};
    cq_data_t d = some_bytes();
    cq_write_f(p[1], d, q, &r, oneshot_done);
    CHECK(cq_semaphore_wait(r.done, cq_test_deadline()) == 0);
    CHECK_EQ(r.error, EPIPE);
    check_no_sigpipe_left(&before);
    cq_release(d);
    cq_release(r.done);
    cq_release(q);
    close(p[1]);
}

static void test_channel_write(void)
{
    sigset_t before;
    REQUIRE(pthread_sigmask(SIG_SETMASK, NULL, &before) == 0);
    int p[2];
    REQUIRE(pipe(p) == 0);
    close(p[0]);
    cq_queue_t q = cq_queue_create("sigpipe.channel", CQ_QUEUE_SERIAL);
    cq_semaphore_t clean = cq_semaphore_create(0);
    cq_io_t ch = cq_io_create_f(CQ_IO_STREAM, p[1], q, clean, cleaned);
    REQUIRE(ch != NULL);
    struct write_result r = {cq_semaphore_create(0), -1};
    cq_data_t d = some_bytes();
    cq_io_write_f(ch, 0, d, q, &r, channel_done);
    CHECK(cq_semaphore_wait(r.done, cq_test_deadline()) == 0);
    CHECK_EQ(r.error, EPIPE);
    check_no_sigpipe_left(&before);
    cq_io_close(ch, 0);
    cq_release(ch);
    CHECK(cq_semaphore_wait(clean, cq_test_deadline()) == 0);
    cq_release(d);
    cq_release(r.done);
    cq_release(clean);
    cq_release(q);
    close(p[1]);
}

int main(void)
{
    /* SIGPIPE keeps its default action: a raised one ends the test with that signal. */
    signal(SIGPIPE, SIG_DFL);
    RUN(test_oneshot_write);
    RUN(test_channel_write);
    TEST_MAIN_END();
}
