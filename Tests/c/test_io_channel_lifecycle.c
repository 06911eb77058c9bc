/*
 * A channel's life around its descriptor: a path channel closed while its open(2) cannot
 * return (a FIFO with no writer), as libdispatch's (found by a user-side probe against it).
 * FIFOs live under /tmp and are removed.
 *
 * No check depends on timing: the "cleanup at once" of a closed channel whose open blocks is
 * an event the test waits for (before the fix it came only once a writer opened the FIFO, which
 * the test does only after that wait: the wait timed out).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cq_test.h"

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

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    RUN(test_stop_while_open_blocks);
    RUN(test_close_while_open_blocks_waits_for_read);
    RUN(test_open_returns_as_close_runs);
    TEST_MAIN_END();
}
