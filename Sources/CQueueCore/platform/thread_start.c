/*
 * Starting a runtime thread (pool workers, the monitor, the reactor, the task trimmer):
 * detached, with every asynchronous signal blocked so that signals go to the application's
 * threads.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "platform/probes_internal.h"
#include "platform/thread_start_internal.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <sys/resource.h>

static int base_nice;
static cq__thread_start_delegate_t _Atomic start_delegate;

void cq__thread_start_set_delegate(int nice, cq__thread_start_delegate_t delegate)
{
    base_nice = nice;
    /* release: pairs with the acquire load in cq__thread_start (base_nice is visible) */
    cq__store(&start_delegate, delegate, release);
}

int cq__thread_start(pthread_t *thread, void *(*fn)(void *), void *arg)
{
    /* acquire: pairs with the release store in cq__thread_start_set_delegate */
    cq__thread_start_delegate_t delegate = cq__load(&start_delegate, acquire);
    if (delegate != NULL) {
        errno = 0;
        int nice = getpriority(PRIO_PROCESS, 0); /* Linux: the calling thread's */
        if (errno == 0 && nice > base_nice) {
            int err = delegate(thread, fn, arg);
            if (err >= 0) {
                return err;
            }
        }
    }
    return cq__thread_start_here(thread, fn, arg);
}

int cq__thread_start_here(pthread_t *thread, void *(*fn)(void *), void *arg)
{
    sigset_t set, old;
    sigfillset(&set);
    static const int sync_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};
    for (size_t i = 0; i < sizeof sync_signals / sizeof sync_signals[0]; i++) {
        sigdelset(&set, sync_signals[i]);
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_sigmask(SIG_BLOCK, &set, &old); /* the new thread inherits this mask */
    int err = pthread_create(thread, &attr, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err == 0) {
        cq__count(threads_started, 1);
    }
    pthread_attr_destroy(&attr);
    return err;
}
