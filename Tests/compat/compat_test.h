/*
 * The harness of the libdispatch-compatibility tests: C programs written against libdispatch's
 * names, compiled through cq_dispatch.h in every mode (gcc C11, -std=c99 -pedantic-errors, C++17,
 * clang -fblocks in C and C++) and, as a reference, against the Swift toolchain's libdispatch
 * (COMPAT_USE_LIBDISPATCH): a check that passes on both encodes libdispatch's behaviour.
 *
 * Written in the common subset of C99 and C++ (no designated initializers, no implicit void *
 * conversions, GCC __atomic builtins instead of <stdatomic.h>). Checks never depend on timing:
 * waits are on groups and semaphores with generous timeouts; a short wait that must time out is
 * used only to show that something has not happened.
 *
 * Exit status: 0 passed, 1 failed.
 */
#ifndef COMPAT_TEST_H
#define COMPAT_TEST_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <stdint.h>

#ifdef COMPAT_USE_LIBDISPATCH
#include <dispatch/dispatch.h>
/* libdispatch on Linux accepts QoS classes but does not name them; cq_dispatch.h does. */
#ifndef QOS_CLASS_USER_INTERACTIVE
#define QOS_CLASS_USER_INTERACTIVE 0x21u
#define QOS_CLASS_USER_INITIATED 0x19u
#define QOS_CLASS_DEFAULT 0x15u
#define QOS_CLASS_UTILITY 0x11u
#define QOS_CLASS_BACKGROUND 0x09u
#define QOS_CLASS_UNSPECIFIED 0x00u
#endif
#else
#include <cq_dispatch.h>
#endif

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/test_check.h"

/* Generous: only a lost task or wake-up makes a wait this long. */
#define COMPAT_PATIENCE_NS (60ll * 1000000000ll)
/* A wait that must time out, to show that something did not happen. */
#define COMPAT_SHORT_NS (50ll * 1000000ll)

static inline dispatch_time_t compat_deadline(void)
{
    return dispatch_time(DISPATCH_TIME_NOW, COMPAT_PATIENCE_NS);
}

static inline dispatch_time_t compat_short(void)
{
    return dispatch_time(DISPATCH_TIME_NOW, COMPAT_SHORT_NS);
}

#define WAIT_GROUP(g) REQUIRE(dispatch_group_wait((g), compat_deadline()) == 0)
#define WAIT_SEMA(s) REQUIRE(dispatch_semaphore_wait((s), compat_deadline()) == 0)

/* Atomics usable from C99 and C++ alike. */
static inline long compat_add(long *p, long v)
{
    return __atomic_add_fetch(p, v, __ATOMIC_SEQ_CST);
}

static inline long compat_load(long *p)
{
    return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

static inline void compat_store(long *p, long v)
{
    __atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}

static inline void compat_max(long *p, long v)
{
    long old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (old < v &&
           !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
}

/* "Now" as a dispatch_time_t on the monotonic clock, for deadline comparisons. */
static inline dispatch_time_t compat_now(void)
{
    return dispatch_time(DISPATCH_TIME_NOW, 0);
}

static inline dispatch_queue_t compat_global(void)
{
    return dispatch_get_global_queue(DISPATCH_QUEUE_PRIORITY_DEFAULT, 0);
}

static inline void compat_noop(void *context)
{
    (void)context;
}

/* Waits (on a semaphore, with a timeout) until two tasks run at the same time: each calls this
 * with the two semaphores in opposite order. Returns false if the other never arrived. */
static inline bool compat_rendezvous(dispatch_semaphore_t mine, dispatch_semaphore_t theirs)
{
    dispatch_semaphore_signal(mine);
    return dispatch_semaphore_wait(theirs, compat_deadline()) == 0;
}

#endif /* COMPAT_TEST_H */
