/*
 * fork() support (fork.c): each part of the runtime quiesces in prepare (takes its locks),
 * releases them in the parent, and starts over in the child. The handlers are installed the
 * first time the runtime starts a thread or registers with RCU.
 */
#ifndef CQ_FORK_INTERNAL_H
#define CQ_FORK_INTERNAL_H

#include "platform/atomic_internal.h"

/* Bumped in each forked child. Queues and sources remember the value they were created (or
 * adopted) under: a different one means "inherited from the parent". Written only by the
 * child's single thread before it returns from fork(). */
extern uint32_t cq__fork_gen;

CQ_INTERNAL void cq__fork_handlers_install(void);

/* A task that called fork() returned to its worker loop in the child: the child exits (0). */
CQ_INTERNAL __attribute__((noreturn)) void cq__fork_child_task_returned(void);

/*
 * The registry: each part of the runtime that holds locks, threads or descriptors registers its
 * hooks from a constructor in its own file (CQ__FORK_REGISTER), so this file names none of
 * them. prepare hooks run in rank order, parent and child hooks in the reverse order. The ranks
 * are the lock order: a part whose prepare takes a lock that another part's code may take
 * while holding its own comes later.
 */
enum cq__fork_rank {
    CQ__FORK_RANK_THREAD,       /* thread.c: learns the main thread; resets the TLS in the child */
    CQ__FORK_RANK_RCU_CALL_RCU, /* rcu.c: liburcu's call_rcu threads (restarted lazily); first,
                                   while no runtime lock is held (a callback may take one) */
    CQ__FORK_RANK_QUEUE,        /* queue.c: the main queue starts over (child only) */
    CQ__FORK_RANK_POOL,         /* pool.c: start lock, pool lock; the pool starts over */
    CQ__FORK_RANK_REACTOR,      /* reactor.c: start lock; descriptors closed, restarts on use */
    CQ__FORK_RANK_TIMER,        /* timer.c: schedule lock (and cq_after_f's); timers dropped */
    CQ__FORK_RANK_SPECIFIC,     /* queue_specific.c: writers' lock */
    CQ__FORK_RANK_TASK,         /* task.c: trim lock, arena lock, depot pop lock */
    CQ__FORK_RANK_IO,           /* io/uring.c, io/io_pool.c: ring and blocking-pool locks
                                   (leaves); the child starts its own ring and threads */
    CQ__FORK_RANK_REGISTRY,     /* queue_registry.c, introspect.c: the live-object lists' locks
                                   (leaves: only an RCU read lock is taken under them) */
    CQ__FORK_RANK_RCU,          /* rcu.c: liburcu-bp's grace-period and registry locks */
};

struct cq__fork_hooks {
    enum cq__fork_rank rank;
    void (*prepare)(void); /* NULL: nothing to do */
    void (*parent)(void);
    void (*child)(void);
};

/* Called from constructors (single-threaded, before main or under the loader's lock). */
CQ_INTERNAL void cq__fork_register(const struct cq__fork_hooks *hooks);

/* Declares a part's three hooks (in the part's own header). */
#define CQ__FORK_HOOKS(part)                                                                       \
    CQ_INTERNAL void cq__##part##_fork_prepare(void);                                              \
    CQ_INTERNAL void cq__##part##_fork_parent(void);                                               \
    CQ_INTERNAL void cq__##part##_fork_child(void);

#define CQ__FORK_REGISTER(part, rank_, prepare_, parent_, child_)                                  \
    CQ_EARLY_INIT static void cq__fork_register_##part(void)                                       \
    {                                                                                              \
        static const struct cq__fork_hooks hooks = {(rank_), (prepare_), (parent_), (child_)};     \
        cq__fork_register(&hooks);                                                                 \
    }

#endif /* CQ_FORK_INTERNAL_H */
