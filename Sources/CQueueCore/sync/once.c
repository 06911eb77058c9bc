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
#include "sync/wait_internal.h"

#define ONCE_DONE (~0l)
#define ONCE_RUNNING 1u
#define ONCE_WAITERS 2u

_Static_assert(sizeof(long) == 8 && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "the once futex is the low half of a 64-bit predicate");

/* ---- waiting for the thread that runs the function (sync/wait_internal.h) ---- */

static bool once_done(void *ctx)
{
    /* pairs with the release exchange that stores ONCE_DONE in once_slow */
    return cq__load((_Atomic long *)ctx, acquire) == ONCE_DONE;
}

static bool once_announce(void *ctx, _Atomic uint32_t **word, uint32_t *value)
{
    _Atomic long *pred = ctx;
    long v = cq__load(pred, relaxed);
    if ((uint32_t)v == ONCE_RUNNING &&
        !cq__cas(pred, &v, (v & ~0xffffffffl) | ONCE_WAITERS, relaxed)) {
        return false;
    }
    *word = (_Atomic uint32_t *)pred; /* sleeps only while the low half says WAITERS */
    *value = ONCE_WAITERS;
    return true;
}

static const struct cq__wait_ops once_wait = {.done = once_done, .announce = once_announce};

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
    if (v != ONCE_DONE) {
        /* Behind another waiter (WAITERS), a thread keeps its CPU's proc while it waits, as a
         * sync behind another sync does: given to a spare, each proc took the next task, which
         * waited too, and 500 tasks calling once behind a 300 ms function grew the process to
         * its thread limit with the message (libdispatch: 4-5 threads, the same 0.3 s). The
         * first waiter still gives its proc away, and the monitor adds procs slowly while work
         * waits behind the kept ones. */
        cq__wait_keeping(&once_wait, pred, CQ_TIME_FOREVER, (uint32_t)v == ONCE_WAITERS, false);
    }
}

void(cq_once_f)(cq_once_t *predicate, void *ctx, cq_function_t fn)
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
