/*
 * The per-worker run queue: a bounded ring with one owner and any number of thieves.
 *
 *   head  packs two 32-bit indices: `real`, the next slot the owner pops, and `steal`, the first
 *         slot a thief is still copying (steal == real when no steal is in progress).
 *   tail  the next free slot; written by the owner only.
 *
 * Who may call what:
 *   owner (the thread holding the proc)  push, pop, pop_back, push_overflow
 *   any thread                           steal_into (into a ring it owns), len, is_empty
 * Thieves claim half of the items with one CAS on head, copy them, then release the claim with
 * a second CAS; only one steal per ring is in progress at a time. The owner never writes a slot
 * between steal and tail, so the copies race with nothing. pop_back takes the newest item
 * (Chase-Lev style: the tail is lowered first, and the last item is contested with a CAS on
 * head); it lets a waiting task run its own children first.
 *
 * The capacity can be lowered (e.g. -DCQ_RUNQ_CAPACITY=4) to reach wrap-around and overflow in
 * tests.
 */
#ifndef CQ_RUNQ_INTERNAL_H
#define CQ_RUNQ_INTERNAL_H

#include "platform/atomic_internal.h"
#include "scheduler/item_internal.h"

#ifndef CQ_RUNQ_CAPACITY
#define CQ_RUNQ_CAPACITY 256u
#endif
#define CQ_RUNQ_MASK (CQ_RUNQ_CAPACITY - 1u)

_Static_assert((CQ_RUNQ_CAPACITY & CQ_RUNQ_MASK) == 0 && CQ_RUNQ_CAPACITY >= 2,
               "run queue capacity must be a power of two");

struct cq__runq {
    _Atomic uint64_t head CQ_CACHE_ALIGNED; /* (steal << 32) | real; CAS by owner and thieves */
    _Atomic uint32_t tail CQ_CACHE_ALIGNED; /* store by the owner, load by thieves */
    _Atomic(struct cq__item *) slots[CQ_RUNQ_CAPACITY];
};

CQ_INTERNAL void cq__runq_init(struct cq__runq *rq);

enum cq__runq_push_result {
    CQ__RUNQ_PUSHED,   /* in the ring */
    CQ__RUNQ_FULL,     /* full: call cq__runq_push_overflow */
    CQ__RUNQ_STEALING, /* full while a thief copies: push the item elsewhere */
};

CQ_INTERNAL enum cq__runq_push_result cq__runq_push(struct cq__runq *rq, struct cq__item *it);

/*
 * Moves half of a full ring, plus `it`, out as a linked chain (first..last, `*count` items) for
 * the caller to push to the inject queue. Returns false if the ring changed under it (a thief
 * took items): retry cq__runq_push.
 */
CQ_INTERNAL bool cq__runq_push_overflow(struct cq__runq *rq, struct cq__item *it,
                                        struct cq__item **first, struct cq__item **last,
                                        uint32_t *count);

CQ_INTERNAL struct cq__item *cq__runq_pop(struct cq__runq *rq);

/* Pops the newest item (NULL if empty or a thief took it). Owner only. */
CQ_INTERNAL struct cq__item *cq__runq_pop_back(struct cq__runq *rq);

/* Steals half of `src` into `dst` (owned by the caller); returns one stolen item to run: the
 * newest of them, or with `oldest`, the oldest (the rest keep their order in `dst`). */
CQ_INTERNAL struct cq__item *cq__runq_steal_into(struct cq__runq *src, struct cq__runq *dst);
CQ_INTERNAL struct cq__item *cq__runq_steal_oldest_into(struct cq__runq *src, struct cq__runq *dst);

CQ_INLINE uint32_t cq__runq_len(struct cq__runq *rq)
{
    /* pairs with the thieves' acq_rel CAS on head */
    uint64_t head = cq__load(&rq->head, acquire);
    /* pairs with the owner's release store of tail */
    uint32_t tail = cq__load(&rq->tail, acquire);
    int32_t n = (int32_t)(tail - (uint32_t)head);
    return n > 0 ? (uint32_t)n : 0;
}

CQ_INLINE bool cq__runq_is_empty(struct cq__runq *rq)
{
    return cq__runq_len(rq) == 0;
}

/* Room left for pushes (owner only). */
CQ_INLINE uint32_t cq__runq_free(struct cq__runq *rq)
{
    /* pairs with the thieves' acq_rel CAS on head */
    uint64_t head = cq__load(&rq->head, acquire);
    uint32_t tail = cq__load(&rq->tail, relaxed);
    return CQ_RUNQ_CAPACITY - (tail - (uint32_t)(head >> 32));
}

#endif /* CQ_RUNQ_INTERNAL_H */
