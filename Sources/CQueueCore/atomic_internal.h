/*
 * The one atomics header every file of the core uses.
 *
 * All shared state is C11 atomics (so ThreadSanitizer understands every ordering); the thin
 * wrappers keep the memory order visible at each call site and give a model-checking build a
 * single place to swap the implementation. Every non-relaxed operation in the core says in a
 * comment which operation it pairs with.
 */
#ifndef CQ_ATOMIC_INTERNAL_H
#define CQ_ATOMIC_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* 128 bytes: x86's adjacent-line prefetcher pulls pairs of 64-byte lines. */
#define CQ_CACHELINE 128
#define CQ_CACHE_ALIGNED __attribute__((aligned(CQ_CACHELINE)))

#define cq__likely(x) __builtin_expect(!!(x), 1)
#define cq__unlikely(x) __builtin_expect(!!(x), 0)
#define CQ_INLINE static inline __attribute__((always_inline))
#define CQ_NOINLINE __attribute__((noinline))
#define CQ_INTERNAL __attribute__((visibility("hidden")))

#define cq__load(p, mo) atomic_load_explicit((p), memory_order_##mo)
#define cq__store(p, v, mo) atomic_store_explicit((p), (v), memory_order_##mo)
#define cq__xchg(p, v, mo) atomic_exchange_explicit((p), (v), memory_order_##mo)
#define cq__add(p, v, mo) atomic_fetch_add_explicit((p), (v), memory_order_##mo)
#define cq__sub(p, v, mo) atomic_fetch_sub_explicit((p), (v), memory_order_##mo)
#define cq__or(p, v, mo) atomic_fetch_or_explicit((p), (v), memory_order_##mo)
#define cq__and(p, v, mo) atomic_fetch_and_explicit((p), (v), memory_order_##mo)
/* Compare-and-swap; on failure *expected is refreshed (ordering: relaxed on failure). */
#define cq__cas(p, expected, desired, mo)                                                       \
    atomic_compare_exchange_strong_explicit((p), (expected), (desired), memory_order_##mo,     \
                                            memory_order_relaxed)
#define cq__cas_weak(p, expected, desired, mo)                                                  \
    atomic_compare_exchange_weak_explicit((p), (expected), (desired), memory_order_##mo,       \
                                          memory_order_relaxed)
#define cq__fence(mo) atomic_thread_fence(memory_order_##mo)

/* ThreadSanitizer annotations for synchronisation it cannot see (liburcu is not instrumented).
 * No-ops in normal builds. */
#if defined(__SANITIZE_THREAD__)
#define CQ_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CQ_TSAN 1
#endif
#endif
#ifdef CQ_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define cq__tsan_acquire(p) __tsan_acquire((void *)(p))
#define cq__tsan_release(p) __tsan_release((void *)(p))
#else
#define cq__tsan_acquire(p) ((void)(p))
#define cq__tsan_release(p) ((void)(p))
#endif

CQ_INLINE void cq__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

#endif /* CQ_ATOMIC_INTERNAL_H */
