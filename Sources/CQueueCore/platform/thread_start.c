/*
 * Starting a runtime thread (pool workers, the monitor, the reactor, the task trimmer):
 * detached, with every asynchronous signal blocked so that signals go to the application's
 * threads.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "platform/thread_start_internal.h"

#include <signal.h>
#include <stddef.h>

int cq__thread_start(pthread_t *thread, void *(*fn)(void *), void *arg)
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
    pthread_attr_destroy(&attr);
    return err;
}
