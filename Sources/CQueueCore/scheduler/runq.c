/*
 * The per-worker ring (see runq_internal.h for the protocol and who may call what).
 */
#include "scheduler/runq_internal.h"

#include <sched.h>

static inline uint32_t head_real(uint64_t h)
{
    return (uint32_t)h;
}

static inline uint32_t head_steal(uint64_t h)
{
    return (uint32_t)(h >> 32);
}

static inline uint64_t head_pack(uint32_t steal, uint32_t real)
{
    return ((uint64_t)steal << 32) | real;
}

void cq__runq_init(struct cq__runq *rq)
{
    atomic_init(&rq->head, 0);
    atomic_init(&rq->tail, 0);
    for (uint32_t i = 0; i < CQ_RUNQ_CAPACITY; i++) {
        atomic_init(&rq->slots[i], NULL);
    }
}

enum cq__runq_push_result cq__runq_push(struct cq__runq *rq, struct cq__item *it)
{
    uint32_t tail = cq__load(&rq->tail, relaxed); /* only we write it */
    /* acquire: pairs with a thief's release CAS that ends its copy; after it we may reuse the
     * slots it read */
    uint64_t head = cq__load(&rq->head, acquire);
    if (tail - head_steal(head) < CQ_RUNQ_CAPACITY) {
        cq__store(&rq->slots[tail & CQ_RUNQ_MASK], it, relaxed);
        /* release: pairs with the thieves' acquire load of tail; publishes the slot */
        cq__store(&rq->tail, tail + 1, release);
        return CQ__RUNQ_PUSHED;
    }
    return head_steal(head) != head_real(head) ? CQ__RUNQ_STEALING : CQ__RUNQ_FULL;
}

bool cq__runq_push_overflow(struct cq__runq *rq, struct cq__item *it, struct cq__item **first,
                            struct cq__item **last, uint32_t *count)
{
    const uint32_t n = CQ_RUNQ_CAPACITY / 2;
    /* pairs with the thieves' acq_rel CAS on head (steal_copy) */
    uint64_t head = cq__load(&rq->head, acquire);
    uint32_t real = head_real(head);
    if (head_steal(head) != real || cq__load(&rq->tail, relaxed) - real != CQ_RUNQ_CAPACITY) {
        return false;
    }
    /* Claim the oldest half; a thief that raced us makes the CAS fail. Pairs with the thieves'
     * acq_rel CAS on head and their acquire load of it */
    if (!cq__cas(&rq->head, &head, head_pack(real + n, real + n), acq_rel)) {
        return false;
    }
    struct cq__item *f = cq__load(&rq->slots[real & CQ_RUNQ_MASK], relaxed);
    struct cq__item *prev = f;
    for (uint32_t i = 1; i < n; i++) {
        struct cq__item *cur = cq__load(&rq->slots[(real + i) & CQ_RUNQ_MASK], relaxed);
        cq__store(&prev->next, cur, relaxed);
        prev = cur;
    }
    cq__store(&prev->next, it, relaxed);
    *first = f;
    *last = it;
    *count = n + 1;
    return true;
}

struct cq__item *cq__runq_pop(struct cq__runq *rq)
{
    /* pairs with the thieves' acq_rel CAS on head (steal_copy) */
    uint64_t head = cq__load(&rq->head, acquire);
    for (;;) {
        uint32_t steal = head_steal(head), real = head_real(head);
        uint32_t tail = cq__load(&rq->tail, relaxed);
        if ((int32_t)(tail - real) <= 0) {
            return NULL;
        }
        uint64_t next = steal == real ? head_pack(real + 1, real + 1) : head_pack(steal, real + 1);
        /* pairs with the thieves' acq_rel CAS on head (steal_copy) */
        if (cq__cas(&rq->head, &head, next, acq_rel)) {
            return cq__load(&rq->slots[real & CQ_RUNQ_MASK], relaxed);
        }
    }
}

struct cq__item *cq__runq_pop_back(struct cq__runq *rq)
{
    uint32_t tail = cq__load(&rq->tail, relaxed);
    /* pairs with the thieves' acq_rel CAS on head (steal_copy) */
    uint64_t head = cq__load(&rq->head, acquire);
    if ((int32_t)(tail - head_real(head)) <= 0) {
        return NULL;
    }
    uint32_t t = tail - 1;
    struct cq__item *it = cq__load(&rq->slots[t & CQ_RUNQ_MASK], relaxed);
    /* Lower the tail before looking at head again (store-load: seq_cst on both). A thief that
     * read the old tail claims at most half of [real, t], which never includes t unless t is
     * the only item; that case is settled by a CAS on head below. Pairs with the thieves' seq_cst
     * fence between their head and tail loads (steal_copy) */
    cq__store(&rq->tail, t, seq_cst);
    /* pairs with the thieves' seq_cst fence between their head and tail loads (steal_copy) */
    head = cq__load(&rq->head, seq_cst);
    for (;;) {
        uint32_t steal = head_steal(head), real = head_real(head);
        if ((int32_t)(t - real) > 0) {
            return it; /* items remain in front of t: no thief can reach it */
        }
        if (t != real) {
            cq__store(&rq->tail, t + 1, relaxed); /* a thief took it */
            return NULL;
        }
        uint64_t next = steal == real ? head_pack(real + 1, real + 1) : head_pack(steal, real + 1);
        /* pairs with the thieves' acq_rel CAS on head (steal_copy) */
        if (cq__cas(&rq->head, &head, next, acq_rel)) {
            cq__store(&rq->tail, t + 1, relaxed); /* now empty: real == tail == t + 1 */
            return it;
        }
        /* head changed (a thief claimed or finished): look again */
    }
}

/* Claims and copies up to half of src into dst starting at dst_tail; returns the count. */
static uint32_t steal_copy(struct cq__runq *src, struct cq__runq *dst, uint32_t dst_tail)
{
    /* pairs with the owner's and the other thieves' CAS on head */
    uint64_t prev = cq__load(&src->head, acquire);
    uint32_t n, first;
    for (;;) {
        uint32_t steal = head_steal(prev), real = head_real(prev);
        if (steal != real) {
            return 0; /* another thief is copying */
        }
        /* seq_cst fence: pairs with the owner's seq_cst tail store in pop_back */
        cq__fence(seq_cst);
        /* acquire: pairs with the owner's release store of tail; the slots are published */
        uint32_t tail = cq__load(&src->tail, acquire);
        int32_t avail = (int32_t)(tail - real);
        if (avail <= 0) {
            return 0;
        }
        n = (uint32_t)avail - (uint32_t)avail / 2;
        if (n > CQ_RUNQ_CAPACITY / 2) {
            n = CQ_RUNQ_CAPACITY / 2;
        }
        /* pairs with the owner's acquire load of head before it reuses slots */
        if (cq__cas(&src->head, &prev, head_pack(steal, real + n), acq_rel)) {
            first = real;
            break;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        struct cq__item *it = cq__load(&src->slots[(first + i) & CQ_RUNQ_MASK], relaxed);
        cq__store(&dst->slots[(dst_tail + i) & CQ_RUNQ_MASK], it, relaxed);
    }
    /* Release the claim: steal catches up with real (which the owner may have advanced).
     * release: our slot reads are done before the owner can reuse those slots. */
    prev = head_pack(first, first + n);
    for (;;) {
        uint64_t next = head_pack(head_real(prev), head_real(prev));
        /* pairs with the owner's acquire load of head before it reuses slots */
        if (cq__cas(&src->head, &prev, next, acq_rel)) {
            break;
        }
    }
    return n;
}

static struct cq__item *steal_into(struct cq__runq *src, struct cq__runq *dst, bool oldest)
{
    uint32_t dst_tail = cq__load(&dst->tail, relaxed);
    /* pairs with our own thieves' acq_rel CAS on head */
    uint64_t dst_head = cq__load(&dst->head, acquire);
    if (dst_tail - head_steal(dst_head) > CQ_RUNQ_CAPACITY / 2) {
        return NULL; /* no room for half a ring: we have work of our own anyway */
    }
    uint32_t n = steal_copy(src, dst, dst_tail);
    if (n == 0) {
        return NULL;
    }
    n--;
    struct cq__item *ret;
    if (oldest) {
        /* The copied slots are past our tail, unpublished: ours alone to shift down. */
        ret = cq__load(&dst->slots[dst_tail & CQ_RUNQ_MASK], relaxed);
        for (uint32_t k = 0; k < n; k++) {
            cq__store(&dst->slots[(dst_tail + k) & CQ_RUNQ_MASK],
                      cq__load(&dst->slots[(dst_tail + k + 1) & CQ_RUNQ_MASK], relaxed), relaxed);
        }
    } else {
        ret = cq__load(&dst->slots[(dst_tail + n) & CQ_RUNQ_MASK], relaxed);
    }
    if (n) {
        /* release: publishes the copied slots to our own thieves; pairs with their acquire load of
         * tail */
        cq__store(&dst->tail, dst_tail + n, release);
    }
    return ret;
}

struct cq__item *cq__runq_steal_into(struct cq__runq *src, struct cq__runq *dst)
{
    return steal_into(src, dst, false);
}

struct cq__item *cq__runq_steal_oldest_into(struct cq__runq *src, struct cq__runq *dst)
{
    return steal_into(src, dst, true);
}
