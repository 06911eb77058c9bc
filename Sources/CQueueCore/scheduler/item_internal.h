/*
 * Items: everything that sits in a run queue, a queue's list or the inject queue.
 *
 *   CQ__ITEM_TASK         a submitted function (struct cq__task), freed when it runs
 *   CQ__ITEM_GROUP_TASK   the same, submitted with cq_group_async_f: leaves its group after
 *   CQ__ITEM_QUEUE        a queue waiting to be drained on its target (embedded in the queue)
 *   CQ__ITEM_SYNC_WAITER  a thread blocked in cq_sync_f, waiting to be handed the queue
 *   CQ__ITEM_EXEC_WAITER  a cq_sync_f onto a main-thread-bound queue: the drainer runs it
 *   CQ__ITEM_REDIRECT     wraps an item that already holds one concurrent queue's width
 *   CQ__ITEM_APPLY        a helper of cq_apply_f
 *   CQ__ITEM_SOURCE       a source's handler item (embedded in the source)
 * An item is in at most one list at a time; `next` is the link of whichever list holds it.
 * The scheduler runs items without knowing their kinds: each layer that owns a kind registers
 * how to run it (cq__item_kind_register, item.c).
 */
#ifndef CQ_ITEM_INTERNAL_H
#define CQ_ITEM_INTERNAL_H

#include <cqueuecore/base.h>
#include <string.h>

#include "platform/atomic_internal.h"

struct cq_queue_s;
struct cq_group_s;

enum cq__item_kind {
    CQ__ITEM_TASK = 1,
    CQ__ITEM_QUEUE,
    CQ__ITEM_SYNC_WAITER,
    CQ__ITEM_EXEC_WAITER,
    CQ__ITEM_REDIRECT,
    CQ__ITEM_APPLY,
    CQ__ITEM_SOURCE,
    CQ__ITEM_GROUP_TASK,
    CQ__ITEM_KIND_COUNT
};

enum cq__item_flags {
    CQ__ITEM_BARRIER = 1u << 0, /* runs alone on a concurrent queue */
    CQ__ITEM_INLINE = 1u << 1,  /* a task (or group task) whose context is its inline words */
    /* a serial queue's drain: from outside the pool it waits in its priority's overcommit
     * lane, which threads of their own serve when every worker is stuck (overcommit.c) */
    CQ__ITEM_OVERCOMMIT = 1u << 2,
};

struct cq__item {
    struct cq__item *_Atomic next; /* link in the list that holds the item */
    uint16_t kind;                 /* enum cq__item_kind, written once */
    uint16_t flags;                /* enum cq__item_flags, written by the submitter */
    /* CQ__PRIO_* it runs at: set by cq__pool_push, read by the thread that pushed it. Atomic
     * (relaxed) only because an item is pushed again by other threads after it ran, ordered
     * by protocols (fences among them) that ThreadSanitizer cannot follow. */
    _Atomic uint8_t prio;
    /* The concurrent queue whose width this item holds while it is in the pool (set by that
     * queue when it redirects the item to its target; released after the item has run). */
    struct cq_queue_s *owner;
};

CQ_INLINE void cq__item_init(struct cq__item *it, enum cq__item_kind kind, unsigned flags)
{
    atomic_init(&it->next, NULL);
    it->kind = (uint16_t)kind;
    it->flags = (uint16_t)flags;
    atomic_init(&it->prio, 1); /* default until pushed to the pool */
    it->owner = NULL;
}

/* A submitted function. 64 bytes: one cache line, so producers and consumers of neighbouring
 * tasks never share a line. */
#define CQ__TASK_INLINE_WORDS 2

struct cq__task {
    struct cq__item item;
    cq_function_t function;
    void *context;
    struct cq_group_s *group; /* left after the function returns, or NULL */
    /* CQ__ITEM_INLINE: bytes the submitter wrote (a Swift closure), copied to the running
     * thread's stack before the task is freed; the function gets their address
     * (cq__task_context). The rest of the line, so it costs no space. */
    uint64_t inline_words[CQ__TASK_INLINE_WORDS];
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct cq__task) == 64, "a task is one cache line");

/* The context argument of a task's function, read before the task is freed: its context
 * pointer, or (CQ__ITEM_INLINE) its inline words copied to `stack`, the caller's buffer, which
 * must live until the function returns. */
CQ_INLINE void *cq__task_context(struct cq__task *t, uint64_t stack[CQ__TASK_INLINE_WORDS])
{
    if (t->item.flags & CQ__ITEM_INLINE) {
        memcpy(stack, t->inline_words, sizeof t->inline_words);
        return stack;
    }
    return t->context;
}

/*
 * Running items (item.c). cq__item_invoke runs an item popped from a run queue or a queue's
 * list: the run function registered for its kind, inside a frame of the concurrent queue whose
 * width it holds (it->owner), whose width is then given back through the owner hook.
 *
 * Registration happens before any item exists: the file that creates items of a kind registers
 * it from a constructor (CQ__ITEM_KIND_REGISTER), so a static link that can make such an item
 * also runs its registration.
 * The tables are written only then and read on every item (one indirect call).
 */
typedef void (*cq__item_run_fn)(struct cq__item *it);
CQ_INTERNAL void cq__item_kind_register(enum cq__item_kind kind, cq__item_run_fn run);
/* The queue layer: the global queues, by priority index (items submitted straight to one
 * run with a frame naming it, as if it were their owner). */
CQ_INTERNAL void cq__item_roots_register(struct cq_queue_s *const roots[4]);
/* The queue layer: what ends an item that held a concurrent queue's width. */
CQ_INTERNAL void cq__item_owner_done_register(void (*done)(struct cq_queue_s *owner));
CQ_INTERNAL void cq__item_invoke(struct cq__item *it);
/* The queue layer: the label of queue q, or of the global queue of priority `prio` when q is
 * NULL (for probes and introspection; the scheduler cannot look into queues). */
CQ_INTERNAL void cq__item_label_register(const char *(*label)(struct cq_queue_s *q, unsigned prio));
/* The label of the queue the calling thread runs `it` on (its innermost frame's, or the global
 * queue of its priority). For probes: not on the hot path. */
CQ_INTERNAL const char *cq__item_label(const struct cq__item *it);

/* In a kind's file: registers `run` for `kind` at load time. */
#define CQ__ITEM_KIND_REGISTER(kind, run)                                                          \
    CQ_EARLY_INIT static void cq__item_kind_register_##kind(void)                                  \
    {                                                                                              \
        cq__item_kind_register(kind, run);                                                         \
    }

/*
 * A wait-free multi-producer list with a single consumer at a time (the consumer is the holder
 * of the queue's drain lock, or of the inject queue's lock).
 *   push: one atomic exchange on the tail, then a release store linking the previous tail (or
 *         the head, when the list was empty). Returns true when the list was empty: the pusher
 *         is then responsible for making sure somebody drains it.
 *   pop:  the consumer follows head/next, and closes the list with a CAS on the tail when it
 *         takes the last item. A producer between its exchange and its link store is waited
 *         for (a few instructions, unless it was preempted).
 * The exchange is sequentially consistent: it doubles as the store-load fence between
 * publishing work and checking for sleeping workers.
 */
CQ_INLINE bool cq__mpsc_push(struct cq__item *_Atomic *tail, struct cq__item *_Atomic *head,
                             struct cq__item *first, struct cq__item *last)
{
    cq__store(&last->next, NULL, relaxed);
    /* pairs with the consumer's CAS closing the list in cq__mpsc_pop; doubles as the store-load
     * fence before notify */
    struct cq__item *prev = cq__xchg(tail, last, seq_cst);
    if (prev) {
        /* release: pairs with the consumer's acquire load of prev->next */
        cq__store(&prev->next, first, release);
        return false;
    }
    /* release: pairs with the consumer's acquire load of head */
    cq__store(head, first, release);
    return true;
}

CQ_INLINE bool cq__mpsc_empty(struct cq__item *_Atomic *tail)
{
    return cq__load(tail, relaxed) == NULL;
}

/* Waits for a producer that has exchanged the tail but not linked its item yet. */
CQ_INTERNAL struct cq__item *cq__mpsc_wait_link(struct cq__item *_Atomic *link);

/* The first item without removing it, or NULL if the list is empty. Consumer only. */
CQ_INLINE struct cq__item *cq__mpsc_peek(struct cq__item *_Atomic *tail,
                                         struct cq__item *_Atomic *head)
{
    /* pairs with the producer's release store of head / next in cq__mpsc_push */
    struct cq__item *h = cq__load(head, acquire);
    if (h == NULL && cq__load(tail, relaxed) != NULL) {
        h = cq__mpsc_wait_link(head);
    }
    return h;
}

/* Removes and returns the first item, or NULL if the list is empty. Consumer only. */
CQ_INLINE struct cq__item *cq__mpsc_pop(struct cq__item *_Atomic *tail,
                                        struct cq__item *_Atomic *head)
{
    struct cq__item *h = cq__mpsc_peek(tail, head);
    if (h == NULL) {
        return NULL;
    }
    /* acquire: pairs with the producer's release store linking h->next */
    struct cq__item *next = cq__load(&h->next, acquire);
    if (next == NULL) {
        cq__store(head, NULL, relaxed);
        struct cq__item *expected = h;
        /* release: orders the head store above before a later producer's head store, which it
         * makes after reading our NULL tail with its exchange; pairs with the producers' seq_cst
         * exchange of tail in cq__mpsc_push */
        if (cq__cas(tail, &expected, NULL, release)) {
            return h;
        }
        next = cq__mpsc_wait_link(&h->next);
    }
    cq__store(head, next, relaxed);
    return h;
}

#endif /* CQ_ITEM_INTERNAL_H */
