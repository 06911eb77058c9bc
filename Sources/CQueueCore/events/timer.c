/*
 * Timers of TIMER sources, on the reactor thread (cq_after_f is in after.c).
 *
 * Each clock (monotonic, wall) has two binary heaps over its timers: one ordered by deadline
 * (then submission order), one by deadline + leeway ("latest"). The reactor arms its timerfd at
 * the smallest latest, and at each wake-up fires every timer whose deadline has passed: timers
 * whose windows overlap fire together, and none fires after its latest. Repeating timers are
 * rescheduled at deadline + k * interval (no drift); fires missed while the reactor or the
 * handler was late are counted in the source's data instead of firing one by one. A timer of a
 * suspended source is parked off the heaps when it comes due, so it causes no wake-ups; resume
 * counts what it missed.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "events/reactor_command_internal.h"
#include "events/reactor_internal.h"
#include "events/source_internal.h"
#include "platform/diag_internal.h"
#include "platform/fork_internal.h"
#include "platform/probes_internal.h"
#include "platform/time_internal.h"
#include "scheduler/task_internal.h"

#define NOT_IN_HEAP UINT32_MAX
enum { BY_DEADLINE = 0, BY_LATEST = 1 };
enum { CLOCK_MONO_IDX = 0, CLOCK_WALL_IDX = 1 };

struct cq__timer {
    int64_t deadline;  /* ns on its clock; next fire */
    int64_t latest;    /* deadline + leeway, saturated */
    uint64_t interval; /* 0: one-shot */
    uint64_t leeway;
    uint64_t seq; /* submission order: ties fire first-come first-served */
    uint32_t heap_idx[2];
    uint8_t clock;
    bool parked;                /* its source was suspended when it came due */
    struct cq_source_s *source; /* its TIMER source */
    /* the schedule requested by cq_source_set_timer, under spec_lock */
    cq_time_t spec_start;
    uint64_t spec_interval, spec_leeway;
    bool spec_set;
};

/* A heap entry carries its key, so comparisons never touch the (scattered) timers. */
struct heap_entry {
    int64_t key;
    uint64_t seq;
    struct cq__timer *timer;
};

struct heap {
    struct heap_entry *items;
    uint32_t count, capacity;
};

/* Reactor-thread state. */
static struct heap heaps[2][2]; /* [clock][BY_DEADLINE / BY_LATEST] */
static uint64_t next_seq;

/* Schedule changes, from any thread. */
static pthread_mutex_t spec_lock = PTHREAD_MUTEX_INITIALIZER;

void cq__timer_fork_prepare(void)
{
    pthread_mutex_lock(&spec_lock);
    cq__after_fork_prepare();
}

void cq__timer_fork_parent(void)
{
    cq__after_fork_parent();
    pthread_mutex_unlock(&spec_lock);
}

/* The parent's timers (its sources' and its pending cq_after_f calls) do not fire in the child:
 * they belong to the parent's reactor. */
void cq__timer_fork_child(void)
{
    cq__after_fork_child();
    pthread_mutex_unlock(&spec_lock);
    for (int c = 0; c < 2; c++) {
        for (int by = 0; by < 2; by++) {
            free(heaps[c][by].items);
            heaps[c][by] = (struct heap){0};
        }
    }
}

static int64_t clock_now(int clock)
{
    struct timespec ts;
    clock_gettime(clock == CLOCK_WALL_IDX ? CLOCK_REALTIME : CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t add_sat(int64_t a, uint64_t b)
{
    return b > (uint64_t)(INT64_MAX - a) ? INT64_MAX : a + (int64_t)b;
}

/* ---- heaps ------------------------------------------------------------------------------ */

static inline bool before(const struct heap_entry *a, const struct heap_entry *b)
{
    return a->key != b->key ? a->key < b->key : a->seq < b->seq;
}

static inline void heap_set(struct heap *h, int by, uint32_t i, struct heap_entry e)
{
    h->items[i] = e;
    e.timer->heap_idx[by] = i;
}

static void sift_up(struct heap *h, int by, uint32_t i)
{
    struct heap_entry e = h->items[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!before(&e, &h->items[parent])) {
            break;
        }
        heap_set(h, by, i, h->items[parent]);
        i = parent;
    }
    heap_set(h, by, i, e);
}

static void sift_down(struct heap *h, int by, uint32_t i)
{
    struct heap_entry e = h->items[i];
    for (;;) {
        uint32_t child = 2 * i + 1;
        if (child >= h->count) {
            break;
        }
        if (child + 1 < h->count && before(&h->items[child + 1], &h->items[child])) {
            child++;
        }
        if (!before(&h->items[child], &e)) {
            break;
        }
        heap_set(h, by, i, h->items[child]);
        i = child;
    }
    heap_set(h, by, i, e);
}

/* Heaps double when full and halve when a quarter full (never below HEAP_MIN_CAPACITY), so the
 * arrays of a burst of timers go back as the timers fire. A change at or above
 * HEAP_TRIM_CAPACITY asks for a trim (task_internal.h): glibc keeps freed memory in the middle
 * of its heaps (the timers' records too) until malloc_trim. */
#define HEAP_MIN_CAPACITY 64u
#define HEAP_TRIM_CAPACITY 65536u

static void heap_resize(struct heap *h, uint32_t cap)
{
    struct heap_entry *items = realloc(h->items, cap * sizeof *items);
    if (items == NULL) {
        if (cap < h->capacity) {
            return; /* keeping the larger array is fine */
        }
        cq__crash("out of memory scheduling a timer");
    }
    if (cap >= HEAP_TRIM_CAPACITY || h->capacity >= HEAP_TRIM_CAPACITY) {
        cq__trim_later();
    }
    h->items = items;
    h->capacity = cap;
}

static void heap_insert(struct heap *h, int by, struct cq__timer *t)
{
    if (h->count == h->capacity) {
        heap_resize(h, h->capacity ? h->capacity * 2 : HEAP_MIN_CAPACITY);
    }
    struct heap_entry e = {by == BY_DEADLINE ? t->deadline : t->latest, t->seq, t};
    heap_set(h, by, h->count++, e);
    sift_up(h, by, h->count - 1);
}

static void heap_remove(struct heap *h, int by, struct cq__timer *t)
{
    uint32_t i = t->heap_idx[by];
    t->heap_idx[by] = NOT_IN_HEAP;
    struct heap_entry last = h->items[--h->count];
    if (i != h->count) {
        heap_set(h, by, i, last);
        sift_down(h, by, i);
        sift_up(h, by, last.timer->heap_idx[by]);
    }
    if (h->capacity > HEAP_MIN_CAPACITY && h->count <= h->capacity / 4) {
        heap_resize(h, h->capacity / 2);
    }
}

static void schedule(struct cq__timer *t)
{
    t->latest = add_sat(t->deadline, t->leeway);
    heap_insert(&heaps[t->clock][BY_DEADLINE], BY_DEADLINE, t);
    heap_insert(&heaps[t->clock][BY_LATEST], BY_LATEST, t);
}

static void unschedule(struct cq__timer *t)
{
    if (t->heap_idx[BY_DEADLINE] != NOT_IN_HEAP) {
        heap_remove(&heaps[t->clock][BY_DEADLINE], BY_DEADLINE, t);
        heap_remove(&heaps[t->clock][BY_LATEST], BY_LATEST, t);
    }
}

static struct cq__timer *timer_new(void)
{
    struct cq__timer *t = calloc(1, sizeof *t);
    if (t == NULL) {
        cq__crash("out of memory creating a timer");
    }
    t->heap_idx[0] = t->heap_idx[1] = NOT_IN_HEAP;
    t->deadline = t->latest = INT64_MAX; /* disarmed until a schedule is set */
    return t;
}

/* ---- TIMER sources ------------------------------------------------------------------------ */

void cq_source_set_timer(cq_source_t s, cq_time_t start, uint64_t interval, uint64_t leeway)
{
    cq__source_check(s, "cq_source_set_timer");
    if (s->type->kind != CQ_SOURCE_KIND_TIMER) {
        cq__crash("cq_source_set_timer: source %p is a %s source, not a timer", (void *)s,
                  s->type->name);
    }
    pthread_mutex_lock(&spec_lock);
    if (s->timer == NULL) {
        s->timer = timer_new();
        s->timer->source = s;
    }
    struct cq__timer *t = s->timer;
    t->spec_start = start;
    t->spec_interval = interval;
    t->spec_leeway = leeway;
    t->spec_set = true;
    pthread_mutex_unlock(&spec_lock);
    cq__store(&s->pending, 0, relaxed); /* fires not yet handled belong to the old schedule */
    cq__reactor_command(s, CQ__CMD_TIMER);
}

/* Counts `fires` for cq_runtime_get_counters and the timer_fire probe; returns it. */
static uintptr_t note_fires(uintptr_t fires)
{
    cq__count(timer_fires, fires);
    CQ_PROBE2(timer_fire, 1, fires);
    return fires;
}

/* Counts the fires of t due by `now` (t is due), and moves it to its next deadline. Returns
 * the count; t->deadline is INT64_MAX when it will not fire again. */
static uintptr_t count_fires(struct cq__timer *t, int64_t now)
{
    if (t->interval == 0) {
        t->deadline = INT64_MAX;
        return 1;
    }
    uint64_t missed = (uint64_t)(now - t->deadline) / t->interval;
    uint64_t fires = missed + 1;
    /* next = deadline + fires * interval, saturating: an interval near 2^63 ends the timer
     * instead of wrapping into a storm of fires */
    if (fires > (uint64_t)INT64_MAX / t->interval) {
        t->deadline = INT64_MAX;
    } else {
        t->deadline = add_sat(t->deadline, fires * t->interval);
    }
    return fires > UINTPTR_MAX ? UINTPTR_MAX : (uintptr_t)fires;
}

static bool source_suspended(struct cq_source_s *s)
{
    return (cq__load(&s->state, relaxed) & CQ__SS_SUSPEND_MASK) != 0;
}

void cq__timer_apply(struct cq_source_s *s)
{
    pthread_mutex_lock(&spec_lock);
    struct cq__timer *t = s->timer;
    bool changed = t && t->spec_set;
    cq_time_t start = 0;
    if (changed) {
        t->spec_set = false;
        start = t->spec_start;
        t->interval = t->spec_interval == CQ_TIME_FOREVER || t->spec_interval >= (1ull << 63)
                          ? 0
                          : t->spec_interval;
        t->leeway = t->spec_leeway;
    }
    pthread_mutex_unlock(&spec_lock);
    if (t == NULL || (cq__load(&s->state, relaxed) & CQ__SS_CANCELED)) {
        return;
    }
    if (changed) {
        unschedule(t);
        t->parked = false;
        t->seq = next_seq++;
        if (start == CQ_TIME_FOREVER) {
            t->deadline = INT64_MAX; /* disarmed */
            return;
        }
        t->clock = (start & CQ__WALL_BIT) && start != CQ_TIME_NOW ? CLOCK_WALL_IDX : CLOCK_MONO_IDX;
        if (start == CQ_TIME_NOW) {
            t->deadline = clock_now(CLOCK_MONO_IDX);
        } else {
            uint64_t ns = start & ~CQ__WALL_BIT;
            t->deadline = ns > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)ns;
        }
        /* Only a source the reactor registered is scheduled (and unscheduled when it is
         * unregistered). The state word says nothing reliable here: a source canceled and
         * then resumed for the first time is ACTIVATED, but never registered. */
        if (!s->registered) {
            return; /* scheduled at registration, if it comes */
        }
        schedule(t);
        return;
    }
    /* Registered, or resumed: schedule it if it is not, counting what it missed if parked. */
    if (!s->registered || t->heap_idx[BY_DEADLINE] != NOT_IN_HEAP || t->deadline == INT64_MAX ||
        source_suspended(s)) {
        return;
    }
    if (t->parked) {
        t->parked = false;
        int64_t now = clock_now(t->clock);
        if (t->deadline <= now) {
            cq__source_event(s, note_fires(count_fires(t, now)), false);
            if (t->deadline == INT64_MAX) {
                return;
            }
        }
    }
    schedule(t);
}

void cq__timer_remove(struct cq_source_s *s)
{
    pthread_mutex_lock(&spec_lock);
    struct cq__timer *t = s->timer;
    pthread_mutex_unlock(&spec_lock);
    if (t) {
        unschedule(t);
        t->deadline = INT64_MAX;
    }
}

void cq__timer_free(struct cq__timer *t)
{
    free(t);
}

/* ---- firing ---------------------------------------------------------------------------- */

#define WAKE_SCAN_MAX 64u

/*
 * When to wake: no later than `latest`, the smallest deadline + leeway, but no later than
 * needed either. Every timer that a wake at `latest` would fire has its deadline at or before
 * `latest`; waking at the largest of those deadlines fires the same timers, sooner. So leeway
 * costs latency only where it buys coalescing: a lone timer fires at its deadline. The scan
 * visits only heap entries at or before `latest` (they fire at the wake-up anyway) and gives up
 * (waking at `latest`) after WAKE_SCAN_MAX of them.
 */
static int64_t wake_time(const struct heap *h, int64_t latest)
{
    uint32_t stack[2 * WAKE_SCAN_MAX + 2], top = 0, visited = 0;
    int64_t wake = INT64_MIN;
    stack[top++] = 0;
    while (top) {
        uint32_t i = stack[--top];
        if (i >= h->count || h->items[i].key > latest) {
            continue; /* and so is its whole subtree */
        }
        if (++visited > WAKE_SCAN_MAX) {
            return latest;
        }
        if (h->items[i].key > wake) {
            wake = h->items[i].key;
        }
        stack[top++] = 2 * i + 1;
        stack[top++] = 2 * i + 2;
    }
    return wake == INT64_MIN ? latest : wake;
}

void cq__timers_run(int64_t *mono_next, int64_t *wall_next)
{
    int64_t after_next[2];
    cq__after_run(&after_next[0], &after_next[1]);
    int64_t *next[2] = {mono_next, wall_next};
    for (int c = 0; c < 2; c++) {
        struct heap *by_deadline = &heaps[c][BY_DEADLINE];
        *next[c] = INT64_MAX;
        if (by_deadline->count == 0) {
            continue;
        }
        int64_t now = clock_now(c);
        while (by_deadline->count && by_deadline->items[0].key <= now) {
            struct cq__timer *t = by_deadline->items[0].timer;
            unschedule(t);
            struct cq_source_s *s = t->source;
            if (source_suspended(s)) {
                t->parked = true; /* resume counts what it missed */
                continue;
            }
            cq__source_event(s, note_fires(count_fires(t, now)), false);
            if (t->deadline != INT64_MAX) {
                schedule(t);
            }
        }
        struct heap *by_latest = &heaps[c][BY_LATEST];
        if (by_latest->count) {
            *next[c] = wake_time(by_deadline, by_latest->items[0].key);
        }
    }
    for (int c = 0; c < 2; c++) {
        if (after_next[c] < *next[c]) {
            *next[c] = after_next[c];
        }
    }
}

CQ__FORK_REGISTER(timer, CQ__FORK_RANK_TIMER, cq__timer_fork_prepare, cq__timer_fork_parent,
                  cq__timer_fork_child)
