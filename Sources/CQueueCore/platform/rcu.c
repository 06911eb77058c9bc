/*
 * Deferred reclamation and liburcu's side of fork() (see rcu_internal.h, fork.c).
 */
#include "platform/rcu_internal.h"

#include "platform/fork_internal.h"
#include "platform/probes_internal.h"

#include <pthread.h>
#include <urcu/call-rcu.h>

char cq__rcu_tsan_sync;
_Atomic uint64_t cq__rcu_pending;

/* liburcu's callback thread (named below); a thread's own wait for it would never end. */
static pthread_t callback_thread;
static _Atomic bool callback_thread_known;

/* liburcu starts one callback thread for call_rcu (ours is its only user): name it as the
 * runtime's other threads are named, so that ps -L, perf and top show whose it is, and count
 * it in threads_started. Again in a forked child, where liburcu starts a new one. */
static void name_callback_thread(void)
{
    pthread_t t = urcu_bp_get_call_rcu_thread(urcu_bp_get_default_call_rcu_data());
    pthread_setname_np(t, "cq-rcu");
    cq__count(threads_started, 1);
    callback_thread = t;
    /* release: callback_thread is written before the flag; pairs with the acquire load in
     * cq__rcu_throttle_slow */
    cq__store(&callback_thread_known, true, release);
}

static pthread_once_t named = PTHREAD_ONCE_INIT;

/* In a forked child, liburcu's call_rcu side is restarted on first use (see below). */
static _Atomic bool child_restart_pending;
static pthread_mutex_t child_restart_lock = PTHREAD_MUTEX_INITIALIZER;

static CQ_NOINLINE void child_restart(void)
{
    pthread_mutex_lock(&child_restart_lock);
    if (cq__load(&child_restart_pending, relaxed)) {
        urcu_bp_call_rcu_after_fork_child();
        name_callback_thread();
        /* release: the restarted call_rcu state is visible to whoever sees the flag clear; pairs
         * with the acquire load of child_restart_pending in cq__rcu_defer */
        cq__store(&child_restart_pending, false, release);
    }
    pthread_mutex_unlock(&child_restart_lock);
}

void cq__rcu_defer(struct rcu_head *head, void (*fn)(struct rcu_head *))
{
    /* liburcu's callback thread starts with the first call: from then on a fork must pause
     * it (and the child must start a new one). */
    cq__fork_handlers_install();
    /* acquire: pairs with the release in child_restart */
    if (cq__unlikely(cq__load(&child_restart_pending, acquire))) {
        child_restart();
    }
    pthread_once(&named, name_callback_thread);
    cq__tsan_release(head);
    cq__add(&cq__rcu_pending, 1, relaxed);
    urcu_bp_call_rcu(head, fn);
}

void cq__rcu_throttle_slow(void)
{
    /* acquire: pairs with the release store in name_callback_thread (callback_thread) */
    if (urcu_bp_read_ongoing() || cq__load(&child_restart_pending, relaxed) ||
        !cq__load(&callback_thread_known, acquire) ||
        pthread_equal(pthread_self(), callback_thread)) {
        return;
    }
    urcu_bp_barrier();
}

/* A child that forks again before its call_rcu side has restarted (a daemon's double fork)
 * must not pause it a second time: its lock is still held from the first fork, by this thread,
 * and liburcu's pause would wait for it for ever. Then prepare and parent leave it as it is
 * (the grandchild inherits the pending restart). child_restart_lock is held across the fork
 * either way, so no restart runs meanwhile on another thread. */
void cq__rcu_call_rcu_fork_prepare(void)
{
    pthread_mutex_lock(&child_restart_lock);
    if (!cq__load(&child_restart_pending, relaxed)) {
        urcu_bp_call_rcu_before_fork();
    }
}

void cq__rcu_call_rcu_fork_parent(void)
{
    if (!cq__load(&child_restart_pending, relaxed)) {
        urcu_bp_call_rcu_after_fork_parent();
    }
    pthread_mutex_unlock(&child_restart_lock);
}

/* liburcu restarts its call_rcu thread in the child at once; most children exec (or exit)
 * right away, and a thread each would be wasted (and ThreadSanitizer kills a child that starts
 * one). So the restart waits for the child's first deferred free: until then only the thread
 * that forked runs, and nothing else in the runtime uses call_rcu. Its lock, taken in prepare,
 * stays held by this (the only) thread until then. */
void cq__rcu_call_rcu_fork_child(void)
{
    /* the parent's frees are the parent's to run; the child counts its own */
    cq__store(&cq__rcu_pending, 0, relaxed);
    cq__store(&callback_thread_known, false, relaxed); /* named again on restart */
    cq__store(&child_restart_pending, true, relaxed);
    pthread_mutex_unlock(&child_restart_lock); /* taken in prepare by this thread */
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

CQ__FORK_REGISTER(rcu_call_rcu, CQ__FORK_RANK_RCU_CALL_RCU, cq__rcu_call_rcu_fork_prepare,
                  cq__rcu_call_rcu_fork_parent, cq__rcu_call_rcu_fork_child)
CQ__FORK_REGISTER(rcu, CQ__FORK_RANK_RCU, cq__rcu_fork_prepare, cq__rcu_fork_parent,
                  cq__rcu_fork_child)
