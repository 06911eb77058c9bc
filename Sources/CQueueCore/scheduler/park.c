/*
 * Parking: a worker with nothing to find parks with its proc; an extra proc retires; a thread
 * without a proc waits as a spare until given one. The futex word per thread is t->park.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "scheduler/pool_internal.h"

#include <pthread.h>
#include <sched.h>

#include "platform/parker_internal.h"
#include "scheduler/task_internal.h"
#include "scheduler/thread_internal.h"

void cq__pool_unpark_thread(struct cq__thread *t)
{
    /* release: pairs with the parked thread's acquire load; it sees t->proc and the counts */
    if (cq__xchg(&t->park, CQ__PARK_NOTIFIED, release) == CQ__PARK_PARKED) {
        cq__futex_wake(&t->park, 1);
    }
}

/* Parks the calling thread until unpark_thread. */
void cq__pool_park_thread(struct cq__thread *t)
{
    for (;;) {
        /* pairs with the release exchange in cq__pool_unpark_thread */
        uint32_t s = cq__load(&t->park, acquire);
        if (s == CQ__PARK_NOTIFIED) {
            cq__store(&t->park, CQ__PARK_EMPTY, relaxed);
            return;
        }
        /* pairs with the release exchange in cq__pool_unpark_thread */
        if (s == CQ__PARK_EMPTY && !cq__cas(&t->park, &s, CQ__PARK_PARKED, acquire)) {
            continue;
        }
        cq__futex_wait(&t->park, CQ__PARK_PARKED, NULL);
    }
}

/* Parks t with its proc p; returns when woken (as a searcher) or when work showed up. */
void cq__pool_park(struct cq__thread *t, struct cq__proc *p)
{
    struct cq__band *b = &cq__pool.band[p->band];
    int cpu = sched_getcpu();
    pthread_mutex_lock(&cq__pool.lock);
    p->idle = true;
    p->park_cpu = cpu;
    p->next_idle = b->idle_parked;
    b->idle_parked = p;
    uint64_t dec = CQ__IDLE_UNPARKED_ONE + (t->searching ? CQ__IDLE_SEARCHING_ONE : 0);
    t->searching = false;
    /* idle word: pairs with the parker's fence and re-check (park.c), design.md §10 */
    cq__sub(&b->idle, dec, seq_cst);
    pthread_mutex_unlock(&cq__pool.lock);

    /* Re-check every source of the band's work after a full fence: a producer that published
     * work before our idle-word update saw us as unparked and did not wake anyone. Pairs with the
     * producers' seq_cst publish (ring tail + fence, LIFO exchange, MPSC exchange) before they read
     * the idle word (find.c, item_internal.h) */
    cq__fence(seq_cst);
    if (cq__pool_band_work_waiting(p->band)) {
        pthread_mutex_lock(&cq__pool.lock);
        bool mine = p->idle && cq__pool_idle_remove_locked(&b->idle_parked, p);
        if (mine) {
            /* idle word: pairs with the parker's fence and re-check (park.c), design.md §10 */
            cq__add(&b->idle, CQ__IDLE_UNPARKED_ONE + CQ__IDLE_SEARCHING_ONE, seq_cst);
            t->searching = true;
        }
        pthread_mutex_unlock(&cq__pool.lock);
        if (mine) {
            return;
        }
        /* a notifier claimed us already: take its wake-up below */
    }
    cq__task_idle(); /* while a trim is due, the free tasks go where the trimmer sees them */
    cq__thread_name_note(NULL); /* asleep under its own name */
    cq__pool_count(&p->n_parks);
    CQ_PROBE2(worker_park, p->index, p->band);
    uint64_t parked_at = cq__now_ns();
    cq__pool_park_thread(t);
    cq__tls.long_park = cq__now_ns() - parked_at > CQ__SPECULATIVE_PARK_NS;
    t->searching = t->wake_searching;
    t->wake_searching = false;
    struct cq__proc *now = t->proc; /* the proc we were woken with (ours: owner-only counts) */
    if (now) {
        cq__pool_count(&now->n_unparks);
        CQ_PROBE2(worker_unpark, now->index, now->band);
    }
}

/* An extra proc with nothing to do leaves the pool; its thread goes on without a proc
 * (cq__pool_acquire_proc: it parks as a spare, which the next extra proc or a blocking worker
 * reuses, or exits if the band has spares enough). */
bool cq__pool_retire_extra(struct cq__thread *t, struct cq__proc *p)
{
    struct cq__band *b = &cq__pool.band[p->band];
    pthread_mutex_lock(&cq__pool.lock);
    uint64_t s = cq__load(&b->idle, relaxed);
    if (CQ__IDLE_NPROCS(s) <= b->base) {
        pthread_mutex_unlock(&cq__pool.lock);
        return false;
    }
    uint64_t dec =
        CQ__IDLE_UNPARKED_ONE + CQ__IDLE_NPROCS_ONE + (t->searching ? CQ__IDLE_SEARCHING_ONE : 0);
    t->searching = false;
    /* idle word: pairs with the parker's fence and re-check (park.c), design.md §10 */
    cq__sub(&b->idle, dec, seq_cst);
    p->thread = NULL;
    /* see steal_level in find.c (a relaxed hint) and cq__pool_add_extra_proc (under the pool lock):
     * no reader needs more */
    cq__store(&p->retired, 1, release);
    pthread_mutex_unlock(&cq__pool.lock);
    /* Items pushed to the rings after our last look (by nobody: only we push there) cannot
     * exist, but a LIFO item may have been put back by a helper; hand leftovers on. */
    struct cq__item *it;
    for (unsigned prio = 0; prio < CQ__PRIO_COUNT; prio++) {
        while ((it = cq__runq_pop(&p->rq[prio])) != NULL) {
            cq__inject_push(&cq__pool.inject[prio], prio, it);
        }
    }
    if ((it = cq__pool_lifo_take(p)) != NULL) {
        unsigned prio = cq__load(&it->prio, relaxed);
        cq__inject_push(&cq__pool.inject[prio], prio, it);
    }
    /* pairs with the producers' seq_cst publish before they read the idle word (find.c,
     * item_internal.h) */
    cq__fence(seq_cst);
    if (cq__pool_band_work_waiting(p->band)) {
        cq__pool_notify_prio(p->main_level);
    }
    return true;
}

struct cq__thread *cq__pool_spare_take_locked(struct cq__band *b, struct cq__proc *p,
                                              bool searching)
{
    struct cq__thread *spare = b->spares;
    if (spare) {
        b->spares = spare->next_spare;
        b->nspares--;
        spare->proc = p;
        spare->wake_searching = searching;
        p->thread = spare;
    }
    return spare;
}

/*
 * Gets a proc of its band for a thread that has none (it blocked and gave its proc away).
 * Returns NULL if the thread should exit (too many spares).
 */
struct cq__proc *cq__pool_acquire_proc(struct cq__thread *t, bool may_wait)
{
    struct cq__band *b = &cq__pool.band[t->band];
    pthread_mutex_lock(&cq__pool.lock);
    struct cq__proc *p = b->idle_free;
    if (p) {
        b->idle_free = p->next_idle;
        p->idle = false;
        p->thread = t;
        /* idle word: pairs with the parker's fence and re-check (park.c), design.md §10 */
        cq__add(&b->idle, CQ__IDLE_UNPARKED_ONE, seq_cst);
        pthread_mutex_unlock(&cq__pool.lock);
        t->proc = p;
        cq__tls.proc = p;
        return p;
    }
    if (!may_wait) {
        pthread_mutex_unlock(&cq__pool.lock);
        return NULL;
    }
    if (b->nspares >= b->spare_limit) {
        cq__sub(&cq__pool.nthreads, 1, relaxed);
        pthread_mutex_unlock(&cq__pool.lock);
        return NULL;
    }
    t->next_spare = b->spares;
    b->spares = t;
    b->nspares++;
    pthread_mutex_unlock(&cq__pool.lock);
    cq__task_idle(); /* a spare may sleep for good: its free tasks must not pin their arenas */
    cq__thread_name_note(NULL); /* asleep under its own name, as a parked worker is */
    cq__pool_park_thread(t);    /* until given a proc */
    t->searching = t->wake_searching;
    t->wake_searching = false;
    cq__tls.proc = t->proc;
    return t->proc;
}
