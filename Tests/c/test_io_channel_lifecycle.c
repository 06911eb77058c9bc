/*
 * A channel's life around its descriptor: a path channel closed while its open(2) cannot
 * return (a FIFO with no writer), and channels made with cq_io_create_with_io from a path
 * channel, which open the path themselves (libdispatch's behaviour, both found by a user-side
 * probe against it). Files and FIFOs live under /tmp and are removed.
 *
 * No check depends on timing: the "cleanup at once" of a closed channel whose open blocks is
 * an event the test waits for (before the fix it came only once a writer opened the FIFO, which
 * the test does only after that wait: the wait timed out), and the order of cleanup handlers is
 * read on the serial queue that runs them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cq_test.h"
#include "io_test_support.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>

static char *tmp_path(const char *name)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "/tmp/cq-test-iolife-%d-%s", (int)getpid(), name);
    return buf;
}

/* What a read or write delivered, in order; `done_sema` is signalled by its last call. */
struct rec {
    cq_semaphore_t done_sema;
    char bytes[64];
    size_t n;
    int calls, dones, error;
};

static void rec_init(struct rec *r)
{
    memset(r, 0, sizeof *r);
    r->done_sema = cq_semaphore_create(0);
}

static bool copy_region(void *ctx, cq_data_t region, size_t offset, const void *buf, size_t size)
{
    (void)region;
    (void)offset;
    struct rec *r = ctx;
    size_t k = size < sizeof r->bytes - 1 - r->n ? size : sizeof r->bytes - 1 - r->n;
    memcpy(r->bytes + r->n, buf, k);
    r->n += k;
    return true;
}

static void rec_handler(void *ctx, bool done, cq_data_t data, int error)
{
    struct rec *r = ctx;
    r->calls++;
    if (data) {
        cq_data_apply_f(data, r, copy_region);
    }
    if (done) {
        r->dones++;
        r->error = error;
        cq_semaphore_signal(r->done_sema);
    }
}

/* A write's handler: its data is what was not written, not to be recorded. */
static void rec_write_handler(void *ctx, bool done, cq_data_t data, int error)
{
    (void)data;
    rec_handler(ctx, done, NULL, error);
}

/* A cleanup handler that notes its turn among the others of a test (all on one serial queue)
 * and whether the operation it follows had its done call by then. */
struct turn {
    cq_semaphore_t sema;
    int *clock;
    int at, calls, error;
    struct rec *op; /* may be NULL */
    bool op_done_before;
};

static void turn_cleanup(void *ctx, int error)
{
    struct turn *t = ctx;
    t->at = ++*t->clock;
    t->calls++;
    t->error = error;
    t->op_done_before = t->op && t->op->dones > 0;
    cq_semaphore_signal(t->sema);
}

static void noop_fn(void *ctx)
{
    (void)ctx;
}

static void signal_sema(void *ctx)
{
    cq_semaphore_signal(ctx);
}

/* A channel's finalizer signals `freed` once the channel itself is freed: after every
 * reference, the one its pending open job holds included. */
static void watch_free(cq_io_t ch, cq_semaphore_t freed)
{
    cq_set_context(ch, freed);
    cq_set_finalizer_f(ch, signal_sema);
}

static void make_fifo(const char *path)
{
    unlink(path);
    REQUIRE(mkfifo(path, 0600) == 0);
}

static void write_file(const char *path, const char *text)
{
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
}

/* The descriptors of this process open on `path` (the runtime opens others lazily: timerfds,
 * inotify, so a plain count is not steady). */
static int count_descriptors_on(const char *path)
{
    struct stat want;
    REQUIRE(stat(path, &want) == 0);
    DIR *d = opendir("/proc/self/fd");
    REQUIRE(d != NULL);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        struct stat st;
        if (e->d_name[0] != '.' && fstat(atoi(e->d_name), &st) == 0 && st.st_dev == want.st_dev &&
            st.st_ino == want.st_ino) {
            n++;
        }
    }
    closedir(d);
    return n;
}

/* ---- a close while the open blocks -------------------------------------------------------- */

/* A path channel on a FIFO that no writer has opened: its read's open(2) blocks on a pool
 * thread. Closed with CQ_IO_STOP and released, the read ends (ECANCELED) and the cleanup handler
 * runs without waiting for the open (it waited for it: never, while no writer came; libdispatch
 * ran it at once, error 0). When the open returns later, the channel closes what it opened
 * and calls nothing: the FIFO's writer sees its reader go, and the channel is freed. */
static void test_stop_while_open_blocks(void)
{
    char *fifo = tmp_path("fifo-stop");
    make_fifo(fifo);
    cq_queue_t q = cq_queue_create("test.io.life", NULL);
    int clock = 0;
    struct rec r;
    rec_init(&r);
    struct turn cl = {cq_semaphore_create(0), &clock, 0, 0, -1, &r, false};
    cq_semaphore_t freed = cq_semaphore_create(0);
    cq_io_t ch = cq_io_create_with_path_f(CQ_IO_STREAM, fifo, O_RDONLY, 0, q, &cl, turn_cleanup);
    REQUIRE(ch != NULL);
    watch_free(ch, freed);
    cq_io_read_f(ch, 0, SIZE_MAX, q, &r, rec_handler); /* submits the open: it blocks */
    cq_io_close(ch, CQ_IO_STOP);
    cq_release(ch);
    WAIT_SEMA(cl.sema); /* before the fix: only once a writer opened the FIFO */
    WAIT_SEMA(r.done_sema);
    CHECK_EQ(r.dones, 1);
    CHECK_EQ(r.error, ECANCELED);
    CHECK_EQ(r.n, 0);
    CHECK(cl.op_done_before); /* the cleanup handler after the operation's last call */
    CHECK_EQ(cl.calls, 1);
    CHECK_EQ(cl.error, 0);
    /* A writer lets the open return; the channel closes that descriptor at once, which the
     * writer sees (POLLERR: no reader left), and goes */
    int wfd = open(fifo, O_WRONLY);
    REQUIRE(wfd >= 0);
    struct pollfd p = {.fd = wfd, .events = 0};
    int n;
    do {
        n = poll(&p, 1, (int)(CQ_TEST_PATIENCE_NS / 1000000));
    } while (n < 0 && errno == EINTR);
    CHECK_EQ(n, 1);
    CHECK(p.revents & POLLERR);
    WAIT_SEMA(freed);
    CHECK_EQ(r.calls, 1); /* nothing more came */
    CHECK_EQ(cl.calls, 1);
    close(wfd);
    unlink(fifo);
    cq_release(r.done_sema);
    cq_release(cl.sema);
    cq_release(freed);
    cq_release(q);
}

/* Closed without stop while the open blocks, the channel still waits for its read (as before
 * and as libdispatch): the read gets what a writer sends, then the end of file, and the cleanup
 * handler comes after it. */
static void test_close_while_open_blocks_waits_for_read(void)
{
    char *fifo = tmp_path("fifo-close");
    make_fifo(fifo);
    cq_queue_t q = cq_queue_create("test.io.life", NULL);
    int clock = 0;
    struct rec r;
    rec_init(&r);
    struct turn cl = {cq_semaphore_create(0), &clock, 0, 0, -1, &r, false};
    cq_io_t ch = cq_io_create_with_path_f(CQ_IO_STREAM, fifo, O_RDONLY, 0, q, &cl, turn_cleanup);
    REQUIRE(ch != NULL);
    cq_io_read_f(ch, 0, SIZE_MAX, q, &r, rec_handler);
    cq_io_close(ch, 0);
    cq_release(ch);
    int wfd = open(fifo, O_WRONLY);
    REQUIRE(wfd >= 0);
    REQUIRE(write(wfd, "hi", 2) == 2);
    close(wfd);
    WAIT_SEMA(r.done_sema);
    WAIT_SEMA(cl.sema);
    CHECK_EQ(r.error, 0);
    CHECK(r.n == 2 && memcmp(r.bytes, "hi", 2) == 0);
    CHECK(cl.op_done_before);
    CHECK_EQ(cl.error, 0);
    unlink(fifo);
    cq_release(r.done_sema);
    cq_release(cl.sema);
    cq_release(q);
}

/* The open returning and the close meet in every order: a writer comes before the read (the
 * open returns at once), right after the close (the cleanup ran, the open job closes what it
 * got), or at the same time from another thread. Each channel calls its read's handler and its
 * cleanup handler once, is freed, and leaves no descriptor behind. */
struct writer_job {
    const char *fifo;
    int fd;
    cq_semaphore_t done;
};

static void open_writer(void *ctx)
{
    struct writer_job *w = ctx;
    w->fd = open(w->fifo, O_RDWR); /* a FIFO opened read-write never blocks (Linux) */
    cq_semaphore_signal(w->done);
}

static void race_once(const char *fifo, cq_queue_t q, int mode)
{
    int clock = 0;
    struct rec r;
    rec_init(&r);
    struct turn cl = {cq_semaphore_create(0), &clock, 0, 0, -1, &r, false};
    cq_semaphore_t freed = cq_semaphore_create(0);
    struct writer_job w = {fifo, -1, cq_semaphore_create(0)};
    if (mode == 0) {
        open_writer(&w);
    }
    cq_io_t ch = cq_io_create_with_path_f(CQ_IO_STREAM, fifo, O_RDONLY, 0, q, &cl, turn_cleanup);
    REQUIRE(ch != NULL);
    watch_free(ch, freed);
    cq_io_read_f(ch, 0, SIZE_MAX, q, &r, rec_handler);
    if (mode == 2) {
        cq_async_f(cq_get_global_queue(0, 0), &w, open_writer);
    }
    cq_io_close(ch, CQ_IO_STOP);
    cq_release(ch);
    if (mode == 1) {
        open_writer(&w);
    }
    WAIT_SEMA(w.done);
    REQUIRE(w.fd >= 0);
    WAIT_SEMA(cl.sema);
    WAIT_SEMA(r.done_sema);
    WAIT_SEMA(freed); /* the open has returned: the writer may go */
    close(w.fd);
    CHECK_EQ(r.calls, 1);
    CHECK_EQ(r.error, ECANCELED); /* no data came: stopped, waiting or not started */
    CHECK_EQ(cl.calls, 1);
    CHECK_EQ(cl.error, 0);
    CHECK(cl.op_done_before);
    cq_release(r.done_sema);
    cq_release(cl.sema);
    cq_release(freed);
    cq_release(w.done);
}

static void test_open_returns_as_close_runs(void)
{
    char *fifo = tmp_path("fifo-race");
    make_fifo(fifo);
    cq_queue_t q = cq_queue_create("test.io.life", NULL);
    for (int i = 0; i < 300; i++) {
        race_once(fifo, q, i % 3);
    }
    CHECK_EQ(count_descriptors_on(fifo), 0);
    unlink(fifo);
    cq_release(q);
}

/* ---- channels made from a path channel ---------------------------------------------------- */

static void read3(cq_io_t ch, cq_queue_t q, off_t at, struct rec *r)
{
    rec_init(r);
    cq_io_read_f(ch, at, 3, q, r, rec_handler);
    WAIT_SEMA(r->done_sema);
}

static void rec_free(struct rec *r)
{
    cq_release(r->done_sema);
}

/* Made after its parent opened the file, a channel opens the path itself, as libdispatch's:
 * its own descriptor and position (it shared the parent's, and read "345" after the parent's
 * "012", and a random channel made from it read "678" at offset 0). */
static void test_child_of_opened_path_channel_opens_path(void)
{
    char *path = tmp_path("digits");
    write_file(path, "0123456789");
    cq_queue_t q = cq_queue_create("test.io.life", NULL);
    cq_io_t parent = cq_io_create_with_path_f(CQ_IO_STREAM, path, O_RDONLY, 0, q, NULL, NULL);
    struct rec a, b, c, d;
    read3(parent, q, 0, &a);
    cq_io_t child = cq_io_create_with_io_f(CQ_IO_STREAM, parent, q, NULL, NULL);
    REQUIRE(child != NULL);
    read3(child, q, 0, &b);
    cq_io_t rnd = cq_io_create_with_io_f(CQ_IO_RANDOM, child, q, NULL, NULL);
    REQUIRE(rnd != NULL);
    read3(rnd, q, 0, &c);
    read3(parent, q, 0, &d); /* the parent goes on from where it stood */
    CHECK(a.n == 3 && memcmp(a.bytes, "012", 3) == 0);
    CHECK(b.n == 3 && memcmp(b.bytes, "012", 3) == 0);
    CHECK(c.n == 3 && memcmp(c.bytes, "012", 3) == 0);
    CHECK(d.n == 3 && memcmp(d.bytes, "345", 3) == 0);
    CHECK_EQ(a.error + b.error + c.error + d.error, 0);
    int fp = cq_io_get_descriptor(parent), fc = cq_io_get_descriptor(child);
    int fr = cq_io_get_descriptor(rnd);
    CHECK(fp >= 0 && fc >= 0 && fr >= 0 && fp != fc && fc != fr && fp != fr);
    cq_io_close(rnd, 0);
    cq_io_close(child, 0);
    cq_io_close(parent, 0);
    cq_release(rnd);
    cq_release(child);
    cq_release(parent);
    rec_free(&a);
    rec_free(&b);
    rec_free(&c);
    rec_free(&d);
    cq_release(q);
    unlink(path);
}

/* The parent's cleanup does not wait for a channel made from it once it opened (it did: a
 * program closing its channels in creation order and waiting for each cleanup hung): the test
 * waits for it before it closes the child. The child works on after the parent's cleanup. (It
 * compared the two handlers' turns once, which a loaded machine could swap: the parent's read
 * is freed, and its cleanup queued, a moment after its done call.) */
static void test_path_parent_cleanup_does_not_wait_for_child(void)
{
    char *path = tmp_path("parent-first");
    write_file(path, "abcdef");
    cq_queue_t q = cq_queue_create("test.io.life", NULL);
    int clock = 0;
    struct turn pc = {cq_semaphore_create(0), &clock, 0, 0, -1, NULL, false};
    struct turn cc = {cq_semaphore_create(0), &clock, 0, 0, -1, NULL, false};
    cq_io_t parent =
        cq_io_create_with_path_f(CQ_IO_RANDOM, path, O_RDONLY, 0, q, &pc, turn_cleanup);
    struct rec a, b;
    read3(parent, q, 0, &a); /* the file is open now */
    cq_io_t child = cq_io_create_with_io_f(CQ_IO_STREAM, parent, q, &cc, turn_cleanup);
    REQUIRE(child != NULL);
    cq_io_close(parent, 0);
    cq_release(parent);
    WAIT_SEMA(pc.sema); /* the child still open */
    CHECK_EQ(cc.calls, 0);
    read3(child, q, 0, &b);
    cq_io_close(child, 0);
    cq_release(child);
    WAIT_SEMA(cc.sema);
    CHECK(a.n == 3 && memcmp(a.bytes, "abc", 3) == 0);
    CHECK(b.n == 3 && memcmp(b.bytes, "abc", 3) == 0);
    CHECK_EQ(b.error, 0);
    CHECK_EQ(pc.at, 1);
    CHECK_EQ(cc.at, 2);
    CHECK_EQ(pc.error + cc.error, 0);
    rec_free(&a);
    rec_free(&b);
    cq_release(pc.sema);
    cq_release(cc.sema);
    cq_release(q);
    unlink(path);
}

/* A channel made from one on a descriptor still shares it, and the parent's cleanup still waits
 * for it (as libdispatch's): closed first, the parent's cleanup handler comes second. */
static void test_fd_parent_cleanup_waits_for_child(void)
{
    char *path = tmp_path("fd-parent");
    write_file(path, "abcdef");
    int fd = open(path, O_RDONLY);
    REQUIRE(fd >= 0);
    cq_queue_t q = cq_queue_create("test.io.life", NULL);
    int clock = 0;
    struct turn pc = {cq_semaphore_create(0), &clock, 0, 0, -1, NULL, false};
    struct turn cc = {cq_semaphore_create(0), &clock, 0, 0, -1, NULL, false};
    cq_io_t parent = cq_io_create_f(CQ_IO_STREAM, fd, q, &pc, turn_cleanup);
    struct rec a, b;
    read3(parent, q, 0, &a);
    cq_io_t child = cq_io_create_with_io_f(CQ_IO_STREAM, parent, q, &cc, turn_cleanup);
    REQUIRE(child != NULL);
    cq_io_close(parent, 0);
    cq_release(parent);
    read3(child, q, 0, &b); /* on from where the parent stands */
    cq_io_close(child, 0);
    cq_release(child);
    WAIT_SEMA(pc.sema);
    WAIT_SEMA(cc.sema);
    CHECK(b.n == 3 && memcmp(b.bytes, "def", 3) == 0);
    CHECK_EQ(cc.at, 1);
    CHECK_EQ(pc.at, 2);
    close(fd);
    rec_free(&a);
    rec_free(&b);
    cq_release(pc.sema);
    cq_release(cc.sema);
    cq_release(q);
    unlink(path);
}

/* A channel made from a path channel whose open failed reports that error, as libdispatch's
 * (even once the file exists), and opens nothing. */
static void test_child_of_failed_path_channel_keeps_error(void)
{
    char *path = tmp_path("missing");
    unlink(path);
    cq_queue_t q = cq_queue_create("test.io.life", NULL);
    struct cleanup_rec cp = {cq_semaphore_create(0), -1, 0}, cc = {cq_semaphore_create(0), -1, 0};
    cq_io_t parent =
        cq_io_create_with_path_f(CQ_IO_STREAM, path, O_RDONLY, 0, q, &cp, cleanup_handler);
    struct rec a, b;
    read3(parent, q, 0, &a);
    CHECK_EQ(a.error, ENOENT);
    write_file(path, "abc");
    cq_io_t child = cq_io_create_with_io_f(CQ_IO_STREAM, parent, q, &cc, cleanup_handler);
    read3(child, q, 0, &b);
    CHECK_EQ(b.error, ENOENT);
    CHECK_EQ(b.n, 0);
    cq_io_close(child, 0);
    cq_release(child);
    cq_io_close(parent, 0);
    cq_release(parent);
    WAIT_SEMA(cp.sema);
    WAIT_SEMA(cc.sema);
    CHECK_EQ(cp.error, ENOENT);
    CHECK_EQ(cc.error, ENOENT);
    rec_free(&a);
    rec_free(&b);
    cq_release(cp.sema);
    cq_release(cc.sema);
    cq_release(q);
    unlink(path);
}

/* A channel whose error is found at creation calls its cleanup handler at once, with that
 * error and without a close or a release, as libdispatch's does (its operations fail with the
 * same error; a channel on a descriptor still reports it, as libdispatch's). The cleanup
 * handler waited for the close or the last release: a program that waited in it to learn that
 * its channel had failed hung while it held the channel. Found by a user-side probe. */
static void test_creation_errors_clean_up_at_once(void)
{
    cq_queue_t q = cq_queue_create("test.io.life", NULL);
    char *missing = tmp_path("not-there");
    unlink(missing);
    int dir = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(dir >= 0);
    int p[2];
    REQUIRE(pipe(p) == 0);
    int closed = open("/dev/null", O_RDONLY | O_CLOEXEC);
    REQUIRE(closed >= 0);
    REQUIRE(close(closed) == 0); /* a number that names nothing now (nothing opens meanwhile) */
    struct {
        const char *what;
        int error, descriptor;
    } cases[] = {
        {"descriptor not open", EBADF, -1}, {"directory descriptor", EISDIR, dir},
        {"random on a pipe", ESPIPE, -1},   {"missing path", ENOENT, -1},
        {"directory path", EISDIR, -1},     {"child of a failed channel", ENOENT, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        printf("  %s\n", cases[i].what);
        struct cleanup_rec cr = {cq_semaphore_create(0), -1, 0};
        cq_io_t failed_parent = NULL, ch = NULL;
        switch (i) {
        case 0:
            ch = cq_io_create_f(CQ_IO_STREAM, closed, q, &cr, cleanup_handler);
            break;
        case 1:
            ch = cq_io_create_f(CQ_IO_STREAM, dir, q, &cr, cleanup_handler);
            break;
        case 2:
            ch = cq_io_create_f(CQ_IO_RANDOM, p[0], q, &cr, cleanup_handler);
            break;
        case 3:
            ch = cq_io_create_with_path_f(CQ_IO_STREAM, missing, O_RDONLY, 0, q, &cr,
                                          cleanup_handler);
            break;
        case 4:
            ch = cq_io_create_with_path_f(CQ_IO_STREAM, "/tmp", O_RDONLY, 0, q, &cr,
                                          cleanup_handler);
            break;
        default:
            failed_parent =
                cq_io_create_with_path_f(CQ_IO_STREAM, missing, O_RDONLY, 0, q, NULL, NULL);
            REQUIRE(failed_parent != NULL);
            ch = cq_io_create_with_io_f(CQ_IO_STREAM, failed_parent, q, &cr, cleanup_handler);
            break;
        }
        REQUIRE(ch != NULL);
        WAIT_SEMA(cr.sema); /* before any close or release */
        CHECK_EQ(cr.error, cases[i].error);
        CHECK_EQ(cr.calls, 1);
        CHECK_EQ(cq_io_get_descriptor(ch), cases[i].descriptor);
        struct rec r;
        read3(ch, q, 0, &r);
        CHECK_EQ(r.error, cases[i].error);
        CHECK_EQ(r.n, 0);
        cq_io_close(ch, 0);
        cq_release(ch);
        if (failed_parent) {
            cq_release(failed_parent);
        }
        cq_sync_f(q, NULL, noop_fn);
        CHECK_EQ(cr.calls, 1); /* once */
        rec_free(&r);
        cq_release(cr.sema);
    }
    /* a path that is missing but created by the open is no error */
    struct cleanup_rec cr = {cq_semaphore_create(0), -1, 0};
    cq_io_t ch = cq_io_create_with_path_f(CQ_IO_STREAM, missing, O_RDWR | O_CREAT, 0600, q, &cr,
                                          cleanup_handler);
    REQUIRE(ch != NULL);
    struct rec r;
    read3(ch, q, 0, &r);
    CHECK_EQ(r.error, 0);
    CHECK_EQ(cr.calls, 0);
    cq_io_close(ch, 0);
    cq_release(ch);
    WAIT_SEMA(cr.sema);
    CHECK_EQ(cr.error, 0);
    rec_free(&r);
    cq_release(cr.sema);
    unlink(missing);
    close(dir);
    close(p[0]);
    close(p[1]);
    cq_release(q);
}

/* The child opens with its parent's flags: O_TRUNC truncates the file again, and a stream
 * child writes from the start (as libdispatch: "XY"; sharing the descriptor gave "helloXY"). */
static void test_child_of_path_channel_opens_with_its_flags(void)
{
    char *path = tmp_path("trunc");
    unlink(path);
    cq_queue_t q = cq_queue_create("test.io.life", NULL);
    struct cleanup_rec cp = {cq_semaphore_create(0), -1, 0}, cc = {cq_semaphore_create(0), -1, 0};
    cq_io_t parent = cq_io_create_with_path_f(CQ_IO_STREAM, path, O_WRONLY | O_CREAT | O_TRUNC,
                                              0600, q, &cp, cleanup_handler);
    struct rec a, b;
    rec_init(&a);
    rec_init(&b);
    cq_data_t d = cq_data_create_f("hello", 5, NULL, CQ_DATA_DESTRUCTOR_DEFAULT);
    cq_io_write_f(parent, 0, d, q, &a, rec_write_handler);
    cq_release(d);
    WAIT_SEMA(a.done_sema);
    cq_io_t child = cq_io_create_with_io_f(CQ_IO_STREAM, parent, q, &cc, cleanup_handler);
    d = cq_data_create_f("XY", 2, NULL, CQ_DATA_DESTRUCTOR_DEFAULT);
    cq_io_write_f(child, 0, d, q, &b, rec_write_handler);
    cq_release(d);
    WAIT_SEMA(b.done_sema);
    CHECK_EQ(a.error + b.error, 0);
    cq_io_close(child, 0);
    cq_release(child);
    cq_io_close(parent, 0);
    cq_release(parent);
    WAIT_SEMA(cp.sema);
    WAIT_SEMA(cc.sema);
    char buf[16] = {0};
    int fd = open(path, O_RDONLY);
    REQUIRE(fd >= 0);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    CHECK(n == 2 && memcmp(buf, "XY", 2) == 0);
    rec_free(&a);
    rec_free(&b);
    cq_release(cp.sema);
    cq_release(cc.sema);
    cq_release(q);
    unlink(path);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    RUN(test_stop_while_open_blocks);
    RUN(test_close_while_open_blocks_waits_for_read);
    RUN(test_open_returns_as_close_runs);
    RUN(test_child_of_opened_path_channel_opens_path);
    RUN(test_path_parent_cleanup_does_not_wait_for_child);
    RUN(test_fd_parent_cleanup_waits_for_child);
    RUN(test_child_of_failed_path_channel_keeps_error);
    RUN(test_child_of_path_channel_opens_with_its_flags);
    RUN(test_creation_errors_clean_up_at_once);
    TEST_MAIN_END();
}
