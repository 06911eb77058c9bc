/*
 * How a caller of once, a semaphore or a group waits: one shape for all three, so the phases
 * (and the reasons for them) live in one place.
 *
 *   1. spin   while the wait is likely short (CQ__SPIN_WAIT_NS, calibrated in parker.c): a
 *             hand-off costs ~60 ns, a futex wake-up ~27 us on these machines. Skipped for a
 *             timeout of CQ_TIME_NOW.
 *   2. block  cq__pool_block_begin: a pool worker hands its CPU on (a spare thread runs the
 *             pool's work meanwhile), so waiting inside tasks never starves the pool.
 *   3. sleep  on a futex word the object names, after announcing a sleeper so that the waker
 *             knows to make the system call (a waiters flag, a sleeper count).
 *
 * The object supplies three functions (a const struct, so that cq__wait, inlined into the
 * object's slow path, calls them directly):
 *   done(ctx)                   the wait is over: the condition holds, or the waiter took what
 *                               it waited for; acquire ordering with whoever ended it
 *   announce(ctx, &word, &val)  about to sleep: make sure a waker will wake `word`, and say
 *                               what value to sleep on; false: the state moved (or the
 *                               announcement itself must be followed by a new look), check
 *                               done again first
 *   timed_out(ctx)              the deadline passed and done() was false: true gives up (and
 *                               undoes what announce counted), false keeps waiting with no
 *                               deadline (a waker already counted this waiter: its wake-up is on
 *                               the way). NULL when every wait is unbounded (once).
 */
#ifndef CQ_WAIT_INTERNAL_H
#define CQ_WAIT_INTERNAL_H

#include <errno.h>

#include "platform/parker_internal.h"
#include "platform/time_internal.h"
#include "scheduler/pool_internal.h"
#include "sync/apply_internal.h"

struct cq__wait_ops {
    bool (*done)(void *ctx);
    bool (*announce)(void *ctx, _Atomic uint32_t **word, uint32_t *value);
    bool (*timed_out)(void *ctx);
};

/* Waits as above; 0 when done; on timeout -1 with errno ETIMEDOUT, which is what libdispatch
 * returns on Linux (code ported from it may test for -1). keep_proc: the wait is behind
 * another thread that moves things on (see cq__event_wait_behind): a pool thread keeps its
 * proc. keep_if_crowded: behind another waiter, keep the proc once many wait (struct
 * cq__block). cq__wait, below, is the common case. */
CQ_INLINE intptr_t cq__wait_keeping(const struct cq__wait_ops *ops, void *ctx, cq_time_t timeout,
                                    bool keep_proc, bool keep_if_crowded)
{
    struct cq__deadline d;
    const struct cq__deadline *dl = NULL;
    if (timeout != CQ_TIME_FOREVER) {
        cq__deadline_init(&d, timeout);
        dl = &d;
    }
    /* No spin for a deadline that has passed already: CQ_TIME_NOW, or "now" computed by the
     * caller, the "is it done yet?" poll (`group.wait(timeout: .now())`), which spun for the
     * whole spin time, 8-29x libdispatch's cost per poll. */
    if (timeout != CQ_TIME_NOW && (dl == NULL || !cq__deadline_passed(&d))) {
        struct cq__spin sp;
        cq__spin_init(&sp, CQ__SPIN_WAIT_NS);
        while (cq__spin_next(&sp)) {
            if (ops->done(ctx)) {
                return 0;
            }
        }
    }
    if (dl != NULL && cq__deadline_passed(&d)) {
        if (ops->done(ctx)) {
            return 0;
        }
        if (ops->timed_out(ctx)) {
            errno = ETIMEDOUT;
            return -1;
        }
        dl = NULL;
    }
    cq__apply_before_sleep();
    struct cq__block block = {
        .active = false, .keep_proc = keep_proc, .keep_if_crowded = keep_if_crowded};
    cq__pool_block_begin(&block);
    intptr_t result = 0;
    for (;;) {
        if (ops->done(ctx)) {
            break;
        }
        _Atomic uint32_t *word;
        uint32_t value;
        if (!ops->announce(ctx, &word, &value)) {
            continue;
        }
        if (cq__futex_wait(word, value, dl) == ETIMEDOUT) {
            if (ops->done(ctx)) {
                break;
            }
            if (ops->timed_out(ctx)) {
                result = -1;
                break;
            }
            dl = NULL; /* a waker counted us: its wake-up is on the way */
        }
    }
    cq__pool_block_end(&block);
    if (result != 0) {
        errno = ETIMEDOUT; /* after the block bracket, which may have made system calls */
    }
    return result;
}

CQ_INLINE intptr_t cq__wait(const struct cq__wait_ops *ops, void *ctx, cq_time_t timeout)
{
    return cq__wait_keeping(ops, ctx, timeout, false, false);
}

#endif /* CQ_WAIT_INTERNAL_H */
