/*
 * The blocking pool: "cq-io-pool" threads that run blocking jobs (open() of a path channel), the
 * positioned writes of regular files and, when io_uring is unavailable, their reads. Up to
 * CQ__IO_POOL_MAX threads start as work arrives (one more while work waits, none is idle and
 * fewer than the maximum exist). A job may block for ever (the open of a FIFO without a
 * writer): when one has been running for CQ__IO_JOB_PATIENCE_NS while work waits and no thread
 * is idle, the pool starts one more thread for it (up to CQ__IO_POOL_HARD_MAX in all), so that
 * jobs never hold back the writes. Threads beyond CQ__IO_POOL_MAX leave once they have been
 * idle for CQ__IO_POOL_IDLE_NS. (Each job used to start a thread at once while work waited:
 * 1,000 quick opens grew the pool to 64 threads, which stayed for ever.) Jobs run in the order
 * queued but may finish in any order: a read's read-ahead window (io_op.c) has several of its
 * requests on different threads at once and puts their results back in order.
 */
#include <cqueuecore/queue.h>
#include <cqueuecore/source.h> /* cq_after_f */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "io/io_internal.h"
#include "platform/diag_internal.h"
#include "platform/fork_internal.h"
#include "platform/thread_start_internal.h"

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_cond = PTHREAD_COND_INITIALIZER;
static struct cq__io_req *pool_head, *pool_tail;
/* pool_jobs: threads inside a job (an open), which may block for ever (a FIFO without a
 * writer): once one has run for CQ__IO_JOB_PATIENCE_NS they do not count against
 * CQ__IO_POOL_MAX (job_check), or three such opens held back every file write, which this pool
 * does (uring.c). At most CQ__IO_POOL_HARD_MAX threads in all. check_armed: a job_check is
 * due. */
static unsigned pool_threads, pool_idle, pool_jobs;
static bool check_armed;
#define CQ__IO_POOL_HARD_MAX 64u
#define CQ__IO_JOB_PATIENCE_NS 5000000ll /* 5 ms */
#define CQ__IO_POOL_IDLE_NS 2000000000ll /* 2 s */

static void pool_run(struct cq__io_req *req)
{
    if (req->job) {
        req->job(req);
        return;
    }
    struct iovec one = {.iov_base = req->buf, .iov_len = req->len};
    const struct iovec *iov = req->iov ? req->iov : &one; /* a write's gathered regions */
    int cnt = req->iov ? req->iovcnt : 1;
    ssize_t n;
    do {
        n = req->write ? pwritev(req->fd, iov, cnt, (off_t)req->offset)
                       : preadv(req->fd, iov, cnt, (off_t)req->offset);
    } while (n < 0 && errno == EINTR);
    req->done(req, n < 0 ? -errno : n);
}

static void *pool_main(void *arg);

/* Under pool_lock: whether work waits with no idle thread and room for one more, the threads
 * inside jobs counted (`jobs_aside` false) or not; if so, counts the thread the caller starts
 * (start_thread) once it has dropped the lock. */
static bool need_thread(bool jobs_aside)
{
    unsigned counted = jobs_aside ? pool_threads - pool_jobs : pool_threads;
    bool start = pool_head != NULL && pool_idle == 0 && counted < CQ__IO_POOL_MAX &&
                 pool_threads < CQ__IO_POOL_HARD_MAX;
    pool_threads += start;
    return start;
}

/* Under pool_lock: whether jobs run while work waits with no idle thread; if so, and no check
 * is due yet, the caller arms one (arm_check) once it has dropped the lock. */
static bool check_due(void)
{
    bool arm = !check_armed && pool_jobs > 0 && pool_head != NULL && pool_idle == 0 &&
               pool_threads < CQ__IO_POOL_HARD_MAX;
    check_armed |= arm;
    return arm;
}

static void job_check(void *arg);
static void start_thread(void);

static void arm_check(void)
{
    cq_after_f(cq_time(CQ_TIME_NOW, CQ__IO_JOB_PATIENCE_NS),
               cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), NULL, job_check);
}

/* CQ__IO_JOB_PATIENCE_NS after a job started while work waited: if work still waits with no
 * idle thread, the jobs running no longer count against CQ__IO_POOL_MAX (one of them may never
 * end): one more thread. Again later while that lasts. */
static void job_check(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&pool_lock);
    check_armed = false;
    bool start = need_thread(true);
    bool again = check_due();
    pthread_mutex_unlock(&pool_lock);
    if (start) {
        start_thread();
    }
    if (again) {
        arm_check();
    }
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
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until); /* pool_cond's clock */
            until.tv_sec += CQ__IO_POOL_IDLE_NS / 1000000000ll;
            pool_idle++;
            int err = pthread_cond_timedwait(&pool_cond, &pool_lock, &until);
            pool_idle--;
            if (err == ETIMEDOUT && pool_head == NULL && pool_threads > CQ__IO_POOL_MAX) {
                pool_threads--; /* idle, and more threads than the pool keeps: leave */
                pthread_mutex_unlock(&pool_lock);
                return NULL;
            }
        }
        struct cq__io_req *req = pool_head;
        pool_head = req->next;
        if (pool_head == NULL) {
            pool_tail = NULL;
        }
        bool job = req->job != NULL;
        pool_jobs += job;
        /* A job may block for ever: if it is still running a while from now and work waits,
         * that work gets a thread of its own (job_check) */
        bool arm = job && check_due();
        pthread_mutex_unlock(&pool_lock);
        if (arm) {
            arm_check();
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
    bool start = need_thread(false);
    bool arm = check_due(); /* jobs running, none idle: work may wait behind a blocked one */
    pthread_mutex_unlock(&pool_lock);
    /* After the unlock: signalled under it, a pool thread woken on this CPU could preempt us
     * only to block on the lock we held (see park in scheduler/overcommit.c). A waiter looks at
     * the list under the lock before it waits, so none misses the request. */
    pthread_cond_signal(&pool_cond);
    if (start) {
        start_thread();
    }
    if (arm) {
        arm_check();
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
    check_armed = false; /* a check due in the parent fires there, not here */
    pthread_cond_init(&pool_cond, NULL);
    pthread_mutex_unlock(&pool_lock);
}

CQ__FORK_REGISTER(io_pool, CQ__FORK_RANK_IO, pool_fork_prepare, pool_fork_parent, pool_fork_child)
