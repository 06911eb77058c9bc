/*
 * CQueueCore — a work-stealing dispatch-queue runtime for Linux with libdispatch's
 * function-pointer API under the cq_ prefix. Include this one header. Compiled with clang
 * -fblocks it also declares the block forms (cqueuecore/blocks.h). Code written for libdispatch
 * includes <cq_dispatch.h> instead (docs/libdispatch-compat.md).
 */
#ifndef CQUEUECORE_H
#define CQUEUECORE_H

#include <cqueuecore/base.h>
#include <cqueuecore/object.h>
#include <cqueuecore/time.h>
#include <cqueuecore/queue.h>
#include <cqueuecore/semaphore.h>
#include <cqueuecore/group.h>
#include <cqueuecore/once.h>
#include <cqueuecore/apply.h>
#include <cqueuecore/source.h>
#include <cqueuecore/work_item.h>
#include <cqueuecore/data.h>
#include <cqueuecore/io.h>
#include <cqueuecore/runtime.h>
#include <cqueuecore/introspect.h>
#include <cqueuecore/swift_support.h>
#include <cqueuecore/blocks.h>

#endif /* CQUEUECORE_H */
