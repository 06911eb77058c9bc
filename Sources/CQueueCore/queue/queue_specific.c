/*
 * Queue-specific keys. Each queue points to an array of (key, value, destructor) whose keys
 * never change: adding or removing a key publishes a new array and frees the old one after an
 * RCU grace period, so lookups (cq_get_specific is called on hot paths: "am I on this
 * queue?") take no lock and write no shared memory. A new value for a key already there is
 * stored in place (an atomic store): a copy and a deferred free per set cost 160-180 ns (11x
 * libdispatch), and a key updated in a loop piled up arrays for liburcu's callback thread.
 * Writers serialise on one mutex.
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
    const void *key;          /* never changes in a published array */
    void *_Atomic value;      /* replaced in place (writers hold the mutex) */
    cq_function_t destructor; /* read and written under the mutex only (or by dispose) */
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

static void run_destructor(void *value, cq_function_t destructor)
{
    if (destructor && value) {
        cq_async_f(&cq__root_queues[1], value, destructor);
    }
}

/* Under the mutex: stores `value` for `key` in place if `q`'s array has the key (and `value`
 * is not NULL, which removes it); returns whether it did, with the old value and destructor. */
static bool replace_in_place(struct cq_queue_s *q, const void *key, void *value,
                             cq_function_t destructor, void **old_value, cq_function_t *old_fn)
{
    struct cq__specifics *s = cq__load(&q->specifics, relaxed); /* writers hold the mutex */
    if (s == NULL || value == NULL) {
        return false;
    }
    for (uint32_t i = 0; i < s->count; i++) {
        if (s->entries[i].key == key) {
            *old_value = cq__load(&s->entries[i].value, relaxed);
            *old_fn = s->entries[i].destructor;
            s->entries[i].destructor = destructor;
            /* release: what the caller wrote before publishing `value`; pairs with the acquire
             * load in lookup() */
            cq__store(&s->entries[i].value, value, release);
            return true;
        }
    }
    return false;
}

void cq_queue_set_specific(cq_queue_t q, const void *key, void *value, cq_function_t destructor)
{
    cq__queue_check(q, "cq_queue_set_specific");
    if (key == NULL) {
        cq__crash("cq_queue_set_specific: NULL key for %s", CQ_DESCRIBE(q));
    }
    void *replaced_value = NULL;
    cq_function_t replaced_fn = NULL;
    pthread_mutex_lock(&writers);
    bool done = replace_in_place(q, key, value, destructor, &replaced_value, &replaced_fn);
    pthread_mutex_unlock(&writers);
    if (done) {
        run_destructor(replaced_value, replaced_fn);
        return;
    }
    cq__rcu_throttle(); /* the array this replaces is freed after a grace period */
    pthread_mutex_lock(&writers);
    if (replace_in_place(q, key, value, destructor, &replaced_value, &replaced_fn)) {
        pthread_mutex_unlock(&writers); /* another thread added the key meanwhile */
        run_destructor(replaced_value, replaced_fn);
        return;
    }
    struct cq__specifics *old = cq__load(&q->specifics, relaxed);
    uint32_t n = old ? old->count : 0;
    struct cq__specifics *fresh = malloc(sizeof *fresh + (n + 1) * sizeof(struct cq__specific));
    if (fresh == NULL) {
        cq__crash("cq_queue_set_specific: out of memory");
    }
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct cq__specific *e = &old->entries[i];
        if (e->key == key) {
            replaced_value = cq__load(&e->value, relaxed);
            replaced_fn = e->destructor;
        } else {
            fresh->entries[m].key = e->key;
            atomic_init(&fresh->entries[m].value, cq__load(&e->value, relaxed));
            fresh->entries[m].destructor = e->destructor;
            m++;
        }
    }
    if (value) {
        fresh->entries[m].key = key;
        atomic_init(&fresh->entries[m].value, value);
        fresh->entries[m].destructor = destructor;
        m++;
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
    run_destructor(replaced_value, replaced_fn);
}

static bool lookup(struct cq_queue_s *q, const void *key, void **value)
{
    /* pairs with the release store that publishes a new array in cq_queue_set_specific */
    struct cq__specifics *s = cq__load(&q->specifics, acquire);
    if (s) {
        for (uint32_t i = 0; i < s->count; i++) {
            if (s->entries[i].key == key) {
                /* acquire: pairs with the release store of a value replaced in place */
                *value = cq__load(&s->entries[i].value, acquire);
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
        run_destructor(cq__load(&s->entries[i].value, relaxed), s->entries[i].destructor);
    }
    /* No reader can hold it: looking up a freed queue is a use-after-free by the caller. */
    free(s);
}

CQ__FORK_REGISTER(specific, CQ__FORK_RANK_SPECIFIC, cq__specific_fork_prepare,
                  cq__specific_fork_parent, cq__specific_fork_child)
