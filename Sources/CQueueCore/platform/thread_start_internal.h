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

#endif /* CQ_THREAD_START_INTERNAL_H */
