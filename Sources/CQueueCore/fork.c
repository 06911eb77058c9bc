/*
 * fork(): the child can use the runtime.
 *
 * After fork() only the calling thread exists in the child; the runtime's workers, monitor,
 * reactor and liburcu's callback threads do not. The handlers installed here make that safe:
 *
 *   prepare  every lock a runtime thread may hold is taken (so none is copied held), and
 *            liburcu's call_rcu threads are paused outside their grace periods;
 *   parent   everything is released;
 *   child    everything is released and each part starts over: the pool, the monitor and the
 *            reactor start again, empty, on their next use, with new threads and descriptors
 *            (the parent's epoll, eventfd, timerfd, signalfd and inotify descriptors are closed
 *            in the child: they are shared kernel objects that belong to the parent's reactor).
 *
 * What the child inherits (docs/fork.md): work queued or running in the parent does not run in
 * the child. Global queues and everything created in the child work as usual. A queue created
 * before the fork may be used in the child if it was idle at the fork (it is adopted on first
 * use, with its target chain); one that was busy aborts with a message, as does a source that
 * was resumed in the parent. A task that forks continues in the child; when it returns, the
 * child exits with status 0 (stdio flushed, atexit handlers not run).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "diag_internal.h"
#include "fork_internal.h"
#include "rcu_internal.h"
#include "thread_internal.h"

uint32_t cq__fork_gen;

static void prepare(void)
{
    /* First, while no runtime lock is held: a paused callback thread may have been running a
     * callback that takes one. */
    cq__rcu_call_rcu_fork_prepare();
    cq__is_main_thread(); /* learn it now: in the child, every thread's tid is the pid */
    cq__pool_fork_prepare();
    cq__reactor_fork_prepare();
    cq__timer_fork_prepare();
    cq__specific_fork_prepare();
    cq__task_fork_prepare();
    cq__rcu_fork_prepare();
}

static void parent(void)
{
    cq__rcu_fork_parent();
    cq__task_fork_parent();
    cq__specific_fork_parent();
    cq__timer_fork_parent();
    cq__reactor_fork_parent();
    cq__pool_fork_parent();
    cq__rcu_call_rcu_fork_parent();
}

static void child(void)
{
    /* The forking thread may be a runtime thread, which blocks every asynchronous signal; a
     * child that execs must not inherit that mask. */
    bool pool_thread = cq__tls.thread != NULL;
    cq__fork_gen++;
    cq__rcu_fork_child();
    cq__task_fork_child();
    cq__specific_fork_child();
    cq__timer_fork_child();
    cq__reactor_fork_child();
    cq__pool_fork_child();
    cq__queue_fork_child();
    cq__rcu_call_rcu_fork_child();
    cq__tls.main_thread = 0; /* tid == pid for the child's only thread */
    if (pool_thread) {
        sigset_t none;
        sigemptyset(&none);
        pthread_sigmask(SIG_SETMASK, &none, NULL);
    }
}

static pthread_once_t install_once = PTHREAD_ONCE_INIT;

static void install(void)
{
    if (pthread_atfork(prepare, parent, child) != 0) {
        static atomic_bool reported;
        cq__report_once(&reported, "pthread_atfork failed: a forked child cannot use the "
                                   "runtime");
    }
}

void cq__fork_handlers_install(void)
{
    pthread_once(&install_once, install);
}

/* The child's stdio buffers are flushed (what the task printed), but the parent's atexit
 * handlers do not run a second time: the child was never the program's main line. */
void cq__fork_child_task_returned(void)
{
    fflush(NULL);
    _exit(0);
}
