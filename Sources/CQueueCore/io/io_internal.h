/*
 * Dispatch I/O internals: the file engines (uring.c, io_pool.c) under the channels (io.c,
 * io_op.c, io_stream.c).
 *
 * A request (struct cq__io_req) is one positioned read or write of a regular file, or one
 * blocking job (open()). cq__io_file_submit hands it to the engine chosen once per process:
 *   io_uring  one ring, owned by the "cq-io" thread, which waits for completions; any thread
 *             submits (under the ring's lock); completions are called on the cq-io thread.
 *   threads   where io_uring_setup fails (or CQ_IO_URING=0 in the environment, read once): up
 *             to CQ__IO_POOL_MAX "cq-io-pool" threads doing blocking preadv/pwritev.
 * Blocking jobs always run on the pool. `done` runs on an engine thread: it must not block.
 */
#ifndef CQ_IO_INTERNAL_H
#define CQ_IO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "platform/atomic_internal.h"

#define CQ__IO_POOL_MAX 3

struct cq__io_req {
    struct cq__io_req *next; /* engine queue link */
    int fd;
    bool write;
    void *buf;
    size_t len;
    /* a file write's regions (io_op.c gathers up to WRITE_IOVS of them): the pool writes these
     * with one pwritev instead of buf/len (which name the first one: an engine that took only
     * buf/len would write less, which the operation takes as a partial write). Writes all go
     * to the pool (uring.c: cq__io_file_submit). */
    const struct iovec *iov;
    int iovcnt;
    uint64_t offset;
    /* a blocking job instead of a read or write: job(req) runs on a pool thread */
    void (*job)(struct cq__io_req *req);
    /* the result: bytes transferred (0: end of file), or -errno */
    void (*done)(struct cq__io_req *req, ssize_t result);
};

/* uring.c: hands `req` to the engine; `done` is called exactly once, on an engine thread. */
CQ_INTERNAL void cq__io_file_submit(struct cq__io_req *req);
/* "io_uring" or "threads" (chooses the engine if not chosen yet). */
CQ_INTERNAL const char *cq__io_file_engine(void);

/* io_pool.c: runs req->job(req), or the blocking read/write, on a pool thread. */
CQ_INTERNAL void cq__io_pool_submit(struct cq__io_req *req);

/* ---- channels and operations (io.c, io_op.c) ------------------------------------------- */

#include <pthread.h>

#include <cqueuecore/io.h>
#include <cqueuecore/source.h>

#include "platform/object_internal.h"

enum { CQ__IO_OP_READ, CQ__IO_OP_WRITE, CQ__IO_OP_BARRIER };

/* File reads keep up to this many requests in flight per operation (io_op.c: read-ahead). */
#define CQ__IO_READ_AHEAD 4

/* A file read issues no request while this many bytes it read wait in its deliveries for the
 * handler (io_op.c: fread_can_issue).
 * Twice a file's window: a handler's thread late by a few pieces (a wake-up behind a busy
 * CPU) does not stop the reading. */
#define CQ__IO_QUEUED_MAX ((size_t)8 << 20)
/* The same for a pipe or a socket: its producer is often on the same CPUs as the reading and
 * the handler's threads, and the handler's thread falls further behind at times (io_pipe ran
 * 10-15 % slower with 8 MiB, stopping hundreds of times per GiB; not with 32). */
#define CQ__IO_STREAM_QUEUED_MAX ((size_t)32 << 20)

/* One request of a file read's window: issued in file order, consumed in file order. */
struct cq__io_freq {
    struct cq__io_req req;
    struct cq__io_op *op;
    void *buf;   /* the buffer the engine reads into (req.len bytes), until consumed */
    ssize_t res; /* the engine's result, once `done` */
    bool done;
};

/* One handler call waiting to run (the op's deliveries run one at a time, in order). */
struct cq__io_delivery {
    struct cq__io_delivery *next;
    bool done;
    cq_data_t data; /* owned; NULL allowed */
    int error;
};

/*
 * An operation. Everything but `refs` is under its channel's lock. References: one while it
 * is not finished ("life", dropped after finishing), one per queued delivery run, one per
 * source (reader/writer, interval timer) until its cancel handler ran. The last one frees it
 * (io.c: cq__io_op_unref), and only then does the channel count it as gone.
 */
struct cq__io_op {
    struct cq__io_op *next;          /* waiting list, then the channel's deferred lists */
    struct cq__io_op *anext, *aprev; /* active list (doubly linked: retired in O(1)) */
    struct cq__io_op *unext;         /* the channel's to_unref list */
    struct cq_io_s *ch;
    int kind;
    _Atomic int refs;
    cq_queue_t queue; /* handlers (barrier: the channel's) */
    void *ctx;
    cq_io_handler_function_t handler;
    cq_function_t barrier;
    /* policies, taken when submitted */
    size_t low, high;
    bool low_set, strict;
    uint64_t interval;
    /* progress */
    int64_t offset;  /* files: where the next read/write goes; random: relative until start */
    size_t want;     /* read: bytes still wanted (SIZE_MAX: to EOF) */
    size_t progress; /* write: bytes written since the last partial delivery */
    cq_data_t acc;   /* read: read, not delivered yet */
    /* write: the data to write, of which the first `wr_done` bytes are written. A cursor (the
     * region holding byte wr_done, and how far into it) says where the next system call starts,
     * so a write of many regions is O(regions): the unwritten rest is made (a subrange, which
     * copies its records) only for a handler. Before, every partial write replaced `rest` by
     * its subrange: 32,000 regions of 4 bytes took 6 s to a file, 0.33 s to a socket. */
    cq_data_t rest;
    size_t wr_done, wr_region, wr_skip;
    /* write: the iovecs of the system call or file request in progress (wiov_one for data of
     * one region, else allocated for up to WRITE_IOVS at the first step; freed at the end) */
    struct iovec *wiov;
    size_t wiov_cap;
    struct iovec wiov_one;
    bool started, finished, stopped, stepping, again, final_queued;
    /* cq_read_f on a pipe or socket: done with what was available once some data has come
     * (a read that finds no more ends it), as libdispatch's dispatch_read */
    bool avail;
    unsigned inflight; /* file requests in the engine */
    /* deliveries */
    struct cq__io_delivery *dq_head, *dq_tail;
    size_t dq_bytes; /* read: bytes of data in the queued deliveries */
    bool rd_held;    /* stream read: stopped reading for the handler (io_op.c, stream_step) */
    bool delivering;
    /* engines */
    struct cq__io_req req; /* a file write's request */
    void *buf;             /* a stream read's buffer */
    size_t buf_len;
    /* file reads: the read-ahead window (io_op.c), a ring of requests in file order */
    struct cq__io_freq fr[CQ__IO_READ_AHEAD];
    unsigned fr_head, fr_n, fr_win; /* oldest, how many issued and not consumed, the limit */
    uint64_t ra_off;                /* where the next request reads */
    size_t ra_left;                 /* bytes not requested yet (SIZE_MAX: to EOF) */
    bool drain;                     /* discard the window's requests; then resume or end */
    bool rd_inline;                 /* the handler is cheap: its run reads the next piece */
    bool rd_slow;                   /* the handler's last call was not (io_op.c, fread_judge) */
    bool rd_cold;                   /* a piece was not in the page cache: the engine reads */
    bool rd_eof;                    /* a read returned 0: end (EOF) once the window is empty */
    int rd_err;                     /* the first error in file order: end with it likewise */
    cq_source_t src, timer;
    /* a barrier of a channel with relatives (cq_io_create_with_io): the fence it shares with
     * the barriers it put on them (io.c) */
    struct cq__io_fence *fence;
};

struct cq_io_s {
    struct cq__object obj;
    pthread_mutex_t lock;
    cq_io_type_t type;
    cq_queue_t queue; /* cleanup handler, barriers (retained) */
    void *cleanup_ctx;
    cq_io_cleanup_function_t cleanup;
    struct cq_io_s *parent; /* cq_io_create_with_io: the channel whose descriptor we use */
    char *path;             /* path channels: opened lazily */
    int oflag;
    mode_t mode;
    /* the descriptor, once ready: for cq_io_create_f, the channel's own duplicate of the
     * caller's (user_fd), closed at cleanup, so a caller that closes its descriptor early (or
     * whose descriptor number is reused by another open) cannot pull it from under the
     * channel's operations */
    int fd;
    int user_fd; /* what cq_io_get_descriptor returns (-1: fd itself) */
    bool dup_fd; /* fd is the channel's duplicate of user_fd */
    int err;     /* the error operations fail with (EBADF, the open errno), 0 if usable */
    bool ready, opening, owns_fd, is_file, is_sock, set_nonblock;
    int saved_flags;
    int64_t base; /* the position at creation (random offsets are relative to it) */
    int64_t pos;  /* stream channels on files: the next position */
    /* policies */
    size_t low, high;
    bool low_set, strict;
    uint64_t interval;
    /* state */
    bool closed, stopped, released, cleaned;
    bool failed;   /* an error found at creation: the cleanup handler runs at once (ch_created) */
    int failed_fd; /* then what cq_io_get_descriptor reports */
    bool avail;    /* cq_read_f's private channel: its read takes what is available (op->avail) */
    unsigned holders;     /* channels made with cq_io_create_with_io on our descriptor */
    unsigned outstanding; /* operations submitted and not freed */
    unsigned active_reads, active_writes, active_n;
    unsigned active_barriers; /* a running barrier: nothing else starts */
    struct cq__io_op *wait_head, *wait_tail, *active;
    /* the waiting operations of each kind: ch_pump stops its walk of the waiting list once no
     * operation further on could start (with 50,000 writes queued behind one, each finished
     * write walked all the others: quadratic) */
    unsigned wait_reads, wait_writes, wait_barriers;
    struct cq__io_op *to_start, *to_unref; /* done by cq__io_unlock */
    bool release_parent;
    /* the channels made from one another with cq_io_create_with_io (io.c, "families"):
     * NULL for a channel that has no relative; the list is under the families' lock */
    struct cq__io_family *family;
    struct cq_io_s *fam_next;
};

/* io.c */
CQ_INTERNAL void cq__io_unlock(struct cq_io_s *ch);
CQ_INTERNAL void cq__io_op_unref(struct cq__io_op *op);
/* cq_read_f: the channel's reads take what is available (see cq__io_op.avail). */
CQ_INTERNAL void cq__io_set_avail(cq_io_t channel);
/* cq_io_create_f's stream channel for a one-shot read or write, whose cleanup handler reports
 * the operation: it runs after the operation, also when the descriptor is not open. */
CQ_INTERNAL cq_io_t cq__io_create_oneshot(cq_fd_t fd, cq_queue_t queue, void *context,
                                          cq_io_cleanup_function_t cleanup);
/* Runs a barrier's function on its queue's thread, then ends it (io_op.c). */
CQ_INTERNAL void cq__io_barrier_run(void *ctx);
/* After a family's barrier ran: ends the barriers it put on its relatives (io.c). */
CQ_INTERNAL void cq__io_fence_lift(struct cq__io_fence *fence);
/* A barrier the channel let start (not under the lock): runs it, or, for one of a family's
 * barriers, counts it in and runs the barrier once its relatives have all let theirs start. */
CQ_INTERNAL void cq__io_barrier_start(struct cq__io_op *op);
/* An operation's I/O is over (under the lock): out of the active counts, others may start. */
CQ_INTERNAL void cq__io_op_retire(struct cq_io_s *ch, struct cq__io_op *op);

/* io_op.c (under the channel lock unless noted) */
CQ_INTERNAL void cq__io_deliver(struct cq__io_op *op, bool done, cq_data_t data, int error);
/* Ends the operation: the done call with `data` (owned) and `error`. */
CQ_INTERNAL void cq__io_op_finish(struct cq__io_op *op, cq_data_t data, int error);
/* Ends it with an error after delivering what was read (reads) or with the rest (writes). */
CQ_INTERNAL void cq__io_op_fail(struct cq__io_op *op, int error);
/* Starts an operation the channel has let go (not under the lock; `stepping` is set). */
CQ_INTERNAL void cq__io_op_start(struct cq__io_op *op);
/* A stop reached an active operation. */
CQ_INTERNAL void cq__io_op_stop(struct cq__io_op *op);

/* io_op.c: frees a read buffer of `cap` bytes (file chunks go back to the buffer cache). */
CQ_INTERNAL void cq__io_buf_free(void *b, size_t cap);

/* io_op.c, for tests: the file-chunk buffers in use (read into, or data not released yet),
 * their most at once since the last reset, how often a file read held back a request because
 * its handler had not taken what it read, the pieces read by handlers' runs (fread_inline), and
 * the buffers in the cache (given back by the trimmer). */
struct cq__io_buf_stats {
    size_t live, peak, holds, inlined, cached;
};
CQ_INTERNAL struct cq__io_buf_stats cq__io_buf_stats(bool reset_peak);

#endif /* CQ_IO_INTERNAL_H */
