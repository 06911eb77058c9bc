/* The guide's "a run loop replaced by sources" (timer, signal, read), in C (docs/guide.md). */
#include "guide_support.h"
#include <signal.h>
#include <unistd.h>

/* guide:begin sources */
struct event_loop {
    cq_queue_t queue; /* every handler runs here, one at a time: no locks on the fields */
    cq_source_t timer, signal, reader;
    cq_group_t running; /* one entry per live source; left by its cancel handler */
    long ticks, signals, bytes;
};

static void on_tick(void *context)
{
    struct event_loop *loop = context;
    loop->ticks += (long)cq_source_get_data(loop->timer); /* fires since the last call */
    if (loop->ticks >= 3) {
        cq_source_cancel(loop->timer);
    }
}

static void on_signal(void *context)
{
    struct event_loop *loop = context;
    loop->signals += (long)cq_source_get_data(loop->signal);
    cq_source_cancel(loop->signal);
}

static void on_readable(void *context)
{
    struct event_loop *loop = context;
    char buffer[256];
    ssize_t n = read((int)cq_source_get_handle(loop->reader), buffer, sizeof buffer);
    if (n > 0) {
        loop->bytes += n;
    } else {
        cq_source_cancel(loop->reader); /* end of file (or an error) */
    }
}

static void on_reader_canceled(void *context)
{
    struct event_loop *loop = context;
    close((int)cq_source_get_handle(loop->reader)); /* the descriptor is ours to close */
    cq_group_leave(loop->running);
}

static void on_canceled(void *context)
{
    struct event_loop *loop = context;
    cq_group_leave(loop->running);
}

static cq_source_t add_source(struct event_loop *loop, cq_source_type_t type, uintptr_t handle,
                              cq_function_t on_event, cq_function_t on_cancel)
{
    cq_source_t source = cq_source_create(type, handle, 0, loop->queue);
    cq_set_context(source, loop);
    cq_source_set_event_handler_f(source, on_event);
    cq_source_set_cancel_handler_f(source, on_cancel);
    cq_group_enter(loop->running);
    return source;
}

static void start_event_loop(struct event_loop *loop, int read_fd, cq_function_t on_registered)
{
    loop->queue = cq_queue_create("event-loop", CQ_QUEUE_SERIAL);
    loop->running = cq_group_create();
    loop->timer = add_source(loop, CQ_SOURCE_TYPE_TIMER, 0, on_tick, on_canceled);
    cq_source_set_timer(loop->timer, CQ_TIME_NOW, CQ_NSEC_PER_MSEC, 0); /* every 1 ms */
    loop->signal = add_source(loop, CQ_SOURCE_TYPE_SIGNAL, SIGUSR2, on_signal, on_canceled);
    cq_source_set_registration_handler_f(loop->signal, on_registered);
    loop->reader = add_source(loop, CQ_SOURCE_TYPE_READ, (uintptr_t)read_fd, on_readable,
                              on_reader_canceled);
    cq_resume(loop->timer); /* sources start suspended */
    cq_resume(loop->signal);
    cq_resume(loop->reader);
}
/* guide:end sources */

static cq_semaphore_t signal_registered;

static void registered(void *context)
{
    cq_semaphore_signal(signal_registered);
}

int main(void)
{
    int fds[2];
    GUIDE_CHECK(pipe(fds) == 0);
    signal_registered = cq_semaphore_create(0);
    struct event_loop loop = {0};
    start_event_loop(&loop, fds[0], registered);
    /* Only once the signal source is registered is SIGUSR2 counted rather than fatal. */
    GUIDE_CHECK(cq_semaphore_wait(signal_registered, guide_patience()) == 0);
    GUIDE_CHECK(kill(getpid(), SIGUSR2) == 0);
    GUIDE_CHECK(write(fds[1], "hello, loop", 11) == 11);
    close(fds[1]);
    GUIDE_CHECK(cq_group_wait(loop.running, guide_patience()) == 0);
    GUIDE_CHECK(loop.ticks >= 3);
    GUIDE_CHECK(loop.signals >= 1);
    GUIDE_CHECK(loop.bytes == 11);
    cq_release(loop.timer);
    cq_release(loop.signal);
    cq_release(loop.reader);
    cq_release(loop.running);
    cq_release(loop.queue);
    cq_release(signal_registered);
    return 0;
}
