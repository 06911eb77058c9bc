/*
 * Dispatch I/O operations: reading and writing, on the reactor for pipes and sockets (non-
 * blocking calls, a READ/WRITE source when the descriptor would block) or through the file
 * engine for regular files; partial deliveries by the water marks and the interval; the
 * handler calls, one at a time and in order, on the operation's queue.
 *
 * `stepping` marks the one thread that drives the operation's I/O at a time (a step of a
 * stream, a file read issuing requests, the gap between a file write's completion and its next
 * request): a stop that finds it set leaves the ending to that thread. `inflight`: how many of
 * the operation's file requests are in the engine; a stop that finds any leaves the ending to
 * their completions.
 *
 * File reads read ahead. A window of up to CQ__IO_READ_AHEAD requests (each of at most 1 MiB
 * or the high-water mark, into its own buffer from the cache below) is in flight, kept in file
 * order in op->fr; it starts at one request and grows by one per full piece, so a small file
 * costs what it did. Completions come in any order: each marks its request done, then the
 * done requests at the head of the window become data (read_got: water marks, length,
 * deliveries), so bytes are delivered in file order. No request reaches past the length asked
 * for. A short read (the end of the file), an error or a stop drains the window: the requests
 * after it are discarded as they complete, and once the window is empty the operation ends
 * (EOF, the first error in file order after the bytes before it, ECANCELED) or, after a short
 * read that was not the end, goes on from where it stopped. An operation never ends with a
 * request in the engine, so no buffer the kernel may still write is freed or reused, and the
 * operation (and its channel's descriptor) outlives its requests. One thread issues at a time
 * (`stepping`, outside the lock); completions that arrive meanwhile only consume, the issuer
 * sees the room they made when it relocks; the issuer holds a reference, as the completion of
 * its last request may end the operation before it relocks. On io_uring a warm window runs in
 * batches: the cq-io thread consumes the completions it found (their deliveries join a running
 * delivery task), then submits the requests they made room for with one io_uring_enter, inside
 * which the kernel copies them from the page cache; so the wake-ups, locks and system calls
 * per piece are shared by the batch, and a cold file has several requests queued on the
 * device. A cheap handler (fread_judge) has its own delivery run read the pieces instead, one
 * after another on its thread, as a read(2) loop would, with RWF_NOWAIT so that a piece outside
 * the page cache goes back to the engine (fread_inline); the hand-offs to and from the cq-io
 * thread cost more than such a handler gains from reading beside it.
 * A read runs ahead of its handler by at most CQ__IO_QUEUED_MAX bytes waiting in its
 * deliveries (CQ__IO_STREAM_QUEUED_MAX for a pipe or a socket): past that it issues nothing
 * (reads nothing more, leaving the rest in the kernel), and the delivery that takes them below
 * it goes on; so a handler slower than the disk or the peer holds a few megabytes, not the
 * file or the stream. Writes go one request at a time; each system call (writev, sendmsg, a
 * file's pwritev) takes up to WRITE_IOVS regions of the data from a cursor into it.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io/data_internal.h"
#include "io/io_internal.h"
#include "platform/diag_internal.h"
#include "platform/fork_internal.h"
#include "platform/time_internal.h"
#include "scheduler/task_internal.h"

#define FILE_CHUNK ((size_t)1 << 20)    /* one file request */
#define STREAM_FIRST ((size_t)64 << 10) /* a stream's first read buffer (a pipe's capacity) */
#define STREAM_MAX ((size_t)1 << 20)    /* doubled up to this while reads fill it */
/* Regions one write's system call takes (IOV_MAX on Linux). A data object built from many small
 * pieces went out 16 regions per writev or sendmsg, and one region per file request: 32,000
 * regions of 4 bytes took 32,000 pwrite calls (libdispatch gathers up to IOV_MAX). */
#define WRITE_IOVS ((size_t)1024)

static size_t min3(size_t a, size_t b, size_t c)
{
    size_t m = a < b ? a : b;
    return m < c ? m : c;
}

/* ---- read buffers ------------------------------------------------------------------------
 * Buffers of exactly FILE_CHUNK bytes come back here when the data object made of them is
 * released (at once, on the releasing thread: cq__data_create_recycled), so a long read reuses
 * a few mapped, already-faulted and cache-warm megabytes instead of mapping fresh ones for
 * every piece; the cache is a stack, so the buffer released last is the next one read into.
 *
 * Where a buffer starts matters as much: the kernel copies a page into a buffer that starts 8
 * to 24 bytes past a page boundary (where glibc's malloc puts a block, after its 16-byte
 * header) at 2.5 to 8 times the cost of one that starts on a cache line (here 190 against 60
 * ms/GiB from the page cache; the loads from the page and the stores to the buffer seem to
 * alias). So a file chunk is a mapping of its own (page-aligned), and the smaller buffers of
 * stream reads start on a cache line. Before, a file read through a channel ran at the loop's
 * speed or at less than half of it, depending on where the heap happened to place buffers. */
#define BUF_ALIGN 64

#define BUF_CACHE 16

static pthread_mutex_t buf_lock = PTHREAD_MUTEX_INITIALIZER;
static void *buf_cache[BUF_CACHE];
static int buf_cached;
static size_t buf_live, buf_peak;   /* file chunks out of the cache, and their most (tests) */
static _Atomic size_t read_holds;   /* see fread_next (tests) */
static _Atomic size_t read_inlined; /* see fread_inline (tests) */

static void *buf_get(size_t size)
{
    void *b = NULL;
    if (size == FILE_CHUNK) {
        pthread_mutex_lock(&buf_lock);
        if (buf_cached > 0) {
            b = buf_cache[--buf_cached];
        }
        if (++buf_live > buf_peak) {
            buf_peak = buf_live;
        }
        pthread_mutex_unlock(&buf_lock);
        if (b == NULL) {
            b = mmap(NULL, FILE_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (b == MAP_FAILED) {
                cq__crash("out of memory for a read buffer");
            }
        }
        return b;
    }
    if (posix_memalign(&b, BUF_ALIGN, size) != 0) {
        cq__crash("out of memory for a read buffer");
    }
    return b;
}

/* ---- stream read buffers -------------------------------------------------------------------
 * A stream read that finds nothing to read (EAGAIN) waits for its source without a buffer: a
 * service with thousands of idle connections, each with a read pending, would otherwise keep
 * STREAM_FIRST bytes of heap per connection (2,000 idle pipes: 131 MB of heap in use, where
 * libdispatch kept 3-9 MB). The buffer goes into one shared spare slot instead (freed if the
 * slot is taken), so a stream that wakes, reads and waits again does not go through malloc's
 * large-chunk paths every time: the next read takes the spare. A buffer that had grown past
 * STREAM_FIRST (a fast stream) goes back as any buffer; its size stays with the operation. */
static _Atomic(void *) stream_spare;

static void *stream_buf_get(size_t size)
{
    if (size == STREAM_FIRST && cq__load(&stream_spare, relaxed) != NULL) {
        /* acquire: pairs with the release exchange in stream_buf_put */
        void *b = cq__xchg(&stream_spare, NULL, acquire);
        if (b != NULL) {
            return b;
        }
    }
    return buf_get(size);
}

static void stream_buf_put(void *b, size_t size)
{
    if (size == STREAM_FIRST) {
        /* acq_rel: gives b to the next taker and takes the one there (if any) from the last
         * putter; pairs with itself and with stream_buf_get's acquire exchange */
        free(cq__xchg(&stream_spare, b, acq_rel));
    } else {
        cq__io_buf_free(b, size); /* STREAM_MAX is a file chunk's size: its cache */
    }
}

/* The trimmer's hook: a process that has stopped reading files gives the cached buffers
 * back, as it does its task arenas (scheduler/task.c: after a quiet 500 ms or more). */
static void buf_trim(void)
{
    free(cq__xchg(&stream_spare, NULL, acquire)); /* pairs with stream_buf_put's exchange */
    void *free_now[BUF_CACHE];
    pthread_mutex_lock(&buf_lock);
    int n = buf_cached;
    memcpy(free_now, buf_cache, (size_t)n * sizeof free_now[0]);
    buf_cached = 0;
    pthread_mutex_unlock(&buf_lock);
    for (int i = 0; i < n; i++) {
        munmap(free_now[i], FILE_CHUNK);
    }
}

/* fork() (platform/fork_internal.h): no buffer taken or given back half-way; the cached
 * buffers are the child's copies. */
static void buf_fork_prepare(void)
{
    pthread_mutex_lock(&buf_lock);
}

static void buf_fork_after(void)
{
    pthread_mutex_unlock(&buf_lock);
}

CQ__FORK_REGISTER(io_buffers, CQ__FORK_RANK_IO, buf_fork_prepare, buf_fork_after, buf_fork_after)

static pthread_once_t buf_hook_once = PTHREAD_ONCE_INIT;

static void buf_hook(void)
{
    cq__trim_add_hook(buf_trim);
}

static void buf_recycle(void *b)
{
    pthread_mutex_lock(&buf_lock);
    buf_live--;
    if (buf_cached < BUF_CACHE) {
        buf_cache[buf_cached++] = b;
        b = NULL;
    }
    pthread_mutex_unlock(&buf_lock);
    if (b != NULL) {
        munmap(b, FILE_CHUNK);
        return;
    }
    pthread_once(&buf_hook_once, buf_hook);
    cq__trim_later(); /* cheap while a trim is due */
}

struct cq__io_buf_stats cq__io_buf_stats(bool reset_peak)
{
    pthread_mutex_lock(&buf_lock);
    struct cq__io_buf_stats st = {buf_live, buf_peak, cq__load(&read_holds, relaxed),
                                  cq__load(&read_inlined, relaxed), (size_t)buf_cached};
    if (reset_peak) {
        buf_peak = buf_live;
    }
    pthread_mutex_unlock(&buf_lock);
    return st;
}

/* A buffer of `cap` bytes that is not data (and not in the engine) goes back. */
void cq__io_buf_free(void *b, size_t cap)
{
    if (cap == FILE_CHUNK) {
        buf_recycle(b);
    } else {
        free(b);
    }
}

static void op_ref(struct cq__io_op *op)
{
    cq__add(&op->refs, 1, relaxed); /* the caller holds one */
}

/* ---- deliveries ----------------------------------------------------------------------------- */

static bool fread_room(const struct cq__io_op *op);
static bool fread_can_issue(const struct cq__io_op *op);
static void fread_issue(struct cq__io_op *op);
static void fread_inline(struct cq__io_op *op);
static void fread_judge(struct cq__io_op *op, uint64_t took_ns, size_t bytes);
static void stream_step(struct cq__io_op *op, bool owned);

/* Pieces one delivery run reads itself (fread_inline) before it lets the queue's other work
 * run: about a millisecond of copying (32 cost a little less CPU in io_file_warm, and holds the
 * queue twice as long). */
#define INLINE_RUN 16

enum { STEP_NONE, STEP_ENGINE, STEP_INLINE, STEP_STREAM };

static void delivery_run(void *ctx)
{
    struct cq__io_op *op = ctx;
    struct cq_io_s *ch = op->ch;
    /* read under the lock: a path channel closed while its open waited delivers its
     * operations' ends while the open may still return and set up the descriptor (ch_set_fd) */
    int file_read = -1;
    uint64_t took = 0;     /* the last handler call's time ... */
    size_t took_bytes = 0; /* ... for a piece of this many bytes (0: none) */
    unsigned inlined = 0;
    for (;;) {
        pthread_mutex_lock(&ch->lock);
        if (file_read < 0) {
            file_read = op->kind == CQ__IO_OP_READ && ch->is_file;
        }
        struct cq__io_delivery *d = op->dq_head;
        int step = STEP_NONE;
        if (file_read) {
            if (took_bytes) {
                fread_judge(op, took, took_bytes);
                took_bytes = 0;
            }
            /* A read that held its requests back until the handler took what it had read
             * goes on from here (its last requests may have completed long ago); with a cheap
             * handler, the next piece is read here once the handler has had all the others. */
            if (!op->stepping && fread_can_issue(op)) {
                step = !op->rd_inline               ? STEP_ENGINE
                       : op->fr_n == 0 && d == NULL ? STEP_INLINE
                                                    : STEP_NONE;
            }
            if (step == STEP_INLINE && inlined == INLINE_RUN) {
                pthread_mutex_unlock(&ch->lock);
                cq_async_f(op->queue, op, delivery_run); /* with our reference */
                return;
            }
            op->stepping = op->stepping || step != STEP_NONE;
        } else if (op->rd_held && !op->stepping && !op->finished &&
                   op->dq_bytes < CQ__IO_STREAM_QUEUED_MAX) {
            op->rd_held = false; /* a stream read that stopped for the handler goes on */
            op->stepping = true;
            step = STEP_STREAM;
        }
        if (d != NULL) {
            op->dq_head = d->next;
            if (op->dq_head == NULL) {
                op->dq_tail = NULL;
            }
            if (op->kind == CQ__IO_OP_READ && d->data) {
                op->dq_bytes -= cq_data_get_size(d->data);
            }
        } else if (step != STEP_INLINE) {
            op->delivering = false;
        }
        pthread_mutex_unlock(&ch->lock);
        if (step == STEP_INLINE) {
            fread_inline(op); /* its piece is the next delivery */
            inlined++;
            continue;
        }
        if (step == STEP_ENGINE) {
            fread_issue(op);
        } else if (step == STEP_STREAM) {
            stream_step(op, true);
        }
        if (d == NULL) {
            break;
        }
        bool piece = file_read && d->data && !d->done;
        uint64_t t0 = piece ? cq__now_ns() : 0;
        op->handler(op->ctx, d->done, d->data, d->error);
        if (piece) {
            took = cq__now_ns() - t0;
            took_bytes = cq_data_get_size(d->data);
        }
        if (d->data) {
            cq_release(d->data);
        }
        free(d);
    }
    cq__io_op_unref(op);
}

void cq__io_deliver(struct cq__io_op *op, bool done, cq_data_t data, int error)
{
    struct cq__io_delivery *d = malloc(sizeof *d);
    if (d == NULL) {
        cq__crash("out of memory delivering I/O results");
    }
    *d = (struct cq__io_delivery){.done = done, .data = data, .error = error};
    if (op->kind == CQ__IO_OP_READ && data) {
        op->dq_bytes += cq_data_get_size(data);
    }
    if (op->dq_tail) {
        op->dq_tail->next = d;
    } else {
        op->dq_head = d;
    }
    op->dq_tail = d;
    if (!op->delivering) {
        op->delivering = true;
        op_ref(op);
        cq_async_f(op->queue, op, delivery_run);
    }
}

/* ---- writes: the cursor into the data ------------------------------------------------------ */

/* Under the lock: the unwritten rest of a write's data (a new reference), for a handler. Costs
 * a record per region left: made only when a handler is called. */
static cq_data_t write_rest(const struct cq__io_op *op)
{
    return cq_data_create_subrange(op->rest, op->wr_done, SIZE_MAX);
}

/* Under the lock, by the thread that owns the operation: points op->wiov at the next bytes to
 * write, from the cursor on, up to WRITE_IOVS regions and `limit` bytes; returns how many. */
static int write_gather(struct cq__io_op *op, size_t limit)
{
    size_t regions = cq_data_get_region_count(op->rest);
    if (op->wiov == NULL) {
        /* the regions left only get fewer: this many iovecs do for every later step */
        size_t cap = regions - op->wr_region;
        cap = cap < WRITE_IOVS ? cap : WRITE_IOVS;
        if (cap <= 1) {
            op->wiov = &op->wiov_one; /* one buffer, the usual write: no allocation */
            cap = 1;
        } else if ((op->wiov = malloc(cap * sizeof *op->wiov)) == NULL) {
            cq__crash("out of memory writing %zu regions", regions);
        }
        op->wiov_cap = cap;
    }
    size_t total = 0, skip = op->wr_skip;
    int cnt = 0;
    for (size_t i = op->wr_region; i < regions && (size_t)cnt < op->wiov_cap && total < limit;
         i++) {
        size_t sz;
        const uint8_t *p = cq_data_get_region(op->rest, i, &sz, NULL);
        sz -= skip;
        sz = sz < limit - total ? sz : limit - total;
        op->wiov[cnt++] = (struct iovec){.iov_base = (void *)(uintptr_t)(p + skip), .iov_len = sz};
        total += sz;
        skip = 0;
    }
    return cnt;
}

/* Under the lock: `n` more bytes were written; the cursor moves past them (through the regions
 * they cover: each region is passed once in the whole write). */
static void write_advance(struct cq__io_op *op, size_t n)
{
    op->wr_done += n;
    while (n > 0) {
        size_t sz;
        (void)cq_data_get_region(op->rest, op->wr_region, &sz, NULL);
        if (n < sz - op->wr_skip) {
            op->wr_skip += n;
            return;
        }
        n -= sz - op->wr_skip;
        op->wr_region++;
        op->wr_skip = 0;
    }
}

/* Under the lock, as a write ends: nothing is being written any more (an operation ends before
 * it started, from the thread that drives it, or from a stop that finds no thread driving it
 * and no request in the engine), so the data and the iovecs that point into it go. */
static void write_end(struct cq__io_op *op)
{
    if (op->wiov != &op->wiov_one) {
        free(op->wiov);
    }
    op->wiov = NULL;
    if (op->rest) {
        cq_release(op->rest);
        op->rest = NULL;
    }
}

void cq__io_op_finish(struct cq__io_op *op, cq_data_t data, int error)
{
    struct cq_io_s *ch = op->ch;
    if (op->finished) {
        if (data) {
            cq_release(data);
        }
        return;
    }
    op->finished = true;
    if (op->kind == CQ__IO_OP_WRITE) {
        write_end(op);
    }
    if (op->kind != CQ__IO_OP_BARRIER) {
        cq__io_deliver(op, true, data, error);
    }
    if (op->timer) {
        cq_source_cancel(op->timer);
    }
    if (op->src) {
        cq_source_cancel(op->src);
    }
    cq__io_op_retire(ch, op);
    op->unext = ch->to_unref; /* its life reference */
    ch->to_unref = op;
}

void cq__io_op_fail(struct cq__io_op *op, int error)
{
    if (op->kind == CQ__IO_OP_READ) {
        if (op->acc && cq_data_get_size(op->acc) > 0) {
            cq__io_deliver(op, false, op->acc, 0);
            op->acc = cq_data_empty;
        }
        cq__io_op_finish(op, NULL, error);
    } else if (op->kind == CQ__IO_OP_WRITE) {
        cq__io_op_finish(op, op->rest ? write_rest(op) : NULL, error);
    } else {
        cq__io_op_finish(op, NULL, error);
    }
}

void cq__io_op_stop(struct cq__io_op *op)
{
    op->stopped = true;
    if (op->kind != CQ__IO_OP_BARRIER && !op->stepping && op->inflight == 0) {
        cq__io_op_fail(op, ECANCELED);
    }
}

/* ---- progress (under the lock) ----------------------------------------------------------- */

static size_t low_of(const struct cq__io_op *op)
{
    return op->low_set ? op->low : 1;
}

/* `n` bytes were read into `b` (of `cap` bytes, now ours): they become data. */
static void read_got(struct cq__io_op *op, void *b, size_t cap, size_t n)
{
    bool recycle = false;
    if (n < cap / 2 && cap > 4096) {
        if (cap == FILE_CHUNK) {
            void *s = malloc(n);
            if (s == NULL) {
                cq__crash("out of memory for a read buffer");
            }
            memcpy(s, b, n);
            buf_recycle(b);
            b = s;
        } else {
            void *s = realloc(b, n);
            b = s ? s : b;
        }
    } else if (cap == FILE_CHUNK) {
        recycle = true;
    }
    cq_data_t d =
        recycle ? cq__data_create_recycled(b, n, buf_recycle) : cq__data_create_owned(b, n);
    if (d == NULL) {
        cq__crash("out of memory wrapping read bytes");
    }
    cq_data_t acc = cq_data_create_concat(op->acc, d);
    cq_release(op->acc);
    cq_release(d);
    op->acc = acc;
    if (op->want != SIZE_MAX) {
        op->want -= n;
    }
    size_t size = cq_data_get_size(acc);
    while (op->high != SIZE_MAX && (size > op->high || (size == op->high && op->want != 0))) {
        cq_data_t part = cq_data_create_subrange(op->acc, 0, op->high);
        cq_data_t rest = cq_data_create_subrange(op->acc, op->high, SIZE_MAX);
        cq_release(op->acc);
        op->acc = rest;
        size -= op->high;
        cq__io_deliver(op, false, part, 0);
    }
    if (op->want == 0) {
        cq_data_t last = op->acc;
        op->acc = NULL;
        cq__io_op_finish(op, last, 0);
    } else if (op->interval == 0 && size > 0 && size >= low_of(op)) {
        cq__io_deliver(op, false, op->acc, 0);
        op->acc = cq_data_empty;
    }
}

static void read_eof(struct cq__io_op *op)
{
    if (cq_data_get_size(op->acc) > 0) {
        cq__io_deliver(op, false, op->acc, 0);
        op->acc = cq_data_empty;
    }
    cq__io_op_finish(op, cq_data_empty, 0);
}

static void write_done(struct cq__io_op *op, size_t n)
{
    write_advance(op, n);
    op->progress += n;
    if (op->wr_done == cq_data_get_size(op->rest)) {
        cq__io_op_finish(op, NULL, 0);
        return;
    }
    /* The high-water mark cuts the progress reports also when an interval is set (as reads
     * deliver high-water pieces, and as libdispatch does); the low-water mark only without one. */
    size_t trigger = op->low_set ? op->low : SIZE_MAX;
    trigger = trigger < op->high ? trigger : op->high;
    if (op->progress >= op->high || (op->interval == 0 && op->progress >= trigger)) {
        cq__io_deliver(op, false, write_rest(op), 0);
        op->progress = 0;
    }
}

/* ---- interval --------------------------------------------------------------------------- */

static void interval_fire(void *ctx)
{
    struct cq__io_op *op = ctx;
    struct cq_io_s *ch = op->ch;
    pthread_mutex_lock(&ch->lock);
    if (!op->finished) {
        if (op->kind == CQ__IO_OP_READ) {
            size_t size = cq_data_get_size(op->acc);
            if (op->strict || (size > 0 && size >= low_of(op))) {
                cq__io_deliver(op, false, op->acc, 0);
                op->acc = cq_data_empty;
            }
        } else if (op->strict || (op->progress > 0 && op->progress >= low_of(op))) {
            cq__io_deliver(op, false, write_rest(op), 0);
            op->progress = 0;
        }
    }
    cq__io_unlock(ch);
}

static void source_gone(void *ctx)
{
    cq__io_op_unref(ctx);
}

/* Makes a source on behalf of `op` (its handler: fn(op)); NULL with errno on failure. */
static cq_source_t op_source(struct cq__io_op *op, cq_source_type_t type, uintptr_t handle,
                             cq_function_t fn)
{
    cq_source_t s = cq_source_create(type, handle, 0, cq_get_global_queue(0, 0));
    if (s == NULL) {
        return NULL;
    }
    op_ref(op); /* dropped by the cancel handler */
    cq_source_set_event_handler_ctx_f(s, op, fn, NULL);
    cq_source_set_cancel_handler_ctx_f(s, op, source_gone, NULL);
    return s;
}

/* ---- streams: pipes, sockets, terminals ------------------------------------------------------ */

static void stream_step(struct cq__io_op *op, bool owned);

static void stream_event(void *ctx)
{
    stream_step(ctx, false);
}

/* writev that never raises SIGPIPE: a pipe whose reader has gone fails with EPIPE, as a socket
 * does through MSG_NOSIGNAL, instead of killing the process (libdispatch dies there). Runtime
 * threads block SIGPIPE from birth (platform/thread_start.c), so only a step on a thread of
 * the program's own (an operation started on the calling thread) needs this: SIGPIPE is
 * blocked around the call, and the one our write raised is taken back before the mask is
 * restored (an unblocked SIGPIPE cannot have been pending before). Two system calls more, on
 * such threads only. */
static ssize_t writev_no_sigpipe(int fd, const struct iovec *iov, int cnt)
{
    sigset_t pipe_only, old;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    if (cq__tls.thread != NULL || pthread_sigmask(SIG_BLOCK, &pipe_only, &old) != 0) {
        return writev(fd, iov, cnt); /* a pool thread: blocked already */
    }
    ssize_t r = writev(fd, iov, cnt);
    int e = errno;
    if (r < 0 && e == EPIPE && !sigismember(&old, SIGPIPE)) {
        struct timespec none = {0, 0};
        while (sigtimedwait(&pipe_only, NULL, &none) < 0 && errno == EINTR) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return r;
}

static void stream_step(struct cq__io_op *op, bool owned)
{
    struct cq_io_s *ch = op->ch;
    pthread_mutex_lock(&ch->lock);
    if (!owned) {
        if (op->stepping) {
            op->again = true;
            pthread_mutex_unlock(&ch->lock);
            return;
        }
        op->stepping = true;
    }
    bool want_source = false;
    for (;;) {
        op->again = false;
        if (op->finished) {
            break;
        }
        if (op->stopped) {
            cq__io_op_fail(op, ECANCELED);
            break;
        }
        if (op->kind == CQ__IO_OP_READ && op->dq_bytes >= CQ__IO_STREAM_QUEUED_MAX) {
            /* the handler has not taken what was read: leave the rest in the kernel (a socket
             * then applies flow control, a pipe blocks its writer); the delivery that takes
             * them below the bound reads on */
            op->rd_held = true;
            cq__add(&read_holds, 1, relaxed);
            break;
        }
        int fd = ch->fd;
        ssize_t r;
        int e;
        if (op->kind == CQ__IO_OP_READ) {
            if (op->buf == NULL) {
                if (op->buf_len == 0) {
                    op->buf_len = STREAM_FIRST;
                }
                op->buf = stream_buf_get(op->buf_len);
            }
            size_t n = min3(op->want, op->high, op->buf_len);
            pthread_mutex_unlock(&ch->lock);
            r = read(fd, op->buf, n);
            e = errno;
            pthread_mutex_lock(&ch->lock);
            if (r > 0) {
                size_t cap = op->buf_len;
                void *b = op->buf;
                op->buf = NULL;
                read_got(op, b, cap, (size_t)r);
                if ((size_t)r == cap && cap < STREAM_MAX) {
                    op->buf_len = cap * 2;
                }
                continue;
            }
            if (r == 0) {
                read_eof(op);
                break;
            }
        } else {
            int cnt = write_gather(op, op->high);
            struct iovec *iov = op->wiov; /* ours while we step (a stop leaves the end to us) */
            pthread_mutex_unlock(&ch->lock);
            if (ch->is_sock) {
                struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)cnt};
                r = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
            } else {
                r = writev_no_sigpipe(fd, iov, cnt);
            }
            e = errno;
            pthread_mutex_lock(&ch->lock);
            if (r > 0) {
                write_done(op, (size_t)r);
                continue;
            }
            if (r == 0) {
                e = EIO;
            }
        }
        if (e == EINTR) {
            continue;
        }
        if (e == EAGAIN || e == EWOULDBLOCK) {
            if (op->again) {
                continue;
            }
            if (op->kind == CQ__IO_OP_READ && op->avail && cq_data_get_size(op->acc) > 0) {
                /* cq_read_f: what was available is the result */
                cq_data_t last = op->acc;
                op->acc = NULL;
                cq__io_op_finish(op, last, 0);
                break;
            }
            want_source = op->src == NULL;
            break;
        }
        cq__io_op_fail(op, e);
        break;
    }
    if (op->buf != NULL) {
        /* nothing was read into it (EAGAIN, the end, an error): see stream_buf_get */
        stream_buf_put(op->buf, op->buf_len);
        op->buf = NULL;
    }
    op->stepping = false;
    if (want_source) {
        op->stepping = true; /* ours until the source is in place */
    }
    int fd = ch->fd;
    cq__io_unlock(ch);
    if (!want_source) {
        return;
    }
    cq_source_t s =
        op_source(op, op->kind == CQ__IO_OP_READ ? CQ_SOURCE_TYPE_READ : CQ_SOURCE_TYPE_WRITE,
                  (uintptr_t)fd, stream_event);
    int e = errno;
    pthread_mutex_lock(&ch->lock);
    op->stepping = false;
    if (s == NULL) {
        cq__io_op_fail(op, e == EBADF ? EBADF : e);
        cq__io_unlock(ch);
        return;
    }
    cq_retain(s); /* the operation's (released when it is freed); ours lasts past activation */
    op->src = s;
    bool finished = op->finished, stopped = op->stopped;
    if (stopped) {
        cq__io_op_fail(op, ECANCELED);
    }
    cq__io_unlock(ch);
    cq_activate(s);
    if (finished) {
        cq_source_cancel(s);
    }
    cq_release(s); /* its handler may have finished the operation (and freed it) by now */
    /* the source reports the descriptor ready at once if it became ready meanwhile */
}

/* ---- regular files: reads ------------------------------------------------------------------ */

static void fread_completed(struct cq__io_req *req, ssize_t res);

/* Under the lock: the window's next request, made ready (NULL if none may be issued now). */
static struct cq__io_freq *fread_next(struct cq__io_op *op)
{
    if (!fread_room(op) || op->rd_inline) {
        return NULL;
    }
    if (op->dq_bytes >= CQ__IO_QUEUED_MAX) {
        cq__add(&read_holds, 1, relaxed);
        return NULL;
    }
    struct cq__io_freq *f = &op->fr[(op->fr_head + op->fr_n) % CQ__IO_READ_AHEAD];
    size_t n = min3(op->ra_left, op->high, FILE_CHUNK);
    f->op = op;
    f->buf = buf_get(n);
    f->done = false;
    f->req = (struct cq__io_req){
        .fd = op->ch->fd, .buf = f->buf, .len = n, .offset = op->ra_off, .done = fread_completed};
    op->ra_off += n;
    if (op->ra_left != SIZE_MAX) {
        op->ra_left -= n;
    }
    op->fr_n++;
    op->inflight++;
    return f;
}

/* Under the lock: the completed requests at the window's head become data, in file order. */
static void fread_consume(struct cq__io_op *op)
{
    struct cq_io_s *ch = op->ch;
    while (op->fr_n > 0 && op->fr[op->fr_head].done) {
        struct cq__io_freq *f = &op->fr[op->fr_head];
        op->fr_head = (op->fr_head + 1) % CQ__IO_READ_AHEAD;
        op->fr_n--;
        f->done = false;
        void *b = f->buf;
        f->buf = NULL;
        if (op->finished || op->stopped || op->drain) {
            cq__io_buf_free(b, f->req.len); /* past a short read, an error or a stop */
            continue;
        }
        if (f->res < 0) {
            cq__io_buf_free(b, f->req.len);
            if (f->res != -EAGAIN) { /* -EAGAIN: interrupted, read it again */
                op->rd_err = (int)-f->res;
            }
            op->drain = true;
            continue;
        }
        size_t n = (size_t)f->res;
        if (n == 0) {
            cq__io_buf_free(b, f->req.len);
            op->rd_eof = true;
            op->drain = true;
            continue;
        }
        op->offset += (int64_t)n;
        if (ch->type == CQ_IO_STREAM) {
            ch->pos = op->offset;
        }
        read_got(op, b, f->req.len, n);
        if (n < f->req.len) {
            /* short: the later requests read from the wrong place (or past the end); they are
             * discarded and reading resumes here (at the end of the file, returning 0) */
            op->drain = true;
        } else if (op->fr_win < CQ__IO_READ_AHEAD) {
            op->fr_win++; /* full pieces: a long read, worth reading ahead */
        }
    }
}

/* Under the lock, by whoever drives the operation: once the window is empty, a stop, an error
 * or the end of the file ends the operation; a short read resumes at its end. */
static void fread_settle(struct cq__io_op *op)
{
    if (op->finished || op->fr_n > 0) {
        return;
    }
    if (op->stopped) {
        cq__io_op_fail(op, ECANCELED);
    } else if (op->rd_err) {
        cq__io_op_fail(op, op->rd_err);
    } else if (op->rd_eof) {
        read_eof(op);
    } else if (op->drain) {
        op->drain = false;
        op->ra_off = (uint64_t)op->offset;
        op->ra_left = op->want;
    }
}

/* Whether the window has room for a request, and whether one may be issued now: not while
 * the handler has not taken CQ__IO_QUEUED_MAX bytes of what was read (a handler slower than
 * the disk would otherwise have the whole file read into memory behind it; the delivery that
 * takes them below it goes on). */
static bool fread_room(const struct cq__io_op *op)
{
    return !op->finished && !op->stopped && !op->drain && op->ra_left > 0 && op->fr_n < op->fr_win;
}

static bool fread_can_issue(const struct cq__io_op *op)
{
    return fread_room(op) && op->dq_bytes < CQ__IO_QUEUED_MAX;
}

/* Under the lock, by a thread that has just let the operation go: a read whose handler's run
 * reads the pieces (rd_inline) and that has no request in the engine and no delivery run
 * would wait forever; a run is started for it. */
static void fread_kick(struct cq__io_op *op)
{
    if (op->rd_inline && op->fr_n == 0 && !op->delivering && !op->stepping && fread_can_issue(op)) {
        op->delivering = true;
        op_ref(op);
        cq_async_f(op->queue, op, delivery_run);
    }
}

/* Under the lock, after a handler call that took `took_ns` for a piece of `bytes`: a handler
 * that takes less than about a tenth of what copying the piece from the page cache takes
 * (about 60 us per MiB here) gains nothing from the engine reading beside it on another
 * thread, and pays the hand-offs (a wake-up per batch, a busy CPU's run queue): its own run
 * then reads the pieces, as a read(2) loop would. A slower handler (two calls in a row: one
 * may just have been preempted) has the engine read ahead beside it. Not after a piece was
 * found outside the page cache (rd_cold). */
static void fread_judge(struct cq__io_op *op, uint64_t took_ns, size_t bytes)
{
    bool cheap = took_ns < bytes / 128;
    op->rd_inline = !op->rd_cold && (cheap || (op->rd_inline && !op->rd_slow));
    op->rd_slow = !cheap;
}

/* Reads the next piece on the calling thread (a delivery run), if the page cache holds it:
 * RWF_NOWAIT returns EAGAIN instead of waiting for the disk, so no worker waits for one; then
 * (or on any other failure, which the engine reports in its turn) the engine reads from here
 * on. Called owning the operation (`stepping`), not under the lock, with no request in the
 * engine (so ra_off is the operation's offset). */
static void fread_inline(struct cq__io_op *op)
{
    struct cq_io_s *ch = op->ch;
    pthread_mutex_lock(&ch->lock);
    size_t n = min3(op->ra_left, op->high, FILE_CHUNK);
    off_t off = (off_t)op->ra_off;
    int fd = ch->fd;
    pthread_mutex_unlock(&ch->lock);
    void *b = buf_get(n);
    struct iovec iov = {.iov_base = b, .iov_len = n};
    ssize_t r = preadv2(fd, &iov, 1, off, RWF_NOWAIT);
    int e = errno;
    pthread_mutex_lock(&ch->lock);
    if (r > 0) {
        cq__add(&read_inlined, 1, relaxed);
        op->ra_off += (uint64_t)r;
        if (op->ra_left != SIZE_MAX) {
            op->ra_left -= (size_t)r;
        }
        op->offset += r;
        if (ch->type == CQ_IO_STREAM) {
            ch->pos = op->offset;
        }
        read_got(op, b, n, (size_t)r);
        if ((size_t)r < n) {
            /* part of the piece was not in the page cache (or the end is near): the engine
             * reads on, with several requests at the device */
            op->rd_inline = false;
            op->rd_cold = true;
        }
    } else {
        cq__io_buf_free(b, n);
        if (r == 0) {
            op->rd_eof = true;
        } else if (e != EINTR) {
            op->rd_inline = false;
            op->rd_cold = true;
        }
    }
    fread_settle(op); /* a stop that came meanwhile, or the end */
    bool engine = !op->rd_inline && fread_can_issue(op);
    op->stepping = engine;
    cq__io_unlock(ch);
    if (engine) {
        fread_issue(op);
    }
}

/* Issues requests while the window has room. Called owning the operation (`stepping`), not
 * under the lock; submits outside the lock (a cached read is copied inside the submission). */
static void fread_issue(struct cq__io_op *op)
{
    struct cq_io_s *ch = op->ch;
    pthread_mutex_lock(&ch->lock);
    /* ours until we are done with it: once our last request is in the engine, its completion
     * may end the operation before we relock */
    op_ref(op);
    for (;;) {
        fread_settle(op); /* completions may have emptied the window meanwhile */
        struct cq__io_req *batch[CQ__IO_READ_AHEAD];
        unsigned n = 0;
        struct cq__io_freq *f;
        while ((f = fread_next(op)) != NULL) {
            batch[n++] = &f->req;
        }
        if (n == 0) {
            break;
        }
        pthread_mutex_unlock(&ch->lock);
        for (unsigned i = 0; i < n; i++) {
            cq__io_file_submit(batch[i]);
        }
        pthread_mutex_lock(&ch->lock);
    }
    op->stepping = false;
    fread_kick(op);
    cq__io_unlock(ch);
    cq__io_op_unref(op);
}

/* On an engine thread: one request of the window is done. */
static void fread_completed(struct cq__io_req *req, ssize_t res)
{
    struct cq__io_freq *f = (struct cq__io_freq *)((char *)req - offsetof(struct cq__io_freq, req));
    struct cq__io_op *op = f->op;
    struct cq_io_s *ch = op->ch;
    pthread_mutex_lock(&ch->lock);
    op->inflight--;
    f->res = res;
    f->done = true;
    fread_consume(op);
    bool issue = false;
    if (!op->stepping) { /* else the thread issuing sees the room when it relocks */
        fread_settle(op);
        issue = fread_can_issue(op) && !op->rd_inline;
        op->stepping = issue;
        if (!issue && fread_room(op) && !op->rd_inline) {
            cq__add(&read_holds, 1, relaxed);
        }
        fread_kick(op);
    }
    cq__io_unlock(ch);
    if (issue) {
        fread_issue(op);
    }
}

/* ---- regular files: writes (one request at a time, of up to WRITE_IOVS regions) ------------- */

static void fwrite_completed(struct cq__io_req *req, ssize_t res);

/* Issues the next request. Called owning the operation (`stepping`), not under the lock. */
static void fwrite_step(struct cq__io_op *op)
{
    struct cq_io_s *ch = op->ch;
    pthread_mutex_lock(&ch->lock);
    op->stepping = false;
    if (op->finished) {
        cq__io_unlock(ch);
        return;
    }
    if (op->stopped) {
        cq__io_op_fail(op, ECANCELED);
        cq__io_unlock(ch);
        return;
    }
    struct cq__io_req *r = &op->req;
    int cnt = write_gather(op, op->high < FILE_CHUNK ? op->high : FILE_CHUNK);
    *r = (struct cq__io_req){.fd = ch->fd,
                             .write = true,
                             .buf = op->wiov[0].iov_base,
                             .len = op->wiov[0].iov_len,
                             .iov = op->wiov,
                             .iovcnt = cnt,
                             .offset = (uint64_t)op->offset,
                             .done = fwrite_completed};
    op->inflight = 1;
    pthread_mutex_unlock(&ch->lock);
    cq__io_file_submit(r);
}

static void fwrite_completed(struct cq__io_req *req, ssize_t res)
{
    struct cq__io_op *op = (struct cq__io_op *)((char *)req - offsetof(struct cq__io_op, req));
    struct cq_io_s *ch = op->ch;
    pthread_mutex_lock(&ch->lock);
    op->inflight = 0;
    if (res == -EAGAIN) {
        /* interrupted: again */
    } else if (res < 0) {
        cq__io_op_fail(op, (int)-res);
    } else if (res == 0) {
        cq__io_op_fail(op, EIO);
    } else {
        op->offset += res;
        if (ch->type == CQ_IO_STREAM) {
            ch->pos = op->offset;
        }
        write_done(op, (size_t)res);
    }
    bool more = !op->finished;
    if (more && op->stopped) {
        cq__io_op_fail(op, ECANCELED);
        more = false;
    }
    op->stepping = more;
    cq__io_unlock(ch);
    if (more) {
        fwrite_step(op);
    }
}

/* ---- start ------------------------------------------------------------------------------- */

void cq__io_barrier_run(void *ctx)
{
    struct cq__io_op *op = ctx;
    struct cq_io_s *ch = op->ch;
    /* A stream channel on a file reads and writes at a position of its own (pread / pwrite at
     * ch->pos): the barrier sees it as the descriptor's offset, and what the barrier leaves
     * there (an lseek, say after an ftruncate) is where the channel goes on, as libdispatch
     * promises a barrier may lseek the descriptor. Nothing else of the channel runs meanwhile. */
    pthread_mutex_lock(&ch->lock);
    bool sync_pos = ch->type == CQ_IO_STREAM && ch->is_file && ch->fd >= 0 && ch->err == 0;
    int fd = ch->fd;
    int64_t pos = ch->pos;
    pthread_mutex_unlock(&ch->lock);
    if (sync_pos) {
        sync_pos = lseek(fd, (off_t)pos, SEEK_SET) >= 0;
    }
    op->barrier(op->ctx);
    off_t at = sync_pos ? lseek(fd, 0, SEEK_CUR) : -1;
    pthread_mutex_lock(&ch->lock);
    if (at >= 0) {
        ch->pos = at;
    }
    struct cq__io_fence *fence = op->fence;
    cq__io_op_finish(op, NULL, 0);
    cq__io_unlock(ch);
    if (fence) {
        cq__io_fence_lift(fence);
    }
}

void cq__io_op_start(struct cq__io_op *op)
{
    struct cq_io_s *ch = op->ch;
    if (op->kind == CQ__IO_OP_BARRIER) {
        cq__io_barrier_start(op);
        return;
    }
    pthread_mutex_lock(&ch->lock);
    op->stepping = false;
    int err = ch->err ? ch->err : op->stopped || ch->stopped ? ECANCELED : 0;
    if (!op->finished && err == 0 && ch->is_file) {
        if (ch->type == CQ_IO_RANDOM) {
            /* Relative to the position at creation: a negative offset reaches back from it (as
             * in libdispatch), but not before the file's start. */
            if (op->offset < -ch->base || op->offset > INT64_MAX - ch->base) {
                err = EINVAL;
            } else {
                op->offset += ch->base;
            }
        } else {
            op->offset = ch->pos;
        }
        op->ra_off = (uint64_t)op->offset;
        op->ra_left = op->want;
        op->fr_win = 1; /* grows by one per full piece read: a small file reads as before */
    }
    if (op->finished) {
        /* stopped before it could start */
    } else if (err) {
        cq__io_op_fail(op, err);
    } else if (op->kind == CQ__IO_OP_READ && op->want == 0) {
        cq__io_op_finish(op, cq_data_empty, 0);
    } else if (op->kind == CQ__IO_OP_WRITE && cq_data_get_size(op->rest) == 0) {
        cq_release(op->rest);
        op->rest = NULL;
        cq__io_op_finish(op, NULL, 0);
    }
    bool go = !op->finished;
    uint64_t interval = op->interval;
    op->stepping = go;
    cq__io_unlock(ch);
    if (!go) {
        return;
    }
    if (interval) {
        cq_source_t t = op_source(op, CQ_SOURCE_TYPE_TIMER, 0, interval_fire);
        if (t) {
            cq_source_set_timer(t, cq_time(CQ_TIME_NOW, (int64_t)interval), interval,
                                interval / 10);
            cq_retain(t); /* as for the stream sources: ours lasts past activation */
            pthread_mutex_lock(&ch->lock);
            op->timer = t;
            bool finished = op->finished;
            pthread_mutex_unlock(&ch->lock);
            cq_activate(t);
            if (finished) {
                cq_source_cancel(t);
            }
            cq_release(t);
        }
    }
    if (ch->is_file && op->kind == CQ__IO_OP_READ) {
        fread_issue(op);
    } else if (ch->is_file) {
        fwrite_step(op);
    } else {
        stream_step(op, true);
    }
}
