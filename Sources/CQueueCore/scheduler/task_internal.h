/*
 * Task allocation: per-thread free lists, refilled from and drained to a shared depot of
 * batches (a liburcu lock-free stack), so a producer thread and the consumer threads that free
 * its tasks exchange memory a batch at a time. Tasks come from 64-byte-aligned slabs carved
 * from 2 MiB arenas (never from malloc).
 *
 * Giving memory back (docs/design.md): once the tasks use more than two arenas, the trimmer
 * thread (task.c) waits for the allocator to be quiet for a delay (500 ms, longer after a
 * premature trim), then unmaps every arena whose tasks are all in the depot and calls
 * malloc_trim. The per-thread fast paths are untouched; the slow paths (once per batch) note
 * that the runtime is busy.
 * Who may call what:
 *   the owning thread                  cq__task_alloc, cq__task_free, cq__task_cache_flush,
 *                                      cq__task_idle (a worker about to park)
 *   any thread                         cq__trim_later
 */
#ifndef CQ_TASK_INTERNAL_H
#define CQ_TASK_INTERNAL_H

#include "platform/fork_internal.h"
#include "scheduler/item_internal.h"
#include "scheduler/thread_internal.h"

#define CQ__TASK_CACHE_MAX 512u /* a thread keeps at most this many free tasks */
#define CQ__TASK_BATCH 256u     /* tasks moved to or from the depot at once */

CQ_INTERNAL struct cq__task *cq__task_alloc_slow(void);
CQ_INTERNAL void cq__task_free_slow(void);
CQ_INTERNAL void cq__task_cache_flush(void);

/* Memory was allocated or freed in bulk (task arenas, timer heaps): give back what is free
 * once the runtime has been quiet for a while. Cheap when a trim is already due; starts the
 * trimmer thread the first time. */
CQ_INTERNAL void cq__trim_later(void);

/* A higher layer's memory given back with each trim (io's file buffers): `fn` runs on the
 * trimmer thread, after the task arenas. At most CQ__TRIM_HOOKS; adding one twice is a no-op. */
#define CQ__TRIM_HOOKS 4
CQ_INTERNAL void cq__trim_add_hook(void (*fn)(void));

/* The calling pool worker is about to park: hands its free tasks to the depot (so the trimmer
 * can give their arenas back). */
CQ_INTERNAL void cq__task_idle(void);

/* How many trims have run (tests wait for one). */
CQ_INTERNAL uint64_t cq__trim_count(void);

CQ_INLINE struct cq__task *cq__task_alloc(void)
{
    struct cq__task *t = cq__tls.cache;
    if (cq__likely(t != NULL)) {
        struct cq__task *next = (struct cq__task *)cq__load(&t->item.next, relaxed);
        cq__tls.cache = next;
        cq__tls.cache_count--;
        /* A producer's cache is a batch freed by other threads: its tasks are not in this
         * core's cache. Fetch the next one now (for writing; NULL is harmless), so that the
         * next allocation does not wait for the miss. */
        __builtin_prefetch(next, 1, 3);
        return t;
    }
    return cq__task_alloc_slow();
}

CQ_INLINE void cq__task_free(struct cq__task *t)
{
    cq__store(&t->item.next, (struct cq__item *)cq__tls.cache, relaxed);
    cq__tls.cache = t;
    if (cq__unlikely(++cq__tls.cache_count > CQ__TASK_CACHE_MAX)) {
        cq__task_free_slow();
    }
}

/* fork(): task.c registers these (platform/fork_internal.h). */
CQ__FORK_HOOKS(task)

#endif /* CQ_TASK_INTERNAL_H */
