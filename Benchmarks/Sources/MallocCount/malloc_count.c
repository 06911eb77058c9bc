#define _GNU_SOURCE
#include "malloc_count.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

static _Atomic uint64_t count;

uint64_t malloc_count_total(void)
{
    return atomic_load_explicit(&count, memory_order_relaxed);
}

static inline void counted(void)
{
    atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
}

void *malloc(size_t size)
{
    counted();
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
    counted();
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
    counted();
    return __libc_realloc(p, size);
}

void *memalign(size_t alignment, size_t size)
{
    counted();
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size)
{
    counted();
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **out, size_t alignment, size_t size)
{
    if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0) {
        return EINVAL;
    }
    counted();
    void *p = __libc_memalign(alignment, size);
    if (p == NULL && size != 0) {
        return ENOMEM;
    }
    *out = p;
    return 0;
}
