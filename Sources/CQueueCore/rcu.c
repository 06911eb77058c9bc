/*
 * Deferred reclamation and liburcu's side of fork() (see rcu_internal.h, fork.c).
 */
#include "rcu_internal.h"

#include "fork_internal.h"

char cq__rcu_tsan_sync;

void cq__rcu_defer(struct rcu_head *head, void (*fn)(struct rcu_head *))
{
    /* liburcu's callback thread starts with the first call: from then on a fork must pause
     * it (and the child must start a new one). */
    cq__fork_handlers_install();
    cq__tsan_release(head);
    urcu_bp_call_rcu(head, fn);
}

/* liburcu's grace-period and registry locks; in the child it drops the parent's other threads
 * from its registry (one of them may have been inside a read-side section). */
void cq__rcu_fork_prepare(void)
{
    urcu_bp_before_fork();
}

void cq__rcu_fork_parent(void)
{
    urcu_bp_after_fork_parent();
}

void cq__rcu_fork_child(void)
{
    urcu_bp_after_fork_child();
}
