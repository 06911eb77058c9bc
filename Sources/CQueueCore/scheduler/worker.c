/*
 * Pool threads: starting one for a proc, its OS priority and name, and the worker loop (find an
 * item, run it, park when there is none).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "scheduler/pool_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "platform/diag_internal.h"
#include "platform/fork_internal.h"
#include "platform/thread_start_internal.h"
#include "scheduler/thread_internal.h"

static void *thread_main(void *arg);

/*
 * Starts a thread for `p` (a slot was reserved). On failure the slot is returned, `p` goes to
 * the threadless idle list, and the failure is reported.
 */
void cq__pool_spawn_thread(struct cq__proc *p, bool searching)
{
    struct cq__thread *t = calloc(1, sizeof *t);
    int err = ENOMEM;
    if (t) {
        t->proc = p;
        t->band = p->band;
        t->wake_searching = searching;
        pthread_mutex_lock(&cq__pool.lock);
        t->index = cq__pool.next_thread_index++;
        p->thread = t;
        pthread_mutex_unlock(&cq__pool.lock);
        err = cq__thread_start(&t->pthread, thread_main, t);
        if (err == 0) {
            return;
        }
        free(t);
    }
    static atomic_bool reported;
    cq__report_once(&reported, "cannot start a pool thread (%s); running with fewer threads",
                    strerror(err));
    pthread_mutex_lock(&cq__pool.lock);
    cq__sub(&cq__pool.nthreads, 1, relaxed);
    p->thread = NULL;
    if (searching) {
        /* idle word: pairs with the parker's fence and re-check (park.c), design.md §10 */
        cq__sub(&cq__pool.band[p->band].idle, CQ__IDLE_SEARCHING_ONE, seq_cst);
    }
    cq__pool_idle_push_free_locked(p);
    pthread_mutex_unlock(&cq__pool.lock);
}

static inline void run_item(struct cq__thread *t, struct cq__proc *p, struct cq__item *it)
{
    cq__store(&p->tid, cq__load(&t->tid, relaxed), relaxed);
    cq__store(&p->running, 1, relaxed);
    cq__item_invoke(it);
    struct cq__proc *now = t->proc; /* may differ: the task blocked and gave its proc away */
    if (now) {
        cq__store(&now->running, 0, relaxed);
    }
}

static void worker_loop(struct cq__thread *t)
{
    for (;;) {
        struct cq__proc *p = t->proc;
        if (cq__unlikely(p == NULL)) {
            if ((p = cq__pool_acquire_proc(t, true)) == NULL) {
                return;
            }
            continue;
        }
        struct cq__item *it = cq__pool_find_work(t, p);
        if (it == NULL) {
            if (p->extra && cq__pool_retire_extra(t, p)) {
                t->proc = NULL;
                cq__tls.proc = NULL;
                return;
            }
            cq__pool_park(t, p);
            continue;
        }
        run_item(t, p, it);
        if (cq__unlikely(cq__tls.thread != t)) {
            cq__fork_child_task_returned(); /* the task forked: this is the child */
        }
    }
}

/* Background threads run at nice 19: the kernel runs every other thread first (and preempts
 * them when one wakes), yet never starves them outright, so work that waits for a background
 * task (a sync onto a background queue) still finishes. Raising the nice value needs no
 * privilege; an unprivileged thread cannot lower it again, hence threads keep their band. */
static void apply_band_os_priority(struct cq__thread *t)
{
    if (t->band == CQ__BAND_BACKGROUND) {
        pid_t tid = cq__load(&t->tid, relaxed);
        if (setpriority(PRIO_PROCESS, (id_t)tid, CQ__BACKGROUND_NICE) != 0) {
            static atomic_bool reported;
            cq__report_once(&reported,
                            "cannot lower the OS priority of background threads (%s); "
                            "background work competes with other work for the CPUs",
                            strerror(errno));
        }
    }
}

static void *thread_main(void *arg)
{
    struct cq__thread *t = arg;
    cq__store(&t->tid, (pid_t)syscall(SYS_gettid), relaxed);
    char name[16];
    snprintf(name, sizeof name, "%s-%u", cq__pool_band_thread_name(t->band), t->index);
    pthread_setname_np(pthread_self(), name);
    apply_band_os_priority(t);
    cq__tls.thread = t;
    cq__tls.main_thread = 2;
    cq__thread_exit_hook();
    pthread_mutex_lock(&cq__pool.lock); /* t->proc was assigned under the lock */
    cq__tls.proc = t->proc;
    t->searching = t->wake_searching;
    t->wake_searching = false;
    pthread_mutex_unlock(&cq__pool.lock);
    worker_loop(t);
    cq__tls.thread = NULL;
    free(t);
    return NULL;
}
