/*
 * The runtime's use of liburcu (membarrier flavour), behind small wrappers: readers register
 * lazily (and unregister at thread exit), and the wrappers tell ThreadSanitizer about the grace
 * period it cannot see in the uninstrumented library (readers release a sync object when they
 * leave the read side; reclaimers acquire it before freeing).
 *
 * Used for: queue-specific arrays (lock-free lookups), and queue memory (set_target walks a
 * chain that another thread may be retargeting).
 */
#ifndef CQ_RCU_INTERNAL_H
#define CQ_RCU_INTERNAL_H

#include <urcu/urcu-memb.h>

#include "atomic_internal.h"

CQ_INTERNAL void cq__rcu_register(void);   /* idempotent, per thread */
CQ_INTERNAL void cq__rcu_unregister(void); /* at thread exit */
CQ_INTERNAL void cq__rcu_mark_liburcu_thread(void);

extern char cq__rcu_tsan_sync;

CQ_INLINE void cq__rcu_read_lock(void)
{
    cq__rcu_register();
    urcu_memb_read_lock();
}

CQ_INLINE void cq__rcu_read_unlock(void)
{
    cq__tsan_release(&cq__rcu_tsan_sync);
    urcu_memb_read_unlock();
}

/* Frees `head`'s object after a grace period (the caller is registered). */
CQ_INLINE void cq__rcu_defer(struct rcu_head *head, void (*fn)(struct rcu_head *))
{
    cq__rcu_register();
    cq__tsan_release(head);
    urcu_memb_call_rcu(head, fn);
}

/* First thing in a call_rcu callback. liburcu's callback threads are registered readers of
 * their own: note it, so that a callback that frees a queue (and defers more) does not
 * register the thread a second time. */
CQ_INLINE void cq__rcu_reclaim_begin(struct rcu_head *head)
{
    cq__tsan_acquire(head);
    cq__tsan_acquire(&cq__rcu_tsan_sync);
    cq__rcu_mark_liburcu_thread();
}

#endif /* CQ_RCU_INTERNAL_H */
