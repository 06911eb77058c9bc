/*
 * The main queue's run loop. The main queue is a serial queue whose "target" is the main
 * thread: enqueueing it sets a futex word the main thread sleeps on in cq_main().
 *   run_loop: 0 nothing pending, 1 the main queue is ENQUEUED, 2 the main thread sleeps.
 */
#include <unistd.h>

#include "platform/diag_internal.h"
#include "platform/parker_internal.h"
#include "queue/queue_internal.h"
#include "scheduler/pool_internal.h"

static _Atomic uint32_t run_loop;

void cq__main_wakeup(void)
{
    /* release: pairs with the acquire exchange in cq__main_drain_pending */
    if (cq__xchg(&run_loop, 1, release) == 2) {
        cq__futex_wake(&run_loop, 1);
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
