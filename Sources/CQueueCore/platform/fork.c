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
 * Each part registers its hooks from its own file (CQ__FORK_REGISTER, fork_internal.h, which
 * gives the order); the handlers here run them.
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

#include "platform/diag_internal.h"
#include "platform/fork_internal.h"

uint32_t cq__fork_gen;

#define MAX_PARTS 16
static const struct cq__fork_hooks *parts[MAX_PARTS]; /* by rank */
static unsigned nparts;

void cq__fork_register(const struct cq__fork_hooks *hooks)
{
    if (nparts == MAX_PARTS) {
        cq__crash("internal error: too many fork hooks");
    }
    unsigned i = nparts++;
    while (i > 0 && parts[i - 1]->rank > hooks->rank) {
        parts[i] = parts[i - 1];
        i--;
    }
    parts[i] = hooks;
}

static void prepare(void)
{
    for (unsigned i = 0; i < nparts; i++) {
        if (parts[i]->prepare) {
            parts[i]->prepare();
        }
    }
}

static void parent(void)
{
    for (unsigned i = nparts; i-- > 0;) {
        if (parts[i]->parent) {
            parts[i]->parent();
        }
    }
}

static void child(void)
{
    cq__fork_gen++;
    for (unsigned i = nparts; i-- > 0;) {
        if (parts[i]->child) {
            parts[i]->child();
        }
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
