/*
 * The main queue: before cq_main, a sync from the main thread drains it inline; inside cq_main
 * its tasks run on the main thread in FIFO order; a sync onto it (or onto a queue targeting it)
 * from a worker runs the function on the main thread. The test ends with exit() from a task.
 */
#define _GNU_SOURCE
#include <sys/syscall.h>

#include "cq_test.h"

static pid_t main_tid;
static long next_seq, seq_bad, ran_on_main, ran_elsewhere;

static pid_t gettid_(void)
{
    return (pid_t)syscall(SYS_gettid);
}

static void on_main(void *ctx)
{
    long seq = (long)ctx;
    if (seq != next_seq) {
        seq_bad++;
    }
    next_seq = seq + 1;
    if (gettid_() == main_tid) {
        ran_on_main++;
    } else {
        ran_elsewhere++;
    }
}

struct from_worker {
    pid_t tid;
    int is_current;
    cq_queue_t q;
};

static void record(void *ctx)
{
    struct from_worker *w = ctx;
    w->tid = gettid_();
    w->is_current = cq_queue_is_current(cq_get_main_queue());
}

static cq_queue_t child; /* a serial queue targeting the main queue */
static struct from_worker w1, w2;

static void worker_syncs(void *ctx)
{
    cq_group_t g = ctx;
    cq_sync_f(cq_get_main_queue(), &w1, record);
    cq_sync_f(child, &w2, record);
    (void)g;
}

static void finish(void *ctx)
{
    (void)ctx;
    CHECK_EQ(seq_bad, 0);
    CHECK_EQ(next_seq, 2000);
    CHECK_EQ(ran_elsewhere, 0);
    CHECK_EQ(ran_on_main, 2000);
    CHECK_EQ(w1.tid, main_tid);
    CHECK(w1.is_current);
    CHECK_EQ(w2.tid, main_tid);
    CHECK(w2.is_current);
    CHECK(cq_queue_is_current(cq_get_main_queue()));
    CHECK(strcmp(cq_queue_get_label(NULL), cq_queue_get_label(cq_get_main_queue())) == 0);
    fprintf(stderr, test_failures ? "FAILED\n" : "all passed\n");
    exit(test_failures ? 1 : 0);
}

static void noop(void *ctx)
{
    (void)ctx;
}

int main(void)
{
    main_tid = gettid_();
    child = cq_queue_create("child-of-main", NULL);
    cq_set_target_queue(child, cq_get_main_queue());

    /* Before cq_main: a sync from the main thread runs the earlier main-queue tasks inline. */
    for (long i = 0; i < 1000; i++) {
        cq_async_f(cq_get_main_queue(), (void *)i, on_main);
    }
    cq_sync_f(cq_get_main_queue(), NULL, noop);
    CHECK_EQ(next_seq, 1000);

    for (long i = 1000; i < 2000; i++) {
        cq_async_f(cq_get_main_queue(), (void *)i, on_main);
    }
    cq_group_t g = cq_group_create();
    cq_group_async_f(g, cq_get_global_queue(0, 0), g, worker_syncs);
    cq_group_notify_f(g, cq_get_main_queue(), NULL, finish);
    cq_main();
}
