/*
 * CQueueCore — dispatch I/O: channels that read and write a descriptor asynchronously and hand
 * the bytes over as data objects (data.h), and the one-shot cq_read / cq_write.
 *
 * libdispatch: dispatch_io_* / dispatch_read / dispatch_write (dispatch/io.h) under the cq_
 * prefix, with the function forms of its private header (the _f calls); <cq_dispatch.h> maps
 * the dispatch_* names. The handlers behave as libdispatch documents them:
 *
 *   read    handler(done, data, error) is called one or more times: partial deliveries
 *           (done false) once at least the low-water mark has been read (or at an interval),
 *           each data object at most the high-water mark long; then once with done true: with
 *           the last bytes (the requested length reached), with empty data at end of file (all
 *           bytes delivered before), or with NULL data and `error` set (ECANCELED after a close
 *           with CQ_IO_STOP, or the errno of the failed read; bytes read before it were
 *           delivered). `length` SIZE_MAX reads to end of file.
 *   write   handler(done, remaining, error): partial calls carry the data not yet written; the
 *           last call has done true with error 0 (remaining NULL: everything written), or an
 *           error and the data that was not written (ECANCELED after a stop).
 *   Handlers of one operation never run concurrently and the done call is the last one. The
 *   data passed is released when the handler returns: retain it to keep it.
 *
 * Channels (cq_retain / cq_release as every object):
 *   CQ_IO_STREAM  reads run one after another, in order, at the descriptor's position; so do
 *                 writes (a read and a write may overlap); `offset` is ignored.
 *   CQ_IO_RANDOM  a regular file (or another seekable descriptor); `offset` is relative to the
 *                 file position the channel was created at (negative reaches back from it; an
 *                 operation that would start before the file's start fails with EINVAL);
 *                 operations may run concurrently.
 * A barrier (cq_io_barrier_f) runs on the global queue of the channel queue's priority (as in
 * libdispatch), after every operation submitted before it has finished its I/O, and before any
 * submitted after it starts.
 *
 * The channel owns the descriptor until it is closed (cq_io_close) or released and its
 * operations have finished; then the cleanup handler runs once on the channel's queue with 0
 * or the error that made the channel unusable (EBADF, an open() errno): only then may the
 * caller close a descriptor it gave to cq_io_create. A path channel closes its own. While the
 * channel uses a pipe or socket it sets O_NONBLOCK on it, and restores the flags before the
 * cleanup handler.
 *
 * Engines: pipes, sockets, terminals and other non-files wait on the reactor (epoll) and
 * read/write without blocking; regular files go through io_uring, or a small pool of threads
 * doing blocking preadv/pwritev where io_uring is unavailable (or CQ_IO_URING=0 is set in the
 * environment before the first file operation). No worker of the runtime waits for a disk.
 * A read runs ahead of its handler by a bounded amount: a file read issues nothing more while
 * 8 MiB it read wait for the handler, a pipe or socket read stops reading at 32 MiB (the rest
 * stays in the kernel, so the peer meets flow control). A file read whose handler returns
 * quickly reads the next piece of page-cached data on the handler's own turn, on the
 * operation's queue (at most 16 pieces before the queue's other work runs).
 *
 * Errors never crash: a descriptor that is not open (at create, or closed under the channel)
 * ends operations with EBADF; a path that cannot be opened ends them with open()'s errno; a
 * write to a pipe or socket whose reader has gone ends with EPIPE, and raises no SIGPIPE
 * (libdispatch's kills a program that keeps SIGPIPE's default action). An error found at
 * creation (a descriptor that is not open, a directory, random access on a pipe, a path that
 * cannot be looked up) runs the cleanup handler at once with it, as libdispatch does.
 * An unknown type, or a relative path, returns NULL with errno EINVAL.
 * Misuse aborts with a message: a NULL channel, queue or handler, an unknown flag.
 */
#ifndef CQUEUECORE_IO_H
#define CQUEUECORE_IO_H

#include <sys/types.h>

#include <cqueuecore/base.h>
#include <cqueuecore/object.h>
#include <cqueuecore/queue.h>
#include <cqueuecore/data.h>
#include <cqueuecore/blocks.h>

CQ_BEGIN_DECLS

typedef struct cq_io_s *cq_io_t;
typedef int cq_fd_t;

typedef unsigned long cq_io_type_t;
#define CQ_IO_STREAM 0
#define CQ_IO_RANDOM 1

typedef unsigned long cq_io_close_flags_t;
#define CQ_IO_STOP 0x1

typedef unsigned long cq_io_interval_flags_t;
#define CQ_IO_STRICT_INTERVAL 0x1

/* The handler of an operation: handler(context, done, data, error). libdispatch:
 * dispatch_io_handler_t. */
typedef void (*cq_io_handler_function_t)(void *context, bool done, cq_data_t data, int error);
/* The cleanup handler: cleanup(context, error). */
typedef void (*cq_io_cleanup_function_t)(void *context, int error);
/* The one-shot handlers: handler(context, data, error). */
typedef void (*cq_io_data_function_t)(void *context, cq_data_t data, int error);

/*
 * cq_io_create_f
 *   A channel on `fd` (the descriptor stays the caller's: close it after the cleanup
 *   handler). The channel works on its own duplicate of `fd` (the same open file: offset,
 *   flags), closed before the cleanup handler runs, so closing `fd` early, or its number being
 *   reused by another open, does not reach the channel's operations: they go on with the
 *   original file (libdispatch's would fail or hang, or read the other file).
 *   cq_io_get_descriptor returns `fd`. Once the process's descriptor table is half full
 *   (RLIMIT_NOFILE), the channel uses `fd` itself, as libdispatch does: the duplicates never
 *   take the second half of the table from the program.
 *   `queue` runs the cleanup handler (may be NULL: none); its priority is the barriers'.
 *   A descriptor that is not open gives a channel whose operations fail with EBADF (cleanup:
 *   EBADF).
 *   Returns NULL with errno EINVAL for an unknown type. libdispatch: dispatch_io_create_f.
 */
CQ_EXPORT cq_io_t cq_io_create_f(cq_io_type_t type, cq_fd_t fd, cq_queue_t queue,
                                 void *context, cq_io_cleanup_function_t cleanup) CQ_WARN_RESULT;

/*
 * cq_io_create_with_path_f
 *   A channel on `path`, opened with open(path, oflag, mode) on first use (off the workers),
 *   closed by the channel. An open that fails ends the operations with its errno and reaches
 *   the cleanup handler. `path` must be absolute (else NULL, errno EINVAL).
 *   libdispatch: dispatch_io_create_with_path_f.
 */
CQ_EXPORT cq_io_t cq_io_create_with_path_f(cq_io_type_t type, const char *path, int oflag,
                                           mode_t mode, cq_queue_t queue, void *context,
                                           cq_io_cleanup_function_t cleanup) CQ_WARN_RESULT;

/*
 * cq_io_create_with_io_f
 *   A new channel (of `type`) on the descriptor of `io`; the descriptor is released once both
 *   are done with it (the new channel's cleanup runs when it is closed or released and idle).
 *   libdispatch: dispatch_io_create_with_io_f.
 */
CQ_EXPORT cq_io_t cq_io_create_with_io_f(cq_io_type_t type, cq_io_t io, cq_queue_t queue,
                                         void *context,
                                         cq_io_cleanup_function_t cleanup) CQ_WARN_RESULT;

/* cq_io_read_f / cq_io_write_f: see the top of this header. `data` is retained until the
 * write is done. libdispatch: dispatch_io_read_f / dispatch_io_write_f. */
CQ_EXPORT void cq_io_read_f(cq_io_t channel, off_t offset, size_t length, cq_queue_t queue,
                            void *context, cq_io_handler_function_t handler);
CQ_EXPORT void cq_io_write_f(cq_io_t channel, off_t offset, cq_data_t data, cq_queue_t queue,
                             void *context, cq_io_handler_function_t handler);

/*
 * cq_io_close
 *   No new operations (they fail with ECANCELED). With CQ_IO_STOP the running and waiting ones
 *   end with ECANCELED (a read or write already in the kernel finishes first); without it they
 *   run to completion. Idempotent. libdispatch: dispatch_io_close.
 */
CQ_EXPORT void cq_io_close(cq_io_t channel, cq_io_close_flags_t flags);

/* cq_io_barrier_f: barrier(context) on the global queue of the channel queue's priority,
 * ordered as above.
 * libdispatch: dispatch_io_barrier_f. */
CQ_EXPORT void cq_io_barrier_f(cq_io_t channel, void *context, cq_function_t barrier);

/* The descriptor, or -1 if it is not open (yet, or any more, or failed). From a barrier or
 * handler of the channel it is the open descriptor. libdispatch: dispatch_io_get_descriptor. */
CQ_EXPORT cq_fd_t cq_io_get_descriptor(cq_io_t channel);

/*
 * Policies for the operations that start after the call.
 *   high water  data handed to a handler is never longer; partial results are delivered as
 *               soon as that much is processed (default SIZE_MAX). A value below the low-water
 *               mark lowers it too.
 *   low water   partial results wait until at least that much is processed, except at EOF, on
 *               an error or at a strict interval (default: each read delivers what it got;
 *               writes report only at the end). SIZE_MAX: no partial results. A value above
 *               the high-water mark raises it too.
 *   interval    partial results are delivered every `interval` nanoseconds instead of as they
 *               reach the low-water mark (CQ_IO_STRICT_INTERVAL: even below it, or empty).
 *               0 removes it.
 * libdispatch: dispatch_io_set_high_water / _low_water / _interval.
 */
CQ_EXPORT void cq_io_set_high_water(cq_io_t channel, size_t high_water);
CQ_EXPORT void cq_io_set_low_water(cq_io_t channel, size_t low_water);
CQ_EXPORT void cq_io_set_interval(cq_io_t channel, uint64_t interval,
                                  cq_io_interval_flags_t flags);

/*
 * cq_read_f / cq_write_f
 *   One-shot: reads up to `length` bytes from `fd` / writes all of `data`, then calls
 *   handler(context, data, error) once on `queue`: the bytes read (empty at end of file), or
 *   for a write NULL / the data not written on error. From a file the read takes `length`
 *   bytes or up to the end (SIZE_MAX: to the end); from a pipe or socket it waits for data
 *   and takes what is available then, up to `length` (as libdispatch: a request/response
 *   protocol does not stall). The descriptor is left as it was (its flags restored), open.
 *   libdispatch: dispatch_read_f / dispatch_write_f.
 */
CQ_EXPORT void cq_read_f(cq_fd_t fd, size_t length, cq_queue_t queue, void *context,
                         cq_io_data_function_t handler);
CQ_EXPORT void cq_write_f(cq_fd_t fd, cq_data_t data, cq_queue_t queue, void *context,
                          cq_io_data_function_t handler);

/* ---- block forms (clang -fblocks; see blocks.h) ------------------------------------------- */
#if defined(CQ_HAVE_BLOCKS)

typedef void (^cq_io_handler_t)(bool done, cq_data_t data, int error);

/* Trampolines. Not API. A block handler is released after its done call (io handlers) or its
 * only call (cleanup, one-shots). */
static inline void cq__io_handler_invoke(void *block, bool done, cq_data_t data, int error)
{
    ((cq_io_handler_t)block)(done, data, error);
    if (done) {
        _Block_release(block);
    }
}

static inline void cq__io_cleanup_invoke(void *block, int error)
{
    ((void (^)(int))block)(error);
    _Block_release(block);
}

static inline void cq__io_data_invoke(void *block, cq_data_t data, int error)
{
    ((void (^)(cq_data_t, int))block)(data, error);
    _Block_release(block);
}

static inline void *cq__io_block_copy(const void *block)
{
    return block ? _Block_copy(block) : NULL;
}

/* libdispatch: dispatch_io_create (a NULL cleanup block: none). */
static inline cq_io_t cq_io_create(cq_io_type_t type, cq_fd_t fd, cq_queue_t queue,
                                   void (^cleanup_handler)(int error))
{
    void *b = cq__io_block_copy((const void *)cleanup_handler);
    cq_io_t io = cq_io_create_f(type, fd, queue, b, b ? cq__io_cleanup_invoke : NULL);
    if (io == NULL && b) {
        _Block_release(b);
    }
    return io;
}

/* libdispatch: dispatch_io_create_with_path. */
static inline cq_io_t cq_io_create_with_path(cq_io_type_t type, const char *path, int oflag,
                                             mode_t mode, cq_queue_t queue,
                                             void (^cleanup_handler)(int error))
{
    void *b = cq__io_block_copy((const void *)cleanup_handler);
    cq_io_t io = cq_io_create_with_path_f(type, path, oflag, mode, queue, b,
                                          b ? cq__io_cleanup_invoke : NULL);
    if (io == NULL && b) {
        _Block_release(b);
    }
    return io;
}

/* libdispatch: dispatch_io_create_with_io. */
static inline cq_io_t cq_io_create_with_io(cq_io_type_t type, cq_io_t io, cq_queue_t queue,
                                           void (^cleanup_handler)(int error))
{
    void *b = cq__io_block_copy((const void *)cleanup_handler);
    cq_io_t n = cq_io_create_with_io_f(type, io, queue, b, b ? cq__io_cleanup_invoke : NULL);
    if (n == NULL && b) {
        _Block_release(b);
    }
    return n;
}

/* libdispatch: dispatch_io_read. */
static inline void cq_io_read(cq_io_t channel, off_t offset, size_t length, cq_queue_t queue,
                              cq_io_handler_t handler)
{
    cq_io_read_f(channel, offset, length, queue, cq__io_block_copy((const void *)handler),
                 handler ? cq__io_handler_invoke : NULL);
}

/* libdispatch: dispatch_io_write. */
static inline void cq_io_write(cq_io_t channel, off_t offset, cq_data_t data, cq_queue_t queue,
                               cq_io_handler_t handler)
{
    cq_io_write_f(channel, offset, data, queue, cq__io_block_copy((const void *)handler),
                  handler ? cq__io_handler_invoke : NULL);
}

/* libdispatch: dispatch_io_barrier. */
static inline void cq_io_barrier(cq_io_t channel, cq_block_t barrier)
{
    cq_io_barrier_f(channel, cq__io_block_copy((const void *)barrier),
                    barrier ? cq__block_invoke_release : NULL);
}

/* libdispatch: dispatch_read. */
static inline void cq_read(cq_fd_t fd, size_t length, cq_queue_t queue,
                           void (^handler)(cq_data_t data, int error))
{
    cq_read_f(fd, length, queue, cq__io_block_copy((const void *)handler),
              handler ? cq__io_data_invoke : NULL);
}

/* libdispatch: dispatch_write. */
static inline void cq_write(cq_fd_t fd, cq_data_t data, cq_queue_t queue,
                            void (^handler)(cq_data_t data, int error))
{
    cq_write_f(fd, data, queue, cq__io_block_copy((const void *)handler),
               handler ? cq__io_data_invoke : NULL);
}

#endif /* CQ_HAVE_BLOCKS */

CQ_END_DECLS

#endif /* CQUEUECORE_IO_H */
