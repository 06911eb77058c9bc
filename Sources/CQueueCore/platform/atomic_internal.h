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
/* The constructors that register the runtime's parts (item kinds, object classes, fork hooks):
 * with a priority, they run before the program's own constructors and C++ static initializers
 * (which have none), so that code running before main may use the runtime. Without one, a
 * static link ran a program's constructor first, and its first task stopped the process
 * ("unknown item kind"). Priorities up to 100 are the implementation's. */
#define CQ_EARLY_INIT __attribute__((constructor(200)))

#define cq__load(p, mo) atomic_load_explicit((p), memory_order_##mo)
#define cq__store(p, v, mo) atomic_store_explicit((p), (v), memory_order_##mo)
#define cq__xchg(p, v, mo) atomic_exchange_explicit((p), (v), memory_order_##mo)
#define cq__add(p, v, mo) atomic_fetch_add_explicit((p), (v), memory_order_##mo)
#define cq__sub(p, v, mo) atomic_fetch_sub_explicit((p), (v), memory_order_##mo)
#define cq__or(p, v, mo) atomic_fetch_or_explicit((p), (v), memory_order_##mo)
#define cq__and(p, v, mo) atomic_fetch_and_explicit((p), (v), memory_order_##mo)
/* Compare-and-swap; on failure *expected is refreshed (ordering: relaxed on failure). */
#define cq__cas(p, expected, desired, mo)                                                          \
    atomic_compare_exchange_strong_explicit((p), (expected), (desired), memory_order_##mo,         \
                                            memory_order_relaxed)
#define cq__cas_weak(p, expected, desired, mo)                                                     \
    atomic_compare_exchange_weak_explicit((p), (expected), (desired), memory_order_##mo,           \
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

#ifdef CQ_MODEL_CHECK
/*
 * Model-checking builds only (Tests/model/ compiles runq.c again with this defined; the library
 * never is): every atomic operation is first a scheduling point. The harness defines
 * cq__model_yield; it runs simulated threads as coroutines on one OS thread and decides at each
 * point which of them performs its next operation, so it can enumerate the interleavings of the
 * real code. The address and kind tell it which operations commute (partial-order reduction);
 * the function and line make a counterexample schedule readable. `p` is evaluated twice: call
 * sites pass plain addresses.
 */
enum cq__model_op { CQ__MODEL_LOAD, CQ__MODEL_STORE, CQ__MODEL_RMW, CQ__MODEL_FENCE };
void cq__model_yield(const volatile void *addr, enum cq__model_op op, const char *func, int line);
#define CQ__MODEL_POINT(p, op) cq__model_yield((const volatile void *)(p), (op), __func__, __LINE__)

#undef cq__load
#undef cq__store
#undef cq__xchg
#undef cq__add
#undef cq__sub
#undef cq__or
#undef cq__and
#undef cq__cas
#undef cq__cas_weak
#undef cq__fence
#define cq__load(p, mo)                                                                            \
    (CQ__MODEL_POINT((p), CQ__MODEL_LOAD), atomic_load_explicit((p), memory_order_##mo))
#define cq__store(p, v, mo)                                                                        \
    (CQ__MODEL_POINT((p), CQ__MODEL_STORE), atomic_store_explicit((p), (v), memory_order_##mo))
#define cq__xchg(p, v, mo)                                                                         \
    (CQ__MODEL_POINT((p), CQ__MODEL_RMW), atomic_exchange_explicit((p), (v), memory_order_##mo))
#define cq__add(p, v, mo)                                                                          \
    (CQ__MODEL_POINT((p), CQ__MODEL_RMW), atomic_fetch_add_explicit((p), (v), memory_order_##mo))
#define cq__sub(p, v, mo)                                                                          \
    (CQ__MODEL_POINT((p), CQ__MODEL_RMW), atomic_fetch_sub_explicit((p), (v), memory_order_##mo))
#define cq__or(p, v, mo)                                                                           \
    (CQ__MODEL_POINT((p), CQ__MODEL_RMW), atomic_fetch_or_explicit((p), (v), memory_order_##mo))
#define cq__and(p, v, mo)                                                                          \
    (CQ__MODEL_POINT((p), CQ__MODEL_RMW), atomic_fetch_and_explicit((p), (v), memory_order_##mo))
/* A CAS counts as a write even when it fails: conservative for the reduction, hence sound.
 * Spurious failures of a weak CAS are not explored (only interleavings are). */
#define cq__cas(p, expected, desired, mo)                                                          \
    (CQ__MODEL_POINT((p), CQ__MODEL_RMW),                                                          \
     atomic_compare_exchange_strong_explicit((p), (expected), (desired), memory_order_##mo,        \
                                             memory_order_relaxed))
#define cq__cas_weak(p, expected, desired, mo)                                                     \
    (CQ__MODEL_POINT((p), CQ__MODEL_RMW),                                                          \
     atomic_compare_exchange_weak_explicit((p), (expected), (desired), memory_order_##mo,          \
                                           memory_order_relaxed))
/* Under the sequentially consistent interleavings explored, a fence orders nothing further; it
 * stays a scheduling point so schedules read like the code. */
#define cq__fence(mo)                                                                              \
    (CQ__MODEL_POINT(NULL, CQ__MODEL_FENCE), atomic_thread_fence(memory_order_##mo))
#endif /* CQ_MODEL_CHECK */

#endif /* CQ_ATOMIC_INTERNAL_H */
