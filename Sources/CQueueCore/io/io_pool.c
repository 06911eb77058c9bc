/*
 * The blocking pool: up to CQ__IO_POOL_MAX threads ("cq-io-pool"), besides those inside a job,
 * that run blocking jobs (open() of a path channel), the positioned writes of regular files
 * and, when io_uring is unavailable, their reads. Threads start as work arrives (one more while
 * work waits and fewer than the maximum run) and then stay, asleep on a condition variable. Jobs
 * run in the order queued but may finish in any order: a read's read-ahead window (io_op.c) has
 * several of its requests on different threads at once and puts their results back in order.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io/io_internal.h"
#include "platform/diag_internal.h"
#include "platform/fork_internal.h"
#include "platform/thread_start_internal.h"

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_cond = PTHREAD_COND_INITIALIZER;
static struct cq__io_req *pool_head, *pool_tail;
/* pool_jobs: threads inside a job (an open), which may block for ever (a FIFO without a
 * writer): they do not count against CQ__IO_POOL_MAX, or three such opens held back every
 * file write, which this pool does (uring.c). At most CQ__IO_POOL_HARD_MAX threads in all. */
static unsigned pool_threads, pool_idle, pool_jobs;
#define CQ__IO_POOL_HARD_MAX 64u

static void pool_run(struct cq__io_req *req)
{
    if (req->job) {
        req->job(req);
        return;
    }
    struct iovec iov = {.iov_base = req->buf, .iov_len = req->len};
    ssize_t n;
    do {
        n = req->write ? pwritev(req->fd, &iov, 1, (off_t)req->offset)
                       : preadv(req->fd, &iov, 1, (off_t)req->offset);
    } while (n < 0 && errno == EINTR);
    req->done(req, n < 0 ? -errno : n);
}

static void *pool_main(void *arg);

/* Under pool_lock: whether work waits with no idle thread and room for one more; if so, counts
 * the thread the caller starts (start_thread) once it has dropped the lock. */
static bool need_thread(void)
{
    bool start = pool_head != NULL && pool_idle == 0 &&
                 pool_threads - pool_jobs < CQ__IO_POOL_MAX && pool_threads < CQ__IO_POOL_HARD_MAX;
    pool_threads += start;
    return start;
}

static void start_thread(void)
{
    pthread_t t;
    int err = cq__thread_start(&t, pool_main, NULL);
    if (err) {
        pthread_mutex_lock(&pool_lock);
        unsigned left = --pool_threads;
        pthread_mutex_unlock(&pool_lock);
        if (left == 0) {
            cq__crash("cannot start an I/O pool thread (%s)", strerror(err));
        }
    }
}

static void *pool_main(void *arg)
{
    (void)arg;
    /* Its own name, not its creator's (a worker's, or the monitor's): perf, top and the
     * introspection name threads by it */
    pthread_setname_np(pthread_self(), "cq-io-pool");
    pthread_mutex_lock(&pool_lock);
    for (;;) {
        while (pool_head == NULL) {
            pool_idle++;
            pthread_cond_wait(&pool_cond, &pool_lock);
            pool_idle--;
        }
        struct cq__io_req *req = pool_head;
        pool_head = req->next;
        if (pool_head == NULL) {
            pool_tail = NULL;
        }
        bool job = req->job != NULL;
        pool_jobs += job;
        /* A job may block for ever: what waits behind it gets a thread of its own */
        bool start = job && need_thread();
        pthread_mutex_unlock(&pool_lock);
        if (start) {
            start_thread();
        }
        pool_run(req);
        pthread_mutex_lock(&pool_lock);
        pool_jobs -= job;
    }
    return NULL;
}

void cq__io_pool_submit(struct cq__io_req *req)
{
    req->next = NULL;
    pthread_mutex_lock(&pool_lock);
    if (pool_tail) {
        pool_tail->next = req;
    } else {
        pool_head = req;
    }
    pool_tail = req;
    bool start = need_thread();
    pthread_cond_signal(&pool_cond);
    pthread_mutex_unlock(&pool_lock);
    if (start) {
        start_thread();
    }
}

/* ---- fork() (platform/fork_internal.h): the child has none of the pool's threads; the jobs
 * queued at the fork are the parent's to run (running them here too would do each read or
 * write twice), so the child starts with an empty pool that grows again on use. */
static void pool_fork_prepare(void)
{
    pthread_mutex_lock(&pool_lock);
}

static void pool_fork_parent(void)
{
    pthread_mutex_unlock(&pool_lock);
}

static void pool_fork_child(void)
{
    pool_head = pool_tail = NULL;
    pool_threads = pool_idle = pool_jobs = 0;
    pthread_cond_init(&pool_cond, NULL);
    pthread_mutex_unlock(&pool_lock);
}

CQ__FORK_REGISTER(io_pool, CQ__FORK_RANK_IO, pool_fork_prepare, pool_fork_parent, pool_fork_child)
