/*
 * Task allocation, and giving task memory back after a burst (see task_internal.h and
 * docs/design.md, "Giving memory back").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* CLOCK_MONOTONIC_COARSE, pthread_setname_np, malloc_trim */
#endif
#include "scheduler/task_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <urcu/lfstack.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "platform/diag_internal.h"
#include "platform/fork_internal.h"
#include "platform/parker_internal.h"
#include "scheduler/pool_internal.h"

/* A batch in the depot: its first task's memory holds the header. */
struct depot_batch {
    struct cds_lfs_node node;
    struct cq__task *rest; /* the other tasks of the batch, linked through item.next, NULL-ended */
    uint32_t count;        /* tasks in the batch, including this one */
};
_Static_assert(sizeof(struct depot_batch) <= sizeof(struct cq__task), "batch header fits a task");

#define SLAB_TASKS 256u
#define SLAB_BYTES (SLAB_TASKS * sizeof(struct cq__task)) /* 16 KiB */
#define ARENA_BYTES ((size_t)2 << 20)
#define ARENA_SLABS ((uint32_t)(ARENA_BYTES / SLAB_BYTES))
_Static_assert(ARENA_BYTES % SLAB_BYTES == 0, "an arena holds whole slabs");

/* The trimmer is only asked for once the tasks use more than this many arenas (4 MiB): small
 * processes never start it. */
#define TRIM_MIN_ARENAS 2u
/*
 * How long the allocator must have been quiet before the trimmer gives memory back. 500 ms:
 * longer than the gaps of a program that runs bursts back to back (cq-bench leaves ours idle
 * ~0.4 s between runs), short enough that the memory is back within a second. Faulting 64 MB
 * back in costs tens of ms here, so a trim whose memory is needed again soon was premature:
 * if, within 4 delays of a trim, the tasks grow again by half the arenas it released, the delay
 * doubles (up to 8 s); a trim that was not premature halves it again (down to 500 ms).
 * CQ_TRIM_DELAY_MS sets a fixed delay instead.
 */
#define TRIM_DELAY_NS (500 * 1000000ll)
#define TRIM_DELAY_MAX_NS (8000 * 1000000ll)
#define TRIM_DELAY_MS_MAX 3600000u

/* A clock for "how long since": a few ns to read (vDSO), a tick (1-4 ms) of resolution. */
static int64_t coarse_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * Slabs are carved from 2 MiB arenas backed by transparent huge pages where the kernel allows:
 * tasks recycled through many threads end up scattered, and walking them with 4 KiB pages costs
 * a TLB miss per task. Each arena is its own aligned 2 MiB mapping, so the trimmer can unmap it
 * whole (which frees its huge page at once; giving back part of a huge page only splits it).
 *
 * The registry lists every arena in creation order; only the last one may still have slabs to
 * carve. Under arena_lock: slab_alloc appends and carves, the trimmer removes.
 */
struct arena {
    char *base;      /* 2 MiB-aligned */
    uint32_t carved; /* slabs handed out */
};

static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;
static struct arena *arenas;
static uint32_t narenas, arenas_cap;

/* The adaptive delay, under arena_lock (written by the trimmer and by slab_alloc). `delay` is
 * also read without the lock by the trimmer (relaxed: any recent value will do). */
static struct {
    _Atomic int64_t delay;  /* ns; 0 until the trimmer starts */
    bool fixed;             /* CQ_TRIM_DELAY_MS was given */
    bool premature;         /* the last trim's arenas were needed again soon */
    int64_t last_trim;      /* coarse ns of the last trim that released arenas */
    uint32_t last_released; /* how many; 0 once the trim has been judged premature */
    uint32_t regrown;       /* arenas created since, within 4 delays */
} pacing;

/* A new arena (arena_lock held): was the last trim premature? */
static void pacing_note_growth(void)
{
    int64_t delay = cq__load(&pacing.delay, relaxed);
    if (pacing.last_released == 0 || pacing.fixed || coarse_now() - pacing.last_trim > 4 * delay) {
        return;
    }
    if (++pacing.regrown * 2 >= pacing.last_released) {
        pacing.premature = true;
        pacing.last_released = 0;
        cq__store(&pacing.delay, delay * 2 < TRIM_DELAY_MAX_NS ? delay * 2 : TRIM_DELAY_MAX_NS,
                  relaxed);
    }
}

/* A trim released `released` arenas (arena_lock held). */
static void pacing_note_trim(uint32_t released)
{
    if (released == 0 || pacing.fixed) {
        return;
    }
    int64_t delay = cq__load(&pacing.delay, relaxed);
    if (!pacing.premature) {
        cq__store(&pacing.delay, delay / 2 > TRIM_DELAY_NS ? delay / 2 : TRIM_DELAY_NS, relaxed);
    }
    pacing.premature = false;
    pacing.last_trim = coarse_now();
    pacing.last_released = released;
    pacing.regrown = 0;
}

static char *arena_map(void)
{
    size_t span = 2 * ARENA_BYTES;
    char *a = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED) {
        cq__crash("out of memory allocating tasks");
    }
    char *start = (char *)(((uintptr_t)a + ARENA_BYTES - 1) & ~(uintptr_t)(ARENA_BYTES - 1));
    if (start > a) {
        munmap(a, (size_t)(start - a));
    }
    if (a + span > start + ARENA_BYTES) {
        munmap(start + ARENA_BYTES, (size_t)(a + span - (start + ARENA_BYTES)));
    }
    madvise(start, ARENA_BYTES, MADV_HUGEPAGE);
    return start;
}

static struct cq__task *slab_alloc(void)
{
    bool grew = false;
    pthread_mutex_lock(&arena_lock);
    if (narenas == 0 || arenas[narenas - 1].carved == ARENA_SLABS) {
        if (narenas == arenas_cap) {
            uint32_t cap = arenas_cap ? 2 * arenas_cap : 16;
            struct arena *a = realloc(arenas, cap * sizeof *a);
            if (a == NULL) {
                cq__crash("out of memory allocating tasks");
            }
            arenas = a;
            arenas_cap = cap;
        }
        arenas[narenas++] = (struct arena){arena_map(), 0};
        grew = narenas > TRIM_MIN_ARENAS;
        pacing_note_growth();
    }
    struct arena *a = &arenas[narenas - 1];
    struct cq__task *slab = (struct cq__task *)(a->base + (size_t)a->carved++ * SLAB_BYTES);
    pthread_mutex_unlock(&arena_lock);
    if (grew) {
        cq__trim_later();
    }
    return slab;
}

static struct cds_lfs_stack depot;

/* Set by a trim that left partly free arenas mapped beyond the minimum; the next push to the
 * depot clears it and asks for another trim, so tasks freed after a trim (a burst's tail, a
 * cache handed over later) still give their arenas back, and an idle process, which frees
 * nothing more, sees no further trims. Relaxed: a hint; a missed or extra trim is harmless. */
static _Atomic bool trim_retry;

static void note_retry(void)
{
    if (cq__load(&trim_retry, relaxed) && cq__xchg(&trim_retry, false, relaxed)) {
        cq__trim_later();
    }
}
static pthread_once_t depot_once = PTHREAD_ONCE_INIT;

static void depot_init(void)
{
    cds_lfs_init(&depot);
}

/* ---- the trimmer's state ------------------------------------------------------------------ */

static struct {
    /* Futex word: 1 while a trim is due. Set by cq__trim_later (release: pairs with the
     * trimmer's acquire load, which then sees `last_active`); cleared by the trimmer just
     * before it trims. */
    _Atomic uint32_t due;
    /* 1 once the trimmer thread exists or is being started (the first cq__trim_later); 0
     * again in a forked child, which starts its own. */
    _Atomic uint32_t started;
    /* Coarse CLOCK_MONOTONIC ns of the last allocator slow path seen while a trim is due.
     * Written by any allocating thread (relaxed: it only decides when the trim runs, never
     * what it may touch), read by the trimmer. */
    _Atomic int64_t last_active;
} trim CQ_CACHE_ALIGNED;

/* Held by the trimmer while it has the depot's batches to itself; fork() waits for it. */
static pthread_mutex_t trim_lock = PTHREAD_MUTEX_INITIALIZER;

/* The allocator's slow paths (once per batch of tasks): the runtime is not quiet. One load of
 * a read-mostly line unless a trim is due; then at most one store per clock tick. */
static inline void note_activity(void)
{
    if (cq__unlikely(cq__load(&trim.due, relaxed) != 0)) {
        int64_t now = coarse_now();
        if (cq__load(&trim.last_active, relaxed) != now) {
            cq__store(&trim.last_active, now, relaxed);
        }
    }
}

/* ---- allocation -------------------------------------------------------------------------- */

CQ_NOINLINE struct cq__task *cq__task_alloc_slow(void)
{
    pthread_once(&depot_once, depot_init);
    cq__thread_exit_hook();
    note_activity();
    /* The cache is empty: a batch's NULL-ended list becomes the cache as it is. */
    struct cds_lfs_node *node = cds_lfs_pop_blocking(&depot);
    if (node) {
        struct depot_batch *b = (struct depot_batch *)node;
        cq__tsan_acquire(b); /* pairs with the release in depot_push */
        cq__tls.cache = b->rest;
        cq__tls.cache_count = b->count - 1;
        return (struct cq__task *)b;
    }
    struct cq__task *slab = slab_alloc();
    for (uint32_t i = 1; i < SLAB_TASKS - 1; i++) {
        atomic_init(&slab[i].item.next, &slab[i + 1].item);
    }
    atomic_init(&slab[SLAB_TASKS - 1].item.next, NULL);
    cq__tls.cache = &slab[1];
    cq__tls.cache_count = SLAB_TASKS - 1;
    return &slab[0];
}

static inline struct cq__task *next_task(struct cq__task *t)
{
    return (struct cq__task *)cq__load(&t->item.next, relaxed);
}

/* Pushes the n tasks from `first` (linked through item.next, NULL-ended) on the depot as one
 * batch. */
static void depot_push(struct cq__task *first, uint32_t n)
{
    struct depot_batch *b = (struct depot_batch *)first;
    b->rest = next_task(first); /* read before the header overwrites the link */
    b->count = n;
    cds_lfs_node_init(&b->node);
    cq__tsan_release(b); /* the lock-free stack's own ordering is invisible to TSan */
    cds_lfs_push(&depot, &b->node);
}

CQ_NOINLINE void cq__task_free_slow(void)
{
    pthread_once(&depot_once, depot_init);
    cq__thread_exit_hook();
    note_activity();
    /* The CQ__TASK_BATCH most recently freed tasks go; the rest stay. */
    struct cq__task *head = cq__tls.cache;
    struct cq__task *last = head;
    for (uint32_t i = 1; i < CQ__TASK_BATCH; i++) {
        last = next_task(last);
    }
    cq__tls.cache = next_task(last);
    cq__tls.cache_count -= CQ__TASK_BATCH;
    cq__store(&last->item.next, NULL, relaxed);
    depot_push(head, CQ__TASK_BATCH);
    note_retry();
}

/* The whole cache goes as one batch (at most CQ__TASK_CACHE_MAX tasks): no walk. */
void cq__task_cache_flush(void)
{
    if (cq__tls.cache_count == 0) {
        return;
    }
    pthread_once(&depot_once, depot_init);
    depot_push(cq__tls.cache, cq__tls.cache_count);
    cq__tls.cache = NULL;
    cq__tls.cache_count = 0;
    note_retry();
}

/* A pool worker about to park: its free tasks go to the depot, where the trimmer sees them
 * (tasks left in a cache keep their arena mapped, and a cache's oldest tasks may come from any
 * arena). Always, not only while a trim is due: a worker that parked with a full cache before
 * the last trim of a burst sleeps through it, and its tasks kept their arenas (2 MiB each,
 * huge pages) mapped for good; under load, with extra workers, 5 arenas stayed after a burst.
 * Off the hot path: parking costs a futex wait anyway, and the next allocation takes a batch
 * back from the depot in one pop. */
void cq__task_idle(void)
{
    cq__task_cache_flush();
}

/* ---- giving arenas back ------------------------------------------------------------------ */

/* The trimmer's view of one arena during a trim. */
struct trim_arena {
    char *base;
    uint32_t reg;           /* its index in the registry */
    uint32_t free;          /* tasks of it found in the depot */
    bool release;           /* all its carved tasks are free: unmap it */
    struct cq__task *first; /* those tasks, linked through item.next */
};

static int by_base(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const struct trim_arena *)a)->base;
    uintptr_t y = (uintptr_t)((const struct trim_arena *)b)->base;
    return x < y ? -1 : x > y;
}

static int by_free_desc(const void *a, const void *b)
{
    const struct trim_arena *x = a, *y = b;
    return x->free > y->free ? -1 : x->free < y->free;
}

/* The arena (in ta, sorted by base) that task t was carved from; hint: the last one found. */
static uint32_t arena_of(const struct trim_arena *ta, uint32_t n, const struct cq__task *t,
                         uint32_t hint)
{
    char *base = (char *)((uintptr_t)t & ~(uintptr_t)(ARENA_BYTES - 1));
    if (ta[hint].base == base) {
        return hint;
    }
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)ta[mid].base < (uintptr_t)base) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo == n || ta[lo].base != base) {
        cq__crash("internal error: free task %p is not from a task arena", (const void *)t);
    }
    return lo;
}

/* Pushes a list of tasks (linked through item.next, NULL-terminated) on the depot in batches. */
static void depot_push_list(struct cq__task *t)
{
    while (t) {
        struct cq__task *last = t;
        uint32_t n = 1;
        while (n < CQ__TASK_BATCH && next_task(last)) {
            last = next_task(last);
            n++;
        }
        struct cq__task *after = next_task(last);
        cq__store(&last->item.next, NULL, relaxed);
        depot_push(t, n);
        t = after;
    }
}

/*
 * Takes every batch from the depot, unmaps each arena all of whose carved tasks are among them,
 * and puts the rest back grouped by arena, the arenas with the fewest free tasks on top: those
 * are used first, so the arenas with the most free tasks are the last to fill again and the
 * likeliest to go back next time. Tasks in threads' caches and in use keep their arenas. The
 * walk runs without arena_lock: an allocator that finds the depot empty meanwhile carves a new
 * slab rather than waiting. Caller holds trim_lock.
 */
static void trim_arenas(void)
{
    pthread_once(&depot_once, depot_init);
    /* While we trim, a push to the depot asks for another trim (note_retry): its tasks come
     * after our look at the depot. Without that, workers that handed their caches over while a
     * burst's last trim ran (and then parked, with nothing more to free) left every arena that
     * trim found partly free mapped for good. The result of this trim decides the flag below;
     * a request made meanwhile stands. */
    bool retry_before = cq__xchg(&trim_retry, true, relaxed);
    struct cds_lfs_head *head = cds_lfs_pop_all_blocking(&depot);
    if (head == NULL) {
        /* Nothing free: every arena's tasks are in use or in caches. Those beyond the minimum
         * go back when their tasks come to the depot: its next push asks again. */
        pthread_mutex_lock(&arena_lock);
        bool beyond = narenas > TRIM_MIN_ARENAS;
        pthread_mutex_unlock(&arena_lock);
        cq__store(&trim_retry, retry_before || beyond, relaxed);
        return;
    }
    /* Every task popped was carved, so its arena registered, before it was freed: the copy of
     * the registry taken now covers them all. */
    pthread_mutex_lock(&arena_lock);
    uint32_t n = narenas;
    struct trim_arena *ta = n ? calloc(n, sizeof *ta) : NULL;
    for (uint32_t i = 0; ta && i < n; i++) {
        ta[i].base = arenas[i].base;
        ta[i].reg = i;
    }
    pthread_mutex_unlock(&arena_lock);
    /* Each batch is acquired (for TSan, pairing with the release in depot_push) before any of
     * its fields, its stack link included, is read. */
    if (ta == NULL) { /* no memory for the bookkeeping: put everything back as it was */
        for (struct cds_lfs_node *node = &head->node, *next; node; node = next) {
            cq__tsan_acquire(node);
            next = node->next;
            cds_lfs_node_init(node);
            cq__tsan_release(node);
            cds_lfs_push(&depot, node);
        }
        return;
    }
    qsort(ta, n, sizeof *ta, by_base);

    uint32_t hint = 0;
    for (struct cds_lfs_node *node = &head->node, *next; node; node = next) {
        cq__tsan_acquire(node);
        next = node->next;
        struct depot_batch *b = (struct depot_batch *)node;
        struct cq__task *t = (struct cq__task *)b, *after = b->rest;
        for (;;) {
            /* relinking t overwrites its link (and, for the header, the header): `after` was
             * read first */
            uint32_t i = hint = arena_of(ta, n, t, hint);
            cq__store(&t->item.next, (struct cq__item *)ta[i].first, relaxed);
            ta[i].first = t;
            ta[i].free++;
            if ((t = after) == NULL) {
                break;
            }
            after = next_task(t);
        }
    }

    /* Decide under the lock: an arena carved further since the copy is not all free. */
    uint32_t released = 0;
    pthread_mutex_lock(&arena_lock);
    for (uint32_t i = 0; i < n; i++) {
        struct arena *a = &arenas[ta[i].reg];
        uint32_t carved_tasks = a->carved * SLAB_TASKS;
        if (ta[i].free > carved_tasks) {
            cq__crash("internal error: %u free tasks in an arena of %u (a task freed twice?)",
                      ta[i].free, carved_tasks);
        }
        ta[i].release = ta[i].free != 0 && ta[i].free == carved_tasks;
        if (ta[i].release) {
            a->base = NULL; /* dropped from the registry below */
            released++;
        }
    }
    pacing_note_trim(released);
    /* Arenas not all free stay mapped: their tasks (some or all: none in the depot is no
     * proof of more use) are in use, or wait in a thread's cache, or are freed after this trim
     * (the tail of a burst). If more than the minimum stay, the next free to the depot asks
     * for another trim (see note_retry). Counting only arenas with some free tasks here kept
     * for good those whose tasks were all queued or in caches during the burst's last trim
     * (test_memory_trim_race: test_arenas_in_use_during_a_trim_go_back). */
    cq__store(&trim_retry, narenas - released > TRIM_MIN_ARENAS, relaxed);
    uint32_t kept = 0;
    for (uint32_t r = 0; r < narenas; r++) {
        if (arenas[r].base != NULL) {
            arenas[kept++] = arenas[r];
        }
    }
    narenas = kept;
    pthread_mutex_unlock(&arena_lock);

    qsort(ta, n, sizeof *ta, by_free_desc);
    for (uint32_t i = 0; i < n; i++) {
        if (ta[i].release) {
            munmap(ta[i].base, ARENA_BYTES); /* its tasks were all ours: nobody can touch them */
        } else if (ta[i].first != NULL) {
            depot_push_list(ta[i].first);
        }
    }
    free(ta);
}

/* ---- the trimmer ------------------------------------------------------------------------- */

static void (*_Atomic trim_hooks[CQ__TRIM_HOOKS])(void);

void cq__trim_add_hook(void (*fn)(void))
{
    for (unsigned i = 0; i < CQ__TRIM_HOOKS; i++) {
        void (*none)(void) = NULL;
        /* release: pairs with the trimmer's acquire load (what fn needs is set up) */
        if (cq__cas(&trim_hooks[i], &none, fn, release) || none == fn) {
            return;
        }
    }
    cq__crash("more than %u trim hooks", CQ__TRIM_HOOKS);
}

static _Atomic uint64_t trims;

uint64_t cq__trim_count(void)
{
    /* acquire: pairs with the release increment after a trim (its unmaps are done) */
    return cq__load(&trims, acquire);
}

static void trim_now(void)
{
    pthread_mutex_lock(&trim_lock);
    trim_arenas();
    pthread_mutex_unlock(&trim_lock);
    for (unsigned i = 0; i < CQ__TRIM_HOOKS; i++) {
        /* acquire: pairs with the release CAS in cq__trim_add_hook */
        void (*fn)(void) = cq__load(&trim_hooks[i], acquire);
        if (fn != NULL) {
            fn();
        }
    }
#ifdef __GLIBC__
    /* Timer records, timer heaps and inject chunks are malloc memory, and glibc returns freed
     * memory only from the top of its heaps; this returns the free pages in the middle too. */
    malloc_trim(0);
#endif
    cq__add(&trims, 1, release); /* pairs with cq__trim_count's acquire load */
}

/*
 * The trimmer thread ("cq-trim"): asleep until a trim is due; then it waits for the allocator
 * to be quiet for the trim delay (sleeping until the quiet time would be reached, again while
 * the runtime stays busy), trims once, and sleeps until the next request. An idle process
 * sees at most two wake-ups of it after its last burst, and none after that.
 */
/* The delay, from CQ_TRIM_DELAY_MS or adaptive; read by the request that starts the trimmer,
 * so that a report about the variable comes from the call that caused it. */
static void pacing_init(void)
{
    /* 0: not set (or not a positive number, which cq__env_u32 reports); clamped to an hour */
    uint32_t ms = cq__env_u32("CQ_TRIM_DELAY_MS", 0);
    if (ms > TRIM_DELAY_MS_MAX) {
        cq__report("CQ_TRIM_DELAY_MS=%u is more than %u, the most the runtime supports here: "
                   "using %u",
                   ms, TRIM_DELAY_MS_MAX, TRIM_DELAY_MS_MAX);
        ms = TRIM_DELAY_MS_MAX;
    }
    pthread_mutex_lock(&arena_lock);
    pacing.fixed = ms != 0;
    cq__store(&pacing.delay, ms ? (int64_t)ms * 1000000 : TRIM_DELAY_NS, relaxed);
    pthread_mutex_unlock(&arena_lock);
}

static void *trimmer_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "cq-trim");
    for (;;) {
        /* acquire: pairs with cq__trim_later's release exchange; last_active is current */
        while (cq__load(&trim.due, acquire) == 0) {
            cq__futex_wait(&trim.due, 0, NULL);
        }
        for (;;) {
            int64_t delay = cq__load(&pacing.delay, relaxed);
            int64_t quiet = coarse_now() - cq__load(&trim.last_active, relaxed);
            if (quiet >= delay) {
                break;
            }
            int64_t ns = delay - (quiet > 0 ? quiet : 0);
            struct timespec d = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
            nanosleep(&d, NULL);
        }
        /* A request from now on (growth during the trim) starts another round. */
        cq__store(&trim.due, 0, relaxed);
        trim_now();
    }
    return NULL;
}

void cq__trim_later(void)
{
    cq__store(&trim.last_active, coarse_now(), relaxed);
    /* release: pairs with the trimmer's acquire load of `due` (it sees last_active) */
    if (cq__load(&trim.due, relaxed) != 0 || cq__xchg(&trim.due, 1, release) != 0) {
        return; /* already due: the trimmer will see this activity */
    }
    if (cq__load(&trim.started, relaxed) == 0 && cq__xchg(&trim.started, 1, relaxed) == 0) {
        pacing_init(); /* the thread's start orders it before the thread's reads */
        pthread_t thread;
        if (cq__thread_start(&thread, trimmer_main, NULL) != 0) {
            /* No thread (resources exhausted): memory stays; a later request tries again. */
            cq__store(&trim.started, 0, relaxed);
            cq__store(&trim.due, 0, relaxed);
        }
        return;
    }
    cq__futex_wake(&trim.due, 1);
}

/* ---- fork -------------------------------------------------------------------------------- */

/* fork(): no trim, arena carving or depot pop may be caught half-way. The depot's pushes are
 * single CAS operations, so its list is whole in the child; the tasks in it are the child's
 * memory. */
void cq__task_fork_prepare(void)
{
    pthread_once(&depot_once, depot_init);
    pthread_mutex_lock(&trim_lock);
    pthread_mutex_lock(&arena_lock);
    cds_lfs_pop_lock(&depot);
}

void cq__task_fork_parent(void)
{
    cds_lfs_pop_unlock(&depot);
    pthread_mutex_unlock(&arena_lock);
    pthread_mutex_unlock(&trim_lock);
}

/* The child has no trimmer thread: its first request starts one. A trim the parent had due,
 * or arenas it kept mapped for a trim to come, would otherwise never come in the child: its
 * bursts reuse the inherited depot's tasks, so no arena grows and nothing asks (a child forked
 * just after a burst kept 10-28 MB for good). So the child's next push to the depot asks. */
void cq__task_fork_child(void)
{
    cq__task_fork_parent();
    bool pending = cq__load(&trim.due, relaxed) != 0 || cq__load(&trim_retry, relaxed);
    cq__store(&trim.started, 0, relaxed);
    cq__store(&trim.due, 0, relaxed);
    if (pending || narenas > TRIM_MIN_ARENAS) {
        cq__store(&trim_retry, true, relaxed);
    }
}

/* ---- running a task ---------------------------------------------------------------------- */

static void task_run(struct cq__item *it)
{
    struct cq__task *t = (struct cq__task *)it;
    cq_function_t fn = t->function;
    uint64_t words[CQ__TASK_INLINE_WORDS];
    void *ctx = cq__task_context(t, words);
    cq__task_free(t); /* before the call: the function's own submissions reuse it */
    fn(ctx);
}
CQ__ITEM_KIND_REGISTER(CQ__ITEM_TASK, task_run)

CQ__FORK_REGISTER(task, CQ__FORK_RANK_TASK, cq__task_fork_prepare, cq__task_fork_parent,
                  cq__task_fork_child)
