/*
 * The file engine: io_uring through its raw system calls (no liburing), or the blocking pool.
 *
 * One ring of RING_ENTRIES submission entries, set up on first use. Submitters (any thread)
 * fill entries under ring_lock and call io_uring_enter to submit them; at most RING_ENTRIES
 * requests are in flight (the completion ring is twice that, so it never overflows), more wait
 * on an overflow list. The "cq-io" thread sleeps in io_uring_enter(GETEVENTS), calls the
 * `done` of each completion it found, then moves waiting requests into the ring; what those
 * `done` calls submitted (a read's next requests, io_op.c) goes in with that thread's one
 * io_uring_enter after the batch. Buffered reads that hit the page cache complete inside the
 * submitter's io_uring_enter; the others run in the kernel's io-wq workers, so no runtime
 * worker waits for a disk. (IOSQE_ASYNC, to have io-wq copy cached reads beside the cq-io
 * thread, measured no faster for a read-ahead window on 2 cores and cost more CPU.)
 *
 * The engine is chosen once: CQ_IO_URING=0 in the environment, or an io_uring_setup that
 * fails (ENOSYS, EPERM under seccomp, ...), selects the pool (io_pool.c). Writes always go to
 * the pool (see cq__io_file_submit).
 */
#include <errno.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "io/io_internal.h"
#include "platform/diag_internal.h"
#include "platform/fork_internal.h"
#include "platform/thread_start_internal.h"

#define RING_ENTRIES 256u

static struct {
    int fd;
    unsigned entries;
    /* submission ring (mapped) */
    _Atomic unsigned *sq_head, *sq_tail;
    unsigned *sq_mask, *sq_array;
    struct io_uring_sqe *sqes;
    /* completion ring (mapped) */
    _Atomic unsigned *cq_head, *cq_tail;
    unsigned *cq_mask;
    struct io_uring_cqe *cqes;
    /* under ring_lock */
    unsigned inflight, unsubmitted;
    struct cq__io_req *wait_head, *wait_tail;
} ring = {.fd = -1};

static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static bool use_uring;
static __thread bool on_io_thread; /* the cq-io thread: submissions wait for its batch's end */

static int sys_setup(unsigned entries, struct io_uring_params *p)
{
    return (int)syscall(__NR_io_uring_setup, entries, p);
}

static int sys_enter(unsigned to_submit, unsigned min_complete, unsigned flags)
{
    return (int)syscall(__NR_io_uring_enter, ring.fd, to_submit, min_complete, flags, NULL, 0);
}

static void *io_thread_main(void *arg);

static bool ring_setup(void)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    int fd = sys_setup(RING_ENTRIES, &p);
    if (fd < 0) {
        return false;
    }
    size_t sq_size = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_size = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    bool single = (p.features & IORING_FEAT_SINGLE_MMAP) != 0;
    if (single) {
        sq_size = cq_size = sq_size > cq_size ? sq_size : cq_size;
    }
    char *sq = mmap(NULL, sq_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                    IORING_OFF_SQ_RING);
    char *cq = sq;
    if (sq != MAP_FAILED && !single) {
        cq = mmap(NULL, cq_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                  IORING_OFF_CQ_RING);
    }
    struct io_uring_sqe *sqes = MAP_FAILED;
    if (sq != MAP_FAILED && cq != MAP_FAILED) {
        sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
    }
    if (sqes == MAP_FAILED) {
        close(fd); /* the mappings that worked stay: a few pages, once */
        return false;
    }
    ring.fd = fd;
    ring.entries = p.sq_entries;
    ring.sq_head = (_Atomic unsigned *)(void *)(sq + p.sq_off.head);
    ring.sq_tail = (_Atomic unsigned *)(void *)(sq + p.sq_off.tail);
    ring.sq_mask = (unsigned *)(void *)(sq + p.sq_off.ring_mask);
    ring.sq_array = (unsigned *)(void *)(sq + p.sq_off.array);
    ring.sqes = sqes;
    ring.cq_head = (_Atomic unsigned *)(void *)(cq + p.cq_off.head);
    ring.cq_tail = (_Atomic unsigned *)(void *)(cq + p.cq_off.tail);
    ring.cq_mask = (unsigned *)(void *)(cq + p.cq_off.ring_mask);
    ring.cqes = (struct io_uring_cqe *)(void *)(cq + p.cq_off.cqes);
    pthread_t t;
    if (cq__thread_start(&t, io_thread_main, NULL) != 0) {
        close(fd);
        ring.fd = -1;
        return false;
    }
    return true;
}

static void engine_choose(void)
{
    const char *env = getenv("CQ_IO_URING");
    if (env && strcmp(env, "0") == 0) {
        use_uring = false;
        return;
    }
    if (env && *env && strcmp(env, "1") != 0) {
        cq__report("ignoring CQ_IO_URING=%s (expected 0 to read and write files with a thread "
                   "pool, or 1)",
                   env);
    }
    use_uring = ring_setup();
}

const char *cq__io_file_engine(void)
{
    pthread_once(&engine_once, engine_choose);
    return use_uring ? "io_uring" : "threads";
}

/* Under ring_lock: one entry for `req` (a slot is known to be free). */
static void ring_push(struct cq__io_req *req)
{
    unsigned tail = cq__load(ring.sq_tail, relaxed); /* only we (under the lock) write it */
    unsigned idx = tail & *ring.sq_mask;
    struct io_uring_sqe *sqe = &ring.sqes[idx];
    memset(sqe, 0, sizeof *sqe);
    sqe->opcode = req->write ? IORING_OP_WRITE : IORING_OP_READ;
    sqe->fd = req->fd;
    sqe->addr = (uint64_t)(uintptr_t)req->buf;
    sqe->len = req->len > 0x7ffff000u ? 0x7ffff000u : (unsigned)req->len;
    sqe->off = req->offset;
    sqe->user_data = (uint64_t)(uintptr_t)req;
    ring.sq_array[idx] = idx;
    /* release: the entry is written before the kernel sees the new tail; pairs with the
     * kernel's acquire load of the tail */
    cq__store(ring.sq_tail, tail + 1, release);
    ring.inflight++;
    ring.unsubmitted++;
}

/* Under ring_lock: hands the filled entries to the kernel. */
static void ring_submit(void)
{
    while (ring.unsubmitted > 0) {
        int n = sys_enter(ring.unsubmitted, 0, 0);
        if (n > 0) {
            ring.unsubmitted -= (unsigned)n;
        } else if (n < 0 && errno != EINTR && errno != EAGAIN && errno != EBUSY) {
            cq__crash("io_uring_enter failed submitting file I/O (%s)", strerror(errno));
        } else if (n == 0 || errno == EAGAIN || errno == EBUSY) {
            /* the kernel is short of memory or completions: the cq-io thread submits the
             * rest after its next completions */
            break;
        }
    }
}

void cq__io_file_submit(struct cq__io_req *req)
{
    pthread_once(&engine_once, engine_choose);
    if (!use_uring || req->write) {
        /* Writes go to the blocking threads: a buffered write through io_uring on ext4 is
         * handed to one of the kernel's io-wq workers (25-30 us per write here), where pwrite
         * on a thread of ours takes 2-3 us: 20,000 writes of 256 bytes on a stream channel took
         * 1.40 s against 0.056 s, and of 64 KiB 1.23 s against 0.73 s (libdispatch: 0.12 s and
         * 0.91 s). Reads stay on io_uring, which completes a page-cache hit inline. */
        cq__io_pool_submit(req);
        return;
    }
    req->next = NULL;
    pthread_mutex_lock(&ring_lock);
    if (ring.inflight < ring.entries && ring.wait_head == NULL) {
        ring_push(req);
        if (!on_io_thread) {
            ring_submit(); /* the cq-io thread submits its own after its batch of completions */
        }
    } else {
        if (ring.wait_tail) {
            ring.wait_tail->next = req;
        } else {
            ring.wait_head = req;
        }
        ring.wait_tail = req;
    }
    pthread_mutex_unlock(&ring_lock);
}

static void *io_thread_main(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "cq-io", 0, 0, 0);
    on_io_thread = true;
    for (;;) {
        pthread_mutex_lock(&ring_lock);
        bool nothing_in_kernel = ring.unsubmitted > 0 && ring.inflight == ring.unsubmitted;
        pthread_mutex_unlock(&ring_lock);
        if (nothing_in_kernel) {
            /* The kernel refused the last submission (EAGAIN: short of memory) and holds no
             * request whose completion would wake us: try again shortly instead of waiting
             * for a completion that cannot come. */
            struct timespec pause = {0, 1000000};
            nanosleep(&pause, NULL);
            pthread_mutex_lock(&ring_lock);
            ring_submit();
            pthread_mutex_unlock(&ring_lock);
            continue;
        }
        int r = sys_enter(0, 1, IORING_ENTER_GETEVENTS);
        if (r < 0 && errno != EINTR && errno != EAGAIN && errno != EBUSY) {
            cq__crash("io_uring_enter failed waiting for file I/O (%s)", strerror(errno));
        }
        for (;;) {
            struct cq__io_req *reqs[64];
            ssize_t res[64];
            unsigned n = 0;
            unsigned head = cq__load(ring.cq_head, relaxed); /* only this thread writes it */
            /* acquire: the completion entries are written before the tail; pairs with the
             * kernel's release store of the tail */
            unsigned tail = cq__load(ring.cq_tail, acquire);
            while (head != tail && n < 64) {
                struct io_uring_cqe *cqe = &ring.cqes[head & *ring.cq_mask];
                reqs[n] = (struct cq__io_req *)(uintptr_t)cqe->user_data;
                res[n] = cqe->res == -EINTR ? -EAGAIN : cqe->res;
                n++;
                head++;
            }
            if (n == 0) {
                break;
            }
            /* release: we are done reading the entries before the kernel may reuse them;
             * pairs with the kernel's acquire load of the head */
            cq__store(ring.cq_head, head, release);
            pthread_mutex_lock(&ring_lock);
            ring.inflight -= n;
            pthread_mutex_unlock(&ring_lock);
            for (unsigned i = 0; i < n; i++) {
                reqs[i]->done(reqs[i], res[i]);
            }
        }
        pthread_mutex_lock(&ring_lock);
        while (ring.wait_head && ring.inflight < ring.entries) {
            struct cq__io_req *req = ring.wait_head;
            ring.wait_head = req->next;
            if (ring.wait_head == NULL) {
                ring.wait_tail = NULL;
            }
            ring_push(req);
        }
        ring_submit();
        pthread_mutex_unlock(&ring_lock);
    }
    return NULL;
}

/* ---- fork() (platform/fork_internal.h) ---------------------------------------------------------
 * The ring belongs to the parent: its descriptor and its MAP_SHARED rings are the same kernel
 * object in both processes, so the child must never submit to it. The child forgets it (closes
 * its copy of the descriptor; the mappings stay, unused) and sets up its own ring on first use.
 * Requests in flight at the fork complete in the parent only, as timers are dropped in the
 * child (docs/fork.md).
 */
static void uring_fork_prepare(void)
{
    pthread_mutex_lock(&ring_lock);
}

static void uring_fork_parent(void)
{
    pthread_mutex_unlock(&ring_lock);
}

static void uring_fork_child(void)
{
    if (ring.fd >= 0) {
        close(ring.fd);
    }
    memset(&ring, 0, sizeof ring);
    ring.fd = -1;
    use_uring = false;
    engine_once = (pthread_once_t)PTHREAD_ONCE_INIT;
    pthread_mutex_unlock(&ring_lock);
}

CQ__FORK_REGISTER(uring, CQ__FORK_RANK_IO, uring_fork_prepare, uring_fork_parent, uring_fork_child)
