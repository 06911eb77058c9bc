/*
 * Blocking waits: a pool thread about to sleep in a runtime wait hands its proc to a spare (or
 * a new thread) when work is waiting, and takes an idle proc back when it wakes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "scheduler/pool_internal.h"

#include <pthread.h>

#include "scheduler/thread_internal.h"

/* The calling thread sleeps and keeps its proc p (already marked not running): the item in
 * p's LIFO slot, which thieves cannot take from a proc that is not running, moves to p's ring,
 * and an idle worker is told about waiting work. */
static void sleep_with_proc(struct cq__proc *p)
{
    struct cq__item *pinned = cq__pool_lifo_take(p);
    if (pinned) {
        cq__pool_ring_push(p, pinned);
        cq__fence(seq_cst); /* store-load: the ring's tail before the idle word; pairs with the
                               parker's seq_cst idle-word update, fence and re-check
                               (cq__pool_park in park.c) */
    }
    cq__pool_notify_prio(p->main_level);
}

/* A semaphore or group wait behind another waiter of the same object (keep_if_crowded) hands
 * its proc to a spare, as any wait, while at most this many pool threads wait in the runtime
 * (one per worker); past it, it keeps its proc, as a sync behind another sync does
 * (cq__event_wait_behind), and the monitor adds threads if the kept waits stop moving while
 * work waits (monitor.c, KEPT_FIRST_NS and RESCUE_MAX). Handing off on every wait, 500 tasks
 * that each took a semaphore of 1 around 0.5 ms of work grew the pool to its limit of 255
 * threads, each new one taking the next task only to wait behind the others (libdispatch: 4-6;
 * cq-bench crowd_threads); a walk of /usr/share that bounds open files with a semaphore, the
 * example cq-hashtree, did too on a cold page cache. Now 6 threads for 300 such tasks. The
 * cost is where a task queued behind the waiters is what they wait for: 64 tasks waiting for a
 * signal from a task queued after them take 15-25 ms (5-8 ms with a thread per waiter;
 * libdispatch, more than a minute), the monitor adding procs until one reaches it. Twice the
 * workers plus 4 here gave 12-13 threads for the same limiter and the same 15-25 ms. */
#define CQ__CROWDED_WAITS(workers) (workers)

void cq__pool_block_begin(struct cq__block *blk)
{
    struct cq__thread *t = cq__tls.thread;
    blk->active = t != NULL;
    if (t == NULL) {
        return;
    }
    uint32_t blocked = cq__add(&cq__pool.blocked, 1, relaxed) + 1;
    struct cq__proc *p = t->proc;
    if (p == NULL) {
        cq__pool_procless_end(t); /* waiting, not running */
        return;
    }
    struct cq__band *b = &cq__pool.band[p->band];
    cq__store(&p->running, 0, relaxed);
    if (blk->keep_proc || (blk->keep_if_crowded && blocked > CQ__CROWDED_WAITS(cq__pool.workers))) {
        /* Behind another waiter (cq__event_wait_behind): a spare would most likely take a task
         * that waits behind it too. The monitor adds a proc, slowly, if work waits long. */
        cq__store(&p->kept, 1, relaxed);
        sleep_with_proc(p);
        return;
    }
    t->proc = NULL;
    cq__tls.proc = NULL;
    bool work = cq__pool_proc_has_work(p) || cq__pool_band_work_waiting(p->band);
    pthread_mutex_lock(&cq__pool.lock);
    if (work) {
        struct cq__thread *spare = cq__pool_spare_take_locked(b, p, false);
        if (spare) {
            pthread_mutex_unlock(&cq__pool.lock);
            cq__add(&cq__pool.handoffs, 1, relaxed);
            cq__count(spares_started, 1);
            CQ_PROBE2(spare_start, p->band, 0);
            cq__pool_unpark_thread(spare);
            return;
        }
        if (cq__pool_thread_slot_reserve_locked()) {
            pthread_mutex_unlock(&cq__pool.lock);
            cq__add(&cq__pool.handoffs, 1, relaxed);
            cq__count(spares_started, 1);
            CQ_PROBE2(spare_start, p->band, 1);
            cq__pool_spawn_thread(p, false);
            return;
        }
        /* At the limit: keep the proc. Thieves can take its rings but not its LIFO slot
         * (only a running owner's), so the item there moves to its ring, and an idle worker
         * is told: no runnable item stays pinned to a thread that sleeps. */
        pthread_mutex_unlock(&cq__pool.lock);
        t->proc = p;
        cq__tls.proc = p;
        cq__pool_note_limit_reached();
        sleep_with_proc(p);
        return;
    }
    p->thread = NULL;
    cq__pool_idle_push_free_locked(p);
    pthread_mutex_unlock(&cq__pool.lock);
    /* pairs with the producers' seq_cst publish-then-idle-word-load (find.c, item_internal.h):
     * store-load before the work re-check */
    cq__fence(seq_cst);
    if (cq__pool_band_work_waiting(p->band)) {
        cq__pool_notify_prio(p->main_level);
    }
}

void cq__pool_block_end(struct cq__block *blk)
{
    if (!blk->active) {
        return;
    }
    cq__sub(&cq__pool.blocked, 1, relaxed);
    struct cq__thread *t = cq__tls.thread;
    if (t->proc != NULL && cq__load(&t->proc->kept, relaxed)) {
        /* the owner's counter: a store, not a read-modify-write on a line others share */
        cq__store(&t->proc->kept_ended, cq__load(&t->proc->kept_ended, relaxed) + 1, relaxed);
        cq__store(&t->proc->kept, 0, relaxed);
        cq__store(&t->proc->running, 1, relaxed); /* its task goes on */
    }
    if (t->proc == NULL &&
        cq__pool_acquire_proc(t, false) == NULL) { /* an idle proc if there is one */
        /* otherwise its task goes on without one: counted, for the monitor */
        t->procless = true;
        cq__add(&cq__pool.band[t->band].procless, 1, relaxed);
    }
}

void cq__pool_procless_end(struct cq__thread *t)
{
    if (t->procless) {
        t->procless = false;
        cq__sub(&cq__pool.band[t->band].procless, 1, relaxed);
    }
}
