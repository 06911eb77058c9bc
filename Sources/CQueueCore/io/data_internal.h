/*
 * Data objects inside the library: the layout (io/data.c), and the fast constructors the I/O
 * channels use to hand their buffers over without a copy.
 */
#ifndef CQ_DATA_INTERNAL_H
#define CQ_DATA_INTERNAL_H

#include <cqueuecore/data.h>

#include <sys/uio.h>

#include "platform/atomic_internal.h"

/*
 * cq__data_create_owned
 *   A one-region data object over `buf` (from malloc), taking ownership: it is freed (free)
 *   when the last reference goes. No copy; one allocation (the object). size 0: frees buf and
 *   returns cq_data_empty. NULL (errno ENOMEM) if the object cannot be allocated: buf is then
 *   still the caller's.
 */
CQ_INTERNAL cq_data_t cq__data_create_owned(void *buf, size_t size);

/*
 * cq__data_create_recycled
 *   As cq__data_create_owned (size > 0), but when the last reference goes recycle(buf) is
 *   called at once, on the thread that released it, instead of free (the I/O engine's read
 *   buffers go back to its cache, still mapped and warm). recycle must not block.
 */
CQ_INTERNAL cq_data_t cq__data_create_recycled(void *buf, size_t size, cq_function_t recycle);

/*
 * cq__data_alloc
 *   A one-region data object with `capacity` uninitialised bytes inline (one allocation for the
 *   object and its bytes); *bytes_out points at them. The caller fills them (read(2) into it)
 *   and may shorten the object with cq__data_set_size before anyone else sees it. capacity 0
 *   returns cq_data_empty with *bytes_out NULL. NULL (errno ENOMEM) if out of memory.
 */
CQ_INTERNAL cq_data_t cq__data_alloc(size_t capacity, void **bytes_out);

/*
 * cq__data_set_size
 *   Shortens an object from cq__data_alloc to `size` bytes (size <= its capacity), before it is
 *   shared (not thread-safe: the object is still the caller's alone). size 0: releases it and
 *   returns cq_data_empty; otherwise returns data.
 */
CQ_INTERNAL cq_data_t cq__data_set_size(cq_data_t data, size_t size);

/*
 * cq__data_iov
 *   Fills up to `max` iovecs with the regions of `data` from byte `offset` on (for writev);
 *   returns how many were filled (0 when offset is at or past the end). The iovecs point into
 *   data: valid while it is retained. Allocates nothing.
 */
CQ_INTERNAL size_t cq__data_iov(cq_data_t data, size_t offset, struct iovec *iov, size_t max);

#endif /* CQ_DATA_INTERNAL_H */
