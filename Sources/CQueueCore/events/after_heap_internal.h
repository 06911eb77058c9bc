/*
 * cq_after_f's records, heap entries and heaps (after.c, after_heap.c). Not for use outside
 * events/after*.c.
 */
#ifndef CQ_AFTER_HEAP_INTERNAL_H
#define CQ_AFTER_HEAP_INTERNAL_H

#include <cqueuecore/queue.h>
#include <stdbool.h>
#include <stdint.h>

#include "platform/atomic_internal.h"

#define AFTER_LEEWAY_MAX_NS 10000
#define WINDOW_SCAN_MAX 64u
enum { MONO = 0, WALL = 1 };

/*
 * A pending call: malloc'd by the submitter, freed by whoever fires it. (A task-sized block
 * from the task allocator, turned into the task when it fires, would save the malloc; but
 * timers fire in deadline order, not in the order they were allocated, so the workers' task
 * caches filled with tasks from every arena of a burst, and a cache left in a parked worker
 * pins its arenas: 12-22 MB stayed after test_memory_trim_race instead of 5-8. The task pushed
 * when a timer fires is allocated then, by the firing thread, in firing order.)
 */
struct pending {
    struct cq_queue_s *queue; /* retained until it fires */
    void *context;
    cq_function_t function;
    struct pending *next; /* the incoming stack; then a cut window, in firing order */
    int64_t deadline;
    int64_t latest; /* deadline + leeway */
    uint8_t clock;  /* MONO or WALL */
    bool barrier;   /* queued with cq_barrier_async_f when it fires (a BARRIER work item) */
};

/* Keys inline: sifting compares and moves entries, never touches the records. */
struct entry {
    int64_t deadline;
    int64_t latest;
    uint64_t seq; /* submission order: ties fire first-come first-served */
    struct pending *rec;
};

struct heap {
    struct entry *items;
    uint32_t count, capacity;
    bool large; /* grew to HEAP_TRIM_CAPACITY since it was last empty */
};

/* a + b for b >= 0, saturating (a deadline may be as far as INT64_MAX) */
static inline int64_t add_sat(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* after_heap.c */
CQ_INTERNAL void cq__after_heap_insert(struct heap *h, struct entry e);
CQ_INTERNAL struct pending *cq__after_heap_pop(struct heap *h);
/* The window's time: the largest deadline not after the smallest latest (INT64_MAX: empty). */
CQ_INTERNAL int64_t cq__after_window(const struct heap *h);
/* Takes the entries due by `w` off the heap, in firing order. */
CQ_INTERNAL struct pending *cq__after_cut(struct heap *h, int64_t w);

#endif /* CQ_AFTER_HEAP_INTERNAL_H */
