/*
 * The inject queues: work submitted from outside the pool (the main thread, application
 * threads, a worker without a run queue), one queue per priority.
 *
 * Each producer thread appends to its own chunk, an array of item pointers, so the consumers
 * read pointers sequentially and can prefetch a whole batch of tasks at once. (A linked list
 * through the tasks themselves costs a dependent cache miss per pop once recycled tasks are
 * scattered in memory.) The chunks are linked into the queue's chunk list.
 *
 *   count   slots the producer has published (CAS by the producer; read by consumers), plus
 *           SEALED (a consumer found the chunk empty and took it off the list: the producer
 *           relinks it on its next push) and ORPHAN (the producer thread exited).
 *   taken   slots consumed; consumers only, under the queue's lock.
 * A consumer that used up a full chunk leaves it in the queue's spare slot for the next chunk a
 * producer needs (the one it held before, if any, is freed), so that a steady producer reuses
 * chunks instead of allocating them. A chunk stays under 1,008 bytes, glibc's largest "small"
 * request: a larger one first sorts through every small block freed since (malloc_consolidate),
 * under the arena lock, and a producer that allocates a chunk while pool threads free the
 * blocks it allocated (closures, operations) would pay for all of them.
 * Who may call what:
 *   producers (any thread)         cq__inject_push
 *   consumers (pool threads)       cq__inject_take (takes the lock; returns NULL if it is busy)
 *   anyone                         cq__inject_maybe_work (a hint, exact after a seq_cst fence)
 *   pool threads                   cq__inject_has_items (exact; takes the lock)
 *   the exiting thread             cq__inject_thread_exit
 */
#ifndef CQ_INJECT_INTERNAL_H
#define CQ_INJECT_INTERNAL_H

#include "platform/atomic_internal.h"
#include "scheduler/item_internal.h"

struct cq__runq;

#define CQ__INJECT_SLOTS 120u /* 992 bytes a chunk, see above */

struct cq__inject_chunk {
    struct cq__item link; /* its node in the chunk list */
    _Atomic uint32_t count;
    uint32_t taken;
    struct cq__item *_Atomic slots[CQ__INJECT_SLOTS];
};

struct cq__inject {
    struct cq__item *_Atomic tail CQ_CACHE_ALIGNED; /* chunk list: producers of new chunks */
    struct cq__item *_Atomic head CQ_CACHE_ALIGNED; /* chunk list: consumers, under lock */
    atomic_flag lock;
    struct cq__inject_chunk *_Atomic spare; /* a used-up chunk for the next producer, or NULL */
    /* 1 when items may be waiting. Producers set it after publishing; a consumer clears it
     * only after finding the queue empty, then looks once more (a Dekker pair, seq_cst). */
    _Atomic uint32_t maybe_work CQ_CACHE_ALIGNED;
    /* takes that got items, for the monitor's look at a stalled queue (overcommit.c); written
     * under the lock */
    _Atomic uint32_t takes;
};

CQ_INTERNAL void cq__inject_init(struct cq__inject *q);

/* Appends `it` to the calling thread's chunk of queue `q` (`slot`: the queue's index in the
 * pool's array, which names the thread's chunk). The publish is seq_cst: it is the store of
 * the store-load pair with the idle word. */
CQ_INTERNAL void cq__inject_push(struct cq__inject *q, unsigned slot, struct cq__item *it);

/* Takes up to `max` items: returns the first, pushes the others to `rq` (which has room; NULL
 * when `max` is 1). */
CQ_INTERNAL struct cq__item *cq__inject_take(struct cq__inject *q, struct cq__runq *rq,
                                             uint32_t max);

CQ_INLINE bool cq__inject_maybe_work(struct cq__inject *q)
{
    /* pairs with the producers' seq_cst set and cq__inject_take's seq_cst clear (inject.c) */
    return cq__load(&q->maybe_work, seq_cst) != 0;
}

/* Whether items wait in `q`: exact where cq__inject_maybe_work is only a hint (a take that
 * stopped at its batch limit leaves the hint set even when it took the last item). Takes the
 * queue's lock briefly; true if a consumer holds it (it may be taking what is left). */
CQ_INTERNAL bool cq__inject_has_items(struct cq__inject *q);

/* Thread exit: the thread's chunks are handed to the consumers (or freed). */
CQ_INTERNAL void cq__inject_thread_exit(void);

#endif /* CQ_INJECT_INTERNAL_H */
