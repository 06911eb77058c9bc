/*
 * fork() support (fork.c): each part of the runtime quiesces in prepare (takes its locks),
 * releases them in the parent, and starts over in the child. The handlers are installed the
 * first time the runtime starts a thread or registers with RCU.
 */
#ifndef CQ_FORK_INTERNAL_H
#define CQ_FORK_INTERNAL_H

#include "atomic_internal.h"

/* Bumped in each forked child. Queues and sources remember the value they were created (or
 * adopted) under: a different one means "inherited from the parent". Written only by the
 * child's single thread before it returns from fork(). */
extern uint32_t cq__fork_gen;

CQ_INTERNAL void cq__fork_handlers_install(void);

/* A task that called fork() returned to its worker loop in the child: the child exits (0). */
CQ_INTERNAL __attribute__((noreturn)) void cq__fork_child_task_returned(void);

#define CQ__FORK_HOOKS(part)                                                                    \
    CQ_INTERNAL void cq__##part##_fork_prepare(void);                                          \
    CQ_INTERNAL void cq__##part##_fork_parent(void);                                           \
    CQ_INTERNAL void cq__##part##_fork_child(void);

CQ__FORK_HOOKS(pool)     /* pool.c: start lock, pool lock; the pool starts over */
CQ__FORK_HOOKS(reactor)  /* reactor.c: start lock; descriptors closed, restarts on use */
CQ__FORK_HOOKS(timer)    /* timer.c: schedule lock; timers of the parent dropped */
CQ__FORK_HOOKS(specific) /* queue_specific.c: writers' lock */
CQ__FORK_HOOKS(task)     /* task.c: trim lock (a trim in progress), arena lock, depot pop lock */
CQ__FORK_HOOKS(rcu)      /* rcu.c: liburcu-bp's grace-period and registry locks */
CQ__FORK_HOOKS(rcu_call_rcu) /* rcu.c: liburcu's call_rcu threads (restarted lazily) */

/* queue.c: the main queue starts over unless the forking thread was the main thread. */
CQ_INTERNAL void cq__queue_fork_child(void);

#endif /* CQ_FORK_INTERNAL_H */
