/*
 * The main queue's run loop. The main queue is a serial queue whose "target" is the main
 * thread: enqueueing it sets a futex word the main thread sleeps on in cq_main().
 *   run_loop: 0 nothing pending, 1 the main queue is ENQUEUED, 2 the main thread sleeps.
 *
 * A program may also end its main thread with pthread_exit() instead of calling cq_main()
 * (libdispatch's dispatch_main does exactly that, and code ported from it does too): the main
 * queue is then "orphaned". A thread-specific destructor sees the main thread go; from then on
 * each enqueueing of the main queue (each 0 -> 1 of run_loop) sends one drain of it somewhere
 * else, and a drain that finds nothing due does nothing:
 *   - in a C program, to `orphan`, a serial queue on the pool, so that drains stay one at a
 *     time (libdispatch's behaviour: pool threads drain the main queue);
 *   - where SwiftQueues registered a hand-off (cq_swift_main_set_orphan_handoff), to it:
 *     SwiftQueues puts each drain on libdispatch's main queue. After libdispatch's
 *     dispatch_main() (Swift's `dispatchMain()`, which code ported from Dispatch keeps: it
 *     still compiles where Foundation is imported) libdispatch drains its own main queue on a
 *     thread of its own, and Swift's MainActor and DispatchQueue.main run there. On the pool,
 *     SQQueue.main's @MainActor closures trapped in MainActor.assumeIsolated (it checks
 *     libdispatch's main queue), and SQOperationQueue.main work ran at the same time as
 *     DispatchQueue.main work (3,950 of 4,000 critical sections overlapped), where Foundation
 *     has one serial main queue. Inside libdispatch's main queue the two take turns.
 * Either way no item is lost, run twice or reordered: a drain takes the main queue
 * (cq__queue_drain's LOCK), so drains never overlap wherever they run, and one sent twice (both
 * sides of the Dekker pair below may send it) or after another took its work finds nothing.
 */
#include <pthread.h>
#include <unistd.h>

#include "platform/diag_internal.h"
#include "platform/parker_internal.h"
#include "queue/queue_internal.h"
#include "scheduler/pool_internal.h"

#include <cqueuecore/swift_support.h>

static _Atomic uint32_t run_loop;

/* The serial queue that drains the main queue once the main thread has exited; NULL before. */
static _Atomic(cq_queue_t) orphan;

typedef void (*main_handoff_fn)(void);

/* SwiftQueues' hand-off for the orphaned main queue's drains, or NULL (C programs). Relaxed:
 * it publishes no data, and SwiftQueues registers it before the main queue is reachable from
 * Swift (SQQueue.main's initialiser), so every enqueueing of the main queue from Swift
 * happens-after the store. */
static _Atomic(main_handoff_fn) handoff;

static void orphan_drain(void *unused)
{
    (void)unused;
    cq__main_drain_pending();
}

/* Sends one drain of the orphaned main queue, `q` being the pool's serial drain queue (above). */
static void orphan_submit(cq_queue_t q)
{
    main_handoff_fn h = cq__load(&handoff, relaxed);
    if (h != NULL) {
        h();
    } else {
        cq_async_f(q, NULL, orphan_drain);
    }
}

void cq_swift_main_set_orphan_handoff(void (*hand_off)(void))
{
    if (hand_off == NULL) {
        cq__crash("cq_swift_main_set_orphan_handoff: NULL hand-off");
    }
    cq__store(&handoff, hand_off, relaxed);
}

void cq_swift_main_orphan_drain(void)
{
    /* Relaxed: a drain is handed off only after `orphan` was stored (seen by the wakeup that
     * hands it off, or stored by main_thread_exited), and the hand-off's own queue orders this
     * call after it. NULL means a caller other than the hand-off. */
    if (cq__load(&orphan, relaxed) == NULL) {
        cq__crash("cq_swift_main_orphan_drain: the main thread has not exited; its main queue "
                  "runs in cq_main on the main thread");
    }
    cq__main_drain_pending();
}

void cq__main_wakeup(void)
{
    /* seq_cst: pairs with the acquire exchange in cq__main_drain_pending, and is the first half
     * of the Dekker pair with main_thread_exited's store of `orphan` and load of run_loop */
    uint32_t was = cq__xchg(&run_loop, 1, seq_cst);
    if (was == 2) {
        cq__futex_wake(&run_loop, 1);
    } else if (was == 0) {
        /* seq_cst: the second half of the Dekker pair (see above): either we see the orphan
         * queue, or main_thread_exited sees the 1 we stored */
        cq_queue_t q = cq__load(&orphan, seq_cst);
        if (cq__unlikely(q != NULL)) {
            orphan_submit(q);
        }
    }
}

/* The main thread ended with pthread_exit (a thread-specific destructor: a return from main()
 * exits the process instead). */
static void main_thread_exited(void *unused)
{
    (void)unused;
    cq_queue_t q = cq_queue_create("cq.main-queue-drain", CQ_QUEUE_SERIAL);
    if (q == NULL) {
        cq__crash("out of memory for the main queue's drain queue");
    }
    /* The main thread's work goes ahead of the default work (libdispatch gives it a thread of
     * its own): on the default global queue it waited behind every task queued there, 3 s
     * behind six tasks of 1 s, for ever behind tasks that requeue themselves
     * (compat_main_exit_busy). High work gets a CPU at once while the pool is busy. */
    cq_set_target_queue(q, cq_get_global_queue(CQ_QUEUE_PRIORITY_HIGH, 0));
    /* seq_cst: pairs with cq__main_wakeup's exchange and load (the Dekker pair above) */
    cq__store(&orphan, q, seq_cst);
    /* pairs with cq__main_wakeup's seq_cst exchange (the Dekker pair above) */
    if (cq__load(&run_loop, seq_cst) == 1) {
        orphan_submit(q); /* pending before we stored the queue */
    }
}

static pthread_key_t main_exit_key;

/* At load time, on the main thread (a library loaded later by another thread leaves this to
 * nobody: then the main queue needs cq_main). */
CQ_EARLY_INIT static void watch_main_thread(void)
{
    if (cq__is_main_thread() && pthread_key_create(&main_exit_key, main_thread_exited) == 0) {
        pthread_setspecific(main_exit_key, &main_exit_key);
    }
}

bool cq__main_drain_pending(void)
{
    /* pairs with the release exchange in cq__main_wakeup (above): the main queue's items */
    if (cq__load(&run_loop, relaxed) != 1 || cq__xchg(&run_loop, 0, acquire) != 1) {
        return false;
    }
    cq__queue_drain(&cq__main_queue);
    return true;
}

void cq__main_fork_child(void)
{
    cq__store(&run_loop, 0, relaxed);
}

void cq__main_wait(void)
{
    /* Spin first, as every runtime wait does (parker_internal.h): a worker that hands work to
     * the main queue and waits for its answer (a round trip, or a cq_sync_f onto the main
     * queue) would otherwise pay a futex wake-up (~7 us here, 30 us on busy VMs) per hop: 200k
     * round trips took 5-8x libdispatch's time. */
    struct cq__spin sp;
    cq__spin_init(&sp, CQ__SPIN_WAIT_NS);
    while (cq__load(&run_loop, relaxed) != 1) {
        if (!cq__spin_next(&sp)) {
            break;
        }
    }
    uint32_t v = 0;
    /* pairs with the release exchange in cq__main_wakeup (above) */
    if (cq__cas(&run_loop, &v, 2, acquire) || v == 2) {
        cq__futex_wait(&run_loop, 2, NULL);
    }
}

void cq_main(void)
{
    if (!cq__is_main_thread()) {
        cq__crash("cq_main: must be called on the main thread");
    }
    if (cq__tls.frame != NULL) {
        cq__crash("cq_main: called from inside a task of %s", CQ_DESCRIBE(cq__tls.frame->queue));
    }
    cq__pool_ensure_started();
    for (;;) {
        if (!cq__main_drain_pending()) {
            cq__main_wait();
        }
    }
}
