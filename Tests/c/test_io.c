/*
 * Dispatch I/O on pipes and sockets (the reactor engine): streaming, water marks, intervals,
 * close with stop, short writes against a small pipe (EAGAIN), one-shots, and the errors (a bad
 * or closed descriptor, a directory, a missing path). Every wait is on a semaphore with the
 * harness's patience; nothing depends on timing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cq_test.h"
#include "io_test_support.h"

#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>

/* Collects what a read (or write) handler sees. */
struct coll {
    cq_semaphore_t done_sema;
    cq_data_t all; /* the bytes delivered, in order */
    size_t partials, empty_partials, max_partial, min_partial, calls_after_done;
    bool done;
    bool done_data_null;
    size_t done_size;
    int error;
    size_t last_remaining; /* writes: size of the data passed (SIZE_MAX: NULL) */
    size_t remaining_calls;
    cq_semaphore_t partial_sema; /* signalled on each partial delivery */
};

static void coll_init(struct coll *c)
{
    memset(c, 0, sizeof *c);
    c->done_sema = cq_semaphore_create(0);
    c->partial_sema = cq_semaphore_create(0);
    c->all = cq_data_empty;
    c->min_partial = SIZE_MAX;
}

static void coll_free(struct coll *c)
{
    cq_release(c->done_sema);
    cq_release(c->partial_sema);
    cq_release(c->all);
}

static void coll_handler(void *ctx, bool done, cq_data_t data, int error)
{
    struct coll *c = ctx;
    if (c->done) {
        c->calls_after_done++;
    }
    size_t size = data ? cq_data_get_size(data) : 0;
    if (data) {
        cq_data_t all = cq_data_create_concat(c->all, data);
        cq_release(c->all);
        c->all = all;
    }
    if (!done) {
        c->partials++;
        c->empty_partials += size == 0;
        c->max_partial = size > c->max_partial ? size : c->max_partial;
        c->min_partial = size < c->min_partial ? size : c->min_partial;
        cq_semaphore_signal(c->partial_sema);
        return;
    }
    c->done = true;
    c->done_data_null = data == NULL;
    c->done_size = size;
    c->error = error;
    cq_semaphore_signal(c->done_sema);
}

/* Writes: remember the remaining sizes. */
static void wcoll_handler(void *ctx, bool done, cq_data_t data, int error)
{
    struct coll *c = ctx;
    c->last_remaining = data ? cq_data_get_size(data) : SIZE_MAX;
    if (!done) {
        c->remaining_calls++;
        return;
    }
    c->done = true;
    c->done_data_null = data == NULL;
    c->error = error;
    cq_semaphore_signal(c->done_sema);
}

static unsigned char pattern_byte(size_t i)
{
    return (unsigned char)((i * 2654435761u) >> 13);
}

static cq_data_t pattern_data(size_t n)
{
    unsigned char *b = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++) {
        b[i] = pattern_byte(i);
    }
    return cq_data_create_f(b, n, NULL, CQ_DATA_DESTRUCTOR_FREE);
}

/* Whether `d` holds exactly the n bytes at `want`. */
static bool data_equals(cq_data_t d, const void *want, size_t n)
{
    const void *bytes = NULL;
    size_t size = 0;
    cq_data_t map = cq_data_create_map(d, &bytes, &size);
    bool same = size == n && (n == 0 || memcmp(bytes, want, n) == 0);
    cq_release(map);
    return same;
}

static bool data_is_pattern(cq_data_t d, size_t n)
{
    if (cq_data_get_size(d) != n) {
        return false;
    }
    unsigned char *b = malloc(n ? n : 1);
    cq_data_copy_bytes(d, 0, b, n);
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        ok = b[i] == pattern_byte(i);
    }
    free(b);
    return ok;
}

struct writer {
    int fd;
    size_t n;
    size_t step;
};

/* A plain thread writing the pattern with blocking write(2), then closing its end. */
static void *writer_main(void *arg)
{
    struct writer *w = arg;
    unsigned char *b = malloc(w->n);
    for (size_t i = 0; i < w->n; i++) {
        b[i] = pattern_byte(i);
    }
    size_t off = 0;
    while (off < w->n) {
        size_t k = w->n - off < w->step ? w->n - off : w->step;
        ssize_t r = write(w->fd, b + off, k);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            break;
        }
        off += (size_t)r;
    }
    free(b);
    close(w->fd);
    return NULL;
}

static cq_queue_t serial(void)
{
    return cq_queue_create("test.io", NULL);
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_pipe_stream_to_eof(void)
{
    int p[2];
    REQUIRE(pipe(p) == 0);
    struct writer w = {p[1], 3u << 20, 10000};
    pthread_t t;
    pthread_create(&t, NULL, writer_main, &w);
    struct cleanup_rec cr = {cq_semaphore_create(0), -1, 0};
    cq_queue_t q = serial();
    cq_io_t ch = cq_io_create_f(CQ_IO_STREAM, p[0], q, &cr, cleanup_handler);
    REQUIRE(ch != NULL);
    CHECK_EQ(cq_io_get_descriptor(ch), p[0]);
    struct coll c;
    coll_init(&c);
    cq_io_read_f(ch, 0, SIZE_MAX, q, &c, coll_handler);
    WAIT_SEMA(c.done_sema);
    pthread_join(t, NULL);
    CHECK_EQ(c.error, 0);
    CHECK_EQ(c.done_size, 0); /* EOF: done with empty data */
    CHECK(!c.done_data_null);
    CHECK(c.partials > 0);
    CHECK(data_is_pattern(c.all, w.n));
    cq_io_close(ch, 0);
    cq_release(ch);
    WAIT_SEMA(cr.sema);
    CHECK_EQ(cr.error, 0);
    CHECK_EQ(cr.calls, 1);
    /* the flags are back: the channel set O_NONBLOCK while it used the pipe */
    CHECK((fcntl(p[0], F_GETFL) & O_NONBLOCK) == 0);
    CHECK_EQ(c.calls_after_done, 0);
    close(p[0]);
    coll_free(&c);
    cq_release(cr.sema);
    cq_release(q);
}

/* A stream read stops reading while what it read waits for the handler: a pipe whose reader's
 * handler is held on its first piece keeps the rest in the pipe (its writer blocks) instead of
 * the channel reading all of it into memory; let go, every byte arrives in order. The hold
 * counter is io_op.c's (shared with file reads). */
struct flagged_writer {
    struct writer w;
    atomic_bool done;
};

static void *flagged_writer_main(void *arg)
{
    struct flagged_writer *f = arg;
    writer_main(&f->w);
    atomic_store(&f->done, true);
    return NULL;
}

static void test_stream_read_bounded(void)
{
    int p[2];
    REQUIRE(pipe(p) == 0);
    fcntl(p[1], F_SETPIPE_SZ, 1 << 20); /* fewer, larger reads; any size shows it */
    struct flagged_writer f = {{p[1], 64u << 20, 1u << 20}, false};
    struct cleanup_rec cr = {cq_semaphore_create(0), -1, 0};
    cq_queue_t q = serial();
    cq_io_t ch = cq_io_create_f(CQ_IO_STREAM, p[0], q, &cr, cleanup_handler);
    struct coll c;
    coll_init(&c);
    struct held_handler h;
    held_handler_init(&h, coll_handler, &c);
    size_t holds = cq__io_buf_stats(false).holds;
    pthread_t t;
    pthread_create(&t, NULL, flagged_writer_main, &f);
    cq_io_read_f(ch, 0, SIZE_MAX, q, &h, held_handler_call);
    WAIT_SEMA(h.entered);
    /* Wait until the read holds back, or (as before) the writer got everything in. */
    uint64_t deadline = cq_test_now_ns() + 30 * (uint64_t)1000000000;
    while (cq__io_buf_stats(false).holds == holds && !atomic_load(&f.done) &&
           cq_test_now_ns() < deadline) {
        usleep(200);
    }
    CHECK(cq__io_buf_stats(false).holds > holds);
    CHECK(!atomic_load(&f.done)); /* 64 MiB cannot all be in the channel and a 1 MiB pipe */
    cq_semaphore_signal(h.gate);
    WAIT_SEMA(c.done_sema);
    pthread_join(t, NULL);
    CHECK_EQ(c.error, 0);
    CHECK(data_is_pattern(c.all, f.w.n));
    cq_io_close(ch, 0);
    cq_release(ch);
    WAIT_SEMA(cr.sema);
    close(p[0]);
    coll_free(&c);
    held_handler_free(&h);
    cq_release(cr.sema);
    cq_release(q);
}

/* A socket pair with a stream channel on each end (writer, reader), on one serial queue, and n
 * bytes of the pattern to send. */
struct stream_pair {
    int sv[2];
    cq_queue_t q;
    cq_io_t wch, rch;
    size_t n;
    cq_data_t d;
    struct coll wc, rc;
};

static void pair_open(struct stream_pair *p, size_t n)
{
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, p->sv) == 0);
    p->q = serial();
    p->wch = mk(CQ_IO_STREAM, p->sv[0], p->q);
    p->rch = mk(CQ_IO_STREAM, p->sv[1], p->q);
    p->n = n;
    p->d = pattern_data(n);
    coll_init(&p->wc);
    coll_init(&p->rc);
}

/* Waits for both operations, checks that the write succeeded and the reader got the pattern,
 * and lets everything go (the collectors' counts stay readable). */
static void pair_finish(struct stream_pair *p)
{
    WAIT_SEMA(p->wc.done_sema);
    WAIT_SEMA(p->rc.done_sema);
    CHECK_EQ(p->wc.error, 0);
    CHECK_EQ(p->rc.error, 0);
    CHECK(data_is_pattern(p->rc.all, p->n));
    done_with(p->wch, 0);
    done_with(p->rch, 0);
    cq_release(p->d);
    coll_free(&p->wc);
    coll_free(&p->rc);
    close(p->sv[0]);
    close(p->sv[1]);
    cq_release(p->q);
}

static void test_socketpair_write_read_exact(void)
{
    struct stream_pair p;
    pair_open(&p, 4u << 20);
    /* two pieces, concatenated: the write walks regions */
    cq_data_t a = cq_data_create_subrange(p.d, 0, 12345);
    cq_data_t b = cq_data_create_subrange(p.d, 12345, SIZE_MAX);
    cq_data_t ab = cq_data_create_concat(a, b);
    cq_io_read_f(p.rch, 0, p.n, p.q, &p.rc, coll_handler);
    cq_io_write_f(p.wch, 0, ab, p.q, &p.wc, wcoll_handler);
    cq_release(ab);
    cq_release(a);
    cq_release(b);
    pair_finish(&p);
    CHECK(p.rc.done_size > 0); /* the length was reached: done carries the last bytes */
    CHECK(p.wc.done_data_null);
}

static void test_water_marks(void)
{
    int p[2];
    REQUIRE(pipe(p) == 0);
    struct writer w = {p[1], 65536 + 100, 1000};
    pthread_t t;
    pthread_create(&t, NULL, writer_main, &w);
    cq_queue_t q = serial();
    cq_io_t ch = mk(CQ_IO_STREAM, p[0], q);
    cq_io_set_low_water(ch, 4096);
    cq_io_set_high_water(ch, 4096);
    struct coll c;
    coll_init(&c);
    cq_io_read_f(ch, 0, SIZE_MAX, q, &c, coll_handler);
    WAIT_SEMA(c.done_sema);
    pthread_join(t, NULL);
    CHECK_EQ(c.error, 0);
    CHECK(data_is_pattern(c.all, w.n));
    /* 16 partials of exactly 4096, the last 100 bytes at EOF, then done with empty data */
    CHECK_EQ(c.max_partial, 4096);
    CHECK_EQ(c.partials, 17);
    CHECK_EQ(c.min_partial, 100);
    CHECK_EQ(c.done_size, 0);
    done_with(ch, 0);
    coll_free(&c);
    close(p[0]);

    /* low water above high water raises it; SIZE_MAX low water: no partial results */
    REQUIRE(pipe(p) == 0);
    w = (struct writer){p[1], 200000, 777};
    pthread_create(&t, NULL, writer_main, &w);
    ch = mk(CQ_IO_STREAM, p[0], q);
    cq_io_set_low_water(ch, SIZE_MAX);
    coll_init(&c);
    cq_io_read_f(ch, 0, 150000, q, &c, coll_handler);
    WAIT_SEMA(c.done_sema);
    CHECK_EQ(c.partials, 0);
    CHECK_EQ(c.done_size, 150000);
    CHECK(data_is_pattern(c.all, 150000));
    done_with(ch, CQ_IO_STOP);
    char sink[4096];
    while (read(p[0], sink, sizeof sink) > 0) { /* let the writer finish */
    }
    pthread_join(t, NULL);
    close(p[0]);
    coll_free(&c);
    cq_release(q);
}

static void test_write_partials(void)
{
    struct stream_pair p;
    pair_open(&p, 100000);
    cq_io_set_low_water(p.wch, 8192);
    cq_io_set_high_water(p.wch, 8192);
    cq_io_write_f(p.wch, 0, p.d, p.q, &p.wc, wcoll_handler);
    cq_io_read_f(p.rch, 0, p.n, p.q, &p.rc, coll_handler);
    pair_finish(&p);
    CHECK(p.wc.remaining_calls >= 10); /* one per 8 KiB written */
}

static void test_strict_interval(void)
{
    int p[2];
    REQUIRE(pipe(p) == 0);
    cq_queue_t q = serial();
    cq_io_t ch = mk(CQ_IO_STREAM, p[0], q);
    cq_io_set_interval(ch, 2000000, CQ_IO_STRICT_INTERVAL); /* 2 ms */
    cq_io_set_low_water(ch, 1u << 20);
    struct coll c;
    coll_init(&c);
    cq_io_read_f(ch, 0, SIZE_MAX, q, &c, coll_handler);
    /* nothing to read: a strict interval delivers anyway (empty data) */
    WAIT_SEMA(c.partial_sema);
    WAIT_SEMA(c.partial_sema);
    CHECK(write(p[1], "abc", 3) == 3);
    close(p[1]);
    WAIT_SEMA(c.done_sema);
    CHECK_EQ(c.error, 0);
    CHECK(c.empty_partials >= 2);
    CHECK_EQ(cq_data_get_size(c.all), 3);
    done_with(ch, 0);
    close(p[0]);
    coll_free(&c);

    /* not strict: nothing below the low-water mark; the interval delivers what is there */
    REQUIRE(pipe(p) == 0);
    ch = mk(CQ_IO_STREAM, p[0], q);
    cq_io_set_interval(ch, 2000000, 0);
    cq_io_set_low_water(ch, 10);
    coll_init(&c);
    cq_io_read_f(ch, 0, SIZE_MAX, q, &c, coll_handler);
    CHECK(write(p[1], "0123456789ab", 12) == 12);
    WAIT_SEMA(c.partial_sema);
    close(p[1]);
    WAIT_SEMA(c.done_sema);
    CHECK_EQ(c.empty_partials, 0);
    CHECK_EQ(cq_data_get_size(c.all), 12);
    done_with(ch, 0);
    close(p[0]);
    coll_free(&c);
    cq_release(q);
}

static void test_close_stop(void)
{
    int p[2];
    REQUIRE(pipe(p) == 0);
    struct cleanup_rec cr = {cq_semaphore_create(0), -1, 0};
    cq_queue_t q = serial();
    cq_io_t ch = cq_io_create_f(CQ_IO_STREAM, p[0], q, &cr, cleanup_handler);
    struct coll c1, c2, c3;
    coll_init(&c1);
    coll_init(&c2);
    coll_init(&c3);
    cq_io_read_f(ch, 0, SIZE_MAX, q, &c1, coll_handler); /* waits for data */
    cq_io_read_f(ch, 0, 10, q, &c2, coll_handler);       /* waits behind it */
    cq_io_close(ch, CQ_IO_STOP);
    cq_io_read_f(ch, 0, 10, q, &c3, coll_handler); /* on a closed channel */
    WAIT_SEMA(c1.done_sema);
    WAIT_SEMA(c2.done_sema);
    WAIT_SEMA(c3.done_sema);
    CHECK_EQ(c1.error, ECANCELED);
    CHECK_EQ(c2.error, ECANCELED);
    CHECK_EQ(c3.error, ECANCELED);
    CHECK(c1.done_data_null);
    WAIT_SEMA(cr.sema);
    CHECK_EQ(cr.error, 0);
    CHECK_EQ(cq_io_get_descriptor(ch), -1);
    cq_release(ch);
    close(p[0]);
    close(p[1]);
    coll_free(&c1);
    coll_free(&c2);
    coll_free(&c3);
    cq_release(cr.sema);
    cq_release(q);
}

/* A pipe of one page and a slow reader: the channel's writes come back short and EAGAIN. */
static void *slow_reader_main(void *arg)
{
    struct writer *w = arg; /* fd to read, n expected; step: bytes per read */
    unsigned char *b = malloc(w->n);
    size_t off = 0;
    while (off < w->n) {
        size_t k = w->n - off < w->step ? w->n - off : w->step;
        ssize_t r = read(w->fd, b + off, k);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            break;
        }
        off += (size_t)r;
    }
    bool ok = off == w->n;
    for (size_t i = 0; ok && i < w->n; i++) {
        ok = b[i] == pattern_byte(i);
    }
    free(b);
    w->step = ok ? 1 : 0;
    return NULL;
}

static void test_short_writes_small_pipe(void)
{
    int p[2];
    REQUIRE(pipe(p) == 0);
    int sz = fcntl(p[1], F_SETPIPE_SZ, 4096);
    CHECK(sz >= 4096);
    cq_queue_t q = serial();
    cq_io_t ch = mk(CQ_IO_STREAM, p[1], q);
    size_t n = 1u << 20;
    cq_data_t d = pattern_data(n);
    struct coll wc;
    coll_init(&wc);
    cq_io_write_f(ch, 0, d, q, &wc, wcoll_handler);
    struct writer r = {p[0], n, 999};
    pthread_t t;
    pthread_create(&t, NULL, slow_reader_main, &r);
    WAIT_SEMA(wc.done_sema);
    pthread_join(t, NULL);
    CHECK_EQ(wc.error, 0);
    CHECK(wc.done_data_null);
    CHECK_EQ(r.step, 1); /* every byte arrived, in order */
    done_with(ch, 0);
    cq_release(d);
    coll_free(&wc);
    close(p[0]);
    close(p[1]);
    cq_release(q);
}

static void test_write_to_closed_pipe(void)
{
    int p[2];
    REQUIRE(pipe(p) == 0);
    close(p[0]);
    cq_queue_t q = serial();
    cq_io_t ch = mk(CQ_IO_STREAM, p[1], q);
    cq_data_t d = pattern_data(1000);
    struct coll wc;
    coll_init(&wc);
    cq_io_write_f(ch, 0, d, q, &wc, wcoll_handler);
    WAIT_SEMA(wc.done_sema);
    CHECK_EQ(wc.error, EPIPE);
    CHECK_EQ(wc.last_remaining, 1000); /* nothing was written: all of it comes back */
    done_with(ch, 0);
    cq_release(d);
    coll_free(&wc);
    close(p[1]);
    cq_release(q);
}

static void test_bad_descriptors(void)
{
    cq_queue_t q = serial();
    int fds[] = {-1, 1000000};
    for (int i = 0; i < 2; i++) {
        struct cleanup_rec cr = {cq_semaphore_create(0), -1, 0};
        cq_io_t ch = cq_io_create_f(CQ_IO_STREAM, fds[i], q, &cr, cleanup_handler);
        REQUIRE(ch != NULL);
        CHECK_EQ(cq_io_get_descriptor(ch), -1);
        struct coll c;
        coll_init(&c);
        cq_io_read_f(ch, 0, 100, q, &c, coll_handler);
        WAIT_SEMA(c.done_sema);
        CHECK_EQ(c.error, EBADF);
        CHECK(c.done_data_null);
        cq_io_close(ch, 0);
        cq_release(ch);
        WAIT_SEMA(cr.sema);
        CHECK_EQ(cr.error, EBADF);
        coll_free(&c);
        cq_release(cr.sema);
    }
    CHECK(cq_io_create_f(7, 0, q, NULL, NULL) == NULL);
    CHECK_EQ(errno, EINVAL);

    /* The caller's descriptor closed under the channel, before a read and under a read that
     * waits for data, and its number reused by another open: the channel works on its own
     * duplicate, so the reads go on with the pipe's bytes (nothing from the other file) to EOF,
     * and the descriptor the channel reports is still the caller's number. */
    int p[2];
    REQUIRE(pipe(p) == 0);
    cq_io_t ch = mk(CQ_IO_STREAM, p[0], q);
    CHECK_EQ(cq_io_get_descriptor(ch), p[0]);
    close(p[0]);
    struct coll c;
    coll_init(&c);
    cq_io_set_low_water(ch, 1);
    cq_io_read_f(ch, 0, SIZE_MAX, q, &c, coll_handler);
    REQUIRE(write(p[1], "ab", 2) == 2);
    WAIT_SEMA(c.partial_sema);                           /* "ab" arrived after the caller's close */
    int other = open("/dev/zero", O_RDONLY | O_CLOEXEC); /* likely p[0]'s number again */
    REQUIRE(other >= 0);
    REQUIRE(write(p[1], "cd", 2) == 2);
    close(p[1]);
    WAIT_SEMA(c.done_sema);
    CHECK_EQ(c.error, 0);
    CHECK_EQ(cq_data_get_size(c.all), 4);
    CHECK(data_equals(c.all, "abcd", 4));
    CHECK_EQ(cq_io_get_descriptor(ch), p[0]);
    done_with(ch, 0);
    CHECK(fcntl(other, F_GETFD) >= 0); /* the channel's cleanup closed its own, not `other` */
    close(other);
    coll_free(&c);

    /* a path that does not exist: the open error reaches the handlers */
    struct cleanup_rec cr = {cq_semaphore_create(0), -1, 0};
    ch = cq_io_create_with_path_f(CQ_IO_STREAM, "/nonexistent-dir/nofile", O_RDONLY, 0, q, &cr,
                                  cleanup_handler);
    REQUIRE(ch != NULL);
    coll_init(&c);
    cq_io_read_f(ch, 0, SIZE_MAX, q, &c, coll_handler);
    WAIT_SEMA(c.done_sema);
    CHECK_EQ(c.error, ENOENT);
    cq_release(ch);
    WAIT_SEMA(cr.sema);
    CHECK_EQ(cr.error, ENOENT);
    coll_free(&c);
    cq_release(cr.sema);
    CHECK(cq_io_create_with_path_f(CQ_IO_STREAM, "relative", O_RDONLY, 0, q, NULL, NULL) == NULL);
    cq_release(q);
}

/* A channel on a directory, made on its descriptor or its path, with a read or without: the
 * read and the cleanup handler get EISDIR, as in libdispatch (the cleanup handler got 0), and
 * the descriptor is still reported (as libdispatch's). */
static void test_directory_channels(void)
{
    cq_queue_t q = serial();
    int dfd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(dfd >= 0);
    for (int i = 0; i < 4; i++) { /* descriptor, path; each with a read, then without */
        struct cleanup_rec cr = {cq_semaphore_create(0), -1, 0};
        cq_io_t ch = i < 2 ? cq_io_create_f(CQ_IO_STREAM, dfd, q, &cr, cleanup_handler)
                           : cq_io_create_with_path_f(CQ_IO_STREAM, "/tmp", O_RDONLY, 0, q, &cr,
                                                      cleanup_handler);
        REQUIRE(ch != NULL);
        if (i == 0) {
            CHECK_EQ(cq_io_get_descriptor(ch), dfd);
        }
        struct coll c;
        coll_init(&c);
        if (i % 2 == 0) {
            cq_io_read_f(ch, 0, 10, q, &c, coll_handler);
            WAIT_SEMA(c.done_sema);
            CHECK_EQ(c.error, EISDIR);
        }
        cq_io_close(ch, 0);
        cq_release(ch);
        WAIT_SEMA(cr.sema);
        CHECK_EQ(cr.error, EISDIR);
        CHECK_EQ(cr.calls, 1);
        coll_free(&c);
        cq_release(cr.sema);
    }
    int fl = fcntl(dfd, F_GETFL);
    CHECK(fl >= 0 && (fl & O_NONBLOCK) == 0); /* its flags left as they were */
    close(dfd);
    cq_release(q);
}

struct oneshot_rec {
    cq_semaphore_t sema;
    cq_data_t data;
    int error;
    int calls;
};

static void oneshot_handler(void *ctx, cq_data_t data, int error)
{
    struct oneshot_rec *r = ctx;
    r->calls++;
    r->error = error;
    if (data) {
        cq_retain(data);
    }
    r->data = data;
    cq_semaphore_signal(r->sema);
}

static void test_oneshots(void)
{
    int p[2];
    REQUIRE(pipe(p) == 0);
    cq_queue_t q = serial();
    size_t n = 40000; /* fits in the pipe */
    cq_data_t d = pattern_data(n);
    struct oneshot_rec w = {cq_semaphore_create(0), NULL, -1, 0};
    cq_write_f(p[1], d, q, &w, oneshot_handler);
    WAIT_SEMA(w.sema);
    CHECK_EQ(w.error, 0);
    CHECK(w.data == NULL);
    CHECK((fcntl(p[1], F_GETFL) & O_NONBLOCK) == 0); /* restored before the handler */
    close(p[1]);
    struct oneshot_rec r = {cq_semaphore_create(0), NULL, -1, 0};
    cq_read_f(p[0], SIZE_MAX, q, &r, oneshot_handler);
    WAIT_SEMA(r.sema);
    CHECK_EQ(r.error, 0);
    CHECK_EQ(r.calls, 1);
    CHECK(r.data && data_is_pattern(r.data, n));
    close(p[0]);
    if (r.data) {
        cq_release(r.data);
    }
    struct oneshot_rec bad = {cq_semaphore_create(0), NULL, -1, 0};
    cq_read_f(-1, 10, q, &bad, oneshot_handler);
    WAIT_SEMA(bad.sema);
    CHECK_EQ(bad.error, EBADF);
    cq_release(d);
    cq_release(w.sema);
    cq_release(r.sema);
    cq_release(bad.sema);
    cq_release(q);
}

/*
 * Channels on a program's descriptors leave it room for its own: 100 pipes and a channel with a
 * read pending on each read end, at a descriptor limit of 256, then 40 opens. The channels used
 * to duplicate every descriptor until the table was full, and the opens failed (EMFILE); the
 * channels must still read.
 */
#define FD_PIPES 100

struct fd_room {
    cq_semaphore_t sema, cleaned;
    atomic_int bytes;
};

static void fd_room_cleanup(void *ctx, int error)
{
    struct fd_room *r = ctx;
    CHECK_EQ(error, 0);
    cq_semaphore_signal(r->cleaned);
}

static void fd_room_read(void *ctx, bool done, cq_data_t data, int error)
{
    struct fd_room *r = ctx;
    if (data) {
        atomic_fetch_add(&r->bytes, (int)cq_data_get_size(data));
    }
    if (done) {
        CHECK_EQ(error, 0);
        cq_semaphore_signal(r->sema);
    }
}

static void test_channels_leave_descriptors(void)
{
    struct rlimit saved, rl;
    REQUIRE(getrlimit(RLIMIT_NOFILE, &saved) == 0);
    rl = saved;
    rl.rlim_cur = 256;
    if (saved.rlim_max < 256 || setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        fprintf(stderr, "   skipped: cannot set RLIMIT_NOFILE to 256\n");
        return;
    }
    cq_queue_t q = serial();
    struct fd_room room = {cq_semaphore_create(0), cq_semaphore_create(0), 0};
    int p[FD_PIPES][2];
    cq_io_t ch[FD_PIPES];
    int made = 0;
    for (; made < FD_PIPES; made++) {
        if (pipe(p[made]) != 0) {
            break;
        }
    }
    CHECK_EQ(made, FD_PIPES);
    for (int i = 0; i < made; i++) {
        ch[i] = cq_io_create_f(CQ_IO_STREAM, p[i][0], q, &room, fd_room_cleanup);
        REQUIRE(ch[i] != NULL);
        cq_io_read_f(ch[i], 0, 1, q, &room, fd_room_read);
    }
    int opened[40], ok = 0;
    for (int i = 0; i < 40; i++) {
        opened[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        ok += opened[i] >= 0;
    }
    CHECK_EQ(ok, 40);
    for (int i = 0; i < 40; i++) {
        if (opened[i] >= 0) {
            close(opened[i]);
        }
    }
    for (int i = 0; i < made; i++) {
        CHECK(write(p[i][1], "x", 1) == 1);
    }
    for (int i = 0; i < made; i++) {
        WAIT_SEMA(room.sema);
    }
    CHECK_EQ(atomic_load(&room.bytes), made);
    for (int i = 0; i < made; i++) {
        cq_io_close(ch[i], 0);
        cq_release(ch[i]);
    }
    for (int i = 0; i < made; i++) {
        WAIT_SEMA(room.cleaned); /* the channels have let the descriptors go */
    }
    for (int i = 0; i < made; i++) {
        close(p[i][0]);
        close(p[i][1]);
    }
    cq_release(room.sema);
    cq_release(room.cleaned);
    cq_release(q);
    CHECK(setrlimit(RLIMIT_NOFILE, &saved) == 0);
}

/* A service with many idle connections, each with a read pending: a stream read that finds
 * nothing to read waits for its descriptor without keeping a read buffer. Every pipe gets one
 * byte first, so each channel's read has run (its handler saw the byte) and has tried again and
 * found nothing; the heap then holds what a pending read needs, not a buffer each (once 64 KiB:
 * 1,000 pipes held 64 MB; libdispatch keeps a few MB). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HEAP_CHECKED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HEAP_CHECKED 0
#else
#define HEAP_CHECKED 1
#endif
#else
#define HEAP_CHECKED 1
#endif

struct idle_read {
    cq_semaphore_t first; /* each channel's first byte */
    _Atomic int bytes;
};

static void idle_read_handler(void *ctx, bool done, cq_data_t data, int error)
{
    struct idle_read *r = ctx;
    size_t n = data ? cq_data_get_size(data) : 0;
    if (n > 0) {
        atomic_fetch_add(&r->bytes, (int)n);
        cq_semaphore_signal(r->first);
    }
    (void)done;
    (void)error;
}

static void test_idle_stream_reads_hold_no_buffers(void)
{
    struct rlimit rl;
    REQUIRE(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        REQUIRE(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    }
    int n = 1000;
    if (rl.rlim_cur < (rlim_t)(2 * n + 64)) {
        n = rl.rlim_cur > 264 ? (int)(rl.rlim_cur - 64) / 2 : 100;
    }
    int(*fds)[2] = calloc((size_t)n, sizeof *fds);
    cq_io_t *chs = calloc((size_t)n, sizeof *chs);
    REQUIRE(fds && chs);
    struct idle_read r = {cq_semaphore_create(0), 0};
    cq_queue_t q = cq_queue_create("test.idle", CQ_QUEUE_CONCURRENT);
    size_t before = mallinfo2().uordblks;
    for (int i = 0; i < n; i++) {
        REQUIRE(pipe(fds[i]) == 0);
        chs[i] = mk(CQ_IO_STREAM, fds[i][0], q);
        cq_io_set_low_water(chs[i], 1);
        cq_io_read_f(chs[i], 0, SIZE_MAX, q, &r, idle_read_handler);
        REQUIRE(write(fds[i][1], "x", 1) == 1);
    }
    for (int i = 0; i < n; i++) {
        WAIT_SEMA(r.first);
    }
    CHECK_EQ(atomic_load(&r.bytes), n);
    /* The last reads may still be on their way back from their second try: wait for the heap
     * to come down (a generous patience; it never does if each read keeps its buffer). */
    size_t bound = (size_t)n * 16384, held = mallinfo2().uordblks - before;
    uint64_t start = cq_test_now_ns();
    while (HEAP_CHECKED && held > bound && cq_test_now_ns() - start < 10000000000ull) {
        usleep(10000);
        held = mallinfo2().uordblks - before;
    }
    fprintf(stderr, "   %d idle stream reads: heap +%zu KiB (bound %zu KiB)%s\n", n, held / 1024,
            bound / 1024, HEAP_CHECKED ? "" : " (sanitizer: not judged)");
    if (HEAP_CHECKED) {
        CHECK(held <= bound);
    }
    for (int i = 0; i < n; i++) {
        done_with(chs[i], CQ_IO_STOP);
        close(fds[i][0]);
        close(fds[i][1]);
    }
    cq_release(q);
    cq_release(r.first);
    free(chs);
    free(fds);
}

int main(void)
{
    g_cleaned = cq_semaphore_create(0);
    signal(SIGPIPE, SIG_IGN);
    RUN(test_pipe_stream_to_eof);
    RUN(test_stream_read_bounded);
    RUN(test_socketpair_write_read_exact);
    RUN(test_water_marks);
    RUN(test_write_partials);
    RUN(test_strict_interval);
    RUN(test_close_stop);
    RUN(test_short_writes_small_pipe);
    RUN(test_write_to_closed_pipe);
    RUN(test_bad_descriptors);
    RUN(test_directory_channels);
    RUN(test_oneshots);
    RUN(test_channels_leave_descriptors);
    RUN(test_idle_stream_reads_hold_no_buffers);
    TEST_MAIN_END();
}
