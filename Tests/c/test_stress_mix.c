/*
 * Stress (ctest label "stress"): application threads run seeded random programs over a shared,
 * changing pool of queues, mixing every queue operation with groups, semaphores, apply and
 * cq_after_f, for a bounded time (CQ_STRESS_SECONDS, default 3; CQ_STRESS_SEED picks the seed,
 * printed at start).
 *
 * The pool: FAMILIES independent hierarchies. In each, queues sit on levels 0..2 (slots that
 * are replaced at random, the old queue released while it still has work) and short-lived
 * queues on level 3 (created, given work, released at once). A queue only ever targets a queue
 * of a lower level of its own family, or a global queue, so random retargeting -- of busy
 * queues, from application threads and from the queues' own tasks -- can never close a cycle.
 * Blocking calls made from inside a queue (sync, barrier sync, apply) only go to a later
 * family, so the test itself cannot deadlock: a hang is the runtime's.
 *
 * What every task checks while it runs:
 *   - it runs once (a per-task counter; at the end every task that was submitted ran once);
 *   - the runtime's view of where it runs (level keys looked up with cq_get_specific along the
 *     current chain) names its own queue, and stays the same from start to end;
 *   - exclusion: for every queue of that chain, a serial queue (or a barrier on a concurrent
 *     queue) is never occupied by anything else at the same time -- occupancy counters per
 *     queue, entered in a Dekker pattern so any real overlap is seen;
 *   - FIFO: per (application thread, serial queue) the submissions start in submission order;
 *   - group notifies run after the producer's earlier group tasks finished.
 * At the end: every task, sync, apply iteration and notify ran exactly once, every queue,
 * group and semaphore was finalized exactly once after all its work had run, every
 * queue-specific value was destroyed exactly once, and the live-object count is back to zero.
 */
#include <pthread.h>
#include <stdarg.h>

#include "cq_test.h"

#define THREADS 4
#define FAMILIES 3
#define SLOT_LEVELS 3 /* levels 0..2 live in slots */
#define LEVELS 4      /* level 3: short-lived queues outside the slots */
#define SLOTS_MAX 3
#define MAX_DEPTH 2          /* nesting of operations done from inside tasks */
#define APPLY_MAX 48
#define CHUNK_BITS 15
#define MAX_TASKS (1u << 21) /* task records; the run stops early well before this */
#define NO_PRODUCER 0xff

static const int slots_per_level[SLOT_LEVELS] = {2, 2, 3};

/* ---- randomness ------------------------------------------------------------------------------ */

static uint64_t seed;

/* ---- violations: counted from any thread, checked by the main thread at the end -------------- */

enum {
    V_TWICE,      /* a task ran more than once */
    V_WHERE,      /* the runtime's view of the current queue is wrong, or changed mid-task */
    V_EXCLUSION,  /* two things ran at once on a serial queue, or beside a barrier */
    V_FIFO,       /* per (producer, serial queue) order broken */
    V_GROUP,      /* a group wait or notify returned before the work it covers */
    V_FINALIZE,   /* a finalizer ran twice, or before the object's work was done */
    V_APPLY,      /* an apply iteration ran zero or several times */
    V_SEMAPHORE,  /* more holders than the semaphore's value, or a lost signal */
    V_KINDS
};

static const char *const violation_names[V_KINDS] = {
    "ran twice", "wrong current queue", "exclusion", "FIFO", "group", "finalize", "apply",
    "semaphore",
};
static atomic_long violations[V_KINDS];

static void violation(int kind, const char *fmt, ...)
{
    /* The first few of each kind are printed in full; the count tells the rest. */
    if (atomic_fetch_add(&violations[kind], 1) < 5) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "VIOLATION (%s): ", violation_names[kind]);
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\n");
        va_end(ap);
    }
}

/* ---- object records: test-owned, live until the end, so checks never touch freed memory ------ */

struct qrec {
    cq_queue_t q; /* valid while the queue lives (its work holds it) */
    char label[40];
    uint8_t family, level;
    bool serial;
    atomic_int excl, shared; /* occupancy (see chain_enter) */
    atomic_long submitted, done;
    atomic_int finalized, key_destroyed;
    atomic_uint last_seq[THREADS]; /* serial only: last FIFO number started per producer */
    uint32_t next_seq[THREADS];    /* written only by that producer */
    struct qrec *all_next;
};

struct grec {
    cq_group_t g;
    atomic_long submitted, done; /* all producers */
    long sub_by[THREADS];        /* written only by that producer */
    atomic_long done_by[THREADS];
    atomic_int finalized;
    struct grec *all_next;
};

struct srec {
    cq_semaphore_t s;
    atomic_int finalized;
    struct srec *all_next;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct qrec *all_queues;
static struct grec *all_groups;
static struct srec *all_semas;

static atomic_long live_objects, objects_created;
static atomic_long destructors_due; /* queue-specific values set (each destroyed once) */
static atomic_long destructors_run;
static cq_semaphore_t finalized_sem; /* one signal per finalizer */
static cq_semaphore_t destroyed_sem; /* one signal per specific destructor */
static cq_group_t global_group;      /* tasks on global queues and timer callbacks */

/* Keys: compared by address. level_key[f][l] on a queue of family f, level l, names its record;
 * looked up with cq_get_specific it finds the level-l queue of the current chain. */
static char level_key[FAMILIES][LEVELS];
static char scratch_key;

/* ---- task records: a chunked array, so a task that ran twice is caught, not a crash ---------- */

enum {
    F_BARRIER = 1 << 0,  /* submitted as a barrier: exclusive on its own queue */
    F_SIGNAL = 1 << 1,   /* signal (and release) aux, a semaphore, at the end */
    F_WAIT = 1 << 2,     /* wait on aux, a semaphore, at the start; the producer signals it */
    F_LEAVE = 1 << 3,    /* leave aux, a group, at the end */
    F_NOTIFY = 1 << 4,   /* a group notify: the producer's earlier group tasks are done */
    F_GLOBAL = 1 << 5,   /* leave global_group at the end */
};

struct task {
    struct qrec *rec;  /* NULL: runs on a global queue */
    struct grec *grec; /* counted in this group record's done counters */
    void *aux;
    atomic_uint ran;
    uint32_t id;
    uint32_t seq;    /* FIFO number (0: not checked) */
    uint32_t expect; /* F_NOTIFY: how many group tasks of the producer must be done */
    uint8_t producer, flags, depth;
};

static struct task *_Atomic task_chunks[MAX_TASKS >> CHUNK_BITS];
static pthread_mutex_t chunk_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint next_task_id;
static atomic_bool stopping;

static struct task *task_new(struct qrec *rec, uint8_t producer, uint8_t flags, uint8_t depth)
{
    uint32_t id = atomic_fetch_add(&next_task_id, 1);
    REQUIRE(id < MAX_TASKS);
    if (id > MAX_TASKS - (1u << 16)) {
        atomic_store(&stopping, true); /* bound the memory; ends the run early */
    }
    uint32_t c = id >> CHUNK_BITS;
    struct task *chunk = atomic_load(&task_chunks[c]);
    if (chunk == NULL) {
        pthread_mutex_lock(&chunk_lock);
        chunk = atomic_load(&task_chunks[c]);
        if (chunk == NULL) {
            chunk = calloc((size_t)1 << CHUNK_BITS, sizeof *chunk);
            REQUIRE(chunk != NULL);
            atomic_store(&task_chunks[c], chunk);
        }
        pthread_mutex_unlock(&chunk_lock);
    }
    struct task *t = &chunk[id & ((1u << CHUNK_BITS) - 1)];
    t->id = id;
    t->rec = rec;
    t->producer = producer;
    t->flags = flags;
    t->depth = depth;
    if (rec) {
        atomic_fetch_add(&rec->submitted, 1);
        /* Notifies run when the group empties, not in submission order. */
        if (rec->serial && producer != NO_PRODUCER && !(flags & F_NOTIFY)) {
            t->seq = ++rec->next_seq[producer];
        }
    }
    return t;
}

/* ---- where a task runs: the chain, occupancy and FIFO ---------------------------------------- */

struct held {
    struct qrec *r[LEVELS];
    bool excl[LEVELS];
    int n;
};

/*
 * Enters every queue of the current chain as the runtime reports it: exclusively for serial
 * queues (and for `self` when running as a barrier), shared for concurrent ones. Exclusive:
 * add to excl, then read shared; shared: add to shared, then read excl (all seq_cst), so of two
 * overlapping entries at least one sees the other.
 */
static void chain_enter(struct qrec *self, bool barrier, struct held *h)
{
    h->n = 0;
    int f = self->family;
    if (cq_get_specific(&level_key[f][self->level]) != self ||
        cq_queue_get_specific(self->q, &level_key[f][self->level]) != self ||
        strcmp(cq_queue_get_label(NULL), self->label) != 0) {
        violation(V_WHERE, "task of %s: cq_get_specific/cq_queue_get_label(NULL) say it runs "
                           "elsewhere (label \"%s\")",
                  self->label, cq_queue_get_label(NULL));
    }
    for (int l = self->level; l >= 0; l--) {
        struct qrec *r = cq_get_specific(&level_key[f][l]);
        if (r == NULL) {
            continue; /* the chain skips this level */
        }
        if (r->family != f || r->level != l) {
            violation(V_WHERE, "task of %s: level key %d/%d found %s", self->label, f, l,
                      r->label);
            continue;
        }
        bool ex = r->serial || (r == self && barrier);
        h->r[h->n] = r;
        h->excl[h->n] = ex;
        h->n++;
        if (ex) {
            int e = atomic_fetch_add(&r->excl, 1);
            int s = atomic_load(&r->shared);
            if (e != 0 || s != 0) {
                violation(V_EXCLUSION, "%s task of %s runs on %s beside %d exclusive and %d "
                                       "shared",
                          barrier ? "barrier" : "serial", self->label, r->label, e, s);
            }
        } else {
            atomic_fetch_add(&r->shared, 1);
            int e = atomic_load(&r->excl);
            if (e != 0) {
                violation(V_EXCLUSION, "task of %s runs on concurrent %s beside %d exclusive",
                          self->label, r->label, e);
            }
        }
    }
}

/* Leaves the chain, checking first that it did not change under the running task (retargets
 * take effect between tasks). */
static void chain_exit(struct qrec *self, struct held *h)
{
    int f = self->family, i = 0;
    for (int l = self->level; l >= 0; l--) {
        struct qrec *r = cq_get_specific(&level_key[f][l]);
        if (r == NULL) {
            continue;
        }
        if (i >= h->n || h->r[i] != r) {
            violation(V_WHERE, "task of %s: its chain changed while it ran (level %d: %s)",
                      self->label, l, r->label);
            break;
        }
        i++;
    }
    for (i = h->n - 1; i >= 0; i--) {
        atomic_fetch_sub(h->excl[i] ? &h->r[i]->excl : &h->r[i]->shared, 1);
    }
}

/* Runs on the serial queue (exclusively), so last_seq needs no more than relaxed atomics. */
static void fifo_check(struct task *t)
{
    struct qrec *r = t->rec;
    unsigned last = atomic_load_explicit(&r->last_seq[t->producer], memory_order_relaxed);
    if (t->seq != last + 1) {
        violation(V_FIFO, "%s: producer %u's submission %u started after %u", r->label,
                  t->producer, t->seq, last);
    }
    if (t->seq > last) {
        atomic_store_explicit(&r->last_seq[t->producer], t->seq, memory_order_relaxed);
    }
}

/* ---- slots ----------------------------------------------------------------------------------- */

struct slot {
    pthread_mutex_t lock;
    struct qrec *rec; /* the slot's reference is on rec->q; NULL once emptied at the end */
};

static struct slot slots[FAMILIES][SLOT_LEVELS][SLOTS_MAX];

/* A reference to the queue in a slot (the caller releases it), or NULL at the end. */
static struct qrec *slot_take(int f, int l, int i)
{
    struct slot *s = &slots[f][l][i];
    pthread_mutex_lock(&s->lock);
    struct qrec *r = s->rec;
    if (r) {
        cq_retain(r->q);
    }
    pthread_mutex_unlock(&s->lock);
    return r;
}

static struct qrec *take_in_family(int f, uint64_t *rng)
{
    int l = (int)below(rng, SLOT_LEVELS);
    return slot_take(f, l, (int)below(rng, (uint32_t)slots_per_level[l]));
}

static struct qrec *take_any(uint64_t *rng)
{
    return take_in_family((int)below(rng, FAMILIES), rng);
}

static cq_queue_t random_global(uint64_t *rng)
{
    static const intptr_t prio[] = {CQ_QUEUE_PRIORITY_HIGH, CQ_QUEUE_PRIORITY_DEFAULT,
                                    CQ_QUEUE_PRIORITY_LOW, CQ_QUEUE_PRIORITY_BACKGROUND};
    return cq_get_global_queue(prio[below(rng, 4)], 0);
}

/*
 * Points `q` (of family f, level l) at a random queue of a lower level of its family, or at a
 * global queue: edges only go down, so the graph stays acyclic whatever runs concurrently.
 */
static void retarget_randomly(cq_queue_t q, int f, int l, uint64_t *rng)
{
    if (l == 0 || below(rng, 4) == 0) {
        cq_set_target_queue(q, random_global(rng));
        return;
    }
    int tl = (int)below(rng, (uint32_t)(l < SLOT_LEVELS ? l : SLOT_LEVELS));
    struct qrec *t = slot_take(f, tl, (int)below(rng, (uint32_t)slots_per_level[tl]));
    if (t == NULL) {
        cq_set_target_queue(q, NULL);
        return;
    }
    cq_set_target_queue(q, t->q);
    cq_release(t->q);
}

static void object_finalized(void)
{
    atomic_fetch_sub(&live_objects, 1);
    cq_semaphore_signal(finalized_sem);
}

static void queue_finalizer(void *ctx)
{
    struct qrec *r = ctx;
    if (atomic_fetch_add(&r->finalized, 1) != 0) {
        violation(V_FINALIZE, "queue %s finalized twice", r->label);
    }
    long sub = atomic_load(&r->submitted), done = atomic_load(&r->done);
    if (sub != done) {
        violation(V_FINALIZE, "queue %s finalized with %ld of %ld tasks done", r->label, done,
                  sub);
    }
    object_finalized();
}

static void level_key_destructor(void *ctx)
{
    struct qrec *r = ctx;
    if (atomic_fetch_add(&r->key_destroyed, 1) != 0) {
        violation(V_FINALIZE, "queue %s: specific destroyed twice", r->label);
    }
    atomic_fetch_add(&destructors_run, 1);
    cq_semaphore_signal(destroyed_sem);
}

struct scratch {
    atomic_int destroyed;
};

static void scratch_destructor(void *ctx)
{
    struct scratch *s = ctx;
    if (atomic_fetch_add(&s->destroyed, 1) != 0) {
        violation(V_FINALIZE, "a queue-specific value was destroyed twice");
    }
    free(s);
    atomic_fetch_add(&destructors_run, 1);
    cq_semaphore_signal(destroyed_sem);
}

static void set_scratch(cq_queue_t q, uint64_t *rng)
{
    struct scratch *s = NULL;
    if (below(rng, 4) != 0) {
        s = calloc(1, sizeof *s);
        REQUIRE(s != NULL);
        atomic_fetch_add(&destructors_due, 1);
    }
    cq_queue_set_specific(q, &scratch_key, s, scratch_destructor); /* NULL removes */
}

/* A new queue of family f, level l with its record, keys and finalizer; one reference. */
static struct qrec *queue_new(int f, int l, uint64_t *rng)
{
    static atomic_uint serial_number;
    struct qrec *r = calloc(1, sizeof *r);
    REQUIRE(r != NULL);
    r->family = (uint8_t)f;
    r->level = (uint8_t)l;
    r->serial = below(rng, 2) == 0;
    snprintf(r->label, sizeof r->label, "f%d-l%d-%s-%u", f, l, r->serial ? "ser" : "con",
             atomic_fetch_add(&serial_number, 1));
    r->q = cq_queue_create(r->label, r->serial ? CQ_QUEUE_SERIAL : CQ_QUEUE_CONCURRENT);
    REQUIRE(r->q != NULL);
    cq_set_context(r->q, r);
    cq_set_finalizer_f(r->q, queue_finalizer);
    atomic_fetch_add(&destructors_due, 1);
    cq_queue_set_specific(r->q, &level_key[f][l], r, level_key_destructor);
    retarget_randomly(r->q, f, l, rng);
    atomic_fetch_add(&live_objects, 1);
    atomic_fetch_add(&objects_created, 1);
    pthread_mutex_lock(&registry_lock);
    r->all_next = all_queues;
    all_queues = r;
    pthread_mutex_unlock(&registry_lock);
    return r;
}

/* Puts a new queue in a slot and releases the old one, whatever work it still has. */
static void slot_replace(int f, int l, int i, uint64_t *rng)
{
    struct qrec *fresh = queue_new(f, l, rng);
    struct slot *s = &slots[f][l][i];
    pthread_mutex_lock(&s->lock);
    struct qrec *old = s->rec;
    s->rec = fresh;
    pthread_mutex_unlock(&s->lock);
    if (old) {
        cq_release(old->q);
    }
}

static void group_finalizer(void *ctx)
{
    struct grec *g = ctx;
    if (atomic_fetch_add(&g->finalized, 1) != 0) {
        violation(V_FINALIZE, "group %p finalized twice", (void *)g);
    }
    if (atomic_load(&g->submitted) != atomic_load(&g->done)) {
        violation(V_FINALIZE, "group finalized with %ld of %ld tasks done",
                  atomic_load(&g->done), atomic_load(&g->submitted));
    }
    object_finalized();
}

static struct grec *group_new(void)
{
    struct grec *g = calloc(1, sizeof *g);
    REQUIRE(g != NULL);
    g->g = cq_group_create();
    REQUIRE(g->g != NULL);
    cq_set_context(g->g, g);
    cq_set_finalizer_f(g->g, group_finalizer);
    atomic_fetch_add(&live_objects, 1);
    atomic_fetch_add(&objects_created, 1);
    pthread_mutex_lock(&registry_lock);
    g->all_next = all_groups;
    all_groups = g;
    pthread_mutex_unlock(&registry_lock);
    return g;
}

static void sema_finalizer(void *ctx)
{
    struct srec *s = ctx;
    if (atomic_fetch_add(&s->finalized, 1) != 0) {
        violation(V_FINALIZE, "semaphore %p finalized twice", (void *)s);
    }
    object_finalized();
}

static struct srec *sema_new(intptr_t value)
{
    struct srec *s = calloc(1, sizeof *s);
    REQUIRE(s != NULL);
    s->s = cq_semaphore_create(value);
    REQUIRE(s->s != NULL);
    cq_set_context(s->s, s);
    cq_set_finalizer_f(s->s, sema_finalizer);
    atomic_fetch_add(&live_objects, 1);
    atomic_fetch_add(&objects_created, 1);
    pthread_mutex_lock(&registry_lock);
    s->all_next = all_semas;
    all_semas = s;
    pthread_mutex_unlock(&registry_lock);
    return s;
}

/* ---- suspensions: resumed by another application thread, a task, or a timer ------------------ */

/* One suspension of a queue: whoever claims it first resumes the queue and drops the
 * reference that kept it from being released while suspended. Two holders: the list of
 * pending suspensions and the watchdog timer, which bounds how long anything waits on it. */
struct token {
    struct qrec *rec;
    atomic_bool claimed;
    atomic_int refs;
    struct token *next;
};

static pthread_mutex_t tokens_lock = PTHREAD_MUTEX_INITIALIZER;
static struct token *tokens;
static atomic_long suspends;

static void token_unref(struct token *k)
{
    if (atomic_fetch_sub(&k->refs, 1) == 1) {
        free(k);
    }
}

static void token_claim(struct token *k)
{
    if (!atomic_exchange(&k->claimed, true)) {
        cq_resume(k->rec->q);
        cq_release(k->rec->q);
    }
    token_unref(k);
}

static void token_watchdog(void *ctx)
{
    token_claim(ctx);
    cq_group_leave(global_group);
}

/* Resumes the oldest pending suspension, if any (from any thread, also from a task). */
static void token_pop_and_resume(void)
{
    pthread_mutex_lock(&tokens_lock);
    struct token *k = tokens;
    if (k) {
        tokens = k->next;
    }
    pthread_mutex_unlock(&tokens_lock);
    if (k) {
        token_claim(k);
    }
}

/* Suspends a queue the caller holds a reference to; someone else resumes it. */
static void suspend_elsewhere(struct qrec *r, uint64_t *rng)
{
    struct token *k = calloc(1, sizeof *k);
    REQUIRE(k != NULL);
    k->rec = r;
    atomic_init(&k->refs, 2);
    cq_retain(r->q);
    cq_suspend(r->q);
    atomic_fetch_add(&suspends, 1);
    pthread_mutex_lock(&tokens_lock);
    k->next = tokens;
    tokens = k;
    pthread_mutex_unlock(&tokens_lock);
    cq_group_enter(global_group);
    cq_after_f(cq_time(CQ_TIME_NOW, 200000 + (int64_t)below(rng, 3000000)),
               random_global(rng), k, token_watchdog);
}

/* ---- tasks ----------------------------------------------------------------------------------- */

static struct srec *lock_sema; /* value 2: at most two holders */
static atomic_int lock_holders;
static atomic_long notifies_registered, syncs_done, applies_done, retargets, replacements,
    temp_queues;

static void task_fn(void *ctx);

static void counted_lock(void)
{
    if (cq_semaphore_wait(lock_sema->s, cq_test_deadline()) != 0) {
        violation(V_SEMAPHORE, "a wait on the lock semaphore timed out");
        return;
    }
    int n = atomic_fetch_add(&lock_holders, 1);
    if (n >= 2) {
        violation(V_SEMAPHORE, "%d holders of a semaphore of value 2", n + 1);
    }
    atomic_fetch_sub(&lock_holders, 1);
    cq_semaphore_signal(lock_sema->s);
}

struct apply_ctx {
    struct task *t;
    atomic_uchar hits[APPLY_MAX];
};

static void apply_iteration(void *ctx, size_t i)
{
    struct apply_ctx *a = ctx;
    struct held h;
    chain_enter(a->t->rec, false, &h);
    if (i == 0 && a->t->seq) {
        fifo_check(a->t); /* on a serial queue the iterations run in order, as one sync */
    }
    atomic_fetch_add(&a->hits[i], 1);
    chain_exit(a->t->rec, &h);
}

/* cq_apply_f onto r, counted as one task (FIFO-checked on a serial queue). */
static void do_apply(struct qrec *r, uint8_t producer, uint8_t depth, uint64_t *rng)
{
    struct apply_ctx *a = calloc(1, sizeof *a);
    REQUIRE(a != NULL);
    a->t = task_new(r, producer, 0, depth);
    size_t n = 1 + below(rng, APPLY_MAX);
    cq_apply_f(n, r->q, a, apply_iteration);
    for (size_t i = 0; i < APPLY_MAX; i++) {
        if (atomic_load(&a->hits[i]) != (i < n)) {
            violation(V_APPLY, "apply of %zu on %s: iteration %zu ran %d times", n, r->label, i,
                      atomic_load(&a->hits[i]));
        }
    }
    atomic_fetch_add(&a->t->ran, 1);
    atomic_fetch_add(&r->done, 1);
    atomic_fetch_add(&applies_done, 1);
    free(a);
}

static void do_sync(struct qrec *r, bool barrier, uint8_t producer, uint8_t depth)
{
    struct task *t = task_new(r, producer, barrier ? F_BARRIER : 0, depth);
    (barrier ? cq_barrier_sync_f : cq_sync_f)(r->q, t, task_fn);
    if (atomic_load(&t->ran) != 1) {
        violation(V_TWICE, "sync onto %s returned with its function run %u times", r->label,
                  atomic_load(&t->ran));
    }
    atomic_fetch_add(&syncs_done, 1);
}

/*
 * What a task (or a sync function) may do besides checking: submit more work anywhere, block
 * in a sync or apply onto a later family, retarget its own queue, replace a queue-specific
 * value, resume a pending suspension, take the counting semaphore.
 */
static void nested_ops(struct qrec *self, unsigned depth, uint64_t *rng)
{
    if (depth >= MAX_DEPTH || below(rng, 4) != 0) {
        return;
    }
    int first_later = self ? self->family + 1 : 0; /* blocking calls go to later families */
    switch (below(rng, 8)) {
    case 0:
    case 1: {
        struct qrec *r = take_any(rng);
        if (r) {
            bool barrier = below(rng, 4) == 0;
            struct task *c = task_new(r, NO_PRODUCER, barrier ? F_BARRIER : 0,
                                      (uint8_t)(depth + 1));
            (barrier ? cq_barrier_async_f : cq_async_f)(r->q, c, task_fn);
            cq_release(r->q);
        }
        break;
    }
    case 2:
    case 3:
        if (first_later < FAMILIES) {
            int f = first_later + (int)below(rng, (uint32_t)(FAMILIES - first_later));
            struct qrec *r = take_in_family(f, rng);
            if (r) {
                if (below(rng, 3) == 0) {
                    do_apply(r, NO_PRODUCER, (uint8_t)(depth + 1), rng);
                } else {
                    do_sync(r, below(rng, 3) == 0, NO_PRODUCER, (uint8_t)(depth + 1));
                }
                cq_release(r->q);
            }
        }
        break;
    case 4:
        if (self && self->level > 0) {
            retarget_randomly(self->q, self->family, self->level, rng);
            atomic_fetch_add(&retargets, 1);
        }
        break;
    case 5:
        if (self) {
            set_scratch(self->q, rng);
        }
        break;
    case 6:
        token_pop_and_resume();
        break;
    default:
        counted_lock();
        break;
    }
}

static void task_fn(void *ctx)
{
    struct task *t = ctx;
    if (atomic_fetch_add(&t->ran, 1) != 0) {
        violation(V_TWICE, "task %u (queue %s) ran twice", t->id, t->rec ? t->rec->label : "-");
        return;
    }
    struct held h;
    if (t->rec) {
        chain_enter(t->rec, t->flags & F_BARRIER, &h);
        if (t->seq) {
            fifo_check(t);
        }
    }
    if ((t->flags & F_WAIT) && cq_semaphore_wait(t->aux, cq_test_deadline()) != 0) {
        violation(V_SEMAPHORE, "task %u: the producer's signal never arrived", t->id);
    }
    if ((t->flags & F_NOTIFY) &&
        atomic_load(&t->grec->done_by[t->producer]) < (long)t->expect) {
        violation(V_GROUP, "notify ran with %ld of the producer's %u earlier tasks done",
                  atomic_load(&t->grec->done_by[t->producer]), t->expect);
    }
    uint64_t rng = seed ^ ((uint64_t)t->id * 0x2545f4914f6cdd1dull);
    nested_ops(t->rec, t->depth, &rng);
    if (t->rec) {
        chain_exit(t->rec, &h);
    }
    if (t->grec && !(t->flags & F_NOTIFY)) {
        if (t->producer != NO_PRODUCER) {
            atomic_fetch_add(&t->grec->done_by[t->producer], 1);
        }
        atomic_fetch_add(&t->grec->done, 1);
    }
    if (t->flags & (F_WAIT | F_SIGNAL)) {
        if (t->flags & F_SIGNAL) {
            cq_semaphore_signal(t->aux);
        }
        cq_release(t->aux); /* the reference the producer took for us */
    }
    if (t->rec) {
        atomic_fetch_add(&t->rec->done, 1); /* the queue cannot be finalized before we return */
    }
    if (t->flags & F_LEAVE) {
        cq_group_leave(t->aux);
    }
    if (t->flags & F_GLOBAL) {
        cq_group_leave(global_group);
    }
}

/* ---- application threads --------------------------------------------------------------------- */

struct actor {
    uint8_t index;
    uint64_t rng;
    struct grec *group; /* this thread's group: only it submits to it and waits on it */
    struct srec *sema;  /* this thread's semaphore: its tasks signal, it waits */
    struct srec *go;    /* and the other way round (kept apart: one direction's signal must
                         * never satisfy the other direction's wait) */
    long ops;
};

static struct grec *shared_groups[2];
static uint64_t deadline_ns;

/* A task of `a` in group record g (submitted as a group async or with enter/leave). */
static struct task *group_task(struct actor *a, struct grec *g, struct qrec *r, uint8_t flags)
{
    struct task *t = task_new(r, a->index, flags, 0);
    t->grec = g;
    g->sub_by[a->index]++;
    atomic_fetch_add(&g->submitted, 1);
    return t;
}

/* A notify on group record g, run on r (a queue) or a global queue (r NULL). */
static void group_notify(struct actor *a, struct grec *g, struct qrec *r)
{
    struct task *t = task_new(r, a->index, F_NOTIFY | (r ? 0 : F_GLOBAL), 0);
    t->grec = g;
    t->expect = (uint32_t)g->sub_by[a->index];
    if (r == NULL) {
        cq_group_enter(global_group);
    }
    atomic_fetch_add(&notifies_registered, 1);
    cq_group_notify_f(g->g, r ? r->q : random_global(&a->rng), t, task_fn);
}

static void own_group_wait(struct actor *a)
{
    WAIT_GROUP(a->group->g);
    long done = atomic_load(&a->group->done_by[a->index]);
    if (done != a->group->sub_by[a->index]) {
        violation(V_GROUP, "group wait returned with %ld of %ld tasks done", done,
                  a->group->sub_by[a->index]);
    }
}

static void one_op(struct actor *a)
{
    uint64_t *rng = &a->rng;
    uint32_t op = below(rng, 100);
    if (op >= 96) { /* operations that need no queue */
        switch (op) {
        case 96:
            token_pop_and_resume(); /* a suspension made by another thread */
            break;
        case 97:
            own_group_wait(a);
            if (below(rng, 4) == 0) { /* replace the group (finalized once its work ran) */
                cq_release(a->group->g);
                a->group = group_new();
            }
            break;
        case 98:
            if (below(rng, 8) == 0) {
                cq_release(a->sema->s);
                a->sema = sema_new(0);
                cq_release(a->go->s);
                a->go = sema_new(0);
            }
            counted_lock();
            /* Outside any queue the runtime must say so. */
            if (cq_get_specific(&level_key[0][0]) != NULL || cq_get_current_queue() != NULL) {
                violation(V_WHERE, "an application thread is reported to run on a queue");
            }
            break;
        default: { /* a short-lived queue: work, maybe a suspension, then released at once */
            int f = (int)below(rng, FAMILIES);
            struct qrec *r = queue_new(f, LEVELS - 1, rng);
            atomic_fetch_add(&temp_queues, 1);
            int n = (int)below(rng, 12);
            for (int i = 0; i < n; i++) {
                switch (below(rng, 5)) {
                case 0:
                    cq_barrier_async_f(r->q, task_new(r, a->index, F_BARRIER, 0), task_fn);
                    break;
                case 1:
                    cq_after_f(cq_time(CQ_TIME_NOW, (int64_t)below(rng, 500000)), r->q,
                               task_new(r, NO_PRODUCER, 0, 0), task_fn);
                    break;
                case 2:
                    if (below(rng, 2) == 0) {
                        suspend_elsewhere(r, rng);
                    }
                    cq_async_f(r->q, task_new(r, a->index, 0, 0), task_fn);
                    break;
                default:
                    cq_async_f(r->q, task_new(r, a->index, 0, 0), task_fn);
                }
            }
            cq_release(r->q);
            break;
        }
        }
        return;
    }
    struct qrec *r = take_any(rng);
    if (r == NULL) {
        return;
    }
    if (op < 22) {
        cq_async_f(r->q, task_new(r, a->index, 0, 0), task_fn);
    } else if (op < 29) {
        cq_barrier_async_f(r->q, task_new(r, a->index, F_BARRIER, 0), task_fn);
    } else if (op < 36) {
        do_sync(r, false, a->index, 0);
    } else if (op < 40) {
        do_sync(r, true, a->index, 0);
    } else if (op < 46) {
        cq_group_async_f(a->group->g, r->q, group_task(a, a->group, r, 0), task_fn);
    } else if (op < 50) { /* enter here, leave on a worker */
        cq_group_enter(a->group->g);
        struct task *t = group_task(a, a->group, r, F_LEAVE);
        t->aux = a->group->g;
        cq_async_f(r->q, t, task_fn);
    } else if (op < 54) { /* a shared group: tasks from every thread, then a notify */
        struct grec *g = shared_groups[below(rng, 2)];
        cq_group_async_f(g->g, r->q, group_task(a, g, r, 0), task_fn);
        group_notify(a, g, below(rng, 2) ? r : NULL);
    } else if (op < 57) {
        group_notify(a, a->group, below(rng, 2) ? r : NULL);
    } else if (op < 60) { /* handshake: the task signals, we wait */
        struct task *t = task_new(r, a->index, F_SIGNAL, 0);
        t->aux = a->sema->s;
        cq_retain(a->sema->s);
        cq_async_f(r->q, t, task_fn);
        WAIT_SEMA(a->sema->s);
        if (atomic_load(&t->ran) != 1) {
            violation(V_SEMAPHORE, "semaphore signalled before the task ran");
        }
    } else if (op < 62) { /* handshake: the task waits for our signal */
        struct task *t = task_new(r, a->index, F_WAIT, 0);
        t->aux = a->go->s;
        cq_retain(a->go->s);
        cq_async_f(r->q, t, task_fn);
        cq_semaphore_signal(a->go->s);
    } else if (op < 66) { /* suspended while we submit, resumed by us */
        cq_suspend(r->q);
        int n = 1 + (int)below(rng, 4);
        for (int i = 0; i < n; i++) {
            cq_async_f(r->q, task_new(r, a->index, 0, 0), task_fn);
        }
        cq_resume(r->q);
    } else if (op < 70) { /* suspended here, resumed by another thread or a timer */
        suspend_elsewhere(r, rng);
        cq_async_f(r->q, task_new(r, a->index, 0, 0), task_fn);
    } else if (op < 74) {
        do_apply(r, a->index, 0, rng);
    } else if (op < 79) {
        cq_after_f(cq_time(CQ_TIME_NOW, (int64_t)below(rng, 300000)), r->q,
                   task_new(r, NO_PRODUCER, 0, 0), task_fn);
    } else if (op < 85) {
        if (r->level > 0 || below(rng, 2) == 0) {
            retarget_randomly(r->q, r->family, r->level, rng);
            atomic_fetch_add(&retargets, 1);
        }
        cq_async_f(r->q, task_new(r, a->index, 0, 0), task_fn);
    } else if (op < 87) {
        int l = (int)below(rng, SLOT_LEVELS);
        slot_replace(r->family, l, (int)below(rng, (uint32_t)slots_per_level[l]), rng);
        atomic_fetch_add(&replacements, 1);
    } else if (op < 89) {
        set_scratch(r->q, rng);
    } else {
        cq_async_f(r->q, task_new(r, a->index, 0, 0), task_fn);
    }
    cq_release(r->q);
}

static void *actor_main(void *arg)
{
    struct actor *a = arg;
    a->group = group_new();
    a->sema = sema_new(0);
    a->go = sema_new(0);
    while (!atomic_load(&stopping) && cq_test_now_ns() < deadline_ns) {
        one_op(a);
        a->ops++;
    }
    own_group_wait(a);
    cq_release(a->group->g);
    cq_release(a->sema->s);
    cq_release(a->go->s);
    return NULL;
}

/* ---- main ------------------------------------------------------------------------------------ */

static void noop(void *ctx)
{
    (void)ctx;
}

int main(void)
{
    const char *env = getenv("CQ_STRESS_SEED");
    seed = env ? strtoull(env, NULL, 0) : (uint64_t)cq_test_now_ns() ^ (uint64_t)getpid();
    env = getenv("CQ_STRESS_SECONDS");
    double seconds = env ? strtod(env, NULL) : 3.0;
    fprintf(stderr, "test_stress_mix: seed %llu, %.1f s (CQ_STRESS_SEED=%llu to repeat the "
                    "program; thread interleavings still vary)\n",
            (unsigned long long)seed, seconds, (unsigned long long)seed);

    finalized_sem = cq_semaphore_create(0);
    destroyed_sem = cq_semaphore_create(0);
    global_group = cq_group_create();
    uint64_t rng = seed;
    lock_sema = sema_new(2);
    shared_groups[0] = group_new();
    shared_groups[1] = group_new();
    /* Lower levels first, so that every queue can target one below it from the start. */
    for (int f = 0; f < FAMILIES; f++) {
        for (int l = 0; l < SLOT_LEVELS; l++) {
            for (int i = 0; i < slots_per_level[l]; i++) {
                pthread_mutex_init(&slots[f][l][i].lock, NULL);
                slots[f][l][i].rec = queue_new(f, l, &rng);
            }
        }
    }

    uint64_t t0 = cq_test_now_ns();
    deadline_ns = t0 + (uint64_t)(seconds * 1e9);
    struct actor actors[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        actors[i] = (struct actor){.index = (uint8_t)i,
                                   .rng = seed + 1000003ull * (uint64_t)(i + 1)};
        REQUIRE(pthread_create(&th[i], NULL, actor_main, &actors[i]) == 0);
    }
    long ops = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        ops += actors[i].ops;
    }

    /* Wind down: resume what is still suspended, empty the slots, drop the shared objects. */
    for (;;) {
        pthread_mutex_lock(&tokens_lock);
        bool more = tokens != NULL;
        pthread_mutex_unlock(&tokens_lock);
        if (!more) {
            break;
        }
        token_pop_and_resume();
    }
    for (int f = 0; f < FAMILIES; f++) {
        for (int l = 0; l < SLOT_LEVELS; l++) {
            for (int i = 0; i < slots_per_level[l]; i++) {
                struct slot *s = &slots[f][l][i];
                pthread_mutex_lock(&s->lock);
                struct qrec *r = s->rec;
                s->rec = NULL;
                pthread_mutex_unlock(&s->lock);
                /* A last barrier first: exercises a barrier sync racing the final releases. */
                cq_barrier_sync_f(r->q, NULL, noop);
                cq_release(r->q);
            }
        }
    }
    cq_release(shared_groups[0]->g);
    cq_release(shared_groups[1]->g);
    /* Every object's finalizer runs once all its work has run (queues after their tasks,
     * timers and notifies; groups once left), so these waits cover all the work. */
    long created = atomic_load(&objects_created) - 1; /* the lock semaphore is still ours */
    for (long i = 0; i < created; i++) {
        WAIT_SEMA(finalized_sem);
    }
    /* Watchdogs and notifies on global queues. Every watchdog has run by now, and each claims
     * its suspension if nobody else did: every suspension has been resumed. */
    WAIT_GROUP(global_group);
    cq_release(lock_sema->s);
    WAIT_SEMA(finalized_sem);
    long due = atomic_load(&destructors_due);
    for (long i = 0; i < due; i++) {
        WAIT_SEMA(destroyed_sem);
    }
    double ms = (double)(cq_test_now_ns() - t0) / 1e6;

    /* Every task ran exactly once. */
    uint32_t ntasks = atomic_load(&next_task_id);
    long bad = 0;
    for (uint32_t id = 0; id < ntasks; id++) {
        struct task *chunk = atomic_load(&task_chunks[id >> CHUNK_BITS]);
        struct task *t = &chunk[id & ((1u << CHUNK_BITS) - 1)];
        if (atomic_load(&t->ran) != 1) {
            if (bad++ < 5) {
                fprintf(stderr, "task %u (queue %s, flags %#x) ran %u times\n", id,
                        t->rec ? t->rec->label : "global", t->flags, atomic_load(&t->ran));
            }
        }
    }
    CHECK_EQ(bad, 0);
    /* Every object finalized once, every queue-specific value destroyed once. */
    long queues = 0, fin_bad = 0;
    for (struct qrec *r = all_queues; r; r = r->all_next) {
        queues++;
        fin_bad += atomic_load(&r->finalized) != 1 || atomic_load(&r->key_destroyed) != 1 ||
                   atomic_load(&r->done) != atomic_load(&r->submitted);
    }
    for (struct grec *g = all_groups; g; g = g->all_next) {
        fin_bad += atomic_load(&g->finalized) != 1 ||
                   atomic_load(&g->done) != atomic_load(&g->submitted);
    }
    for (struct srec *s = all_semas; s; s = s->all_next) {
        fin_bad += atomic_load(&s->finalized) != 1;
    }
    CHECK_EQ(fin_bad, 0);
    CHECK_EQ(atomic_load(&live_objects), 0);
    CHECK_EQ(atomic_load(&destructors_run), due);
    for (int k = 0; k < V_KINDS; k++) {
        if (atomic_load(&violations[k]) != 0) {
            fprintf(stderr, "%ld violation(s): %s\n", atomic_load(&violations[k]),
                    violation_names[k]);
        }
        CHECK_EQ(atomic_load(&violations[k]), 0);
    }
    fprintf(stderr,
            "%ld operations, %u tasks, %ld syncs, %ld applies, %ld notifies, %ld suspensions, "
            "%ld retargets, %ld replaced and %ld short-lived of %ld queues, in %.0f ms\n",
            ops, ntasks, atomic_load(&syncs_done), atomic_load(&applies_done),
            atomic_load(&notifies_registered), atomic_load(&suspends), atomic_load(&retargets),
            atomic_load(&replacements), atomic_load(&temp_queues), queues, ms);
    if (test_failures) {
        fprintf(stderr, "seed was %llu\n", (unsigned long long)seed);
    }

    for (uint32_t c = 0; c < (MAX_TASKS >> CHUNK_BITS); c++) {
        free(atomic_load(&task_chunks[c]));
    }
    while (all_queues) {
        struct qrec *r = all_queues;
        all_queues = r->all_next;
        free(r);
    }
    while (all_groups) {
        struct grec *g = all_groups;
        all_groups = g->all_next;
        free(g);
    }
    while (all_semas) {
        struct srec *s = all_semas;
        all_semas = s->all_next;
        free(s);
    }
    cq_release(finalized_sem);
    cq_release(destroyed_sem);
    cq_release(global_group);
    TEST_MAIN_END();
}
