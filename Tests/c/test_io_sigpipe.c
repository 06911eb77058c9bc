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

/* One write to a pipe whose reader has gone, through `submit` (the one-shot call or a
 * channel): it must end with EPIPE, leaving the thread's mask as it was and no SIGPIPE
 * pending. */
struct closed_pipe {
    int fd;
    cq_queue_t queue;
    cq_data_t data;
    struct write_result result;
};

static void write_to_closed_pipe(const char *label, void (*submit)(struct closed_pipe *))
{
    sigset_t before, mask, pending;
    REQUIRE(pthread_sigmask(SIG_SETMASK, NULL, &before) == 0);
    int p[2];
    REQUIRE(pipe(p) == 0);
    close(p[0]);
    struct closed_pipe c = {
        p[1], cq_queue_create(label, CQ_QUEUE_SERIAL), some_bytes(), {cq_semaphore_create(0), -1}};
    submit(&c);
    CHECK(cq_semaphore_wait(c.result.done, cq_test_deadline()) == 0);
    CHECK_EQ(c.result.error, EPIPE);
    REQUIRE(pthread_sigmask(SIG_SETMASK, NULL, &mask) == 0);
    CHECK(sigismember(&mask, SIGPIPE) == sigismember(&before, SIGPIPE));
    REQUIRE(sigpending(&pending) == 0);
    CHECK(!sigismember(&pending, SIGPIPE));
    cq_release(c.data);
    cq_release(c.result.done);
    cq_release(c.queue);
    close(p[1]);
}

static void submit_oneshot(struct closed_pipe *c)
{
    cq_write_f(c->fd, c->data, c->queue, &c->result, oneshot_done);
}

static void submit_channel(struct closed_pipe *c)
{
    cq_semaphore_t clean = cq_semaphore_create(0);
    cq_io_t ch = cq_io_create_f(CQ_IO_STREAM, c->fd, c->queue, clean, cleaned);
    REQUIRE(ch != NULL);
    cq_io_write_f(ch, 0, c->data, c->queue, &c->result, channel_done);
    CHECK(cq_semaphore_wait(c->result.done, cq_test_deadline()) == 0);
    cq_semaphore_signal(c->result.done); /* for the caller's wait */
    cq_io_close(ch, 0);
    cq_release(ch);
    CHECK(cq_semaphore_wait(clean, cq_test_deadline()) == 0);
    cq_release(clean);
}

static void test_oneshot_write(void)
{
    write_to_closed_pipe("sigpipe.oneshot", submit_oneshot);
}

static void test_channel_write(void)
{
    write_to_closed_pipe("sigpipe.channel", submit_channel);
}

int main(void)
{
    /* SIGPIPE keeps its default action: a raised one ends the test with that signal. */
    signal(SIGPIPE, SIG_DFL);
    RUN(test_oneshot_write);
    RUN(test_channel_write);
    TEST_MAIN_END();
}
