/*
 * CPU count and numeric environment settings (cpus.c).
 */
#ifndef CQ_CPUS_INTERNAL_H
#define CQ_CPUS_INTERNAL_H

#include "platform/atomic_internal.h"
#include <stdint.h>

/* Usable CPUs (affinity, cgroup quota, CQ_WORKERS), at most `max` (the pool passes
 * CQ__MAX_WORKERS). */
CQ_INTERNAL uint32_t cq__usable_cpus(uint32_t max);
/* A positive number from the environment, or `dflt`. */
CQ_INTERNAL uint32_t cq__env_u32(const char *name, uint32_t dflt);
/* The same, clamped to [min, max] with a one-line report when the value is outside. */
CQ_INTERNAL uint32_t cq__env_u32_clamped(const char *name, uint32_t dflt, uint32_t min,
                                         uint32_t max);

#endif /* CQ_CPUS_INTERNAL_H */
