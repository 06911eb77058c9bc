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
    uint32_t help_depth;                /* nesting of tasks run while waiting (cq__pool_help) */
    struct cq__inject_chunk *inject[4]; /* this thread's chunk of each inject queue */
    struct cq_group_s *group; /* the group of the task running (cq_group_async_f), or NULL */
    uint8_t main_thread;      /* 0 unknown, 1 main thread, 2 other */
    uint8_t exit_hook;        /* thread-exit destructor installed */
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

/* Installs the thread-exit hook (once per thread): it hands the thread's inject chunks on
 * (cq__inject_thread_exit) and returns its task cache (cq__task_cache_flush). liburcu-bp
 * unregisters the thread from RCU by itself. */
CQ_INTERNAL void cq__thread_exit_hook(void);

#endif /* CQ_THREAD_INTERNAL_H */
