/*
 * The runtime's use of liburcu, behind small wrappers. The flavour is "bulletproof" (urcu-bp):
 * readers need no registration (a thread registers itself on its first read-side section and
 * is unregistered when it exits), and it is the one flavour that survives fork(): in the child
 * it forgets the parent's other threads (fork.c calls its fork hooks). Its read side costs the
 * same as the membarrier flavour's: a thread-local counter update and a compiler barrier, the
 * grace periods pay with membarrier(2).
 *
 * The wrappers also tell ThreadSanitizer about the grace period it cannot see in the
 * uninstrumented library: readers release a sync object when they leave the read side;
 * reclaimers acquire it before freeing.
 *
 * Used for: queue-specific arrays (lock-free lookups), queue memory (set_target walks a chain
 * that another thread may be retargeting), and sources' target queues.
 */
#ifndef CQ_RCU_INTERNAL_H
#define CQ_RCU_INTERNAL_H

/* The read side inline (liburcu's LGPL static functions, which it offers to non-LGPL code: each
 * is under ten lines): a thread-local counter update and a compiler barrier in our own code,
 * where the library's exported functions cost a call and two __tls_get_addr each (a lookup of
 * a queue-specific value: 76 ns through them, see docs/design.md §11). Only this header
 * includes urcu-bp.h, so the choice is made once. CQ_RCU_LIBRARY_READ_SIDE (set by CMake for
 * UBSan builds: liburcu under-aligns its reader records, which the inline code's accesses
 * report) keeps the exported functions. */
#if !defined(_LGPL_SOURCE) && !defined(CQ_RCU_LIBRARY_READ_SIDE)
#define _LGPL_SOURCE
#define CQ__LGPL_SOURCE_HERE
#endif
#include <urcu/urcu-bp.h>
#ifdef CQ__LGPL_SOURCE_HERE
#undef _LGPL_SOURCE
#undef CQ__LGPL_SOURCE_HERE
#endif

#include "platform/atomic_internal.h"
#include "platform/fork_internal.h"

extern char cq__rcu_tsan_sync;

CQ_INLINE void cq__rcu_read_lock(void)
{
    urcu_bp_read_lock();
}

CQ_INLINE void cq__rcu_read_unlock(void)
{
    cq__tsan_release(&cq__rcu_tsan_sync);
    urcu_bp_read_unlock();
}

/* Frees `head`'s object after a grace period. */
CQ_INTERNAL void cq__rcu_defer(struct rcu_head *head, void (*fn)(struct rcu_head *));

/* Deferred frees queued and not run yet. */
CQ_INTERNAL extern _Atomic uint64_t cq__rcu_pending;

/* First thing in a call_rcu callback. */
CQ_INLINE void cq__rcu_reclaim_begin(struct rcu_head *head)
{
    cq__tsan_acquire(head);
    cq__tsan_acquire(&cq__rcu_tsan_sync);
    cq__sub(&cq__rcu_pending, 1, relaxed);
}

/*
 * Deferred frees wait for a grace period and then for liburcu's one callback thread. Threads
 * that create and release queues (or sources, or set specific values) faster than that piled
 * them up without bound: four threads making and dropping a queue each, 500,000 times, peaked
 * at 940 MB (libdispatch: 3 MB), eight at 2 GB. So the calls that make what a deferred free
 * will release call this first: past CQ__RCU_PENDING_LIMIT frees waiting, the caller waits
 * (urcu_bp_barrier) until those queued so far have run, which holds the producers to the pace
 * of reclamation. Called only where the caller may wait: it holds no runtime lock that a
 * callback takes. Not inside a read-side section, nor on the callback thread (either would
 * wait for itself): there it does nothing.
 */
#define CQ__RCU_PENDING_LIMIT 16384u
CQ_INTERNAL void cq__rcu_throttle_slow(void);
CQ_INLINE void cq__rcu_throttle(void)
{
    if (cq__unlikely(cq__load(&cq__rcu_pending, relaxed) > CQ__RCU_PENDING_LIMIT)) {
        cq__rcu_throttle_slow();
    }
}

/* fork(): rcu.c registers these (platform/fork_internal.h). */
CQ__FORK_HOOKS(rcu)
CQ__FORK_HOOKS(rcu_call_rcu)

#endif /* CQ_RCU_INTERNAL_H */
