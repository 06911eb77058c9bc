/*
 * Task allocation (see task_internal.h).
 */
#include "task_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <urcu/lfstack.h>

#include "diag_internal.h"
#include "fork_internal.h"

/* A batch in the depot: its first task's memory holds the header. */
struct depot_batch {
    struct cds_lfs_node node;
    struct cq__task *rest; /* the other tasks of the batch, linked through item.next */
    struct cq__task *last; /* the last of them */
    uint32_t count;        /* tasks in the batch, including this one */
};
_Static_assert(sizeof(struct depot_batch) <= sizeof(struct cq__task), "batch header fits a task");

#define SLAB_TASKS 256u
#define ARENA_BYTES (2u << 20)

/* Slabs are carved from 2 MiB arenas backed by transparent huge pages where the kernel allows:
 * tasks recycled through many threads end up scattered, and walking them with 4 KiB pages costs
 * a TLB miss per task. */
static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;
static char *arena_next, *arena_end;

static struct cq__task *slab_alloc(void)
{
    size_t bytes = SLAB_TASKS * sizeof(struct cq__task);
    pthread_mutex_lock(&arena_lock);
    if (arena_next == NULL || (size_t)(arena_end - arena_next) < bytes) {
        void *a = mmap(NULL, 2 * ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (a == MAP_FAILED) {
            cq__crash("out of memory allocating tasks");
        }
        uintptr_t start = ((uintptr_t)a + ARENA_BYTES - 1) & ~(uintptr_t)(ARENA_BYTES - 1);
        madvise((void *)start, ARENA_BYTES, MADV_HUGEPAGE);
        arena_next = (char *)start;
        arena_end = arena_next + ARENA_BYTES;
    }
    struct cq__task *slab = (struct cq__task *)arena_next;
    arena_next += bytes;
    pthread_mutex_unlock(&arena_lock);
    return slab;
}

static struct cds_lfs_stack depot;
static pthread_once_t depot_once = PTHREAD_ONCE_INIT;

static void depot_init(void)
{
    cds_lfs_init(&depot);
}

static void cache_push_list(struct cq__task *first, struct cq__task *last, uint32_t n)
{
    cq__store(&last->item.next, (struct cq__item *)cq__tls.cache, relaxed);
    cq__tls.cache = first;
    cq__tls.cache_count += n;
}

CQ_NOINLINE struct cq__task *cq__task_alloc_slow(void)
{
    pthread_once(&depot_once, depot_init);
    cq__thread_exit_hook();
    struct cds_lfs_node *node = cds_lfs_pop_blocking(&depot);
    if (node) {
        struct depot_batch *b = (struct depot_batch *)node;
        cq__tsan_acquire(b); /* pairs with the release in depot_push_batch */
        struct cq__task *t = (struct cq__task *)b;
        if (b->rest) {
            cache_push_list(b->rest, b->last, b->count - 1);
        }
        return t;
    }
    struct cq__task *slab = slab_alloc();
    for (uint32_t i = 1; i < SLAB_TASKS - 1; i++) {
        atomic_init(&slab[i].item.next, &slab[i + 1].item);
    }
    atomic_init(&slab[SLAB_TASKS - 1].item.next, NULL);
    cache_push_list(&slab[1], &slab[SLAB_TASKS - 1], SLAB_TASKS - 1);
    return &slab[0];
}

/* Moves CQ__TASK_BATCH tasks from this thread's cache to the depot. */
static void depot_push_batch(uint32_t n)
{
    struct cq__task *head = cq__tls.cache;
    struct cq__task *last = head;
    for (uint32_t i = 1; i < n; i++) {
        last = (struct cq__task *)cq__load(&last->item.next, relaxed);
    }
    cq__tls.cache = (struct cq__task *)cq__load(&last->item.next, relaxed);
    cq__tls.cache_count -= n;
    cq__store(&last->item.next, NULL, relaxed);

    struct depot_batch *b = (struct depot_batch *)head;
    b->rest = n > 1 ? (struct cq__task *)cq__load(&head->item.next, relaxed) : NULL;
    b->last = last;
    b->count = n;
    cds_lfs_node_init(&b->node);
    cq__tsan_release(b); /* the lock-free stack's own ordering is invisible to TSan */
    cds_lfs_push(&depot, &b->node);
}

CQ_NOINLINE void cq__task_free_slow(void)
{
    pthread_once(&depot_once, depot_init);
    cq__thread_exit_hook();
    depot_push_batch(CQ__TASK_BATCH);
}

/* fork(): no arena carving or depot pop may be caught half-way. The depot's pushes are single
 * CAS operations, so its list is whole in the child; the tasks in it are the child's memory. */
void cq__task_fork_prepare(void)
{
    pthread_once(&depot_once, depot_init);
    pthread_mutex_lock(&arena_lock);
    cds_lfs_pop_lock(&depot);
}

void cq__task_fork_parent(void)
{
    cds_lfs_pop_unlock(&depot);
    pthread_mutex_unlock(&arena_lock);
}

void cq__task_fork_child(void)
{
    cq__task_fork_parent();
}

void cq__task_cache_flush(void)
{
    if (cq__tls.cache_count == 0) {
        return;
    }
    pthread_once(&depot_once, depot_init);
    depot_push_batch(cq__tls.cache_count);
}
