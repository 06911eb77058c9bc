/*
 * Per-thread runtime state: which pool thread and run queue (proc) this thread is, the stack
 * of queues it is running on (frames), and its task cache. Initial-exec TLS: one segment-
 * relative load, no __tls_get_addr call.
 */
#ifndef CQ_THREAD_INTERNAL_H
#define CQ_THREAD_INTERNAL_H

#include "platform/atomic_internal.h"
#include "scheduler/item_internal.h"

struct cq__thread;
struct cq__proc;
struct cq__inject_chunk;
struct cq_group_s;

/*
 * A frame says "this thread is running on `queue`": a task of it, its drain, or a sync onto
 * it. `exclusive` frames hold the queue's drain lock (serial queues, barriers); the others
 * hold one unit of a concurrent queue's width. Frames live on the stack of the code that
 * pushed them.
 */
struct cq__frame {
    struct cq_queue_s *queue;
    struct cq__frame *prev;
    bool exclusive;
};

struct cq__tls {
    struct cq__thread *thread; /* pool thread record; NULL on other threads */
    struct cq__proc *proc;     /* run queue this thread owns; NULL if none */
    struct cq__frame *frame;   /* innermost frame */
    struct cq__task *cache;    /* free tasks (linked through item.next) */
    uint32_t cache_count;
    uint32_t help_depth; /* nesting of tasks run while waiting (cq__pool_help) */
    /* a sync waiter draining its target chain: where each level's drain stops (queue_sync.c,
     * sync_help_chain); NULL otherwise */
    const struct cq__help_stops *help_stops;
    struct cq__inject_chunk *inject[8]; /* this thread's chunk of each inject queue (and lane) */
    struct cq_group_s *group; /* the group of the task running (cq_group_async_f), or NULL */
    /* pool threads: the serial queue the running item last gave group work to, with a
     * reference, dropped when the item returns (cq_group_wait helps drain it, group.c) */
    struct cq__object *group_queue;
    const char *named;    /* thread naming: the label in the thread's name (NULL: its own) */
    const char *own_name; /* thread naming: an overcommit thread's own name (overcommit.c;
                             a pool thread's is its record's); NULL on other threads */
    uint64_t named_ns;    /* thread naming: when the name last changed */
    uint8_t main_thread;  /* 0 unknown, 1 main thread, 2 other */
    uint8_t exit_hook;    /* thread-exit destructor installed */
    bool long_park;       /* pool threads: woken from a park of over CQ__SPECULATIVE_PARK_NS,
                             until the next item has run (find.c, park.c, worker.c) */
};

extern __thread struct cq__tls cq__tls __attribute__((tls_model("initial-exec")));

CQ_INLINE void cq__frame_push(struct cq__frame *f, struct cq_queue_s *q, bool exclusive)
{
    f->queue = q;
    f->exclusive = exclusive;
    f->prev = cq__tls.frame;
    cq__tls.frame = f;
}

CQ_INLINE void cq__frame_pop(struct cq__frame *f)
{
    cq__tls.frame = f->prev;
}

CQ_INTERNAL bool cq__is_main_thread(void);

/*
 * Thread naming (cq_runtime_set_thread_naming, CQ_THREAD_NAMES): a pool thread that starts
 * draining a serial queue takes the queue's label as its name (the last 15 characters, what
 * /proc/.../comm holds), so `perf report --sort comm` and `top -H` show queues, and takes its
 * own name back when it next runs work of no serial queue's drain or parks (worker.c, park.c;
 * a nested drain gives the name of the drain around it back, queue_drain.c), or, once naming
 * is turned off, when it next runs any work or parks: one prctl per change, none while a
 * worker drains one queue again and again.
 * cq__thread_naming_ms: 0 off (the default; the check is one thread-local load per item), 1 at
 * every change, N > 1 at most one rename to a label per N - 1 ms (a drain that comes sooner runs
 * under the thread's own name).
 */
CQ_INTERNAL extern _Atomic uint32_t cq__thread_naming_ms;
/* CQ_THREAD_NAMES, read when the pool starts (unless cq_runtime_set_thread_naming was called
 * before): a value out of range is clamped, one that is not a number ignored, with a report. */
CQ_INTERNAL void cq__thread_naming_from_env(void);
CQ_INTERNAL void cq__thread_name_slow(const char *label);
CQ_INLINE void cq__thread_name_note(const char *label)
{
    /* Naming turned off while the thread carries a label: it goes back to its own name (the
     * slow path renames only while naming is on). */
    if (cq__unlikely(label != cq__tls.named) &&
        (cq__tls.named != NULL || cq__load(&cq__thread_naming_ms, relaxed) != 0)) {
        cq__thread_name_slow(label);
    }
}

/* Installs the thread-exit hook (once per thread): it hands the thread's inject chunks on
 * (cq__inject_thread_exit) and returns its task cache (cq__task_cache_flush). liburcu-bp
 * unregisters the thread from RCU by itself. */
CQ_INTERNAL void cq__thread_exit_hook(void);

#endif /* CQ_THREAD_INTERNAL_H */
