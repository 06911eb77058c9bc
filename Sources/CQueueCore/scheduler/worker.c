/*
 * Pool threads: starting one for a proc, its OS priority and name, and the worker loop (find an
 * item, run it, park when there is none).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "scheduler/pool_internal.h"

#include <cqueuecore/runtime.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "platform/cpus_internal.h"
#include "platform/diag_internal.h"
#include "platform/fork_internal.h"
#include "platform/object_internal.h"
#include "platform/thread_start_internal.h"
#include "platform/time_internal.h"
#include "scheduler/thread_internal.h"

static void *thread_main(void *arg);

_Atomic uint32_t cq__thread_naming_ms;

/*
 * Renames the calling pool thread after `label`, or back to its own name (NULL). A name never
 * lies: with a rate limit (cq__thread_naming_ms above 1: one rename to a label per
 * cq__thread_naming_ms - 1 ms) a refused rename sends the thread back to its own name instead;
 * going back is not limited, and happens only after a rename.
 */
void cq__thread_name_slow(const char *label)
{
    struct cq__thread *t = cq__tls.thread;
    uint32_t ms = cq__load(&cq__thread_naming_ms, relaxed);
    /* runtime threads only: an application thread that drains a queue (a sync) keeps its name */
    const char *own = t ? t->name : cq__tls.own_name;
    if (own == NULL) {
        return;
    }
    if (label != NULL && ms != 0) {
        uint64_t now = ms > 1 ? cq__now_ns() : 0;
        if (ms == 1 || cq__tls.named_ns == 0 ||
            now - cq__tls.named_ns >= (uint64_t)(ms - 1) * 1000000u) {
            size_t n = strlen(label);
            const char *name = n > 15 ? label + (n - 15) : label; /* a label's end says most */
            while ((*name & 0xc0) == 0x80) {
                name++; /* not from inside a UTF-8 character: the name stays valid text */
            }
            if (*name != '\0') {
                cq__tls.named = label;
                cq__tls.named_ns = now;
                CQ_PROBE1(label_change, name);
                pthread_setname_np(pthread_self(), name);
                return;
            }
        }
    }
    if (cq__tls.named != NULL) {
        cq__tls.named = NULL;
        CQ_PROBE1(label_change, own);
        pthread_setname_np(pthread_self(), own);
    }
}

static _Atomic bool naming_by_call; /* cq_runtime_set_thread_naming was called: the
                                        environment no longer counts */

void cq_runtime_set_thread_naming(bool on)
{
    cq__store(&naming_by_call, true, relaxed);
    cq__store(&cq__thread_naming_ms, on ? 1u : 0u, relaxed);
}

#define THREAD_NAMES_MAX_MS 99999L

void cq__thread_naming_from_env(void)
{
    const char *v = getenv("CQ_THREAD_NAMES");
    if (v == NULL || *v == '\0' || cq__load(&naming_by_call, relaxed)) {
        return;
    }
    /* 0: off; 1: every drain; N > 1: one rename to a label per N ms at most */
    char *end;
    errno = 0;
    long ms = strtol(v, &end, 10);
    /* digits only, as the other knobs (strtol would also take leading blanks and a sign) */
    if (*end != '\0' || ms < 0 || errno == ERANGE || v[0] < '0' || v[0] > '9') {
        cq__report("ignoring CQ_THREAD_NAMES=%s (expected 0, 1, or a number of milliseconds up "
                   "to %ld)",
                   v, THREAD_NAMES_MAX_MS);
        return;
    }
    if (ms > THREAD_NAMES_MAX_MS) {
        cq__report("CQ_THREAD_NAMES=%s is more than %ld, the most the runtime supports: using %ld",
                   v, THREAD_NAMES_MAX_MS, THREAD_NAMES_MAX_MS);
        ms = THREAD_NAMES_MAX_MS;
    }
    cq__store(&cq__thread_naming_ms, ms > 1 ? (uint32_t)ms + 1 : (uint32_t)ms, relaxed);
}

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
    if (cq__unlikely(cq__tls.named != NULL) &&
        (it->kind != CQ__ITEM_QUEUE || cq__load(&cq__thread_naming_ms, relaxed) == 0)) {
        /* work of no queue's drain, or naming was turned off: the thread's own name */
        cq__thread_name_slow(NULL);
    }
    cq__item_invoke(it);
    if (cq__unlikely(cq__tls.group_queue != NULL)) {
        struct cq__object *q = cq__tls.group_queue; /* cq_group_wait's help is over (group.c) */
        cq__tls.group_queue = NULL;
        cq__ref_release(q);
    }
    struct cq__proc *now = t->proc; /* may differ: the task blocked and gave its proc away */
    if (now) {
        cq__store(&now->running, 0, relaxed);
        now->spill_levels = 0; /* its pushes go to its ring again (find.c, ring_push) */
    }
}

static void worker_loop(struct cq__thread *t)
{
    for (;;) {
        struct cq__proc *p = t->proc;
        if (cq__unlikely(p == NULL)) {
            cq__pool_procless_end(t); /* its task returned */
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
                continue; /* without a proc: a spare, or the thread ends (above) */
            }
            cq__pool_park(t, p);
            continue;
        }
        run_item(t, p, it);
        if (cq__unlikely(cq__tls.thread != t)) {
            cq__fork_child_task_returned(); /* the task forked: this is the child */
        }
        cq__tls.long_park = false;
    }
}

/* Background threads run at nice 19: the kernel runs every other thread first (and preempts
 * them when one wakes), yet never starves them outright, so work that waits for a background
 * task (a sync onto a background queue) still finishes. Raising the nice value needs no
 * privilege; an unprivileged thread cannot lower it again, hence threads keep their band.
 * Express threads (high-priority work while every normal worker is busy) run 2 below the
 * pool's nice value where the process may lower it (root, CAP_SYS_NICE, RLIMIT_NICE), as
 * libdispatch runs its user-initiated threads: a high task woken onto a CPU that runs default
 * work then preempts it at once, where at the same nice value the kernel lets the running
 * task finish its slice (EEVDF, up to a few ms: latency_busy_p99 in the Swift benchmarks, with
 * the express band's spin gone too, see find.c). Without the privilege they stay at the
 * pool's value, silently: nothing is wrong, only slower to preempt. */
/*
 * Scheduler slices. Linux's EEVDF scheduler (6.6 and later) gives each thread a slice; since
 * 6.12 a thread may ask for its own, between 0.1 and 100 ms (sched_setattr's sched_runtime,
 * no privilege needed). The default is about 0.75 ms × (1 + log2 CPUs). With a longer slice a
 * thread's virtual deadline comes later: it yields the CPU to a thread just woken with an
 * earlier one (a client on the same cores, say) rather than being preempted by it partway
 * through a handler, and then runs its batch without interruption. An HTTP server on READ
 * sources, driven by wrk on the same 2 cores, had its client p99 at 16 connections at
 * 0.45–0.71 ms against libdispatch's 0.38–0.44 with the default slice, and 0.31–0.39 against
 * 0.37–0.49 with 4 ms, over three alternated rounds; at 64 and 256 connections it was ahead
 * both ways (bench/http_bench.py). 100 µs was worse everywhere (client p99 at 16
 * connections ~1 ms, throughput -10 %).
 */
#define CQ__SLICE_DEFAULT_US 4000u
#define CQ__SLICE_MIN_US 100u /* the kernel's bounds */
#define CQ__SLICE_MAX_US 100000u

struct cq__sched_attr {
    uint32_t size;
    uint32_t policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime; /* SCHED_OTHER: the slice, in ns (0: the default) */
    uint64_t deadline;
    uint64_t period;
};

static uint32_t slice_us;
static pthread_once_t slice_once = PTHREAD_ONCE_INIT;

static void slice_read(void)
{
    slice_us = cq__env_u32_clamped("CQ_THREAD_SLICE_US", CQ__SLICE_DEFAULT_US, CQ__SLICE_MIN_US,
                                   CQ__SLICE_MAX_US);
}

void cq__thread_set_slice(bool longer)
{
#ifdef SYS_sched_setattr
    pthread_once(&slice_once, slice_read);
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0); /* this thread's */
    if (errno != 0) {
        return;
    }
    struct cq__sched_attr a = {.size = sizeof a,
                               .policy = 0, /* SCHED_OTHER */
                               .nice = nice,
                               .runtime = longer ? (uint64_t)slice_us * 1000 : 0};
    (void)syscall(SYS_sched_setattr, 0, &a, 0); /* a hint: older kernels refuse or ignore it */
#else
    (void)longer;
#endif
}

static void apply_band_os_priority(struct cq__thread *t)
{
    /* Threads inherit their creator's slice: set every band's. */
    cq__thread_set_slice(t->band == CQ__BAND_NORMAL);
    if (t->band == CQ__BAND_EXPRESS) {
        pid_t tid = cq__load(&t->tid, relaxed);
        errno = 0;
        int nice = getpriority(PRIO_PROCESS, (id_t)tid);
        if (errno == 0 && nice > -20) {
            int target = nice - CQ__EXPRESS_NICE_BELOW > -20 ? nice - CQ__EXPRESS_NICE_BELOW : -20;
            (void)setpriority(PRIO_PROCESS, (id_t)tid, target);
        }
    }
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
    snprintf(t->name, sizeof t->name, "%s-%u", cq__pool_band_thread_name(t->band), t->index);
    pthread_setname_np(pthread_self(), t->name);
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
