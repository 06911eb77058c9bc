/*
 * Dispatch I/O on regular files (the file engine: io_uring, or the blocking pool when
 * test_io_file_fallback.c includes this file with CQ_TEST_IO_FALLBACK): a 1 GiB round trip
 * with a checksum (64 MiB on the fallback engine; CQ_TEST_IO_MIB sets it), random-access offsets
 * relative to the channel's start, barriers ordering writes and reads, reads past the end, a stream
 * channel's position, close with stop, a channel made from another, read-ahead (a length that
 * ends mid-piece, the end of the file inside the window, close with stop while several requests
 * are in the engine), a write beside path channels whose opens block. Files live under /tmp and
 * are removed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cq_test.h"
#include "io_test_support.h"

#include <fcntl.h>
#include <sys/stat.h>

#ifndef CQ_TEST_IO_FALLBACK
#define CQ_TEST_IO_FALLBACK 0
#endif

/* The engine in use (io/uring.c; the tests link the static library). */
const char *cq__io_file_engine(void);

/* FNV-1a over 8-byte little-endian words of a byte stream, the same however the stream is cut
 * into regions (a partial word waits for the next region). */
struct sum {
    uint64_t h, word;
    size_t pos;
};

#define SUM_INIT ((struct sum){1469598103934665603ull, 0, 0})

static void sum_bytes(struct sum *s, const unsigned char *b, size_t n)
{
    size_t i = 0;
    while (i < n && s->pos % 8 != 0) {
        s->word |= (uint64_t)b[i++] << (8 * (s->pos++ % 8));
        if (s->pos % 8 == 0) {
            s->h = (s->h ^ s->word) * 1099511628211ull;
            s->word = 0;
        }
    }
    for (; n - i >= 8; i += 8) {
        uint64_t v;
        memcpy(&v, b + i, 8);
        s->h = (s->h ^ v) * 1099511628211ull;
        s->pos += 8;
    }
    while (i < n) {
        s->word |= (uint64_t)b[i++] << (8 * (s->pos++ % 8));
    }
}

static uint64_t sum_final(struct sum s)
{
    return s.pos % 8 ? (s.h ^ s.word) * 1099511628211ull : s.h;
}

struct coll {
    cq_semaphore_t done_sema;
    cq_data_t all;
    size_t partials;
    bool done;
    size_t done_size;
    bool done_data_null;
    int error;
    struct sum sum; /* over the bytes, in order */
    size_t total;
    cq_semaphore_t partial_sema; /* signalled per partial delivery when set */
};

static void coll_init(struct coll *c, bool keep)
{
    memset(c, 0, sizeof *c);
    c->done_sema = cq_semaphore_create(0);
    c->all = keep ? cq_data_empty : NULL;
    c->sum = SUM_INIT;
}

static void coll_free(struct coll *c)
{
    cq_release(c->done_sema);
    if (c->all) {
        cq_release(c->all);
    }
}

static bool sum_region(void *ctx, cq_data_t region, size_t offset, const void *buf, size_t size)
{
    (void)region;
    (void)offset;
    sum_bytes(ctx, buf, size);
    return true;
}

static void coll_handler(void *ctx, bool done, cq_data_t data, int error)
{
    struct coll *c = ctx;
    if (data) {
        c->total += cq_data_get_size(data);
        cq_data_apply_f(data, &c->sum, sum_region);
        if (c->all) {
            cq_data_t all = cq_data_create_concat(c->all, data);
            cq_release(c->all);
            c->all = all;
        }
    }
    if (!done) {
        c->partials++;
        if (c->partial_sema) {
            cq_semaphore_signal(c->partial_sema);
        }
        return;
    }
    c->done = true;
    c->done_size = data ? cq_data_get_size(data) : 0;
    c->done_data_null = data == NULL;
    c->error = error;
    cq_semaphore_signal(c->done_sema);
}

static void wait_done(struct coll *c)
{
    WAIT_SEMA(c->done_sema);
}

static char *tmp_path(const char *name)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "/tmp/cq-test-io-%d-%s%s", (int)getpid(), name,
             CQ_TEST_IO_FALLBACK ? "-fb" : "");
    return buf;
}

static uint64_t fill_random(unsigned char *b, size_t n, uint64_t seed)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = next_random(&s);
        size_t k = n - i < 8 ? n - i : 8;
        memcpy(b + i, &v, k);
    }
    struct sum h = SUM_INIT;
    sum_bytes(&h, b, n);
    return sum_final(h);
}

static cq_data_t string_data(const char *s)
{
    return cq_data_create_f(s, strlen(s), NULL, CQ_DATA_DESTRUCTOR_DEFAULT);
}

static bool data_equals(cq_data_t d, const char *s)
{
    size_t n = strlen(s);
    if (d == NULL || cq_data_get_size(d) != n) {
        return false;
    }
    char *b = malloc(n + 1);
    cq_data_copy_bytes(d, 0, b, n);
    bool ok = memcmp(b, s, n) == 0;
    free(b);
    return ok;
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_engine(void)
{
    const char *e = cq__io_file_engine();
    fprintf(stderr, "   engine: %s\n", e);
    if (CQ_TEST_IO_FALLBACK) {
        CHECK(strcmp(e, "threads") == 0);
    }
}

/* 1 GiB (64 MiB on the fallback engine; CQ_TEST_IO_MIB) written through a random channel in
 * 1 MiB pieces, read back through a stream channel to EOF; the checksums match and every byte
 * is accounted for. */
static void test_round_trip(void)
{
    size_t mib = CQ_TEST_IO_FALLBACK ? 64 : 1024;
    const char *env = getenv("CQ_TEST_IO_MIB");
    if (env && atol(env) > 0) {
        mib = (size_t)atol(env);
    }
    const size_t piece = 1u << 20, n = mib * piece;
    fprintf(stderr, "   %zu MiB\n", mib);
    char *path = tmp_path("big");
    unlink(path);
    unsigned char *src = malloc(n);
    uint64_t want = fill_random(src, n, 42);
    cq_data_t all = cq_data_create_f(src, n, NULL, CQ_DATA_DESTRUCTOR_FREE);
    cq_queue_t q = cq_queue_create("test.io.file", NULL);
    struct cleanup_rec cr = {cq_semaphore_create(0), -1, 0};
    cq_io_t w = cq_io_create_with_path_f(CQ_IO_RANDOM, path, O_CREAT | O_TRUNC | O_RDWR, 0600, q,
                                         &cr, cleanup_handler);
    REQUIRE(w != NULL);
    struct coll *wc = calloc(mib, sizeof *wc);
    REQUIRE(wc != NULL);
    for (size_t i = 0; i < n / piece; i++) {
        cq_data_t part = cq_data_create_subrange(all, i * piece, piece);
        coll_init(&wc[i], false);
        cq_io_write_f(w, (off_t)(i * piece), part, q, &wc[i], coll_handler);
        cq_release(part);
    }
    for (size_t i = 0; i < n / piece; i++) {
        wait_done(&wc[i]);
        CHECK_EQ(wc[i].error, 0);
        CHECK(wc[i].done_data_null);
        coll_free(&wc[i]);
    }
    free(wc);
    cq_io_close(w, 0);
    cq_release(w);
    WAIT_SEMA(cr.sema);
    CHECK_EQ(cr.error, 0);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (size_t)st.st_size == n);

    cq_io_t r = cq_io_create_with_path_f(CQ_IO_STREAM, path, O_RDONLY, 0, q, &cr, cleanup_handler);
    struct coll rc;
    coll_init(&rc, false);
    cq_io_read_f(r, 0, SIZE_MAX, q, &rc, coll_handler);
    wait_done(&rc);
    CHECK_EQ(rc.error, 0);
    CHECK_EQ(rc.total, n);
    CHECK_EQ(rc.done_size, 0); /* EOF */
    CHECK(sum_final(rc.sum) == want);
    CHECK(rc.partials >= mib); /* delivered as it was read */
    cq_release(r);
    WAIT_SEMA(cr.sema);
    coll_free(&rc);
    cq_release(all);
    cq_release(cr.sema);
    cq_release(q);
    unlink(path);
}

/* Creates `path` holding "0123456789abcdefghijklmnopqrstuvwxyz" and returns a descriptor for
 * it at offset 10 ('a'). */
static int alphabet_file(const char *path)
{
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
    REQUIRE(fd >= 0);
    const char *text = "0123456789abcdefghijklmnopqrstuvwxyz";
    REQUIRE(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    REQUIRE(lseek(fd, 10, SEEK_SET) == 10);
    return fd;
}

/* Random-access offsets count from the position the channel was created at; a read past the
 * end delivers what there is, then EOF. */
static void test_random_offsets(void)
{
    char *path = tmp_path("rand");
    int fd = alphabet_file(path);
    cq_queue_t q = cq_queue_create("test.io.file", NULL);
    struct cleanup_rec cr = {cq_semaphore_create(0), -1, 0};
    cq_io_t ch = cq_io_create_f(CQ_IO_RANDOM, fd, q, &cr, cleanup_handler);
    struct coll a, b, c;
    coll_init(&a, true);
    coll_init(&b, true);
    coll_init(&c, true);
    cq_io_read_f(ch, 5, 6, q, &a, coll_handler);         /* bytes 15..20 */
    cq_io_read_f(ch, 0, 3, q, &b, coll_handler);         /* bytes 10..12 */
    cq_io_read_f(ch, 20, SIZE_MAX, q, &c, coll_handler); /* 30..35, then EOF */
    wait_done(&a);
    wait_done(&b);
    wait_done(&c);
    CHECK(data_equals(a.all, "fghijk"));
    CHECK(data_equals(b.all, "abc"));
    CHECK(data_equals(c.all, "uvwxyz"));
    CHECK_EQ(c.done_size, 0);
    CHECK_EQ(a.error + b.error + c.error, 0);
    coll_free(&a);
    coll_free(&b);
    coll_free(&c);

    cq_io_close(ch, 0);
    cq_release(ch);
    WAIT_SEMA(cr.sema);
    CHECK_EQ(cr.error, 0);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 10); /* a random channel leaves the position alone */
    close(fd);
    cq_release(cr.sema);
    cq_release(q);
    unlink(path);
}

struct barrier_rec {
    cq_semaphore_t sema;
    struct coll *write; /* must be done when the barrier runs */
    bool write_was_done;
    int fd;
    bool fd_ok;
    atomic_int ran;
};

static void barrier_fn(void *ctx)
{
    struct barrier_rec *b = ctx;
    b->write_was_done = b->write->done;
    b->fd_ok = b->fd >= 0;
    atomic_fetch_add(&b->ran, 1);
    cq_semaphore_signal(b->sema);
}

/* write; barrier; read: the barrier runs after the write, the read sees what it wrote. */
static void test_barrier_orders_writes_and_reads(void)
{
    char *path = tmp_path("barrier");
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, "..........", 10) == 10);
    cq_queue_t q = cq_queue_create("test.io.file", NULL);
    for (int type = CQ_IO_STREAM; type <= CQ_IO_RANDOM; type++) {
        REQUIRE(lseek(fd, 0, SEEK_SET) == 0);
        cq_io_t ch = mk((cq_io_type_t)type, fd, q);
        struct coll w, r;
        coll_init(&w, false);
        coll_init(&r, true);
        struct barrier_rec b = {cq_semaphore_create(0),   &w,    false,
                                cq_io_get_descriptor(ch), false, 0};
        cq_data_t d = string_data("hello");
        cq_io_write_f(ch, 2, d, q, &w, coll_handler);
        cq_release(d);
        cq_io_barrier_f(ch, &b, barrier_fn);
        cq_io_read_f(ch, 0, 10, q, &r, coll_handler);
        WAIT_SEMA(b.sema);
        wait_done(&w);
        wait_done(&r);
        CHECK(b.fd_ok);
        CHECK_EQ(w.error, 0);
        CHECK_EQ(r.error, 0);
        if (type == CQ_IO_RANDOM) {
            CHECK(data_equals(r.all, "hehello..."));
        } else {
            /* a stream channel writes and reads at its position (the offsets are ignored): the
             * write went to 0..4, the read continued after it to the end */
            CHECK(data_equals(r.all, "....."));
        }
        done_with(ch, 0);
        coll_free(&w);
        coll_free(&r);
        cq_release(b.sema);
    }
    char buf[16] = {0};
    CHECK(pread(fd, buf, 10, 0) == 10);
    CHECK(memcmp(buf, "hehello...", 10) == 0);
    close(fd);
    cq_release(q);
    unlink(path);
}

static void hold_barrier(void *ctx)
{
    WAIT_SEMA((cq_semaphore_t)ctx);
}

/* Close with stop ends every operation once (ECANCELED unless it finished first); no crash,
 * no second done. */
static void test_close_stop_file(void)
{
    char *path = tmp_path("stop");
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(ftruncate(fd, 8 << 20) == 0);
    cq_queue_t q = cq_queue_create("test.io.file", NULL);
    struct cleanup_rec cr = {cq_semaphore_create(0), -1, 0};
    cq_io_t ch = cq_io_create_f(CQ_IO_STREAM, fd, q, &cr, cleanup_handler);
    cq_io_set_high_water(ch, 4096);
    struct coll c[8];
    cq_semaphore_t hold = cq_semaphore_create(0);
    for (int i = 0; i < 8; i++) {
        coll_init(&c[i], false);
        cq_io_read_f(ch, 0, 1 << 20, q, &c[i], coll_handler);
        if (i == 0) {
            /* the reads after this barrier cannot start before the stop */
            cq_io_barrier_f(ch, hold, hold_barrier);
        }
    }
    cq_io_close(ch, CQ_IO_STOP);
    cq_semaphore_signal(hold);
    int canceled = 0;
    for (int i = 0; i < 8; i++) {
        wait_done(&c[i]);
        CHECK(c[i].error == 0 || c[i].error == ECANCELED);
        /* one that finished first has all its bytes; a stopped one delivered whole pieces */
        CHECK(c[i].error != 0 || c[i].total == 1 << 20);
        CHECK(c[i].total % 4096 == 0);
        canceled += c[i].error == ECANCELED;
        coll_free(&c[i]);
    }
    CHECK(canceled >= 7);
    cq_release(ch);
    WAIT_SEMA(cr.sema); /* after every operation is gone, the barrier too */
    cq_release(hold);
    close(fd);
    cq_release(cr.sema);
    cq_release(q);
    unlink(path);
}

/* A stream channel reads from the descriptor's position and leaves it after what it read; a
 * channel made from it shares the descriptor, which is released when both are done. */
static void test_stream_position_and_with_io(void)
{
    char *path = tmp_path("pos");
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, "abcdefghij", 10) == 10);
    REQUIRE(lseek(fd, 2, SEEK_SET) == 2);
    cq_queue_t q = cq_queue_create("test.io.file", NULL);
    struct cleanup_rec cr1 = {cq_semaphore_create(0), -1, 0}, cr2 = {cq_semaphore_create(0), -1, 0};
    cq_io_t ch = cq_io_create_f(CQ_IO_STREAM, fd, q, &cr1, cleanup_handler);
    cq_io_t ra = cq_io_create_with_io_f(CQ_IO_RANDOM, ch, q, &cr2, cleanup_handler);
    REQUIRE(ra != NULL);
    struct coll a, b;
    coll_init(&a, true);
    coll_init(&b, true);
    cq_io_read_f(ch, 0, 3, q, &a, coll_handler);
    cq_io_read_f(ra, 5, 2, q, &b, coll_handler); /* relative to 2: bytes 7..8 */
    wait_done(&a);
    wait_done(&b);
    CHECK(data_equals(a.all, "cde"));
    CHECK(data_equals(b.all, "hi"));
    cq_io_close(ch, 0);
    cq_release(ch);
    cq_io_close(ra, 0);
    cq_release(ra);
    WAIT_SEMA(cr2.sema);
    WAIT_SEMA(cr1.sema);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 5);
    close(fd);
    coll_free(&a);
    coll_free(&b);
    cq_release(cr1.sema);
    cq_release(cr2.sema);
    cq_release(q);
    unlink(path);
}

/* A channel made from a stream channel that has read starts where it stands now, as in
 * libdispatch: a random one counts its offsets from there (it counted from where the stream
 * channel started), a stream one reads on from there. */
static void test_with_io_from_stream_position(void)
{
    char *path = tmp_path("withpos");
    int fd = alphabet_file(path);
    cq_queue_t q = cq_queue_create("test.io.file", NULL);
    struct cleanup_rec cr1 = {cq_semaphore_create(0), -1, 0}, cr2 = {cq_semaphore_create(0), -1, 0};
    struct cleanup_rec cr3 = {cq_semaphore_create(0), -1, 0};
    cq_io_t st = cq_io_create_f(CQ_IO_STREAM, fd, q, &cr1, cleanup_handler);
    struct coll a, b, c, d;
    coll_init(&a, true);
    cq_io_read_f(st, 0, 3, q, &a, coll_handler);
    wait_done(&a);
    CHECK(data_equals(a.all, "abc")); /* the stream channel now stands at 13 */
    cq_io_t ra = cq_io_create_with_io_f(CQ_IO_RANDOM, st, q, &cr2, cleanup_handler);
    cq_io_t st2 = cq_io_create_with_io_f(CQ_IO_STREAM, st, q, &cr3, cleanup_handler);
    REQUIRE(ra != NULL && st2 != NULL);
    coll_init(&b, true);
    coll_init(&c, true);
    coll_init(&d, true);
    cq_io_read_f(ra, 0, 3, q, &b, coll_handler);  /* bytes 13..15 */
    cq_io_read_f(ra, -3, 3, q, &c, coll_handler); /* back from 13: bytes 10..12 */
    cq_io_read_f(st2, 0, 3, q, &d, coll_handler); /* bytes 13..15 */
    wait_done(&b);
    wait_done(&c);
    wait_done(&d);
    CHECK(data_equals(b.all, "def"));
    CHECK(data_equals(c.all, "abc"));
    CHECK(data_equals(d.all, "def"));
    CHECK_EQ(a.error + b.error + c.error + d.error, 0);
    cq_io_close(ra, 0);
    cq_release(ra);
    cq_io_close(st2, 0);
    cq_release(st2);
    cq_io_close(st, 0);
    cq_release(st);
    WAIT_SEMA(cr2.sema);
    WAIT_SEMA(cr3.sema);
    WAIT_SEMA(cr1.sema);
    CHECK_EQ(cr1.error + cr2.error + cr3.error, 0);
    close(fd);
    coll_free(&a);
    coll_free(&b);
    coll_free(&c);
    coll_free(&d);
    cq_release(cr1.sema);
    cq_release(cr2.sema);
    cq_release(cr3.sema);
    cq_release(q);
    unlink(path);
}

/* A path channel opens lazily, with its flags and mode; a missing file fails with ENOENT. */
static void test_path_channel(void)
{
    char *path = tmp_path("lazy");
    unlink(path);
    cq_queue_t q = cq_queue_create("test.io.file", NULL);
    struct cleanup_rec cr = {cq_semaphore_create(0), -1, 0};
    cq_io_t ch = cq_io_create_with_path_f(CQ_IO_RANDOM, path, O_RDONLY, 0, q, &cr, cleanup_handler);
    CHECK_EQ(cq_io_get_descriptor(ch), -1); /* not opened before the first operation */
    struct coll c;
    coll_init(&c, true);
    cq_io_read_f(ch, 0, 10, q, &c, coll_handler);
    wait_done(&c);
    CHECK_EQ(c.error, ENOENT);
    CHECK(c.done_data_null);
    cq_release(ch);
    WAIT_SEMA(cr.sema);
    CHECK_EQ(cr.error, ENOENT);
    coll_free(&c);

    ch = cq_io_create_with_path_f(CQ_IO_STREAM, path, O_CREAT | O_WRONLY, 0640, q, &cr,
                                  cleanup_handler);
    coll_init(&c, false);
    cq_data_t d = string_data("lazy");
    cq_io_write_f(ch, 0, d, q, &c, coll_handler);
    cq_release(d);
    wait_done(&c);
    CHECK_EQ(c.error, 0);
    cq_io_close(ch, 0);
    cq_release(ch);
    WAIT_SEMA(cr.sema);
    CHECK_EQ(cr.error, 0);
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size == 4 && (st.st_mode & 0777) == 0640);
    coll_free(&c);
    cq_release(cr.sema);
    cq_release(q);
    unlink(path);
}

/* Opens that block (FIFOs that no writer has opened yet, one per path channel with a read
 * pending: more than the blocking pool's three threads) do not hold back a file write, which
 * that pool does too: it stayed undone while they waited. */
static void test_write_beside_blocked_opens(void)
{
    enum { FIFOS = 5 };
    cq_queue_t q = cq_queue_create("test.io.file", NULL);
    char *fifo[FIFOS];
    cq_io_t ch[FIFOS];
    struct coll reads[FIFOS];
    struct cleanup_rec cr = {cq_semaphore_create(0), -1, 0};
    for (int i = 0; i < FIFOS; i++) {
        char name[32];
        snprintf(name, sizeof name, "fifo%d", i);
        fifo[i] = strdup(tmp_path(name)); /* tmp_path's buffer is reused */
        REQUIRE(fifo[i] != NULL);
        unlink(fifo[i]);
        REQUIRE(mkfifo(fifo[i], 0600) == 0);
        ch[i] =
            cq_io_create_with_path_f(CQ_IO_STREAM, fifo[i], O_RDONLY, 0, q, &cr, cleanup_handler);
        coll_init(&reads[i], false);
        cq_io_read_f(ch[i], 0, 1, q, &reads[i], coll_handler); /* opens it: blocks */
    }
    char *path = tmp_path("beside-opens");
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    REQUIRE(fd >= 0);
    cq_io_t out = cq_io_create_f(CQ_IO_STREAM, fd, q, NULL, NULL);
    struct coll w;
    coll_init(&w, false);
    cq_data_t d = string_data("beside");
    cq_io_write_f(out, 0, d, q, &w, coll_handler);
    cq_release(d);
    wait_done(&w);
    CHECK_EQ(w.error, 0);
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && st.st_size == 6);
    /* let the opens through: a writer on each FIFO, which ends each read (end of file) */
    for (int i = 0; i < FIFOS; i++) {
        int wfd = open(fifo[i], O_WRONLY);
        REQUIRE(wfd >= 0);
        close(wfd);
        wait_done(&reads[i]);
        cq_io_close(ch[i], 0);
        cq_release(ch[i]);
        WAIT_SEMA(cr.sema);
        coll_free(&reads[i]);
        unlink(fifo[i]);
        free(fifo[i]);
    }
    cq_io_close(out, 0);
    cq_release(out);
    coll_free(&w);
    close(fd);
    unlink(path);
    cq_release(cr.sema);
    cq_release(q);
}

/* Partial deliveries at the water marks on a file. */
static void test_file_water_marks(void)
{
    char *path = tmp_path("marks");
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
    REQUIRE(fd >= 0);
    unsigned char *b = malloc(100000);
    fill_random(b, 100000, 7);
    REQUIRE(write(fd, b, 100000) == 100000);
    REQUIRE(lseek(fd, 0, SEEK_SET) == 0);
    free(b);
    cq_queue_t q = cq_queue_create("test.io.file", NULL);
    cq_io_t ch = mk(CQ_IO_RANDOM, fd, q);
    cq_io_set_high_water(ch, 10000);
    cq_io_set_low_water(ch, 10000);
    struct coll c;
    coll_init(&c, false);
    cq_io_read_f(ch, 0, 95000, q, &c, coll_handler);
    wait_done(&c);
    CHECK_EQ(c.error, 0);
    CHECK_EQ(c.total, 95000);
    CHECK_EQ(c.partials, 9);
    CHECK_EQ(c.done_size, 5000);
    done_with(ch, 0);
    close(fd);
    coll_free(&c);
    cq_release(q);
    unlink(path);
}

/* ---- read-ahead (io_op.c: a file read keeps several requests in flight) ------------------- */

#define MIB ((size_t)1 << 20)

/* Makes `path` hold `n` random bytes; returns them (malloc'd) and the open descriptor. */
static unsigned char *make_file(const char *path, size_t n, uint64_t seed, int *fd_out)
{
    unsigned char *b = malloc(n ? n : 1);
    fill_random(b, n, seed);
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, b, n) == (ssize_t)n);
    REQUIRE(lseek(fd, 0, SEEK_SET) == 0);
    *fd_out = fd;
    return b;
}

/* A test's file: `size` random bytes (from `seed`) at a fresh path, open read-write at offset
 * 0, and a serial queue for its channels; test_file_done closes and removes it. */
struct test_file {
    char *path; /* tmp_path's buffer */
    size_t size;
    int fd;
    unsigned char *src; /* the file's bytes */
    cq_queue_t q;
};

static struct test_file test_file_make(const char *name, size_t size, uint64_t seed)
{
    struct test_file f = {tmp_path(name), size, -1, NULL, cq_queue_create("test.io.file", NULL)};
    f.src = make_file(f.path, size, seed, &f.fd);
    return f;
}

static void test_file_done(struct test_file *f)
{
    close(f->fd);
    free(f->src);
    cq_release(f->q);
    unlink(f->path);
}

static uint64_t sum_of(const unsigned char *b, size_t n)
{
    struct sum h = SUM_INIT;
    sum_bytes(&h, b, n);
    return sum_final(h);
}

/* Reads `length` bytes at `offset` through `ch` (water marks as given, 0: unset) and checks
 * them against `src` (the file's bytes from `base`, `size` of them): every byte once, in order,
 * none past the length or the end. Returns the partial deliveries' count. */
static size_t read_check(cq_io_t ch, cq_queue_t q, const unsigned char *src, size_t size,
                         size_t base, off_t offset, size_t length)
{
    struct coll c;
    coll_init(&c, false);
    cq_io_read_f(ch, offset, length, q, &c, coll_handler);
    wait_done(&c);
    size_t from = base + (size_t)offset;
    size_t want = from >= size ? 0 : size - from;
    want = length < want ? length : want;
    CHECK_EQ(c.error, 0);
    CHECK_EQ(c.total, want);
    CHECK(sum_final(c.sum) == sum_of(src + from, want));
    size_t partials = c.partials;
    coll_free(&c);
    return partials;
}

/* A length that ends in the middle of a piece, with several pieces read ahead: exactly the
 * bytes asked for, and a stream channel's position (and its next read) right after them. */
static void test_read_ahead_length(void)
{
    struct test_file f = test_file_make("ra-len", 6 * MIB + 777, 11);

    cq_io_t ra = mk(CQ_IO_RANDOM, f.fd, f.q);
    read_check(ra, f.q, f.src, f.size, 0, 1000, 3 * MIB + 12345);
    read_check(ra, f.q, f.src, f.size, 0, 0, 5 * MIB); /* ends on a piece boundary */
    cq_io_set_high_water(ra, MIB);
    cq_io_set_low_water(ra, MIB);
    /* 4 MiB + 1 in pieces of 1 MiB: four partials, the last byte with the done call */
    CHECK_EQ(read_check(ra, f.q, f.src, f.size, 0, 3, 4 * MIB + 1), 4);
    cq_io_set_high_water(ra, 300000); /* requests of the high-water mark, not 1 MiB */
    read_check(ra, f.q, f.src, f.size, 0, 12, 2 * MIB + 5);
    done_with(ra, 0);

    REQUIRE(lseek(f.fd, 500, SEEK_SET) == 500);
    cq_io_t st = mk(CQ_IO_STREAM, f.fd, f.q);
    read_check(st, f.q, f.src, f.size, 500, 0, 4 * MIB + 1);
    read_check(st, f.q, f.src, f.size, 500 + 4 * MIB + 1, 0, SIZE_MAX); /* the rest */
    done_with(st, 0);
    CHECK_EQ(lseek(f.fd, 0, SEEK_CUR), (off_t)f.size);

    test_file_done(&f);
}

/* The end of the file inside the read-ahead window (and on a piece boundary): everything up to
 * it, nothing after, then EOF. */
static void test_read_ahead_eof(void)
{
    char *path = tmp_path("ra-eof");
    const size_t sizes[] = {6 * MIB + 100, 5 * MIB, 1, 0};
    cq_queue_t q = cq_queue_create("test.io.file", NULL);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t size = sizes[k];
        int fd;
        unsigned char *src = make_file(path, size, 12 + k, &fd);
        cq_io_t st = mk(CQ_IO_STREAM, fd, q);
        cq_io_set_high_water(st, MIB);
        struct coll c;
        coll_init(&c, false);
        cq_io_read_f(st, 0, SIZE_MAX, q, &c, coll_handler);
        wait_done(&c);
        CHECK_EQ(c.error, 0);
        CHECK_EQ(c.total, size);
        CHECK(sum_final(c.sum) == sum_of(src, size));
        CHECK_EQ(c.done_size, 0); /* EOF */
        CHECK_EQ(c.partials, (size + MIB - 1) / MIB);
        coll_free(&c);
        done_with(st, 0);
        CHECK_EQ(lseek(fd, 0, SEEK_CUR), (off_t)size);

        REQUIRE(lseek(fd, 0, SEEK_SET) == 0); /* random offsets count from here */
        cq_io_t ra = mk(CQ_IO_RANDOM, fd, q);
        read_check(ra, q, src, size, 0, (off_t)(size / 3), SIZE_MAX);
        read_check(ra, q, src, size, 0, (off_t)(size / 2), size); /* past the end */
        read_check(ra, q, src, size, 0, (off_t)size + 10, SIZE_MAX);
        done_with(ra, 0);
        close(fd);
        free(src);
    }
    cq_release(q);
    unlink(path);
}

/* Every 1 MiB piece of a file read lands in a buffer that starts on a cache line (a page, in
 * fact): the kernel copies into a buffer that starts a few bytes past a page boundary, where
 * malloc puts one, at 2.5 times the cost (io_op.c, "read buffers"). */
struct align_rec {
    cq_semaphore_t done;
    size_t pieces, aligned, bytes;
    int error;
};

static bool align_region(void *ctx, cq_data_t region, size_t offset, const void *buffer,
                         size_t size)
{
    struct align_rec *r = ctx;
    (void)region;
    (void)offset;
    if (size == MIB) {
        r->pieces++;
        r->aligned += ((uintptr_t)buffer % 64) == 0;
    }
    r->bytes += size;
    return true;
}

static void align_handler(void *ctx, bool done, cq_data_t data, int error)
{
    struct align_rec *r = ctx;
    if (data) {
        cq_data_apply_f(data, r, align_region);
    }
    if (done) {
        r->error = error;
        cq_semaphore_signal(r->done);
    }
}

static void test_read_buffers_aligned(void)
{
    struct test_file f = test_file_make("aligned", 5 * MIB + 100, 21);
    cq_io_t st = mk(CQ_IO_STREAM, f.fd, f.q);
    cq_io_set_high_water(st, MIB);
    cq_io_set_low_water(st, MIB);
    struct align_rec r = {.done = cq_semaphore_create(0)};
    cq_io_read_f(st, 0, SIZE_MAX, f.q, &r, align_handler);
    WAIT_SEMA(r.done);
    CHECK_EQ(r.error, 0);
    CHECK_EQ(r.bytes, f.size);
    CHECK_EQ(r.pieces, 5);
    CHECK_EQ(r.aligned, r.pieces);
    done_with(st, 0);
    cq_release(r.done);
    test_file_done(&f);
}

/* A read runs ahead of its handler by a bounded amount: with the handler held on its first
 * piece, a 64 MiB file read holds back its requests once a few pieces wait for the handler
 * (before, it read the whole file into memory behind a handler that did not keep up); let go,
 * the read delivers every byte in order. The counters are the buffer cache's (io_op.c). */
static void test_read_ahead_bounded(void)
{
    struct test_file f = test_file_make("ra-bound", 64 * MIB, 17);
    cq_io_t st = mk(CQ_IO_STREAM, f.fd, f.q);
    cq_io_set_high_water(st, MIB);
    struct coll c;
    coll_init(&c, false);
    struct held_handler h;
    held_handler_init(&h, coll_handler, &c);
    struct cq__io_buf_stats before = cq__io_buf_stats(true);
    cq_io_read_f(st, 0, SIZE_MAX, f.q, &h, held_handler_call);
    WAIT_SEMA(h.entered);
    /* Wait until the read holds back, or (as before) has read the whole file. */
    struct cq__io_buf_stats now = cq__io_buf_stats(false);
    for (uint64_t deadline = cq_test_now_ns() + 30 * (uint64_t)1000000000;
         now.holds == before.holds && now.live - before.live < f.size / MIB &&
         cq_test_now_ns() < deadline;
         now = cq__io_buf_stats(false)) {
        usleep(200);
    }
    CHECK(now.holds > before.holds);
    /* the handler's piece, 8 MiB waiting for it, 4 in the engine (io_internal.h) */
    CHECK(now.peak - before.live <= 13);
    cq_semaphore_signal(h.gate);
    wait_done(&c);
    CHECK_EQ(c.error, 0);
    CHECK_EQ(c.total, f.size);
    CHECK(sum_final(c.sum) == sum_of(f.src, f.size));
    CHECK(cq__io_buf_stats(false).peak - before.live <= 13);
    coll_free(&c);
    done_with(st, 0);
    held_handler_free(&h);
    test_file_done(&f);
}

/* A cheap handler (it keeps the pieces, no copy) has its own run read the next piece once it
 * has had the others (io_op.c, fread_inline): every byte in order, a length that ends mid-piece,
 * the end of the file, a stream channel's position, close with stop, a file dropped from the
 * page cache (the engine reads what is not cached). */
struct keep_rec {
    cq_semaphore_t done, piece;
    cq_data_t kept[64]; /* the pieces, retained (cheap even under a sanitizer) */
    size_t pieces;
    int error;
};

static void keep_handler(void *ctx, bool done, cq_data_t data, int error)
{
    struct keep_rec *k = ctx;
    if (data && cq_data_get_size(data) > 0) {
        REQUIRE(k->pieces < 64);
        cq_retain(data);
        k->kept[k->pieces++] = data;
    }
    if (!done) {
        cq_semaphore_signal(k->piece);
        return;
    }
    k->error = error;
    cq_semaphore_signal(k->done);
}

static uint64_t data_sum(cq_data_t d)
{
    struct sum h = SUM_INIT;
    cq_data_apply_f(d, &h, sum_region);
    return sum_final(h);
}

/* Reads `length` at `offset` through `ch` with the cheap handler; stops it with a close after
 * `stop_after` pieces (0: never). Returns the bytes; *error: the end's error. */
static cq_data_t keep_read(cq_io_t ch, cq_queue_t q, off_t offset, size_t length, size_t stop_after,
                           int *error)
{
    struct keep_rec *k = calloc(1, sizeof *k);
    k->done = cq_semaphore_create(0);
    k->piece = cq_semaphore_create(0);
    cq_io_read_f(ch, offset, length, q, k, keep_handler);
    for (size_t i = 0; i < stop_after; i++) {
        WAIT_SEMA(k->piece);
    }
    if (stop_after) {
        cq_io_close(ch, CQ_IO_STOP);
    }
    WAIT_SEMA(k->done);
    *error = k->error;
    cq_data_t all = cq_data_empty;
    for (size_t i = 0; i < k->pieces; i++) {
        cq_data_t next = cq_data_create_concat(all, k->kept[i]);
        cq_release(all);
        cq_release(k->kept[i]);
        all = next;
    }
    cq_release(k->done);
    cq_release(k->piece);
    free(k);
    return all;
}

static void test_read_inline(void)
{
    struct test_file f = test_file_make("inline", 32 * MIB + 4321, 23);
    int err;

    /* to the end, then the position: the next read has nothing */
    size_t inlined = cq__io_buf_stats(false).inlined;
    cq_io_t st = mk(CQ_IO_STREAM, f.fd, f.q);
    cq_io_set_high_water(st, MIB);
    cq_data_t all = keep_read(st, f.q, 0, SIZE_MAX, 0, &err);
    CHECK_EQ(err, 0);
    CHECK_EQ(cq_data_get_size(all), f.size);
    CHECK(data_sum(all) == sum_of(f.src, f.size));
    inlined = cq__io_buf_stats(false).inlined - inlined;
    printf("   %zu of %zu pieces read by the handler's run\n", inlined, f.size / MIB + 1);
    CHECK(inlined >= 8); /* 0 before; usually 20-30 (a preempted handler call costs a few) */
    cq_release(all);
    all = keep_read(st, f.q, 0, SIZE_MAX, 0, &err);
    CHECK_EQ(err, 0);
    CHECK_EQ(cq_data_get_size(all), 0);
    cq_release(all);
    done_with(st, 0);

    /* a length that ends mid-piece, at an offset, on a random-access channel */
    REQUIRE(lseek(f.fd, 0, SEEK_SET) == 0); /* the stream channel left it at the end */
    cq_io_t ra = mk(CQ_IO_RANDOM, f.fd, f.q);
    cq_io_set_high_water(ra, MIB);
    all = keep_read(ra, f.q, 3 * MIB + 5, 20 * MIB + 333, 0, &err);
    CHECK_EQ(err, 0);
    CHECK_EQ(cq_data_get_size(all), 20 * MIB + 333);
    CHECK(data_sum(all) == sum_of(f.src + 3 * MIB + 5, 20 * MIB + 333));
    cq_release(all);
    done_with(ra, 0);

    /* close with stop once the run reads: whole pieces, the file's first bytes */
    REQUIRE(lseek(f.fd, 0, SEEK_SET) == 0);
    st = mk(CQ_IO_STREAM, f.fd, f.q);
    cq_io_set_high_water(st, MIB);
    all = keep_read(st, f.q, 0, SIZE_MAX, 12, &err);
    size_t got = cq_data_get_size(all);
    CHECK(err == ECANCELED || (err == 0 && got == f.size));
    CHECK(got >= 12 * MIB && (got % MIB == 0 || got == f.size));
    CHECK(data_sum(all) == sum_of(f.src, got));
    cq_release(all);
    cq_release(st);
    WAIT_SEMA(g_cleaned);

    /* out of the page cache: the engine reads what the run cannot */
    REQUIRE(fsync(f.fd) == 0);
    posix_fadvise(f.fd, 0, 0, POSIX_FADV_DONTNEED);
    REQUIRE(lseek(f.fd, 0, SEEK_SET) == 0);
    st = mk(CQ_IO_STREAM, f.fd, f.q);
    cq_io_set_high_water(st, MIB);
    all = keep_read(st, f.q, 0, SIZE_MAX, 0, &err);
    CHECK_EQ(err, 0);
    CHECK_EQ(cq_data_get_size(all), f.size);
    CHECK(data_sum(all) == sum_of(f.src, f.size));
    cq_release(all);
    done_with(st, 0);

    test_file_done(&f);
}

/* The 1 MiB buffers a file read leaves in the cache go back to the system once the process is
 * quiet (the trimmer's hook, io_op.c; CQ_TRIM_DELAY_MS is 50 in this test): before, a process
 * kept up to 16 MiB of them for good after its last read. */
static void test_read_buffers_given_back(void)
{
    struct test_file f = test_file_make("given-back", 16 * MIB, 29);
    cq_io_t st = mk(CQ_IO_STREAM, f.fd, f.q);
    cq_io_set_high_water(st, MIB);
    CHECK(read_check(st, f.q, f.src, f.size, 0, 0, SIZE_MAX) >= 16);
    done_with(st, 0);
    /* (under a sanitizer the trim may have come already: the read is slow, the delay short) */
    uint64_t deadline = cq_test_now_ns() + 30 * (uint64_t)1000000000;
    while (cq__io_buf_stats(false).cached > 0 && cq_test_now_ns() < deadline) {
        usleep(1000);
    }
    CHECK_EQ(cq__io_buf_stats(false).cached, 0);
    test_file_done(&f);
}

/* Close with stop while a long read has several requests in the engine: ECANCELED after whole
 * pieces, and the buffers the engine still writes to outlive it (AddressSanitizer watches). */
static void test_read_ahead_close_stop(void)
{
    struct test_file f = test_file_make("ra-stop", 64 * MIB, 13);
    REQUIRE(fsync(f.fd) == 0);
    for (int i = 0; i < 8; i++) {
        REQUIRE(lseek(f.fd, 0, SEEK_SET) == 0);
        if (i >= 4) { /* from the disk: the requests stay in the engine longer */
            posix_fadvise(f.fd, 0, 0, POSIX_FADV_DONTNEED);
        }
        struct cleanup_rec cr = {cq_semaphore_create(0), -1, 0};
        cq_io_t ch =
            cq_io_create_f(i % 2 ? CQ_IO_RANDOM : CQ_IO_STREAM, f.fd, f.q, &cr, cleanup_handler);
        cq_io_set_high_water(ch, MIB);
        struct coll c;
        coll_init(&c, false);
        c.partial_sema = cq_semaphore_create(0);
        cq_io_read_f(ch, 0, SIZE_MAX, f.q, &c, coll_handler);
        for (int k = 0; k < 1 + i % 4; k++) { /* the window is open after a few pieces */
            WAIT_SEMA(c.partial_sema);
        }
        cq_io_close(ch, CQ_IO_STOP);
        wait_done(&c);
        CHECK(c.error == ECANCELED || (c.error == 0 && c.total == f.size));
        CHECK(c.total % MIB == 0 && c.total <= f.size);
        CHECK(sum_final(c.sum) == sum_of(f.src, c.total));
        cq_release(ch);
        WAIT_SEMA(cr.sema); /* after the engine is done with every request */
        CHECK_EQ(cr.calls, 1);
        cq_release(c.partial_sema);
        coll_free(&c);
        cq_release(cr.sema);
    }
    test_file_done(&f);
}

/* Reads "forked" from `path` through a random channel; true if it arrived whole. */
static bool read_forked_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    cq_queue_t q = cq_queue_create("test.io.fork", NULL);
    cq_io_t ch = mk(CQ_IO_RANDOM, fd, q);
    struct coll c;
    coll_init(&c, true);
    cq_io_read_f(ch, 0, SIZE_MAX, q, &c, coll_handler);
    bool ok = cq_semaphore_wait(c.done_sema, cq_test_deadline()) == 0 && c.error == 0 &&
              data_equals(c.all, "forked");
    done_with(ch, 0);
    close(fd);
    coll_free(&c);
    cq_release(q);
    return ok;
}

/* ThreadSanitizer refuses new threads in a child of a multi-threaded process unless told
 * otherwise; the child below starts the runtime's (read only by TSan builds). */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "die_after_fork=0";
}

/* fork() after file I/O: the child must not submit to the parent's ring (the same kernel
 * object); it sets up its own engine and reads, and the parent's engine still works after. */
static void test_fork_child_reads(void)
{
    char *path = tmp_path("fork");
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, "forked", 6) == 6);
    close(fd);
    CHECK(read_forked_file(path)); /* the engine is running in the parent */
    const char *engine = cq__io_file_engine();
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        alarm(60);
        bool ok = read_forked_file(path) && strcmp(cq__io_file_engine(), engine) == 0;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(read_forked_file(path));
    unlink(path);
}

int main(void)
{
    setenv("CQ_TRIM_DELAY_MS", "50", 1); /* test_read_buffers_given_back; before any trim */
    g_cleaned = cq_semaphore_create(0);
    if (CQ_TEST_IO_FALLBACK) {
        setenv("CQ_IO_URING", "0", 1); /* read once, at the first file operation */
    }
    RUN(test_engine);
    RUN(test_round_trip);
    RUN(test_random_offsets);
    RUN(test_barrier_orders_writes_and_reads);
    RUN(test_close_stop_file);
    RUN(test_stream_position_and_with_io);
    RUN(test_with_io_from_stream_position);
    RUN(test_path_channel);
    RUN(test_write_beside_blocked_opens);
    RUN(test_file_water_marks);
    RUN(test_read_ahead_length);
    RUN(test_read_ahead_eof);
    RUN(test_read_ahead_close_stop);
    RUN(test_read_buffers_aligned);
    RUN(test_read_ahead_bounded);
    RUN(test_read_inline);
    RUN(test_read_buffers_given_back);
    RUN(test_fork_child_reads);
    TEST_MAIN_END();
}
