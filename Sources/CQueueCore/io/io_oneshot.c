/*
 * cq_read_f / cq_write_f: one operation on a private stream channel. The handler is called
 * from the channel's cleanup, so the descriptor's flags are back as they were (the channel sets
 * O_NONBLOCK on pipes and sockets) before the caller sees the result and maybe closes it.
 */
#include <errno.h>
#include <stdlib.h>

#include "io/io_internal.h"
#include "platform/diag_internal.h"

struct oneshot {
    void *ctx;
    cq_io_data_function_t handler;
    cq_data_t data; /* read: everything read; write: what was not written (or NULL) */
    int error;
};

static void oneshot_cleanup(void *ctx, int error)
{
    struct oneshot *o = ctx;
    (void)error; /* the operation's error is the one reported */
    o->handler(o->ctx, o->data, o->error);
    if (o->data) {
        cq_release(o->data);
    }
    free(o);
}

static void oneshot_read(void *ctx, bool done, cq_data_t data, int error)
{
    struct oneshot *o = ctx;
    if (data) {
        cq_data_t all = cq_data_create_concat(o->data, data);
        cq_release(o->data);
        o->data = all;
    }
    if (done) {
        o->error = error;
    }
}

static void oneshot_write(void *ctx, bool done, cq_data_t data, int error)
{
    struct oneshot *o = ctx;
    if (done) {
        o->error = error;
        if (data && error) {
            cq_retain(data);
            o->data = data;
        }
    }
}

static struct oneshot *oneshot_new(void *ctx, cq_io_data_function_t handler, const char *call)
{
    if (handler == NULL) {
        cq__crash("%s: NULL handler", call);
    }
    struct oneshot *o = calloc(1, sizeof *o);
    if (o == NULL) {
        cq__crash("%s: out of memory", call);
    }
    o->ctx = ctx;
    o->handler = handler;
    return o;
}

void cq_read_f(cq_fd_t fd, size_t length, cq_queue_t queue, void *context,
               cq_io_data_function_t handler)
{
    struct oneshot *o = oneshot_new(context, handler, "cq_read_f");
    o->data = cq_data_empty;
    cq_io_t ch = cq__io_create_oneshot(fd, queue, o, oneshot_cleanup);
    cq_io_set_low_water(ch, SIZE_MAX);
    cq__io_set_avail(ch);
    cq_io_read_f(ch, 0, length, queue, o, oneshot_read);
    cq_io_close(ch, 0);
    cq_release(ch);
}

void cq_write_f(cq_fd_t fd, cq_data_t data, cq_queue_t queue, void *context,
                cq_io_data_function_t handler)
{
    struct oneshot *o = oneshot_new(context, handler, "cq_write_f");
    cq_io_t ch = cq__io_create_oneshot(fd, queue, o, oneshot_cleanup);
    cq_io_write_f(ch, 0, data, queue, o, oneshot_write);
    cq_io_close(ch, 0);
    cq_release(ch);
}
