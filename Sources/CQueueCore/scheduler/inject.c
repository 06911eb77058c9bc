/*
 * The inject queues (see inject_internal.h).
 */
#include "scheduler/inject_internal.h"

#include <stdlib.h>

#include "platform/diag_internal.h"
#include "scheduler/runq_internal.h"
#include "scheduler/thread_internal.h"

_Static_assert(sizeof(struct cq__inject_chunk) <= 1000,
               "an inject chunk is a small malloc request");

#define SEALED (1u << 31)
#define ORPHAN (1u << 30)
#define COUNT(n) ((n) & ~(SEALED | ORPHAN))

void cq__inject_init(struct cq__inject *q)
{
    atomic_init(&q->tail, NULL);
    atomic_init(&q->head, NULL);
    atomic_flag_clear(&q->lock);
    atomic_init(&q->spare, NULL);
    atomic_init(&q->maybe_work, 0);
    atomic_init(&q->takes, 0);
}

static inline struct cq__inject_chunk *chunk_of(struct cq__item *link)
{
    return (struct cq__inject_chunk *)link; /* the link is the first member */
}

static inline void link_chunk(struct cq__inject *q, struct cq__inject_chunk *c)
{
    cq__mpsc_push(&q->tail, &q->head, &c->link, &c->link); /* seq_cst exchange inside */
}

static struct cq__inject_chunk *chunk_new(struct cq__inject *q)
{
    /* acq_rel: pairs with the consumer's exchange in chunk_retire (its reads of the chunk come
     * before this thread's writes) */
    struct cq__inject_chunk *c = cq__xchg(&q->spare, NULL, acq_rel);
    if (c == NULL) {
        c = malloc(sizeof *c);
        if (c == NULL) {
            cq__crash("out of memory queueing a task");
        }
    }
    cq__item_init(&c->link, 0, 0);
    atomic_init(&c->count, 0);
    c->taken = 0;
    cq__thread_exit_hook(); /* cq__inject_thread_exit hands the chunk on */
    return c;
}

void cq__inject_push(struct cq__inject *q, unsigned slot, struct cq__item *it)
{
    struct cq__inject_chunk *c = cq__tls.inject[slot];
    for (;;) {
        if (c == NULL) {
            c = chunk_new(q);
            cq__tls.inject[slot] = c;
            cq__store(&c->slots[0], it, relaxed);
            /* pairs with the consumer's acquire load of count in cq__inject_take */
            cq__store(&c->count, 1, release);
            link_chunk(q, c);
            break;
        }
        /* acquire: pairs with the consumer's sealing CAS (its `taken` writes come before) */
        uint32_t n = cq__load(&c->count, acquire);
        if (n & SEALED) {
            /* A consumer found it empty and took it off the list: it is ours again. */
            c->taken = 0;
            cq__store(&c->slots[0], it, relaxed);
            /* pairs with the consumer's acquire load of count in cq__inject_take */
            cq__store(&c->count, 1, release);
            link_chunk(q, c);
            break;
        }
        cq__store(&c->slots[n], it, relaxed);
        /* seq_cst: publishes the slot (release, pairs with the consumer's acquire load of
         * count) and orders it before the hint and idle-word loads below */
        if (cq__cas(&c->count, &n, n + 1, seq_cst)) {
            if (n + 1 == CQ__INJECT_SLOTS) {
                /* Full: the consumers free it once they have taken everything, maybe right
                 * now, so let go of it without touching it again. */
                cq__tls.inject[slot] = NULL;
            }
            break;
        }
        /* a consumer sealed it meanwhile: loop to relink it */
    }
    /* pairs with cq__inject_take's seq_cst clear of maybe_work and its re-check of the list */
    if (cq__load(&q->maybe_work, seq_cst) == 0) {
        /* pairs with cq__inject_take's seq_cst clear of maybe_work and its re-check of the list */
        cq__store(&q->maybe_work, 1, seq_cst);
    }
}

/* A consumer is done with full chunk `c`: keep it as the queue's spare (see the header). */
static void chunk_retire(struct cq__inject *q, struct cq__inject_chunk *c)
{
    /* acq_rel: pairs with chunk_new's exchange (this thread's reads of `c` come before the
     * producer's writes; the chunk it displaces was published by an earlier retire) */
    struct cq__inject_chunk *old = cq__xchg(&q->spare, c, acq_rel);
    free(old);
}

struct cq__item *cq__inject_take(struct cq__inject *q, struct cq__runq *rq, uint32_t max)
{
    if (!cq__inject_maybe_work(q) ||
        atomic_flag_test_and_set_explicit(&q->lock, memory_order_acquire)) {
        return NULL;
    }
    struct cq__item *first = NULL;
    uint32_t got = 0;
    bool emptied = false;
    while (got < max) {
        struct cq__item *l = cq__mpsc_peek(&q->tail, &q->head);
        if (l == NULL) {
            emptied = true;
            break;
        }
        struct cq__inject_chunk *c = chunk_of(l);
        /* acquire: pairs with the producer's publishing CAS; the slots are visible */
        uint32_t n = cq__load(&c->count, acquire);
        uint32_t count = COUNT(n);
        if (count > c->taken) {
            uint32_t k = count - c->taken;
            if (k > max - got) {
                k = max - got;
            }
            for (uint32_t i = 0; i < k; i++) {
                struct cq__item *it = cq__load(&c->slots[c->taken + i], relaxed);
                __builtin_prefetch(it, 1, 3); /* tasks are scattered: overlap the misses */
                if (first == NULL) {
                    first = it;
                } else {
                    cq__runq_push(rq, it);
                }
            }
            c->taken += k;
            got += k;
            continue;
        }
        cq__mpsc_pop(&q->tail, &q->head); /* c: nothing left in it */
        if (count == CQ__INJECT_SLOTS) {
            chunk_retire(q, c); /* its producer has let go of it */
            continue;
        }
        if (n & ORPHAN) {
            free(c); /* its producer has exited */
            continue;
        }
        /* The producer's current chunk, empty: seal it off the list (the producer relinks it on
         * its next push) unless it published meanwhile, in which case it goes back in line. Pairs
         * with cq__inject_thread_exit's acquire load of count (it frees a sealed chunk) and the
         * producer's next push, which sees SEALED and relinks */
        if (!cq__cas(&c->count, &n, n | SEALED, acq_rel)) {
            link_chunk(q, c);
        }
    }
    if (got != 0) {
        /* only under the lock: a relaxed hint for the monitor (overcommit.c) */
        cq__store(&q->takes, cq__load(&q->takes, relaxed) + 1, relaxed);
    }
    if (emptied) {
        /* Clear the hint, then look again: a producer that published before the clear is seen
         * here; one that publishes after it sees the hint clear and sets it (seq_cst pair). Pairs
         * with the producers' seq_cst publish then hint load in cq__inject_push */
        cq__store(&q->maybe_work, 0, seq_cst);
        if (cq__mpsc_peek(&q->tail, &q->head) != NULL) {
            /* pairs with the producers' seq_cst publish then hint load in cq__inject_push */
            cq__store(&q->maybe_work, 1, seq_cst);
        }
    }
    /* release: pairs with the next consumer's acquiring test-and-set */
    atomic_flag_clear_explicit(&q->lock, memory_order_release);
    return first;
}

bool cq__inject_has_items(struct cq__inject *q)
{
    if (!cq__inject_maybe_work(q)) {
        return false;
    }
    if (atomic_flag_test_and_set_explicit(&q->lock, memory_order_acquire)) {
        return true;
    }
    bool items = false;
    for (struct cq__item *l = cq__mpsc_peek(&q->tail, &q->head); l != NULL;) {
        struct cq__inject_chunk *c = chunk_of(l);
        /* acquire: pairs with the producer's publishing CAS */
        if (COUNT(cq__load(&c->count, acquire)) > c->taken) {
            items = true;
            break;
        }
        /* acquire: pairs with the producer's release store linking the next chunk */
        struct cq__item *next = cq__load(&l->next, acquire);
        if (next == NULL && cq__load(&q->tail, acquire) != l) {
            items = true; /* a chunk is being linked behind this one: count it as work */
            break;
        }
        l = next;
    }
    /* release: pairs with the next consumer's acquiring test-and-set */
    atomic_flag_clear_explicit(&q->lock, memory_order_release);
    return items;
}

void cq__inject_thread_exit(void)
{
    for (unsigned prio = 0; prio < sizeof cq__tls.inject / sizeof cq__tls.inject[0]; prio++) {
        struct cq__inject_chunk *c = cq__tls.inject[prio];
        cq__tls.inject[prio] = NULL;
        if (c == NULL) {
            continue;
        }
        for (;;) {
            /* acquire: pairs with a consumer's sealing CAS (its last touches come before) */
            uint32_t n = cq__load(&c->count, acquire);
            if (n & SEALED) {
                free(c); /* off the list: nobody else knows it */
                break;
            }
            /* on the list: the consumers free it once they have taken what is left; pairs with the
             * consumer's acquire load of count in cq__inject_take, which then sees ORPHAN and frees
             * the chunk */
            if (cq__cas(&c->count, &n, n | ORPHAN, release)) {
                break;
            }
        }
    }
}
