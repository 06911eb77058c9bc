/*
 * cq_after_f's heaps and windows (see after.c): a 4-ary min-heap per clock whose entries carry
 * the keys, and the window rule (which entries fire together). Used under after.c's lock.
 */
#include <stdlib.h>

#include "events/after_heap_internal.h"
#include "platform/diag_internal.h"
#include "scheduler/task_internal.h"

/* ---- the heap ------------------------------------------------------------------------------- */

static inline bool before(const struct entry *a, const struct entry *b)
{
    return a->deadline != b->deadline ? a->deadline < b->deadline : a->seq < b->seq;
}

#define HEAP_MIN_CAPACITY 64u
#define HEAP_TRIM_CAPACITY 65536u

/* Doubles when full, halves when a quarter full (never below HEAP_MIN_CAPACITY), so the array
 * of a burst goes back as it fires; large changes ask for a trim (task_internal.h). */
static void heap_resize(struct heap *h, uint32_t cap)
{
    struct entry *items = realloc(h->items, (size_t)cap * sizeof *items);
    if (items == NULL) {
        if (cap < h->capacity) {
            return; /* keeping the larger array is fine */
        }
        cq__crash("out of memory scheduling a timer");
    }
    if (cap >= HEAP_TRIM_CAPACITY || h->capacity >= HEAP_TRIM_CAPACITY) {
        h->large = true;
        cq__trim_later();
    }
    h->items = items;
    h->capacity = cap;
}

/* A 4-ary heap: half the levels of a binary one, and a node's four children share two cache
 * lines, so a pop from a heap of a burst's 20k entries misses the cache half as often. */
#define ARITY 4u

void cq__after_heap_insert(struct heap *h, struct entry e)
{
    if (h->count == h->capacity) {
        heap_resize(h, h->capacity ? h->capacity * 2 : HEAP_MIN_CAPACITY);
    }
    uint32_t i = h->count++;
    while (i > 0) {
        uint32_t parent = (i - 1) / ARITY;
        if (!before(&e, &h->items[parent])) {
            break;
        }
        h->items[i] = h->items[parent];
        i = parent;
    }
    h->items[i] = e;
}

struct pending *cq__after_heap_pop(struct heap *h)
{
    struct pending *b = h->items[0].rec;
    struct entry e = h->items[--h->count];
    uint32_t i = 0;
    for (;;) {
        uint32_t first = ARITY * i + 1;
        if (first >= h->count) {
            break;
        }
        uint32_t end = first + ARITY < h->count ? first + ARITY : h->count;
        uint32_t child = first;
        for (uint32_t k = first + 1; k < end; k++) {
            if (before(&h->items[k], &h->items[child])) {
                child = k;
            }
        }
        if (!before(&h->items[child], &e)) {
            break;
        }
        h->items[i] = h->items[child];
        i = child;
    }
    if (h->count) {
        h->items[i] = e;
    }
    if (h->capacity > HEAP_MIN_CAPACITY && h->count <= h->capacity / 4) {
        heap_resize(h, h->capacity / 2);
    }
    if (h->count == 0 && h->large) {
        /* A large burst has all fired: the tasks allocated for its tail came after the trims
         * its shrinking asked for, so ask once more, for them. */
        h->large = false;
        cq__trim_later();
    }
    return b;
}

/* ---- windows ------------------------------------------------------------------------------ */

/*
 * The next window's time (INT64_MAX if the heap is empty): the largest deadline not after the
 * smallest latest. Leeways are at most AFTER_LEEWAY_MAX_NS, so the smallest latest is among
 * the entries due within that of the first; the scans visit only entries at or before a bound
 * (a heap's subtree is never earlier than its root) and stop after WINDOW_SCAN_MAX of them,
 * settling for a time that is still safe: an unvisited entry is due no earlier than the
 * frontier entry above it, and so is its latest.
 */
int64_t cq__after_window(const struct heap *h)
{
    if (h->count == 0) {
        return INT64_MAX;
    }
    uint32_t stack[ARITY * WINDOW_SCAN_MAX + ARITY], top = 0, visited = 0;
    int64_t bound = add_sat(h->items[0].deadline, AFTER_LEEWAY_MAX_NS);
    int64_t latest = h->items[0].latest;
    stack[top++] = 0;
    while (top) {
        uint32_t i = stack[--top];
        if (i >= h->count || h->items[i].deadline > bound || h->items[i].deadline >= latest) {
            continue; /* and its whole subtree: none of it has a smaller latest */
        }
        if (++visited > WINDOW_SCAN_MAX) {
            latest = h->items[i].deadline < latest ? h->items[i].deadline : latest;
            while (top) { /* the frontier bounds everything unvisited */
                uint32_t j = stack[--top];
                if (j < h->count && h->items[j].deadline < latest) {
                    latest = h->items[j].deadline;
                }
            }
            break;
        }
        if (h->items[i].latest < latest) {
            latest = h->items[i].latest;
        }
        for (uint32_t k = 1; k <= ARITY; k++) {
            stack[top++] = ARITY * i + k;
        }
    }
    /* Every entry due by `latest` fires in this window; waking at the last of their deadlines
     * fires the same ones, sooner. */
    int64_t w = INT64_MIN;
    top = visited = 0;
    stack[top++] = 0;
    while (top) {
        uint32_t i = stack[--top];
        if (i >= h->count || h->items[i].deadline > latest) {
            continue;
        }
        if (++visited > WINDOW_SCAN_MAX) {
            return latest;
        }
        if (h->items[i].deadline > w) {
            w = h->items[i].deadline;
        }
        for (uint32_t k = 1; k <= ARITY; k++) {
            stack[top++] = ARITY * i + k;
        }
    }
    return w;
}

/* Takes the entries due by `w` off the heap, in firing order. */
struct pending *cq__after_cut(struct heap *h, int64_t w)
{
    struct pending *first = NULL, **tail = &first;
    while (h->count && h->items[0].deadline <= w) {
        struct pending *b = cq__after_heap_pop(h);
        b->next = NULL;
        *tail = b;
        tail = &b->next;
    }
    return first;
}
