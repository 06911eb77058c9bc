/*
 * What the dispatch I/O tests (test_io.c, test_io_file.c) share: a cleanup handler that records
 * its error and count, and channels whose cleanup the test waits for before it closes their
 * descriptor. Include after cq_test.h.
 */
#ifndef IO_TEST_SUPPORT_H
#define IO_TEST_SUPPORT_H

struct cleanup_rec {
    cq_semaphore_t sema;
    int error;
    int calls;
};

static void cleanup_handler(void *ctx, int error)
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
static cq_semaphore_t g_cleaned;

static void count_cleanup(void *ctx, int error)
{
    (void)ctx;
    (void)error;
    cq_semaphore_signal(g_cleaned);
}

static cq_io_t mk(cq_io_type_t type, int fd, cq_queue_t q)
{
    return cq_io_create_f(type, fd, q, NULL, count_cleanup);
}

static void done_with(cq_io_t ch, cq_io_close_flags_t flags)
{
    cq_io_close(ch, flags);
    cq_release(ch);
    WAIT_SEMA(g_cleaned);
}

#endif /* IO_TEST_SUPPORT_H */
