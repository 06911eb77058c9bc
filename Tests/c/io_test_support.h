/*
 * What the dispatch I/O tests (test_io.c, test_io_file.c) share: a cleanup handler that records
 * its error and count, and channels whose cleanup the test waits for before it closes their
 * descriptor. Include after cq_test.h. A test may use only some of it (IO_TEST_SHARED).
 */
#ifndef IO_TEST_SUPPORT_H
#define IO_TEST_SUPPORT_H

#define IO_TEST_SHARED static __attribute__((unused))

struct cleanup_rec {
    cq_semaphore_t sema;
    int error;
    int calls;
};

IO_TEST_SHARED void cleanup_handler(void *ctx, int error)
{
    struct cleanup_rec *r = ctx;
    r->error = error;
    r->calls++;
    cq_semaphore_signal(r->sema);
}

/* Channels the tests close: the cleanup handler counts, and done_with waits for it, so a test
 * closes a descriptor only after the channel has let it go (its flags restored), as the API
 * requires; otherwise a late restore could hit the next test's descriptor of the same number.
 * main() creates g_cleaned. */
IO_TEST_SHARED cq_semaphore_t g_cleaned;

IO_TEST_SHARED void count_cleanup(void *ctx, int error)
{
    (void)ctx;
    (void)error;
    cq_semaphore_signal(g_cleaned);
}

IO_TEST_SHARED cq_io_t mk(cq_io_type_t type, int fd, cq_queue_t q)
{
    return cq_io_create_f(type, fd, q, NULL, count_cleanup);
}

IO_TEST_SHARED void done_with(cq_io_t ch, cq_io_close_flags_t flags)
{
    cq_io_close(ch, flags);
    cq_release(ch);
    WAIT_SEMA(g_cleaned);
}

/* The buffer cache's counters (io_op.c; the tests link the static library): file-chunk
 * buffers in use and their peak, how often a read held back for its handler, and the pieces
 * read by handlers' runs. The same as io_internal.h's. */
struct cq__io_buf_stats {
    size_t live, peak, holds, inlined, cached;
};
struct cq__io_buf_stats cq__io_buf_stats(bool reset_peak);

/* A handler held on its first call until the test lets it go: `entered` is signalled when it
 * gets there, `gate` lets it go on; every call goes on to `inner`(`inner_ctx`, ...). */
struct held_handler {
    cq_semaphore_t entered, gate;
    bool first;
    cq_io_handler_function_t inner;
    void *inner_ctx;
};

IO_TEST_SHARED void held_handler_init(struct held_handler *h, cq_io_handler_function_t inner,
                                      void *inner_ctx)
{
    *h = (struct held_handler){cq_semaphore_create(0), cq_semaphore_create(0), false, inner,
                               inner_ctx};
}

IO_TEST_SHARED void held_handler_free(struct held_handler *h)
{
    cq_release(h->entered);
    cq_release(h->gate);
}

IO_TEST_SHARED void held_handler_call(void *ctx, bool done, cq_data_t data, int error)
{
    struct held_handler *h = ctx;
    if (!h->first) {
        h->first = true;
        cq_semaphore_signal(h->entered);
        WAIT_SEMA(h->gate);
    }
    h->inner(h->inner_ctx, done, data, error);
}

#endif /* IO_TEST_SUPPORT_H */
