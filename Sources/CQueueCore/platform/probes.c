/*
 * The probes' semaphores and the global counters (probes_internal.h).
 */
#include "platform/probes_internal.h"

#ifdef CQ_HAVE_PROBES
/* A tracer finds each semaphore through the probe's note and increments it while attached. */
#define CQ__PROBE_DEFINE(name)                                                                     \
    CQ_INTERNAL volatile unsigned short CQ__PROBE_SEM(name) __attribute__((section(".probes")));
CQ__PROBES_OWN_SEMAPHORE(CQ__PROBE_DEFINE)
/* task_finish shares task_start's: attaching either computes both's arguments, and the hot path
 * (scheduler/item.c) tests one word. */
CQ_INTERNAL extern volatile unsigned short CQ__PROBE_SEM(task_finish)
    __attribute__((alias("swiftqueues_task_start_semaphore")));
#endif

struct cq__global_counters cq__counters;
