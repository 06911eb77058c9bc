/*
 * Queue-specific keys. Each queue points to an immutable array of (key, value, destructor);
 * setting a key publishes a new array and frees the old one after an RCU grace period, so
 * lookups (cq_get_specific is called on hot paths: "am I on this queue?") take no lock and
 * write no shared memory. Writers serialise on one mutex; setting keys is rare.
 *
 * liburcu: see rcu_internal.h.
 */
#include <stdlib.h>
#include <string.h>

#include "platform/diag_internal.h"
#include "platform/fork_internal.h"
#include "platform/rcu_internal.h"
#include "queue/queue_internal.h"

struct cq__specific {
    const void *key;
    void *value;
    cq_function_t destructor;
};

struct cq__specifics {
    struct rcu_head rcu;
    uint32_t count;
    struct cq__specific entries[];
};

static pthread_mutex_t writers = PTHREAD_MUTEX_INITIALIZER;

void cq__specific_fork_prepare(void)
{
    pthread_mutex_lock(&writers);
}

void cq__specific_fork_parent(void)
{
    pthread_mutex_unlock(&writers);
}

void cq__specific_fork_child(void)
{
    pthread_mutex_unlock(&writers);
}

static void free_specifics(struct rcu_head *head)
{
    cq__rcu_reclaim_begin(head);
    free((char *)head - offsetof(struct cq__specifics, rcu));
}

static void run_destructor(struct cq__specific *e)
{
    if (e->destructor && e->value) {
        cq_async_f(&cq__root_queues[1], e->value, e->destructor);
    }
}

void cq_queue_set_specific(cq_queue_t q, const void *key, void *value, cq_function_t destructor)
{
    cq__queue_check(q, "cq_queue_set_specific");
    if (key == NULL) {
        cq__crash("cq_queue_set_specific: NULL key for %s", CQ_DESCRIBE(q));
    }
    pthread_mutex_lock(&writers);
    struct cq__specifics *old = cq__load(&q->specifics, relaxed);
    uint32_t n = old ? old->count : 0;
    struct cq__specifics *fresh = malloc(sizeof *fresh + (n + 1) * sizeof(struct cq__specific));
    if (fresh == NULL) {
        cq__crash("cq_queue_set_specific: out of memory");
    }
    struct cq__specific replaced = {0};
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (old->entries[i].key == key) {
            replaced = old->entries[i];
        } else {
            fresh->entries[m++] = old->entries[i];
        }
    }
    if (value) {
        fresh->entries[m++] = (struct cq__specific){key, value, destructor};
    }
    fresh->count = m;
    /* release: pairs with the acquire load in lookup(); the entries are visible */
    cq__store(&q->specifics, m ? fresh : NULL, release);
    pthread_mutex_unlock(&writers);
    if (m == 0) {
        free(fresh);
    }
    if (old) {
        cq__rcu_defer(&old->rcu, free_specifics);
    }
    run_destructor(&replaced);
}

static bool lookup(struct cq_queue_s *q, const void *key, void **value)
{
    /* pairs with the release store that publishes a new array in cq_queue_set_specific */
    struct cq__specifics *s = cq__load(&q->specifics, acquire);
    if (s) {
        for (uint32_t i = 0; i < s->count; i++) {
            if (s->entries[i].key == key) {
                *value = s->entries[i].value;
                return true;
            }
        }
    }
    return false;
}

void *cq_queue_get_specific(cq_queue_t q, const void *key)
{
    cq__queue_check(q, "cq_queue_get_specific");
    if (key == NULL || cq__load(&q->specifics, relaxed) == NULL) {
        return NULL;
    }
    void *value = NULL;
    cq__rcu_read_lock();
    lookup(q, key, &value);
    cq__rcu_read_unlock();
    return value;
}

void *cq_get_specific(const void *key)
{
    struct cq__frame *f = cq__tls.frame;
    if (key == NULL) {
        return NULL;
    }
    struct cq_queue_s *current;
    if (f != NULL) {
        current = f->queue;
    } else if (cq__is_main_thread()) {
        /* The main thread outside any queue runs as the main queue (as in libdispatch: its
         * values are seen from main() before cq_main; see queue.c's main_thread_on_main) */
        current = &cq__main_queue;
    } else {
        return NULL;
    }
    void *value = NULL;
    cq__rcu_read_lock();
    /* The chain of the queue we run on cannot change under us: retargeting is a barrier on
     * each queue, and we hold every level of the chain (its lock or width). */
    for (struct cq_queue_s *q = current; q; q = cq__queue_target(q)) {
        if (lookup(q, key, &value)) {
            break;
        }
    }
    cq__rcu_read_unlock();
    return value;
}

void cq__queue_specifics_dispose(struct cq_queue_s *q)
{
    /* pairs with the release store that publishes a new array in cq_queue_set_specific */
    struct cq__specifics *s = cq__load(&q->specifics, acquire);
    if (s == NULL) {
        return;
    }
    for (uint32_t i = 0; i < s->count; i++) {
        run_destructor(&s->entries[i]);
    }
    /* No reader can hold it: looking up a freed queue is a use-after-free by the caller. */
    free(s);
}

CQ__FORK_REGISTER(specific, CQ__FORK_RANK_SPECIFIC, cq__specific_fork_prepare,
                  cq__specific_fork_parent, cq__specific_fork_child)
