/*
 * Many small operations queued on one stream channel, as a logger would: 50,000 writes of 100
 * bytes to a pipe that a thread drains, then 50,000 reads of 100 bytes from a pipe that a thread
 * fills. Each operation that finished at once used to start the next one a few frames deeper
 * (stream_step -> cq__io_unlock -> stream_step ...): a Swift program writing 50,000 records
 * through SQIO died with SIGSEGV on a worker's 8 MiB stack. Here the runtime's threads get
 * 256 KiB stacks (pthread_setattr_default_np before the pool starts), so the recursion shows
 * within the first few hundred operations. Each finished operation also walked every waiting
 * one (quadratic: 21 s for this test).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>

#include "cq_test.h"

#define MANY_OPS 50000
#define MANY_OP_SIZE 100

struct many_ops {
    cq_semaphore_t all_done;
    atomic_int done, failed;
    atomic_long bytes;
    int fd;
};

static void many_ops_handler(void *ctx, bool done, cq_data_t data, int error)
{
    struct many_ops *m = ctx;
    if (data) {
        atomic_fetch_add(&m->bytes, (long)cq_data_get_size(data));
    }
    if (done) {
        if (error != 0) {
            atomic_fetch_add(&m->failed, 1);
        }
        if (atomic_fetch_add(&m->done, 1) + 1 == MANY_OPS) {
            cq_semaphore_signal(m->all_done);
        }
    }
}

static void *drain_pipe(void *arg)
{
    struct many_ops *m = arg;
    char buf[65536];
    long total = 0;
    ssize_t r;
    while ((r = read(m->fd, buf, sizeof buf)) > 0) {
        total += r;
    }
    return (void *)(intptr_t)total;
}

static void *fill_pipe(void *arg)
{
    struct many_ops *m = arg;
    char buf[MANY_OP_SIZE * 100];
    memset(buf, 'y', sizeof buf);
    for (long left = (long)MANY_OPS * MANY_OP_SIZE; left > 0;) {
        ssize_t w = write(m->fd, buf, left < (long)sizeof buf ? (size_t)left : sizeof buf);
        if (w <= 0) {
            break;
        }
        left -= w;
    }
    return NULL;
}

static void test_many_queued_stream_operations(void)
{
    cq_queue_t q = cq_queue_create("many-ops", CQ_QUEUE_SERIAL);
    char piece[MANY_OP_SIZE];
    memset(piece, 'x', sizeof piece);
    cq_data_t d = cq_data_create_f(piece, sizeof piece, NULL, CQ_DATA_DESTRUCTOR_DEFAULT);

    int p[2];
    REQUIRE(pipe(p) == 0);
    /* A pipe as large as allowed: the writes seldom find it full, so each one that finishes
     * at once starts the next. */
    (void)fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
    struct many_ops w = {cq_semaphore_create(0), 0, 0, 0, p[0]};
    pthread_t reader;
    pthread_create(&reader, NULL, drain_pipe, &w);
    cq_io_t out = cq_io_create_f(CQ_IO_STREAM, p[1], q, NULL, NULL);
    REQUIRE(out != NULL);
    for (int i = 0; i < MANY_OPS; i++) {
        cq_io_write_f(out, 0, d, q, &w, many_ops_handler);
    }
    cq_io_close(out, 0); /* the queued writes still run */
    cq_release(out);
    WAIT_SEMA(w.all_done);
    CHECK_EQ(atomic_load(&w.failed), 0);
    close(p[1]);
    void *total;
    pthread_join(reader, &total);
    CHECK_EQ((long)(intptr_t)total, (long)MANY_OPS * MANY_OP_SIZE);
    close(p[0]);

    REQUIRE(pipe(p) == 0);
    struct many_ops r = {cq_semaphore_create(0), 0, 0, 0, p[1]};
    cq_io_t in = cq_io_create_f(CQ_IO_STREAM, p[0], q, NULL, NULL);
    REQUIRE(in != NULL);
    for (int i = 0; i < MANY_OPS; i++) {
        cq_io_read_f(in, 0, MANY_OP_SIZE, q, &r, many_ops_handler);
    }
    cq_io_close(in, 0); /* the queued reads still run */
    cq_release(in);
    pthread_t writer;
    pthread_create(&writer, NULL, fill_pipe, &r);
    WAIT_SEMA(r.all_done);
    pthread_join(writer, NULL);
    CHECK_EQ(atomic_load(&r.failed), 0);
    CHECK_EQ(atomic_load(&r.bytes), (long)MANY_OPS * MANY_OP_SIZE);
    close(p[0]);
    close(p[1]);

    cq_release(d);
    cq_release(w.all_done);
    cq_release(r.all_done);
    cq_release(q);
}

int main(void)
{
    pthread_attr_t attr;
    REQUIRE(pthread_attr_init(&attr) == 0);
#ifndef __SANITIZE_THREAD__
    /* Not under ThreadSanitizer: its pthread_create fails (EINVAL) for threads of a default
     * attribute whose stack size was set, and no pool thread starts at all */
    REQUIRE(pthread_attr_setstacksize(&attr, 256 * 1024) == 0);
#endif
    REQUIRE(pthread_setattr_default_np(&attr) == 0);
    pthread_attr_destroy(&attr);
    RUN(test_many_queued_stream_operations);
    TEST_MAIN_END();
}
