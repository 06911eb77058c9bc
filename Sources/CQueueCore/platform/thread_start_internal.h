/*
 * Starting runtime threads (thread_start.c).
 */
#ifndef CQ_THREAD_START_INTERNAL_H
#define CQ_THREAD_START_INTERNAL_H

#include "platform/atomic_internal.h"
#include <pthread.h>

/* Starts a detached runtime thread running fn(arg). It starts with every asynchronous signal
 * blocked, so signals reach the application's threads and signalfd (faults stay deliverable).
 * Returns 0 or pthread_create's error. */
CQ_INTERNAL int cq__thread_start(pthread_t *thread, void *(*fn)(void *), void *arg);

/* A new thread inherits its creator's nice value, and an unprivileged thread cannot lower its
 * own. Without care, a runtime thread started lazily from a background worker (nice 19: the
 * reactor for its first timer, the I/O thread for its first read, a worker of another band)
 * would run at nice 19 for the life of the process. So the pool registers, once, the nice
 * value its threads run at and a delegate that starts a thread from a thread running at that
 * value; cq__thread_start hands a start to it when the calling thread's nice value is higher.
 * The delegate returns what cq__thread_start would, or -1 if it cannot take the start now (the
 * caller then starts the thread itself). */
typedef int (*cq__thread_start_delegate_t)(pthread_t *thread, void *(*fn)(void *), void *arg);
CQ_INTERNAL void cq__thread_start_set_delegate(int nice, cq__thread_start_delegate_t delegate);

/* As cq__thread_start, on the calling thread whatever its nice value (for the delegate). */
CQ_INTERNAL int cq__thread_start_here(pthread_t *thread, void *(*fn)(void *), void *arg);

#endif /* CQ_THREAD_START_INTERNAL_H */
