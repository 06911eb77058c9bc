/*
 * Dispatch I/O channels: the object, its descriptor (opened lazily for a path), the order in
 * which operations start, close, barriers and the cleanup handler. The operations themselves
 * (reading, writing, delivering) are in io_op.c; the file engines in uring.c and io_pool.c.
 *
 * One mutex per channel guards the channel and its operations. Operations wait on a FIFO list
 * and start when pump() lets them: nothing passes a barrier; on a stream channel reads start
 * one after another (likewise writes); on a random channel they overlap. Work that must not
 * run under the lock (starting operations, dropping references) is queued on the channel and
 * done by cq__io_unlock.
 *
 * References: the creator's (xref); each operation holds an internal one until it is freed; a
 * channel made with cq_io_create_with_io from a channel on a descriptor holds one on its
 * parent, and the parent keeps its descriptor until that channel is cleaned up ("holders"). One
 * made from a path channel opens the path itself and holds nothing of its parent's.
 *
 * Families: channels made from one another with cq_io_create_with_io work on one descriptor
 * (from a path channel: on one path), and a barrier on any of them is a barrier across all of
 * them, as libdispatch documents: it runs once every operation submitted before it on any of
 * them has ended, and none submitted after it starts before it has returned. The barrier puts a
 * fence (a barrier with no function) on each relative, and runs once its own channel and every
 * relative have let their part start; it then ends the fences. A family's barriers are
 * submitted one at a time (its barrier lock), so they stand in the same order on every channel
 * and cannot wait for one another.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io_internal.h"
#include "platform/atomic_internal.h"
#include "platform/diag_internal.h"
#include "platform/fork_internal.h"
#include "queue/queue_internal.h"

static void io_xref_dispose(struct cq__object *o);
static void io_dispose(struct cq__object *o);

static const struct cq__class cq__io_class = {
    .kind = CQ__KIND_IO,
    .name = "I/O channel",
    .xref_dispose = io_xref_dispose,
    .dispose = io_dispose,
};
CQ__CLASS_REGISTER(cq__io_class)

static struct cq_io_s *io_check(cq_io_t ch, const char *call)
{
    if (cq__unlikely(!cq__object_is(ch, &cq__io_class))) {
        return (struct cq_io_s *)cq__object_check(ch, CQ__KIND_IO, call); /* aborts */
    }
    return ch;
}

static cq_queue_t queue_or_default(cq_queue_t q)
{
    return q ? q : cq_get_global_queue(0, 0);
}

/* ---- families ----------------------------------------------------------------------------- */

struct cq__io_family {
    pthread_mutex_t barrier_lock; /* one barrier submission at a time */
    struct cq_io_s *head;         /* the members (fam_next), under family_lock */
    unsigned members;
};

/* The members lists. Taken alone: no other lock is taken under it. */
static pthread_mutex_t family_lock = PTHREAD_MUTEX_INITIALIZER;

/* Not under any channel's lock: `ch`, just made from `p`, joins p's family (made now if p
 * had no relative yet). */
static void family_join(struct cq_io_s *p, struct cq_io_s *ch)
{
    pthread_mutex_lock(&family_lock);
    struct cq__io_family *f = p->family;
    if (f == NULL) {
        f = calloc(1, sizeof *f);
        if (f == NULL) {
            cq__crash("out of memory making an I/O channel with cq_io_create_with_io");
        }
        pthread_mutex_init(&f->barrier_lock, NULL);
        p->family = f;
        p->fam_next = NULL;
        f->head = p;
        f->members = 1;
    }
    ch->family = f;
    ch->fam_next = f->head;
    f->head = ch;
    f->members++;
    pthread_mutex_unlock(&family_lock);
}

/* From io_dispose: `ch` leaves its family; the last member frees it. */
static void family_leave(struct cq_io_s *ch)
{
    struct cq__io_family *f = ch->family;
    pthread_mutex_lock(&family_lock);
    for (struct cq_io_s **l = &f->head; *l; l = &(*l)->fam_next) {
        if (*l == ch) {
            *l = ch->fam_next;
            break;
        }
    }
    bool last = --f->members == 0;
    pthread_mutex_unlock(&family_lock);
    if (last) {
        pthread_mutex_destroy(&f->barrier_lock);
        free(f);
    }
}

/* fork() (platform/fork_internal.h): no list is changed half-way. A family's barrier lock held
 * by another thread stays held in the child: the parent's channels are not usable there. */
static void family_fork_prepare(void)
{
    pthread_mutex_lock(&family_lock);
}

static void family_fork_after(void)
{
    pthread_mutex_unlock(&family_lock);
}

CQ__FORK_REGISTER(io_families, CQ__FORK_RANK_IO, family_fork_prepare, family_fork_after,
                  family_fork_after)

/* A reference to a member found in its family's list, unless it is being freed (its last
 * reference went; io_dispose will take it out of the list). */
static bool member_try_retain(struct cq_io_s *m)
{
    int32_t r = cq__load(&m->obj.ref, relaxed);
    while (r > 0) {
        /* relaxed: as cq__ref_retain; the family lock orders the list */
        if (cq__cas_weak(&m->obj.ref, &r, r + 1, relaxed)) {
            return true;
        }
    }
    return false;
}

/* A family's barrier and the fences it put on its relatives. */
struct cq__io_fence {
    _Atomic unsigned pending; /* parts not started yet, plus one while they are submitted */
    struct cq__io_op *barrier;
    unsigned n;
    struct cq__io_op *fences[];
};

/* A part of a family barrier started (or was never submitted); the last one runs it. */
static void fence_count_in(struct cq__io_fence *f)
{
    /* acq_rel: the channels' states when each part started happen-before the barrier's run;
     * pairs with the other parts' acq_rel sub (the last one acquires them all) */
    if (cq__sub(&f->pending, 1, acq_rel) == 1) {
        cq_async_f(f->barrier->queue, f->barrier, cq__io_barrier_run);
    }
}

void cq__io_barrier_start(struct cq__io_op *op)
{
    if (op->fence) {
        fence_count_in(op->fence);
    } else {
        cq_async_f(op->queue, op, cq__io_barrier_run);
    }
}

void cq__io_fence_lift(struct cq__io_fence *f)
{
    for (unsigned i = 0; i < f->n; i++) {
        struct cq__io_op *op = f->fences[i];
        if (op == NULL) {
            continue;
        }
        struct cq_io_s *ch = op->ch;
        pthread_mutex_lock(&ch->lock);
        cq__io_op_finish(op, NULL, 0);
        cq__io_unlock(ch); /* may free op, and then ch */
    }
    free(f);
}

/* ---- the descriptor ----------------------------------------------------------------------- */

/* Under the lock (or before the channel is shared): takes `fd` as the channel's descriptor. */
static void ch_set_fd(struct cq_io_s *ch, int fd)
{
    ch->fd = fd;
    ch->ready = true;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        ch->err = EBADF;
        ch->fd = -1;
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        /* as libdispatch: operations and the cleanup handler get EISDIR (the descriptor is
         * kept, closed at cleanup if ours, and its flags left alone) */
        ch->err = EISDIR;
        return;
    }
    ch->is_file = S_ISREG(st.st_mode) || S_ISBLK(st.st_mode);
    ch->is_sock = S_ISSOCK(st.st_mode);
    off_t at = lseek(fd, 0, SEEK_CUR);
    if (at < 0) {
        at = 0;
        if (ch->type == CQ_IO_RANDOM) {
            ch->err = ESPIPE; /* as libdispatch: random access needs a seekable descriptor */
        }
    }
    ch->base = ch->pos = at;
    if (!ch->is_file && ch->parent == NULL) {
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0 && !(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0) {
            ch->set_nonblock = true;
            ch->saved_flags = fl;
        }
    }
}

static void ch_pump(struct cq_io_s *ch);
static void ch_maybe_cleanup(struct cq_io_s *ch);

struct open_req {
    struct cq__io_req req;
    struct cq_io_s *ch;
};

/* On a pool thread: open(2) may wait for a disk or a network file system. */
static void open_job(struct cq__io_req *req)
{
    struct open_req *o = (struct open_req *)req;
    struct cq_io_s *ch = o->ch;
    int fd;
    do {
        fd = open(ch->path, ch->oflag | O_CLOEXEC, ch->mode);
    } while (fd < 0 && errno == EINTR);
    int e = errno;
    pthread_mutex_lock(&ch->lock);
    ch->opening = false;
    if (ch->cleaned) {
        /* Closed (or released) with nothing left to run while the open waited (a FIFO with no
         * writer: test_io_channel_lifecycle.c): the cleanup handler has run; the descriptor goes
         * at once and nothing else happens. The reference this job holds kept the channel. */
        pthread_mutex_unlock(&ch->lock);
        if (fd >= 0) {
            close(fd);
        }
        cq__ref_release(&ch->obj);
        free(o);
        return;
    }
    if (fd < 0) {
        ch->ready = true;
        ch->err = e;
    } else {
        ch->owns_fd = true;
        ch_set_fd(ch, fd);
    }
    ch_pump(ch);
    ch_maybe_cleanup(ch);
    cq__io_unlock(ch);
    cq__ref_release(&ch->obj);
    free(o);
}

/* ---- creation ----------------------------------------------------------------------------- */

static struct cq_io_s *ch_new(cq_io_type_t type, cq_queue_t queue, void *context,
                              cq_io_cleanup_function_t cleanup, const char *call)
{
    if (type != CQ_IO_STREAM && type != CQ_IO_RANDOM) {
        cq__report("%s: unknown channel type %lu (returning NULL)", call, type);
        errno = EINVAL;
        return NULL;
    }
    struct cq_io_s *ch = calloc(1, sizeof *ch);
    if (ch == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    cq__object_init(&ch->obj, &cq__io_class);
    pthread_mutex_init(&ch->lock, NULL);
    ch->type = type;
    ch->queue = queue_or_default(queue);
    cq_retain(ch->queue);
    ch->cleanup_ctx = context;
    ch->cleanup = cleanup;
    ch->fd = -1;
    ch->user_fd = -1;
    ch->high = SIZE_MAX;
    ch->low = SIZE_MAX;
    return ch;
}

/*
 * A duplicate of fd for a channel, or -1. Kept only while the descriptor table is less than
 * half full (the duplicate takes the lowest free number, so its number tells): the program
 * keeps at least half of its RLIMIT_NOFILE for itself. Duplicating until the table was full
 * left a program with 400 pipe channels unable to open a file at a limit of 1024 (test_io.c:
 * test_channels_leave_descriptors).
 */
static int dup_for_channel(int fd)
{
    if (fd < 0) {
        return -1;
    }
    int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    struct rlimit rl;
    if (own >= 0 && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (rlim_t)own >= rl.rlim_cur / 2) {
        close(own);
        own = -1;
    }
    return own;
}

/*
 * The end of every creation. An error found there (a descriptor that is not open, a directory,
 * random access on a pipe, a path that cannot be looked up, a parent that failed) makes the
 * cleanup handler run at once with it, as libdispatch's does, not at the close or the last
 * release: a program that waits in its cleanup handler to learn that its channel failed
 * waited as long as it held the channel (for ever, if it waited before releasing it; found by
 * a user-side probe). Operations submitted later fail with the same error.
 */
static cq_io_t ch_created(struct cq_io_s *ch)
{
    if (ch != NULL && ch->ready && ch->err != 0) {
        pthread_mutex_lock(&ch->lock);
        ch->failed = true;
        /* what cq_io_get_descriptor goes on reporting: a channel on a descriptor reports it
         * (a directory's, as libdispatch's), one on a path none */
        ch->failed_fd = ch->err == EISDIR && ch->fd >= 0 ? (ch->dup_fd ? ch->user_fd : ch->fd) : -1;
        ch_maybe_cleanup(ch);
        cq__io_unlock(ch);
    }
    return ch;
}

/* cq_io_create_f's channel; `early`: an error found here runs the cleanup handler at once
 * (ch_created). The one-shot reads and writes (io_oneshot.c) report through the cleanup
 * handler, after their operation: not early. */
static cq_io_t create_on_fd(cq_io_type_t type, cq_fd_t fd, cq_queue_t queue, void *context,
                            cq_io_cleanup_function_t cleanup, bool early)
{
    struct cq_io_s *ch = ch_new(type, queue, context, cleanup, "cq_io_create_f");
    if (ch) {
        /* The channel works on its own duplicate (same open file description: same offset,
         * same flags). Past half the descriptor limit it works on the caller's. */
        int own = dup_for_channel(fd);
        if (own >= 0) {
            ch->user_fd = fd;
            ch->dup_fd = true;
            ch_set_fd(ch, own); /* closed at cleanup, whatever ch_set_fd found */
        } else {
            ch_set_fd(ch, fd);
        }
    }
    return early ? ch_created(ch) : ch;
}

cq_io_t cq_io_create_f(cq_io_type_t type, cq_fd_t fd, cq_queue_t queue, void *context,
                       cq_io_cleanup_function_t cleanup)
{
    return create_on_fd(type, fd, queue, context, cleanup, true);
}

cq_io_t cq__io_create_oneshot(cq_fd_t fd, cq_queue_t queue, void *context,
                              cq_io_cleanup_function_t cleanup)
{
    return create_on_fd(CQ_IO_STREAM, fd, queue, context, cleanup, false);
}

cq_io_t cq_io_create_with_path_f(cq_io_type_t type, const char *path, int oflag, mode_t mode,
                                 cq_queue_t queue, void *context, cq_io_cleanup_function_t cleanup)
{
    if (path == NULL || path[0] != '/') {
        errno = EINVAL; /* as libdispatch: an absolute path */
        return NULL;
    }
    struct cq_io_s *ch = ch_new(type, queue, context, cleanup, "cq_io_create_with_path_f");
    if (ch) {
        ch->path = strdup(path);
        ch->oflag = oflag;
        ch->mode = mode;
        struct stat st;
        if (ch->path == NULL) {
            ch->ready = true;
            ch->err = ENOMEM;
        } else if (stat(path, &st) != 0) {
            /* Looked up now, as libdispatch does (it opens the file only for the first
             * operation): a path that is not there fails the channel, unless the open creates
             * it. */
            if (errno != ENOENT || !(oflag & O_CREAT)) {
                ch->ready = true;
                ch->err = errno;
            }
        } else if (S_ISDIR(st.st_mode)) {
            ch->ready = true;
            ch->err = EISDIR; /* as ch_set_fd */
        }
    }
    return ch_created(ch);
}

cq_io_t cq_io_create_with_io_f(cq_io_type_t type, cq_io_t io, cq_queue_t queue, void *context,
                               cq_io_cleanup_function_t cleanup)
{
    struct cq_io_s *p = io_check(io, "cq_io_create_with_io_f");
    struct cq_io_s *ch = ch_new(type, queue, context, cleanup, "cq_io_create_with_io_f");
    if (ch == NULL) {
        return NULL;
    }
    pthread_mutex_lock(&p->lock);
    if (p->path) {
        /* A path channel's: it opens the path itself (same flags and mode: O_TRUNC truncates
         * again), with its own descriptor, position and cleanup, whether or not `p` has opened
         * yet, as libdispatch's does. Sharing p's descriptor once open made p's cleanup wait
         * for this channel's (a program closing channels in creation order, waiting for each
         * cleanup, hung), and this channel read on from where p stood ("345" where
         * libdispatch reads "012"). */
        if (p->ready && !p->owns_fd) {
            ch->ready = true;
            ch->err = p->err; /* its open failed: as libdispatch, that error (not a new open) */
        } else {
            ch->path = strdup(p->path);
            ch->oflag = p->oflag;
            ch->mode = p->mode;
            if (ch->path == NULL) {
                ch->ready = true;
                ch->err = ENOMEM;
            }
        }
        pthread_mutex_unlock(&p->lock);
        family_join(p, ch);
        return ch_created(ch);
    }
    if (p->cleaned) {
        ch->ready = true;
        ch->err = p->err ? p->err : EBADF; /* its descriptor is gone */
        pthread_mutex_unlock(&p->lock);
        return ch_created(ch);
    }
    ch->parent = p;
    cq__ref_retain(&p->obj);
    p->holders++;
    ch->ready = true;
    ch->err = p->err;
    ch->fd = p->fd;
    ch->is_file = p->is_file;
    ch->is_sock = p->is_sock;
    /* Both types start where a stream parent stands now (as libdispatch: bytes it wrote are
     * not overwritten, and random offsets count from there), or at a random parent's start */
    ch->base = ch->pos = p->type == CQ_IO_STREAM ? p->pos : p->base;
    if (ch->type == CQ_IO_RANDOM && !ch->is_file && ch->err == 0) {
        ch->err = ESPIPE;
    }
    pthread_mutex_unlock(&p->lock);
    family_join(p, ch);
    return ch_created(ch);
}

/* ---- scheduling ----------------------------------------------------------------------------- */

/* Counts `op` in (+1) or out of (-1) the channel's waiting operations of its kind. */
static void count_waiting(struct cq_io_s *ch, const struct cq__io_op *op, int delta)
{
    unsigned *n = op->kind == CQ__IO_OP_READ    ? &ch->wait_reads
                  : op->kind == CQ__IO_OP_WRITE ? &ch->wait_writes
                                                : &ch->wait_barriers;
    *n = (unsigned)((int)*n + delta);
}

/* Under the lock: lets waiting operations start (onto ch->to_start). */
static void ch_pump(struct cq_io_s *ch)
{
    if (!ch->ready) {
        if (!ch->opening && ch->wait_head && !ch->cleaned) {
            struct open_req *o = calloc(1, sizeof *o);
            if (o == NULL) {
                ch->ready = true;
                ch->err = ENOMEM;
            } else {
                ch->opening = true;
                o->ch = ch;
                o->req.job = open_job;
                cq__ref_retain(&ch->obj);
                cq__io_pool_submit(&o->req);
                return;
            }
        } else {
            return;
        }
    }
    if (ch->active_barriers > 0) {
        return; /* nothing starts while a barrier runs */
    }
    bool rblock = false, wblock = false, skipped = false;
    unsigned left_reads = ch->wait_reads, left_writes = ch->wait_writes;
    unsigned left_barriers = ch->wait_barriers;
    struct cq__io_op **link = &ch->wait_head, *prev = NULL;
    while (*link) {
        if ((rblock || left_reads == 0) && (wblock || left_writes == 0) &&
            (skipped || left_barriers == 0)) {
            break; /* nothing further on can start */
        }
        struct cq__io_op *op = *link;
        left_reads -= op->kind == CQ__IO_OP_READ;
        left_writes -= op->kind == CQ__IO_OP_WRITE;
        left_barriers -= op->kind == CQ__IO_OP_BARRIER;
        bool go;
        if (op->kind == CQ__IO_OP_BARRIER) {
            if (skipped || ch->active_n > 0) {
                break;
            }
            go = true;
        } else if (op->kind == CQ__IO_OP_READ) {
            go = !(ch->type == CQ_IO_STREAM && (rblock || ch->active_reads > 0));
            rblock |= !go;
        } else {
            go = !(ch->type == CQ_IO_STREAM && (wblock || ch->active_writes > 0));
            wblock |= !go;
        }
        if (!go) {
            skipped = true;
            prev = op;
            link = &op->next;
            continue;
        }
        *link = op->next;
        if (ch->wait_tail == op) {
            ch->wait_tail = prev;
        }
        count_waiting(ch, op, -1);
        ch->active_n++;
        ch->active_reads += op->kind == CQ__IO_OP_READ;
        ch->active_writes += op->kind == CQ__IO_OP_WRITE;
        ch->active_barriers += op->kind == CQ__IO_OP_BARRIER;
        op->started = true;
        op->stepping = true; /* the starter owns it until cq__io_op_start has run */
        op->anext = ch->active;
        op->aprev = NULL;
        if (ch->active) {
            ch->active->aprev = op;
        }
        ch->active = op;
        op->next = ch->to_start;
        ch->to_start = op;
        if (op->kind == CQ__IO_OP_BARRIER) {
            break; /* nothing after it starts before it has returned */
        }
    }
}

void cq__io_op_retire(struct cq_io_s *ch, struct cq__io_op *op)
{
    if (!op->started) {
        return;
    }
    op->started = false;
    ch->active_n--;
    ch->active_reads -= op->kind == CQ__IO_OP_READ;
    ch->active_writes -= op->kind == CQ__IO_OP_WRITE;
    ch->active_barriers -= op->kind == CQ__IO_OP_BARRIER;
    /* O(1): with 40,000 reads in flight on a random channel, the oldest finish first and a
     * walk from the head (the newest) made each retire cost the whole list (quadratic: 5x
     * slower than libdispatch at 40,000, 7x at 60,000) */
    if (op->aprev) {
        op->aprev->anext = op->anext;
    } else {
        ch->active = op->anext;
    }
    if (op->anext) {
        op->anext->aprev = op->aprev;
    }
    op->anext = op->aprev = NULL;
    ch_pump(ch);
}

/*
 * Operations made startable while an outer cq__io_unlock on this thread is starting others:
 * that one starts them, in order, after its own. Starting them here, nested, let every
 * operation that finished at once start the next one a few frames deeper: 50,000 small writes
 * queued on a stream channel to a pipe overflowed a worker's stack (test_io.c:
 * test_many_queued_stream_operations). Thread-local: only this thread's calls touch them.
 */
static __thread struct cq__io_op *deferred_head, *deferred_tail;
static __thread bool starting;

static void start_in_order(struct cq__io_op *list)
{
    while (list) {
        struct cq__io_op *n = list->next;
        list->next = NULL;
        cq__io_op_start(list);
        list = n;
    }
}

void cq__io_unlock(struct cq_io_s *ch)
{
    struct cq__io_op *start = ch->to_start, *unref = ch->to_unref;
    bool release_parent = ch->release_parent;
    ch->to_start = ch->to_unref = NULL;
    ch->release_parent = false;
    pthread_mutex_unlock(&ch->lock);
    /* started in submission order (the list is reversed) */
    struct cq__io_op *rev = NULL;
    while (start) {
        struct cq__io_op *n = start->next;
        start->next = rev;
        rev = start;
        start = n;
    }
    if (rev != NULL && starting) {
        if (deferred_tail) {
            deferred_tail->next = rev;
        } else {
            deferred_head = rev;
        }
        while (rev->next) {
            rev = rev->next;
        }
        deferred_tail = rev;
    } else if (rev != NULL) {
        starting = true;
        start_in_order(rev);
        while (deferred_head) {
            struct cq__io_op *list = deferred_head;
            deferred_head = deferred_tail = NULL;
            start_in_order(list);
        }
        starting = false;
    }
    if (release_parent) {
        struct cq_io_s *p = ch->parent;
        pthread_mutex_lock(&p->lock);
        p->holders--;
        ch_maybe_cleanup(p);
        cq__io_unlock(p);
    }
    while (unref) { /* last: may free the channel */
        struct cq__io_op *n = unref->unext;
        cq__io_op_unref(unref);
        unref = n;
    }
}

void cq__io_op_unref(struct cq__io_op *op)
{
    /* acq_rel: whatever each holder did happens-before the free; pairs with the other
     * holders' acq_rel sub (the last one acquires them all) */
    if (cq__sub(&op->refs, 1, acq_rel) != 1) {
        return;
    }
    struct cq_io_s *ch = op->ch;
    if (op->acc) {
        cq_release(op->acc);
    }
    if (op->rest) {
        cq_release(op->rest);
    }
    if (op->buf) {
        cq__io_buf_free(op->buf, op->buf_len);
    }
    if (op->src) {
        cq_release(op->src); /* its cancel handler has run (it held a reference to us) */
    }
    if (op->timer) {
        cq_release(op->timer);
    }
    if (op->queue) {
        cq_release(op->queue);
    }
    free(op);
    pthread_mutex_lock(&ch->lock);
    ch->outstanding--;
    ch_maybe_cleanup(ch);
    cq__io_unlock(ch);
    cq__ref_release(&ch->obj);
}

/* ---- cleanup -------------------------------------------------------------------------------- */

struct cleanup_call {
    void *ctx;
    cq_io_cleanup_function_t fn;
    int error;
};

static void cleanup_run(void *ctx)
{
    struct cleanup_call *c = ctx;
    c->fn(c->ctx, c->error);
    free(c);
}

/* Under the lock: once closed (or released) and idle, the descriptor is given back. */
static void ch_maybe_cleanup(struct cq_io_s *ch)
{
    /* A pending open is not waited for: it may never return (a FIFO that no writer opens),
     * and the cleanup handler waited with it, where libdispatch's ran at once (open_job closes
     * what it opens once it returns) */
    if (ch->cleaned || !(ch->closed || ch->released || ch->failed) || ch->outstanding > 0 ||
        ch->holders > 0) {
        return;
    }
    ch->cleaned = true;
    if (ch->fd >= 0 && ch->parent == NULL) {
        if (ch->type == CQ_IO_STREAM && ch->is_file && !ch->owns_fd) {
            lseek(ch->fd, ch->pos, SEEK_SET); /* where reads and writes left it */
        }
        if (ch->set_nonblock) {
            fcntl(ch->fd, F_SETFL, ch->saved_flags);
        }
        if (ch->owns_fd || ch->dup_fd) {
            close(ch->fd);
        }
    }
    ch->fd = -1;
    if (ch->parent) {
        ch->release_parent = true;
    }
    if (ch->cleanup) {
        struct cleanup_call *c = malloc(sizeof *c);
        if (c == NULL) {
            cq__crash("out of memory calling an I/O channel's cleanup handler");
        }
        *c = (struct cleanup_call){.ctx = ch->cleanup_ctx, .fn = ch->cleanup, .error = ch->err};
        ch->cleanup = NULL;
        cq_async_f(ch->queue, c, cleanup_run);
    }
}

static void io_xref_dispose(struct cq__object *o)
{
    struct cq_io_s *ch = (struct cq_io_s *)o;
    pthread_mutex_lock(&ch->lock);
    ch->released = true;
    ch_maybe_cleanup(ch);
    cq__io_unlock(ch);
}

static void io_dispose(struct cq__object *o)
{
    struct cq_io_s *ch = (struct cq_io_s *)o;
    cq_function_t fin = o->finalizer;
    void *ctx = o->context;
    cq_queue_t q = ch->queue;
    struct cq_io_s *parent = ch->parent;
    if (ch->family) {
        family_leave(ch);
    }
    pthread_mutex_destroy(&ch->lock);
    free(ch->path);
    o->cls = NULL;
    free(ch);
    if (fin && ctx) {
        cq_async_f(q, ctx, fin);
    }
    cq_release(q);
    if (parent) {
        cq__ref_release(&parent->obj);
    }
}

/* ---- operations ----------------------------------------------------------------------------- */

static struct cq__io_op *op_new(struct cq_io_s *ch, int kind, cq_queue_t queue, void *ctx)
{
    struct cq__io_op *op = calloc(1, sizeof *op);
    if (op == NULL) {
        cq__crash("out of memory submitting an I/O operation");
    }
    op->ch = ch;
    op->kind = kind;
    atomic_init(&op->refs, 1);
    op->queue = queue_or_default(queue);
    cq_retain(op->queue);
    op->ctx = ctx;
    cq__ref_retain(&ch->obj);
    return op;
}

/* Under the lock: puts `op` at the end of the waiting list and lets what can start start. */
static void ch_enqueue(struct cq_io_s *ch, struct cq__io_op *op)
{
    if (ch->wait_tail) {
        ch->wait_tail->next = op;
    } else {
        ch->wait_head = op;
    }
    ch->wait_tail = op;
    count_waiting(ch, op, +1);
    ch_pump(ch);
}

/* Queues `op` on the channel, or ends it at once if the channel is closed. */
static void op_submit(struct cq_io_s *ch, struct cq__io_op *op)
{
    pthread_mutex_lock(&ch->lock);
    ch->outstanding++;
    op->low = ch->low;
    op->high = ch->high;
    op->low_set = ch->low_set;
    op->interval = ch->interval;
    op->strict = ch->strict;
    op->avail = ch->avail;
    if (ch->closed && op->kind != CQ__IO_OP_BARRIER) {
        /* a write's handler gets the data it was given back, as not written */
        cq__io_op_fail(op, ECANCELED);
    } else {
        ch_enqueue(ch, op);
    }
    cq__io_unlock(ch);
}

/* Under the family's barrier lock: submits a fence on a relative, unless it is cleaned up
 * or has not opened its path yet (nothing of it runs, or can run before its file is open:
 * a fence would open it). False if not submitted. */
static bool fence_submit(struct cq_io_s *ch, struct cq__io_op *op)
{
    pthread_mutex_lock(&ch->lock);
    if (ch->cleaned || !ch->ready) {
        pthread_mutex_unlock(&ch->lock);
        return false;
    }
    ch->outstanding++;
    ch_enqueue(ch, op);
    cq__io_unlock(ch);
    return true;
}

/* A barrier on `ch`, whose family has other members: a fence on each of them, then the barrier
 * itself; it runs once all have started. */
static void family_barrier(struct cq__io_family *family, struct cq_io_s *ch, struct cq__io_op *op)
{
    pthread_mutex_lock(&family->barrier_lock);
    pthread_mutex_lock(&family_lock);
    unsigned n = family->members;
    struct cq__io_fence *f = calloc(1, sizeof *f + n * sizeof f->fences[0]);
    if (f == NULL) {
        cq__crash("out of memory submitting an I/O barrier");
    }
    unsigned i = 0;
    for (struct cq_io_s *m = family->head; m && i < n; m = m->fam_next) {
        if (m != ch && member_try_retain(m)) {      /* until its fence is submitted, or not */
            f->fences[i++] = (struct cq__io_op *)m; /* the channel, for now */
        }
    }
    pthread_mutex_unlock(&family_lock);
    f->n = i;
    f->barrier = op;
    op->fence = f;
    atomic_init(&f->pending, 1);
    for (unsigned k = 0; k < f->n; k++) {
        struct cq_io_s *m = (struct cq_io_s *)f->fences[k];
        struct cq__io_op *fence = op_new(m, CQ__IO_OP_BARRIER, op->queue, NULL);
        fence->fence = f;
        f->fences[k] = fence;
        /* relaxed: the submitter's own part (dropped last, acq_rel) keeps it above 0 */
        cq__add(&f->pending, 1, relaxed);
        if (!fence_submit(m, fence)) {
            f->fences[k] = NULL;
            cq__sub(&f->pending, 1, relaxed);
            /* never counted by the channel: give back what op_new took */
            cq_release(fence->queue);
            cq__ref_release(&m->obj);
            free(fence);
        }
        cq__ref_release(&m->obj);
    }
    cq__add(&f->pending, 1, relaxed); /* the barrier's own part */
    op_submit(ch, op);
    pthread_mutex_unlock(&family->barrier_lock);
    fence_count_in(f); /* the submitter's part */
}

void cq_io_read_f(cq_io_t channel, off_t offset, size_t length, cq_queue_t queue, void *context,
                  cq_io_handler_function_t handler)
{
    struct cq_io_s *ch = io_check(channel, "cq_io_read_f");
    if (handler == NULL) {
        cq__crash("cq_io_read_f: NULL handler");
    }
    struct cq__io_op *op = op_new(ch, CQ__IO_OP_READ, queue, context);
    op->handler = handler;
    op->offset = offset;
    op->want = length;
    op->acc = cq_data_empty;
    op_submit(ch, op);
}

void cq_io_write_f(cq_io_t channel, off_t offset, cq_data_t data, cq_queue_t queue, void *context,
                   cq_io_handler_function_t handler)
{
    struct cq_io_s *ch = io_check(channel, "cq_io_write_f");
    if (handler == NULL || data == NULL) {
        cq__crash("cq_io_write_f: NULL %s", handler ? "data" : "handler");
    }
    struct cq__io_op *op = op_new(ch, CQ__IO_OP_WRITE, queue, context);
    op->handler = handler;
    op->offset = offset;
    cq_retain(data);
    op->rest = data;
    op_submit(ch, op);
}

void cq_io_barrier_f(cq_io_t channel, void *context, cq_function_t barrier)
{
    struct cq_io_s *ch = io_check(channel, "cq_io_barrier_f");
    if (barrier == NULL) {
        cq__crash("cq_io_barrier_f: NULL barrier");
    }
    /* on the global queue of the channel queue's priority, as in libdispatch: a task on the
     * channel's queue that waits for a barrier does not wait for ever */
    struct cq__io_op *op =
        op_new(ch, CQ__IO_OP_BARRIER, &cq__root_queues[cq__queue_root_prio(ch->queue)], context);
    op->barrier = barrier;
    /* pairs with family_join's unlock: a channel made from this one (or it from another) on
     * another thread before this call is seen */
    pthread_mutex_lock(&family_lock);
    struct cq__io_family *family = ch->family;
    pthread_mutex_unlock(&family_lock);
    if (family == NULL) {
        op_submit(ch, op);
        return;
    }
    family_barrier(family, ch, op);
}

void cq_io_close(cq_io_t channel, cq_io_close_flags_t flags)
{
    struct cq_io_s *ch = io_check(channel, "cq_io_close");
    if (flags & ~(cq_io_close_flags_t)CQ_IO_STOP) {
        cq__crash("cq_io_close: unknown flags 0x%lx", flags);
    }
    pthread_mutex_lock(&ch->lock);
    ch->closed = true;
    if ((flags & CQ_IO_STOP) && !ch->stopped) {
        ch->stopped = true;
        for (struct cq__io_op *op = ch->active; op;) {
            struct cq__io_op *n = op->anext;
            cq__io_op_stop(op);
            op = n;
        }
        /* Waiting operations end now (barriers still run, in order), unless an active one has
         * yet to end: then they start after it, as they would have, and end at once
         * (cq__io_op_start), so the done calls come in the order of submission, as in
         * libdispatch. */
        struct cq__io_op **link = &ch->wait_head, *prev = NULL;
        while (ch->active == NULL && *link) {
            struct cq__io_op *op = *link;
            if (op->kind == CQ__IO_OP_BARRIER) {
                prev = op;
                link = &op->next;
                continue;
            }
            *link = op->next;
            op->next = NULL;
            count_waiting(ch, op, -1);
            cq__io_op_fail(op, ECANCELED);
        }
        if (ch->active == NULL) {
            ch->wait_tail = prev;
        }
        ch_pump(ch);
    }
    ch_maybe_cleanup(ch);
    cq__io_unlock(ch);
}

void cq__io_set_avail(cq_io_t channel)
{
    struct cq_io_s *ch = io_check(channel, "cq_read_f");
    pthread_mutex_lock(&ch->lock);
    ch->avail = true;
    pthread_mutex_unlock(&ch->lock);
}

cq_fd_t cq_io_get_descriptor(cq_io_t channel)
{
    struct cq_io_s *ch = io_check(channel, "cq_io_get_descriptor");
    pthread_mutex_lock(&ch->lock);
    /* a directory's channel still has its descriptor (as libdispatch's) */
    bool usable = ch->err == 0 || (ch->err == EISDIR && ch->fd >= 0);
    int fd = ch->failed                            ? ch->failed_fd
             : ch->ready && !ch->cleaned && usable ? (ch->dup_fd ? ch->user_fd : ch->fd)
                                                   : -1;
    pthread_mutex_unlock(&ch->lock);
    return fd;
}

void cq_io_set_high_water(cq_io_t channel, size_t high_water)
{
    struct cq_io_s *ch = io_check(channel, "cq_io_set_high_water");
    pthread_mutex_lock(&ch->lock);
    ch->high = high_water ? high_water : 1;
    if (ch->low_set && ch->low > ch->high) {
        ch->low = ch->high;
    }
    pthread_mutex_unlock(&ch->lock);
}

void cq_io_set_low_water(cq_io_t channel, size_t low_water)
{
    struct cq_io_s *ch = io_check(channel, "cq_io_set_low_water");
    pthread_mutex_lock(&ch->lock);
    ch->low = low_water;
    ch->low_set = true;
    if (ch->high < low_water) {
        ch->high = low_water;
    }
    pthread_mutex_unlock(&ch->lock);
}

void cq_io_set_interval(cq_io_t channel, uint64_t interval, cq_io_interval_flags_t flags)
{
    struct cq_io_s *ch = io_check(channel, "cq_io_set_interval");
    if (flags & ~(cq_io_interval_flags_t)CQ_IO_STRICT_INTERVAL) {
        cq__crash("cq_io_set_interval: unknown flags 0x%lx", flags);
    }
    pthread_mutex_lock(&ch->lock);
    ch->interval = interval;
    ch->strict = (flags & CQ_IO_STRICT_INTERVAL) != 0;
    pthread_mutex_unlock(&ch->lock);
}
