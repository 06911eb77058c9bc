/*
 * The idle word and notify: how many procs of a band are searching and unparked, and waking
 * one when work shows up with nobody searching (see pool_internal.h, "The idle protocol").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "scheduler/pool_internal.h"

#include <pthread.h>
#include <sched.h>

#include "platform/diag_internal.h"
#include "scheduler/thread_internal.h"

void cq__pool_idle_push_free_locked(struct cq__proc *p)
{
    struct cq__band *b = &cq__pool.band[p->band];
    p->idle = true;
    p->next_idle = b->idle_free;
    b->idle_free = p;
    /* idle word: pairs with the parker's fence and re-check (park.c), design.md §10 */
    cq__sub(&b->idle, CQ__IDLE_UNPARKED_ONE, seq_cst);
}

bool cq__pool_idle_remove_locked(struct cq__proc **list, struct cq__proc *p)
{
    for (struct cq__proc **pp = list; *pp; pp = &(*pp)->next_idle) {
        if (*pp == p) {
            *pp = p->next_idle;
            p->idle = false;
            return true;
        }
    }
    return false;
}

bool cq__pool_try_searching(unsigned band)
{
    _Atomic uint64_t *idle = &cq__pool.band[band].idle;
    uint64_t s = cq__load(idle, relaxed);
    for (;;) {
        if (2 * CQ__IDLE_SEARCHING(s) >= CQ__IDLE_NPROCS(s)) {
            return false;
        }
        /* idle word: pairs with the parker's fence and re-check (park.c), design.md §10 */
        if (cq__cas_weak(idle, &s, s + CQ__IDLE_SEARCHING_ONE, seq_cst)) {
            return true;
        }
    }
}

void cq__pool_stop_searching(struct cq__thread *t, struct cq__proc *p)
{
    t->searching = false;
    /* idle word: pairs with the parker's fence and re-check (park.c), design.md §10 */
    cq__sub(&cq__pool.band[p->band].idle, CQ__IDLE_SEARCHING_ONE, seq_cst);
    cq__pool_announce_backlog(p);
}

/* Someone may have work for the band and nobody of it searches: wake an idle proc of it if
 * there is one (its parked thread, a spare thread of the band, or a new thread). */
CQ_NOINLINE bool cq__pool_notify_slow(unsigned band)
{
    struct cq__band *b = &cq__pool.band[band];
    struct cq__thread *wake = NULL;
    struct cq__proc *spawn = NULL;
    int cpu = sched_getcpu();
    pthread_mutex_lock(&cq__pool.lock);
    /* idle word: pairs with the parker's fence and re-check (park.c), design.md §10 */
    uint64_t s = cq__load(&b->idle, seq_cst);
    if (CQ__IDLE_SEARCHING(s) != 0) {
        pthread_mutex_unlock(&cq__pool.lock);
        return true;
    }
    if (CQ__IDLE_UNPARKED(s) >= CQ__IDLE_NPROCS(s)) {
        pthread_mutex_unlock(&cq__pool.lock);
        return false;
    }
    struct cq__proc *p = b->idle_parked;
    if (p) {
        /* Prefer the proc whose thread parked on this CPU: the kernel then tends to wake it
         * here, where it runs as soon as we block, instead of on another CPU busy with
         * something else, which costs an interrupt and a preemption there (design.md §4). */
        struct cq__proc **pp = &b->idle_parked;
        for (struct cq__proc **q = pp; *q; q = &(*q)->next_idle) {
            if ((*q)->park_cpu == cpu) {
                pp = q;
                break;
            }
        }
        p = *pp;
        *pp = p->next_idle;
        wake = p->thread;
    } else if ((p = b->idle_free) != NULL) {
        b->idle_free = p->next_idle;
        if ((wake = b->spares) != NULL) {
            b->spares = wake->next_spare;
            b->nspares--;
            wake->proc = p;
            p->thread = wake;
        } else if (cq__pool_thread_slot_reserve_locked()) {
            spawn = p;
        } else {
            p->next_idle = b->idle_free; /* put it back: nobody can run it */
            b->idle_free = p;
            pthread_mutex_unlock(&cq__pool.lock);
            cq__pool_note_limit_reached();
            return false;
        }
    } else {
        pthread_mutex_unlock(&cq__pool.lock);
        return false;
    }
    p->idle = false;
    /* idle word: pairs with the parker's fence and re-check (park.c), design.md §10 */
    cq__add(&b->idle, CQ__IDLE_UNPARKED_ONE + CQ__IDLE_SEARCHING_ONE, seq_cst);
    if (wake) {
        wake->wake_searching = true;
    }
    pthread_mutex_unlock(&cq__pool.lock);
    if (wake) {
        cq__pool_unpark_thread(wake);
    } else {
        cq__pool_spawn_thread(spawn, true);
    }
    return true;
}
