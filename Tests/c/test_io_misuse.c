/*
 * Misuse of dispatch I/O channels and data objects: each case runs in a forked child (the
 * parent never starts the runtime) and its stderr is checked, as in test_misuse.c. The messages
 * are the ones docs/misuse.md lists for I/O and data (its tables name these case functions);
 * test_data.c checks the data cases it already had (not a data object, NULL data, a region
 * index out of range, a destructor marker called).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cq_test.h"

#include <fcntl.h>

static void handler_noop(void *ctx, bool done, cq_data_t data, int error)
{
    (void)ctx;
    (void)done;
    (void)data;
    (void)error;
}

static void data_handler_noop(void *ctx, cq_data_t data, int error)
{
    (void)ctx;
    (void)data;
    (void)error;
}

/* Where results the case never gets (it aborts first) would go: the calls warn if one is
 * dropped. */
static void *volatile sink;

/* A channel on the read end of a pipe (the write end stays open: nothing ends on its own). */
static cq_io_t pipe_channel(void)
{
    int p[2];
    REQUIRE(pipe(p) == 0);
    cq_io_t ch = cq_io_create_f(CQ_IO_STREAM, p[0], NULL, NULL, NULL);
    REQUIRE(ch != NULL);
    return ch;
}

static cq_data_t two_bytes(void)
{
    return cq_data_create_f("ab", 2, NULL, CQ_DATA_DESTRUCTOR_DEFAULT);
}

/* ---- (a) aborts: channels ------------------------------------------------------------------ */

static void close_unknown_flags(void *arg)
{
    (void)arg;
    cq_io_close(pipe_channel(), 0x2); /* libdispatch ignores the bit */
}

static void interval_unknown_flags(void *arg)
{
    (void)arg;
    cq_io_set_interval(pipe_channel(), 1000000, 0x2);
}

static void read_null_handler(void *arg)
{
    (void)arg;
    cq_io_read_f(pipe_channel(), 0, 10, NULL, NULL, NULL);
}

static void write_null_handler(void *arg)
{
    (void)arg;
    cq_io_write_f(pipe_channel(), 0, two_bytes(), NULL, NULL, NULL);
}

static void write_null_data(void *arg)
{
    (void)arg;
    cq_io_write_f(pipe_channel(), 0, NULL, NULL, NULL, handler_noop);
}

static void barrier_null(void *arg)
{
    (void)arg;
    cq_io_barrier_f(pipe_channel(), NULL, NULL);
}

static void oneshot_read_null_handler(void *arg)
{
    (void)arg;
    int p[2];
    REQUIRE(pipe(p) == 0);
    cq_read_f(p[0], 10, NULL, NULL, NULL);
}

static void oneshot_write_null_handler(void *arg)
{
    (void)arg;
    int p[2];
    REQUIRE(pipe(p) == 0);
    cq_write_f(p[1], two_bytes(), NULL, NULL, NULL);
}

static void oneshot_write_null_data(void *arg)
{
    (void)arg;
    int p[2];
    REQUIRE(pipe(p) == 0);
    cq_write_f(p[1], NULL, NULL, NULL, data_handler_noop);
}

static void null_channel(void *arg)
{
    (void)arg;
    cq_io_read_f(NULL, 0, 10, NULL, NULL, handler_noop);
}

static void not_a_channel(void *arg)
{
    (void)arg;
    cq_io_close((cq_io_t)(void *)cq_semaphore_create(0), 0);
}

static void with_io_from_not_a_channel(void *arg)
{
    (void)arg;
    sink = cq_io_create_with_io_f(CQ_IO_STREAM, (cq_io_t)(void *)two_bytes(), NULL, NULL, NULL);
}

/* Released with nothing to wait for, the channel is freed at once: a later call reads freed
 * memory, reported while malloc has not reused it (only without a sanitizer watching). */
__attribute__((unused)) static void channel_after_release(void *arg)
{
    (void)arg;
    cq_io_t ch = pipe_channel();
    cq_release(ch);
    cq_io_close(ch, 0);
}

/* ---- (a) aborts: data objects ------------------------------------------------------------- */

static void ctx_destructor_null(void *arg)
{
    (void)arg;
    static char buf[4];
    sink = cq_data_create_ctx_f(buf, sizeof buf, NULL, NULL, NULL);
}

static void ctx_destructor_marker(void *arg)
{
    (void)arg;
    static char buf[4];
    sink = cq_data_create_ctx_f(buf, sizeof buf, NULL, NULL, CQ_DATA_DESTRUCTOR_FREE);
}

static void apply_null(void *arg)
{
    (void)arg;
    (void)cq_data_apply_f(two_bytes(), NULL, NULL);
}

static void copy_region_null(void *arg)
{
    (void)arg;
    sink = cq_data_copy_region(two_bytes(), 0, NULL);
}

static void copy_bytes_null(void *arg)
{
    (void)arg;
    CHECK_EQ(cq_data_copy_bytes(two_bytes(), 2, NULL, 5), 0); /* nothing to copy: allowed */
    (void)cq_data_copy_bytes(two_bytes(), 0, NULL, 5);
}

/* Two objects over bytes that are never read (CQ_DATA_DESTRUCTOR_NONE keeps the pointer):
 * together more than SIZE_MAX. */
static void concat_overflow(void *arg)
{
    (void)arg;
    static char buf[1];
    cq_data_t d = cq_data_create_f(buf, SIZE_MAX / 2 + 1, NULL, CQ_DATA_DESTRUCTOR_NONE);
    sink = cq_data_create_concat(d, d);
}

/* ---- (c) error returns ---------------------------------------------------------------------- */

static void unknown_type(void *arg)
{
    (void)arg;
    int p[2];
    REQUIRE(pipe(p) == 0);
    errno = 0;
    CHECK(cq_io_create_f(7, p[0], NULL, NULL, NULL) == NULL);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK(cq_io_create_with_path_f(7, "/tmp", O_RDONLY, 0, NULL, NULL, NULL) == NULL);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK(cq_io_create_with_io_f(7, pipe_channel(), NULL, NULL, NULL) == NULL);
    CHECK_EQ(errno, EINVAL);
}

static void relative_path(void *arg)
{
    (void)arg;
    errno = 0;
    CHECK(cq_io_create_with_path_f(CQ_IO_STREAM, "tmp/x", O_RDONLY, 0, NULL, NULL, NULL) == NULL);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK(cq_io_create_with_path_f(CQ_IO_STREAM, NULL, O_RDONLY, 0, NULL, NULL, NULL) == NULL);
    CHECK_EQ(errno, EINVAL);
    errno = 0; /* the path is checked first: no message for the type */
    CHECK(cq_io_create_with_path_f(7, "x", O_RDONLY, 0, NULL, NULL, NULL) == NULL);
    CHECK_EQ(errno, EINVAL);
}

/* ---- running them ------------------------------------------------------------------------- */

static int count_of(const char *text, const char *s)
{
    int n = 0;
    for (const char *p = strstr(text, s); p; p = strstr(p + 1, s)) {
        n++;
    }
    return n;
}

/* The child returns normally (its own checks passed) and printed `line` `times` times. */
static void expect_lines(const char *name, void (*fn)(void *), const char *line, int times)
{
    char out[4096];
    int status = test_fork_capture(fn, NULL, out, sizeof out);
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && count_of(out, line) == times;
    if (!ok) {
        fprintf(stderr, "%s: expected exit 0 and %d x \"%s\"; status 0x%x, stderr: %s\n", name,
                times, line, status, out);
        test_failures++;
    }
}

static void test_channel_aborts(void)
{
    expect_abort("close flags", close_unknown_flags, NULL,
                 "CQueueCore: cq_io_close: unknown flags 0x2\n");
    expect_abort("interval flags", interval_unknown_flags, NULL,
                 "CQueueCore: cq_io_set_interval: unknown flags 0x2\n");
    expect_abort("read handler", read_null_handler, NULL,
                 "CQueueCore: cq_io_read_f: NULL handler\n");
    expect_abort("write handler", write_null_handler, NULL,
                 "CQueueCore: cq_io_write_f: NULL handler\n");
    expect_abort("write data", write_null_data, NULL, "CQueueCore: cq_io_write_f: NULL data\n");
    expect_abort("barrier", barrier_null, NULL, "CQueueCore: cq_io_barrier_f: NULL barrier\n");
    expect_abort("cq_read_f handler", oneshot_read_null_handler, NULL,
                 "CQueueCore: cq_read_f: NULL handler\n");
    expect_abort("cq_write_f handler", oneshot_write_null_handler, NULL,
                 "CQueueCore: cq_write_f: NULL handler\n");
    expect_abort("cq_write_f data", oneshot_write_null_data, NULL,
                 "CQueueCore: cq_io_write_f: NULL data\n");
    expect_abort("NULL channel", null_channel, NULL, "CQueueCore: cq_io_read_f: NULL object\n");
    expect_abort("not a channel", not_a_channel, NULL, "CQueueCore: cq_io_close: semaphore 0x");
    expect_abort("not a channel", not_a_channel, NULL, " is not an I/O channel\n");
    expect_abort("with_io from data", with_io_from_not_a_channel, NULL, " is not an I/O channel\n");
#ifndef CQ_TEST_SANITIZED
    expect_abort("after release", channel_after_release, NULL,
                 "is not a CQueueCore object (or was already freed)\n");
#endif
}

static void test_data_aborts(void)
{
    expect_abort("ctx destructor NULL", ctx_destructor_null, NULL,
                 "CQueueCore: cq_data_create_ctx_f: the destructor must be a function (NULL and "
                 "the CQ_DATA_DESTRUCTOR_* constants go to cq_data_create_f)\n");
    expect_abort("ctx destructor marker", ctx_destructor_marker, NULL,
                 "CQueueCore: cq_data_create_ctx_f: the destructor must be a function");
    expect_abort("apply", apply_null, NULL, "CQueueCore: cq_data_apply_f: NULL applier\n");
    expect_abort("copy_region", copy_region_null, NULL,
                 "CQueueCore: cq_data_copy_region: NULL offset_out\n");
    expect_abort("copy_bytes", copy_bytes_null, NULL,
                 "CQueueCore: cq_data_copy_bytes: NULL destination for 2 bytes\n");
    expect_abort("concat overflow", concat_overflow, NULL,
                 "CQueueCore: cq_data_create_concat: the size overflows (");
}

static void test_error_returns(void)
{
    expect_lines("unknown type", unknown_type,
                 "CQueueCore: cq_io_create_f: unknown channel type 7 (returning NULL)\n", 1);
    expect_lines("unknown type", unknown_type,
                 "CQueueCore: cq_io_create_with_path_f: unknown channel type 7 (returning NULL)\n",
                 1);
    expect_lines("unknown type", unknown_type,
                 "CQueueCore: cq_io_create_with_io_f: unknown channel type 7 (returning NULL)\n",
                 1);
    expect_lines("relative path", relative_path, "CQueueCore", 0);
}

int main(void)
{
    /* all cases fork: the parent never starts the runtime */
    RUN(test_channel_aborts);
    RUN(test_data_aborts);
    RUN(test_error_returns);
    TEST_MAIN_END();
}
