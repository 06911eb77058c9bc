/*
 * Counting allocations: this target defines malloc, calloc, realloc, posix_memalign,
 * aligned_alloc and memalign, which take precedence over glibc's for the whole process, count
 * the call (one relaxed atomic add) and forward to glibc's implementation.
 */
#ifndef MALLOC_COUNT_H
#define MALLOC_COUNT_H

#include <stdint.h>

/* Allocation calls so far, in every thread. */
uint64_t malloc_count_total(void);

#endif
