/*
 * cq-bench — the workloads compiled against the Swift toolchain's libdispatch (dispatch_*_f calls;
 * no blocks). Only this file sees libdispatch's headers.
 *
 * libdispatch's headers test __has_feature / __has_extension, which clang has and GCC (before 14)
 * does not; without blocks or Objective-C every such test should read "no".
 */
#define _GNU_SOURCE /* pthread_setaffinity_np */

#ifndef __has_feature
#define __has_feature(x) 0
#endif
#ifndef __has_extension
#define __has_extension(x) 0
#endif

#include <dispatch/dispatch.h>

#include "bench.h"

#define RT(x) dispatch_##x
#define RT_SERIAL DISPATCH_QUEUE_SERIAL
#define RT_CONCURRENT DISPATCH_QUEUE_CONCURRENT
#define RT_GLOBAL() dispatch_get_global_queue(DISPATCH_QUEUE_PRIORITY_DEFAULT, 0)
#define RT_FOREVER DISPATCH_TIME_FOREVER
#define RT_SOURCE_TIMER DISPATCH_SOURCE_TYPE_TIMER
#define RT_PRIORITY_HIGH DISPATCH_QUEUE_PRIORITY_HIGH
#define RT_PRIORITY_BACKGROUND DISPATCH_QUEUE_PRIORITY_BACKGROUND
#define RT_NOW DISPATCH_TIME_NOW
#define RT_TABLE bench_rt_dispatch
#define RT_NAME "libdispatch"

#include "workloads.inc"
