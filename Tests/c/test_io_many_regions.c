/*
 * Writing a data object made of many small regions (a message built by appending 4-byte
 * pieces) through a channel: to a file (stream and random channels), a socket and a pipe. The
 * write used to cost O(regions) per system call: after each one the unwritten rest was made
 * anew (a subrange copies a record per region), a file request took one region and a writev or
 * sendmsg 16. 32,000 regions took 6 s to a file and 0.33 s to a socket (libdispatch 0.002 s);
 * 100,000 took 83 s to a file.
 *
 * The checks are structural, never timed: the system calls the write made (pwritev, writev,
 * sendmsg are wrapped and counted while a write runs: 32,000 regions need 32 calls of 1,024
 * regions; the bound, n / 100 = 320, is ten times that and a hundredth of one call per region)
 * and the bytes the library allocated meanwhile (malloc wrapped: a subrange of the rest per
 * call would allocate 32 bytes per region left, about 16 MB here even with 1,024 regions per
 * call; the cursor allocates one iovec array of 16 KiB; the bound is 8 bytes per region, 256
 * KB). The bytes that arrive are compared with what was written, and the rest each handler
 * gets is compared with the unwritten end of the data: reports cut by a high-water mark in the
 * middle of a region, a stop while the write waits for a full pipe, EPIPE.
 */
// link-wrap: pwritev writev sendmsg malloc
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cq_test.h"
#include "io_test_support.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>

/* ---- counting the library's system calls and allocations while a write runs ---------------- */

ssize_t __real_pwritev(int fd, const struct iovec *iov, int cnt, off_t off);
ssize_t __real_writev(int fd, const struct iovec *iov, int cnt);
ssize_t __real_sendmsg(int fd, const struct msghdr *msg, int flags);
void *__real_malloc(size_t size);
ssize_t __wrap_pwritev(int fd, const struct iovec *iov, int cnt, off_t off);
ssize_t __wrap_writev(int fd, const struct iovec *iov, int cnt);
ssize_t __wrap_sendmsg(int fd, const struct msghdr *msg, int flags);
void *__wrap_malloc(size_t size);

static atomic_bool counting;
static atomic_long write_calls; /* pwritev, writev, sendmsg */
static atomic_long malloc_bytes;

ssize_t __wrap_pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    if (atomic_load(&counting)) {
        atomic_fetch_add(&write_calls, 1);
    }
    return __real_pwritev(fd, iov, cnt, off);
}

ssize_t __wrap_writev(int fd, const struct iovec *iov, int cnt)
{
    if (atomic_load(&counting)) {
        atomic_fetch_add(&write_calls, 1);
    }
    return __real_writev(fd, iov, cnt);
}

ssize_t __wrap_sendmsg(int fd, const struct msghdr *msg, int flags)
{
    if (atomic_load(&counting)) {
        atomic_fetch_add(&write_calls, 1);
    }
    return __real_sendmsg(fd, msg, flags);
}

void *__wrap_malloc(size_t size)
{
    if (atomic_load(&counting)) {
        atomic_fetch_add(&malloc_bytes, (long)size);
    }
    return __real_malloc(size);
}

static void count_start(void)
{
    atomic_store(&write_calls, 0);
    atomic_store(&malloc_bytes, 0);
    atomic_store(&counting, true);
}

static void count_stop(void)
{
    atomic_store(&counting, false);
}

/* ---- the data ---------------------------------------------------------------------------------
 */

#define REGION 4

/* The bytes of n regions: region i holds i (little-endian), so a region out of place shows. */
static uint8_t *expected_bytes(size_t n)
{
    uint8_t *b = malloc(n * REGION);
    REQUIRE(b != NULL);
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < REGION; k++) {
            b[i * REGION + (size_t)k] = (uint8_t)(i >> (8 * k));
        }
    }
    return b;
}

/* A data object of n regions of REGION bytes each (one leaf per region), built as a balanced
 * tree of concatenations so that building it costs O(n log n). */
static cq_data_t many_regions(const uint8_t *bytes, size_t n)
{
    cq_data_t *a = malloc(n * sizeof *a);
    REQUIRE(a != NULL);
    for (size_t i = 0; i < n; i++) {
        a[i] = cq_data_create_f(bytes + i * REGION, REGION, NULL, CQ_DATA_DESTRUCTOR_DEFAULT);
    }
    for (size_t m = n; m > 1; m = (m + 1) / 2) {
        size_t k = 0;
        for (size_t i = 0; i < m; i += 2, k++) {
            if (i + 1 < m) {
                cq_data_t c = cq_data_create_concat(a[i], a[i + 1]);
                cq_release(a[i]);
                cq_release(a[i + 1]);
                a[k] = c;
            } else {
                a[k] = a[i];
            }
        }
    }
    cq_data_t d = a[0];
    free(a);
    REQUIRE(cq_data_get_region_count(d) == n);
    REQUIRE(cq_data_get_size(d) == n * REGION);
    return d;
}

/* Whether `d` holds exactly the last cq_data_get_size(d) bytes of expected[0, total). */
static bool is_suffix(cq_data_t d, const uint8_t *expected, size_t total)
{
    size_t size = cq_data_get_size(d);
    if (size > total) {
        return false;
    }
    uint8_t *b = malloc(size ? size : 1);
    REQUIRE(b != NULL);
    bool same = cq_data_copy_bytes(d, 0, b, size) == size &&
                memcmp(b, expected + (total - size), size) == 0;
    free(b);
    return same;
}

/* ---- a write and what its handler saw ------------------------------------------------------- */

struct wr {
    cq_semaphore_t done_sema, partial_sema;
    const uint8_t *expected;
    size_t total;
    size_t last_left; /* the size of the last rest reported (total before any) */
    size_t max_step;  /* the most bytes written between two reports */
    size_t partials;
    bool bad_rest; /* a reported rest that was not the unwritten end of the data */
    bool done;
    int error;
    cq_data_t rest; /* the done call's (retained), or NULL */
};

static void wr_init(struct wr *w, const uint8_t *expected, size_t total)
{
    memset(w, 0, sizeof *w);
    w->done_sema = cq_semaphore_create(0);
    w->partial_sema = cq_semaphore_create(0);
    w->expected = expected;
    w->total = total;
    w->last_left = total;
}

static void wr_free(struct wr *w)
{
    if (w->rest) {
        cq_release(w->rest);
    }
    cq_release(w->done_sema);
    cq_release(w->partial_sema);
}

static void wr_handler(void *ctx, bool done, cq_data_t data, int error)
{
    struct wr *w = ctx;
    if (!done) {
        size_t left = data ? cq_data_get_size(data) : SIZE_MAX;
        if (data == NULL || left >= w->last_left || left == 0 ||
            !is_suffix(data, w->expected, w->total)) {
            w->bad_rest = true;
        } else {
            size_t step = w->last_left - left;
            w->max_step = step > w->max_step ? step : w->max_step;
            w->last_left = left;
        }
        w->partials++;
        cq_semaphore_signal(w->partial_sema);
        return;
    }
    w->done = true;
    w->error = error;
    if (data) {
        cq_retain(data);
        if (!is_suffix(data, w->expected, w->total)) {
            w->bad_rest = true;
        }
    }
    w->rest = data;
    cq_semaphore_signal(w->done_sema);
}

/* Whether the file's bytes [off, off + n) are expected[0, n). */
static bool file_holds(int fd, off_t off, const uint8_t *expected, size_t n)
{
    uint8_t *b = malloc(n);
    REQUIRE(b != NULL);
    bool same = pread(fd, b, n, off) == (ssize_t)n && memcmp(b, expected, n) == 0;
    free(b);
    return same;
}

static int temp_file(void)
{
    char path[] = "/tmp/cq-test-many-regions-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    unlink(path);
    return fd;
}

/* The structural bounds (see the top of the file). */
static void check_costs(size_t n)
{
    long calls = atomic_load(&write_calls), bytes = atomic_load(&malloc_bytes);
    fprintf(stderr, "   %zu regions: %ld write calls, %ld bytes allocated\n", n, calls, bytes);
    CHECK(calls >= 1);
    CHECK(calls <= (long)(n / 100));
    CHECK(bytes <= (long)(n * 8));
}

/* ---- files ------------------------------------------------------------------------------------
 */

#define MANY 32000

/* 32,000 regions to a file through a stream channel: written in order, in a few calls. */
static void test_file_stream_channel(void)
{
    uint8_t *expected = expected_bytes(MANY);
    cq_data_t d = many_regions(expected, MANY);
    int fd = temp_file();
    cq_queue_t q = cq_queue_create("test.io.many", CQ_QUEUE_SERIAL);
    cq_io_t ch = mk(CQ_IO_STREAM, fd, q);
    struct wr w;
    wr_init(&w, expected, MANY * REGION);
    count_start();
    cq_io_write_f(ch, 0, d, q, &w, wr_handler);
    WAIT_SEMA(w.done_sema);
    count_stop();
    CHECK_EQ(w.error, 0);
    CHECK(w.rest == NULL);
    CHECK(!w.bad_rest);
    check_costs(MANY);
    done_with(ch, 0);
    CHECK(file_holds(fd, 0, expected, MANY * REGION));
    close(fd);
    wr_free(&w);
    cq_release(d);
    cq_release(q);
    free(expected);
}

/* A random channel at an offset, with a high-water mark that cuts regions in two (1,002 bytes:
 * 250 regions and half of one) and a low-water mark of 1: every request is a report, and each
 * rest reported is exactly the unwritten end of the data. */
static void test_file_random_water_marks(void)
{
    size_t n = 8000, total = n * REGION, high = 1002;
    uint8_t *expected = expected_bytes(n);
    cq_data_t d = many_regions(expected, n);
    int fd = temp_file();
    cq_queue_t q = cq_queue_create("test.io.many", CQ_QUEUE_SERIAL);
    cq_io_t ch = mk(CQ_IO_RANDOM, fd, q);
    cq_io_set_high_water(ch, high);
    cq_io_set_low_water(ch, 1);
    struct wr w;
    wr_init(&w, expected, total);
    cq_io_write_f(ch, 1000, d, q, &w, wr_handler);
    WAIT_SEMA(w.done_sema);
    CHECK_EQ(w.error, 0);
    CHECK(w.rest == NULL);
    CHECK(!w.bad_rest);
    CHECK(w.max_step <= high);
    CHECK(w.partials >= total / high); /* the last request ends the write, without a report */
    done_with(ch, 0);
    struct stat st;
    REQUIRE(fstat(fd, &st) == 0);
    CHECK_EQ(st.st_size, 1000 + (off_t)total);
    CHECK(file_holds(fd, 1000, expected, total));
    close(fd);
    wr_free(&w);
    cq_release(d);
    cq_release(q);
    free(expected);
}

/* ---- pipes and sockets ------------------------------------------------------------------------
 */

struct drain {
    int fd;
    uint8_t *buf;
    size_t cap, got;
};

static void *drain_main(void *arg)
{
    struct drain *dr = arg;
    ssize_t r;
    while (dr->got < dr->cap && (r = read(dr->fd, dr->buf + dr->got, dr->cap - dr->got)) > 0) {
        dr->got += (size_t)r;
    }
    return NULL;
}

/* 32,000 regions to the write end `wfd` (a pipe or a socket) that a thread drains from `rfd`. */
static void write_stream(int wfd, int rfd)
{
    uint8_t *expected = expected_bytes(MANY);
    cq_data_t d = many_regions(expected, MANY);
    struct drain dr = {rfd, malloc(MANY * REGION), MANY * REGION, 0};
    REQUIRE(dr.buf != NULL);
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, drain_main, &dr) == 0);
    cq_queue_t q = cq_queue_create("test.io.many", CQ_QUEUE_SERIAL);
    cq_io_t ch = mk(CQ_IO_STREAM, wfd, q);
    struct wr w;
    wr_init(&w, expected, MANY * REGION);
    count_start();
    cq_io_write_f(ch, 0, d, q, &w, wr_handler);
    WAIT_SEMA(w.done_sema);
    count_stop();
    CHECK_EQ(w.error, 0);
    CHECK(w.rest == NULL);
    check_costs(MANY);
    done_with(ch, 0);
    close(wfd);
    pthread_join(t, NULL);
    CHECK_EQ(dr.got, MANY * REGION);
    CHECK(memcmp(dr.buf, expected, MANY * REGION) == 0);
    close(rfd);
    free(dr.buf);
    wr_free(&w);
    cq_release(d);
    cq_release(q);
    free(expected);
}

/* Room for the whole write in the socket's or the pipe's buffer, so the number of calls does
 * not depend on how fast the other thread drains it. */
static void test_socket(void)
{
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    int size = 4 << 20;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    write_stream(sv[0], sv[1]);
}

static void test_pipe(void)
{
    int p[2];
    REQUIRE(pipe(p) == 0);
    fcntl(p[1], F_SETPIPE_SZ, 1 << 20); /* may be refused (a lower limit): then the reader */
    write_stream(p[1], p[0]);
}

/* A stop while the write waits for a full pipe (one page: no reader): the done call's rest is
 * exactly what is not in the pipe. */
static void test_pipe_stop(void)
{
    size_t n = 100000, total = n * REGION;
    uint8_t *expected = expected_bytes(n);
    cq_data_t d = many_regions(expected, n);
    int p[2];
    REQUIRE(pipe(p) == 0);
    fcntl(p[1], F_SETPIPE_SZ, 4096);
    cq_queue_t q = cq_queue_create("test.io.many", CQ_QUEUE_SERIAL);
    cq_io_t ch = mk(CQ_IO_STREAM, p[1], q);
    cq_io_set_low_water(ch, 1);
    struct wr w;
    wr_init(&w, expected, total);
    cq_io_write_f(ch, 0, d, q, &w, wr_handler);
    WAIT_SEMA(w.partial_sema); /* something is in the pipe; the rest cannot fit */
    done_with(ch, CQ_IO_STOP);
    WAIT_SEMA(w.done_sema);
    CHECK_EQ(w.error, ECANCELED);
    CHECK(!w.bad_rest);
    REQUIRE(w.rest != NULL);
    size_t written = total - cq_data_get_size(w.rest);
    CHECK(written > 0);
    close(p[1]);
    uint8_t *got = malloc(total);
    REQUIRE(got != NULL);
    size_t have = 0;
    ssize_t r;
    while ((r = read(p[0], got + have, total - have)) > 0) {
        have += (size_t)r;
    }
    CHECK_EQ(have, written);
    CHECK(memcmp(got, expected, have) == 0);
    close(p[0]);
    free(got);
    wr_free(&w);
    cq_release(d);
    cq_release(q);
    free(expected);
}

/* A pipe without a reader: EPIPE, and the whole data comes back as not written. */
static void test_pipe_epipe(void)
{
    size_t n = 8000, total = n * REGION;
    uint8_t *expected = expected_bytes(n);
    cq_data_t d = many_regions(expected, n);
    int p[2];
    REQUIRE(pipe(p) == 0);
    close(p[0]);
    cq_queue_t q = cq_queue_create("test.io.many", CQ_QUEUE_SERIAL);
    cq_io_t ch = mk(CQ_IO_STREAM, p[1], q);
    struct wr w;
    wr_init(&w, expected, total);
    cq_io_write_f(ch, 0, d, q, &w, wr_handler);
    WAIT_SEMA(w.done_sema);
    CHECK_EQ(w.error, EPIPE);
    CHECK(!w.bad_rest);
    REQUIRE(w.rest != NULL);
    CHECK_EQ(cq_data_get_size(w.rest), total);
    done_with(ch, 0);
    close(p[1]);
    wr_free(&w);
    cq_release(d);
    cq_release(q);
    free(expected);
}

int main(void)
{
    g_cleaned = cq_semaphore_create(0);
    RUN(test_file_stream_channel);
    RUN(test_file_random_water_marks);
    RUN(test_socket);
    RUN(test_pipe);
    RUN(test_pipe_stop);
    RUN(test_pipe_epipe);
    TEST_MAIN_END();
}
