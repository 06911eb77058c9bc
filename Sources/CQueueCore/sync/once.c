/*
 * cq_once_f. The predicate (a long, zero-initialised) holds:
 *   0                      not run yet
 *   tid << 32 | RUNNING    being run by thread `tid`
 *   tid << 32 | WAITERS    being run, and callers sleep on the low 32 bits (a futex)
 *   ~0                     done: the fast path is one acquire load
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cqueuecore/once.h>
#include <limits.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "platform/diag_internal.h"
#include "platform/parker_internal.h"
#include "scheduler/pool_internal.h"

#define ONCE_DONE (~0l)
#define ONCE_RUNNING 1u
#define ONCE_WAITERS 2u

_Static_assert(sizeof(long) == 8 && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "the once futex is the low half of a 64-bit predicate");

static CQ_NOINLINE void once_slow(_Atomic long *pred, void *ctx, cq_function_t fn)
{
    long tid = (long)syscall(SYS_gettid);
    /* pairs with the release exchange that stores ONCE_DONE in once_slow */
    long v = cq__load(pred, acquire);
    while (v == 0) {
        /* pairs with the release exchange that stores ONCE_DONE in once_slow */
        if (cq__cas(pred, &v, (tid << 32) | ONCE_RUNNING, acquire)) {
            fn(ctx);
            /* release: pairs with the acquire loads of every later caller */
            long old = cq__xchg(pred, ONCE_DONE, release);
            if ((uint32_t)old == ONCE_WAITERS) {
                cq__futex_wake((_Atomic uint32_t *)pred, INT_MAX);
            }
            return;
        }
    }
    if (v != ONCE_DONE && (v >> 32) == tid) {
        cq__crash("cq_once_f: recursive call on predicate %p from inside its own function",
                  (void *)pred);
    }
    struct cq__spin sp;
    cq__spin_init(&sp, CQ__SPIN_WAIT_NS);
    while (v != ONCE_DONE && cq__spin_next(&sp)) {
        /* pairs with the release exchange that stores ONCE_DONE in once_slow */
        v = cq__load(pred, acquire);
    }
    if (v == ONCE_DONE) {
        return;
    }
    struct cq__block block;
    cq__pool_block_begin(&block);
    /* pairs with the release exchange that stores ONCE_DONE in once_slow */
    while ((v = cq__load(pred, acquire)) != ONCE_DONE) {
        if ((uint32_t)v == ONCE_RUNNING &&
            !cq__cas(pred, &v, (v & ~0xffffffffl) | ONCE_WAITERS, relaxed)) {
            continue;
        }
        cq__futex_wait((_Atomic uint32_t *)pred, ONCE_WAITERS, NULL);
    }
    cq__pool_block_end(&block);
}

void cq_once_f(cq_once_t *predicate, void *ctx, cq_function_t fn)
{
    _Atomic long *pred = (_Atomic long *)predicate;
    if (cq__unlikely(pred == NULL)) {
        cq__crash("cq_once_f: NULL predicate");
    }
    /* pairs with the release exchange that stores ONCE_DONE in once_slow */
    if (cq__likely(cq__load(pred, acquire) == ONCE_DONE)) {
        return;
    }
    if (predicate == NULL || fn == NULL) {
        cq__crash("cq_once_f: NULL %s", predicate == NULL ? "predicate" : "function");
    }
    once_slow(pred, ctx, fn);
}
