/*
 * cq-bench — the workloads compiled against CQueueCore (cq_* calls).
 */
#define _GNU_SOURCE /* pthread_setaffinity_np */

#include <cqueuecore.h>

#include "bench.h"

#define RT(x) cq_##x
#define RT_SERIAL CQ_QUEUE_SERIAL
#define RT_CONCURRENT CQ_QUEUE_CONCURRENT
#define RT_GLOBAL() cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0)
#define RT_FOREVER CQ_TIME_FOREVER
#define RT_SOURCE_TIMER CQ_SOURCE_TYPE_TIMER
#define RT_PRIORITY_HIGH CQ_QUEUE_PRIORITY_HIGH
#define RT_PRIORITY_BACKGROUND CQ_QUEUE_PRIORITY_BACKGROUND
#define RT_NOW CQ_TIME_NOW
#define RT_TABLE bench_rt_cq
#define RT_NAME "ours"

#include "workloads.inc"
