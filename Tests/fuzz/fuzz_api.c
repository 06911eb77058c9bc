/*
 * fuzz_api.c — a libFuzzer target that drives CQueueCore's public C API with byte-encoded
 * programs and checks the runtime's promises (docs/fuzzing.md describes the encoding and the
 * invariants).
 *
 * Each input is decoded into a program of at most MAX_OPS operations over a small pool of
 * objects (queues, groups, semaphores, sources) that the main thread runs. Tasks are "counting
 * tasks": each has a record that says where it was submitted and in which order, and the task
 * checks on entry and exit that the runtime ran it exactly once, in FIFO order on serial queues,
 * alone where it had to be alone. At the end of the input everything is resumed, waited for,
 * released and waited for again (finalizers), and every record is checked. A violated
 * invariant aborts with a message naming it.
 *
 * The decoder only produces valid programs: misuse aborts by design (over-release, over-resume,
 * a sync onto the current queue, a target cycle), and finding those aborts would say nothing
 * about the runtime. So it tracks what it needs to stay valid: reference counts, suspend
 * counts, outstanding group enters, semaphore counts, and a rank per queue slot (a queue may
 * only target a queue in a lower slot, which keeps the graph acyclic whatever the runtime has
 * applied yet).
 *
 * Build modes:
 *   default              LLVMFuzzerTestOneInput only (link with -fsanitize=fuzzer)
 *   -DCQ_FUZZ_STANDALONE adds a main() that replays files / directories and pseudo-random
 *                        inputs from a fixed seed (the ctest of label "fuzz"), and can write the
 *                        seed corpus (-write-seeds DIR).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cqueuecore.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ------------------------------------------------------------------------------------------ */
/* Limits: small enough that one input runs in milliseconds                                   */

enum {
    MAX_OPS = 96,        /* operations decoded per input */
    NQ = 6,              /* queue slots (a slot's index is its rank for targets) */
    NG = 3,              /* group slots */
    NS = 3,              /* semaphore slots */
    NSRC = 4,            /* source slots */
    MAX_QRECS = 24,      /* queues per input (slots are reused), the two inner queues included */
    MAX_TASKS = 1024,    /* task records per input, tasks' own children included */
    MAX_GRECS = 12,      /* groups created by the program */
    MAX_FJ = 64,         /* fork-join groups created by tasks */
    MAX_SRECS = 12,      /* semaphores */
    MAX_SRCRECS = 12,    /* sources */
    MAX_VALUES = 32,     /* queue-specific values */
    MAX_HRECS = 48,      /* source handler records with their own context */
    MAX_MEMBERS = 48,    /* group members remembered per group */
    MAX_EXTRA = 16,      /* extra references held by the program */
    MAX_APPLY = 48,      /* iterations of an apply */
    NKEYS = 3,           /* queue-specific keys */
    NONCE = 2,           /* once predicates */
    LABEL_MAX = 24,
};

#define NSEC_PER_USEC 1000ll
#define PATIENCE_NS (20ll * 1000000000ll) /* only a lost task or wake-up waits this long */
#define EXCL_UNIT (1 << 20)               /* occupancy of an exclusive holder */

/* ------------------------------------------------------------------------------------------ */
/* Failure reporting                                                                          */

static const char *volatile g_op_name = "setup"; /* the operation the main thread is running */
static volatile int g_op_index = -1;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void fail(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "cq-fuzz: INVARIANT VIOLATED: %s (main thread at op %d, %s)\n", msg,
            g_op_index, g_op_name);
    fflush(stderr);
    abort();
}

/* A harness bookkeeping error: the decoder produced something it should not have. */
#define HARNESS_ASSERT(cond)                                                                    \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fail("harness bug: %s (%s:%d)", #cond, __FILE__, __LINE__);                        \
        }                                                                                       \
    } while (0)

static bool g_trace; /* CQ_FUZZ_TRACE=1: print each decoded operation */


static void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void trace(const char *fmt, ...)
{
    if (!g_trace) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "  [%d] ", g_op_index);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static int64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void sleep_ns(int64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ll), (long)(ns % 1000000000ll)};
    nanosleep(&ts, NULL);
}

static void spin_ns(int64_t ns)
{
    int64_t end = clock_ns(CLOCK_MONOTONIC) + ns;
    while (clock_ns(CLOCK_MONOTONIC) < end) {
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Records                                                                                    */

enum rec_kind { R_QUEUE, R_GROUP, R_SEMA, R_SOURCE };
static const char *const rec_kind_names[] = {"queue", "group", "semaphore", "source"};

/* Common to every runtime object the program creates: the references the harness holds (the
 * program's, its tasks', the keep-alive one) and how often the finalizer ran. */
struct obj_rec {
    enum rec_kind kind;
    int id;
    atomic_int refs;
    atomic_int finalized;
};

struct input;

struct qrec {
    struct obj_rec o;
    struct input *in;
    cq_queue_t q;
    bool serial;
    bool inner;                /* one of the two helper queues nested syncs go to */
    int rank;                  /* slot index: targets only go to lower ranks */
    char label[LABEL_MAX + 1]; /* what cq_queue_get_label must return */
    /* main thread only */
    int suspend;               /* suspends not yet resumed */
    struct vrec *spec[NKEYS];  /* current queue-specific values */
    uint32_t next_seq;         /* sequence numbers handed to the main thread's submissions */
    uint32_t last_barrier;     /* sequence number of the last barrier submitted */
    /* shared with tasks */
    atomic_uint last_started;  /* serial: sequence number of the last one started */
    atomic_uint completed;     /* sequenced submissions completed */
    atomic_uint barrier_done;  /* sequence number of the last barrier completed */
    atomic_int occupancy;      /* EXCL_UNIT per exclusive holder, 1 per shared holder */
};

enum behavior {
    B_PLAIN,
    B_SPIN,        /* busy for a few microseconds: widens the windows others race in */
    B_SLEEP,       /* blocks outside the runtime (the monitor's business) */
    B_CHILD,       /* submits one more task (maybe a barrier) somewhere */
    B_FORKJOIN,    /* a private group of children on a global queue, waited for */
    B_MERGE,       /* merges into a data source */
    B_SIGNAL,      /* signals a semaphore */
    B_SEMWAIT,     /* waits on a semaphore with a short timeout, gives back what it took */
    B_NESTED_SYNC, /* (barrier) sync onto one of the inner queues */
    B_APPLY,       /* apply on a global queue */
    B_ONCE,        /* cq_once_f */
    B_SPECIFIC,    /* cq_get_specific */
    B_AFTER,       /* cq_after_f from a task */
    B_COUNT
};
static const char *const behavior_names[] = {"plain", "spin",  "sleep",   "child",
                                             "forkjoin", "merge", "signal", "semwait",
                                             "nested-sync", "apply", "once", "specific",
                                             "after"};

struct grec;
struct srec;
struct src_rec;

struct task_rec {
    struct input *in;
    int id;
    struct qrec *q;          /* the queue it was submitted to; NULL for a global queue */
    uint8_t behavior, arg, arg2, depth;
    bool barrier;
    uint32_t seq;            /* 0: not a sequenced submission of the main thread */
    uint32_t prev_barrier;   /* sequence number of the last barrier submitted before it */
    int64_t not_before;      /* after_f: earliest start (ns on not_before_clock), or 0 */
    clockid_t not_before_clock;
    /* what the behavior works on (a reference the task owns and drops when done) */
    struct obj_rec *ref_rec;
    void *ref_obj;
    struct qrec *child_q;    /* B_CHILD: the queue, if a program queue */
    cq_queue_t child_queue;
    /* a group the task leaves when done (the main thread entered it for the task) */
    struct grec *leave;
    /* a task of the same producer, submitted earlier to the same queue, that must have
     * finished when this one starts (FIFO per submitter, barriers) */
    struct task_rec *must_follow;
    /* a notify: the group and how many of its members came before the registration */
    struct grec *notify_of;
    int notify_members;
    atomic_int runs;
    atomic_int done;
};

struct grec {
    struct obj_rec o;
    cq_group_t g;
    atomic_int *members[MAX_MEMBERS]; /* the done flags of work registered with the group */
    int nmembers;
    atomic_int manual[MAX_MEMBERS];   /* done flags of the main thread's own enters */
    int nmanual;
    int open_enters[MAX_MEMBERS];     /* indexes into manual[] not left yet */
    int nopen;
};

struct srec {
    struct obj_rec o;
    cq_semaphore_t s;
    long initial;
    atomic_long value;   /* what the count must be once nobody is inside a wait or signal */
    bool shared;         /* tasks may signal or wait: no exact check at each main-thread wait */
};

struct src_rec {
    struct obj_rec o;
    struct input *in;
    cq_source_t s;
    int type;                   /* SRC_TIMER, SRC_ADD, SRC_OR, SRC_REPLACE */
    bool has_cancel, has_registration;
    /* main thread only */
    int susp;                   /* suspend count: 1 at creation */
    bool activated;             /* resumed at least once (then it must end unsuspended) */
    bool canceled, early_cancel;
    /* shared */
    atomic_int in_handler;      /* 1 event handler running, 2 cancel handler running */
    atomic_int event_runs, cancel_runs, reg_runs;
    atomic_int expected_cancel;
    atomic_ulong merged_sum, merged_or, merged_set; /* replace: bit v for each value merged */
    atomic_ulong delivered_sum, delivered_or;
    atomic_llong min_start;     /* timer: earliest start of any schedule (monotonic ns) */
    atomic_bool wall_start;     /* a wall-clock schedule was set: no early-fire check */
    atomic_int rearm;           /* timer: re-arm from the handler this many times */
};


enum { SRC_TIMER, SRC_ADD, SRC_OR, SRC_REPLACE, SRC_TYPES };
static const char *const src_type_names[] = {"timer", "data-add", "data-or", "data-replace"};


struct vrec { /* a queue-specific value */
    int id, key;
    bool has_destructor;
    atomic_int destroyed;
};

enum { H_EVENT, H_CANCEL, H_REG };
struct hrec { /* a handler with its own context */
    struct src_rec *sr;
    int which;
    bool has_destructor;
    atomic_int destroyed;
};

struct once_rec {
    cq_once_t pred;
    bool called;
    atomic_int runs;
    atomic_int done;
};

struct apply_rec {
    struct input *in;
    struct qrec *q;
    size_t n;
    bool ordered;
    uint32_t seq, prev_barrier;
    atomic_int runs[MAX_APPLY];
    atomic_long last;
};

struct input {
    bool keepalive;      /* the harness keeps every queue alive: hierarchy checks are safe */
    /* The keep-alive references go at the end, while source handlers may still run (an event
     * already queued when its source was canceled): they scan the queues only while `scan_open`
     * is set, counted in `scanners`, and the end closes the scan and waits for them first. */
    atomic_bool scan_open;
    atomic_int scanners;
    bool activate_all;   /* at the end, also start sources the program never resumed */

    struct qrec qrecs[MAX_QRECS];
    atomic_int nqrecs;   /* release-published: tasks scan the records below it */
    struct qrec *qslot[NQ];
    struct qrec *inner_serial, *inner_concurrent;
    int suspended_queues; /* slots with a suspend count: no sync from the main thread then */

    struct task_rec tasks[MAX_TASKS];
    atomic_int ntasks;

    struct grec grecs[MAX_GRECS];
    int ngrecs;
    struct grec *gslot[NG];

    struct obj_rec fj[MAX_FJ];
    atomic_int nfj;

    struct srec srecs[MAX_SRECS];
    int nsrecs;
    struct srec *sslot[NS];

    struct src_rec srcrecs[MAX_SRCRECS];
    int nsrcrecs;
    struct src_rec *srcslot[NSRC];

    struct vrec values[MAX_VALUES];
    int nvalues;

    struct hrec hrecs[MAX_HRECS];
    int nhrecs;

    struct once_rec once[NONCE];

    struct {
        struct obj_rec *rec;
        void *obj;
    } extra[MAX_EXTRA];
    int nextra;

    /* completions: tasks signal work_sem, finalizers/destructors/cancel handlers teardown_sem */
    atomic_long expected_work, expected_teardown;
    long received_work, received_teardown;
};

/* Process-wide: outlive every input, so a late signal never touches freed memory. */
static cq_semaphore_t work_sem, teardown_sem;
static char spec_keys[NKEYS];

static void work_done(void)
{
    cq_semaphore_signal(work_sem);
}

static void teardown_done(void)
{
    cq_semaphore_signal(teardown_sem);
}

/* ------------------------------------------------------------------------------------------ */
/* References and finalizers                                                                  */

static void on_finalize(void *ctx)
{
    struct obj_rec *r = ctx;
    int refs = atomic_load(&r->refs);
    if (refs != 0) {
        fail("%s %d finalized while %d references to it were still held",
             rec_kind_names[r->kind], r->id, refs);
    }
    if (atomic_fetch_add(&r->finalized, 1) != 0) {
        fail("%s %d finalized twice", rec_kind_names[r->kind], r->id);
    }
    teardown_done();
}

static void obj_init(struct input *in, struct obj_rec *r, enum rec_kind kind, int id, void *obj)
{
    r->kind = kind;
    r->id = id;
    atomic_init(&r->refs, 1);
    atomic_init(&r->finalized, 0);
    atomic_fetch_add(&in->expected_teardown, 1); /* its finalizer */
    cq_set_context(obj, r);
    cq_set_finalizer_f(obj, on_finalize);
}

static void obj_retain(struct obj_rec *r, void *obj)
{
    int old = atomic_fetch_add(&r->refs, 1);
    HARNESS_ASSERT(old > 0);
    cq_retain(obj);
}

/* The harness's count drops first: the finalizer may run as soon as cq_release returns. */
static void obj_release(struct obj_rec *r, void *obj)
{
    int old = atomic_fetch_sub(&r->refs, 1);
    HARNESS_ASSERT(old > 0);
    cq_release(obj);
}

/* ------------------------------------------------------------------------------------------ */
/* Exclusivity: which queues the calling thread runs on, and who else does                    */

/* Queues this thread has already entered (nested syncs, helped tasks, apply on the caller). */
static _Thread_local struct qrec *tls_held[4 * MAX_QRECS];
static _Thread_local int tls_nheld;

static bool held_here(struct qrec *x)
{
    for (int i = 0; i < tls_nheld; i++) {
        if (tls_held[i] == x) {
            return true;
        }
    }
    return false;
}

static void enter_one(struct qrec *x, bool exclusive, const char *what)
{
    if (exclusive) {
        int old = atomic_fetch_add(&x->occupancy, EXCL_UNIT);
        if (old != 0) {
            fail("%s on %s queue %d \"%s\" ran alongside %d other task(s) of it (exclusive)",
                 what, x->serial ? "serial" : "concurrent", x->o.id, x->label,
                 old >= EXCL_UNIT ? old / EXCL_UNIT : old);
        }
    } else {
        int old = atomic_fetch_add(&x->occupancy, 1);
        if (old >= EXCL_UNIT) {
            fail("%s on queue %d \"%s\" ran while an exclusive task (serial task or barrier) "
                 "of it was running",
                 what, x->o.id, x->label);
        }
    }
    HARNESS_ASSERT(tls_nheld < (int)(sizeof tls_held / sizeof tls_held[0]));
    tls_held[tls_nheld++] = x;
}

/*
 * Enters every queue the caller runs on. `own` is the queue the work was submitted to (NULL:
 * a global queue, or unknown); `own_exclusive` says it must run alone there (a barrier). With
 * keep-alive, every queue of the input is alive, so cq_queue_is_current can be asked about
 * each of them: the work also occupies the queues its own queue targets (a task of a queue
 * that targets a serial queue is exclusive there). Returns how many were entered.
 */
static int enter_queues(struct input *in, struct qrec *own, bool own_exclusive, const char *what)
{
    int entered = 0;
    if (own && !held_here(own)) {
        enter_one(own, own->serial || own_exclusive, what);
        entered++;
    }
    if (!in->keepalive) {
        return entered;
    }
    /* seq_cst, both: a Dekker pair with the end's store to scan_open and load of scanners */
    atomic_fetch_add(&in->scanners, 1);
    if (atomic_load(&in->scan_open)) {
        int n = atomic_load_explicit(&in->nqrecs, memory_order_acquire);
        for (int i = 0; i < n; i++) {
            struct qrec *x = &in->qrecs[i];
            if (x == own || held_here(x)) {
                continue;
            }
            if (cq_queue_is_current(x->q)) {
                enter_one(x, x->serial, what);
                entered++;
            }
        }
    }
    atomic_fetch_sub(&in->scanners, 1);
    return entered;
}

static void leave_queues(int entered)
{
    while (entered-- > 0) {
        struct qrec *x = tls_held[--tls_nheld];
        int v = atomic_load(&x->occupancy);
        atomic_fetch_sub(&x->occupancy, v >= EXCL_UNIT ? EXCL_UNIT : 1);
    }
}

/* Checks that the runtime says the caller runs on `q` (innermost), with its label. */
static void check_current(struct qrec *q, const char *what, int id)
{
    if (!cq_queue_is_current(q->q)) {
        fail("%s %d runs on queue %d \"%s\" but cq_queue_is_current says no", what, id, q->o.id,
             q->label);
    }
    cq_queue_t cur = cq_get_current_queue();
    if (cur != q->q) {
        fail("%s %d submitted to queue %d \"%s\": cq_get_current_queue returned %p, not %p", what,
             id, q->o.id, q->label, (void *)cur, (void *)q->q);
    }
    const char *label = cq_queue_get_label(NULL);
    if (label == NULL || strcmp(label, q->label) != 0) {
        fail("%s %d on queue %d: cq_queue_get_label(NULL) is \"%s\", expected \"%s\"", what, id,
             q->o.id, label ? label : "(null)", q->label);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Counting tasks                                                                             */

static struct task_rec *task_new(struct input *in, struct qrec *q, uint8_t behavior, int depth)
{
    int idx = atomic_fetch_add(&in->ntasks, 1);
    if (idx >= MAX_TASKS) {
        atomic_fetch_sub(&in->ntasks, 1);
        return NULL;
    }
    struct task_rec *t = &in->tasks[idx];
    memset(t, 0, sizeof *t);
    t->in = in;
    t->id = idx;
    t->q = q;
    t->behavior = behavior;
    t->depth = (uint8_t)depth;
    atomic_init(&t->runs, 0);
    atomic_init(&t->done, 0);
    return t;
}

static void run_task(void *ctx);

static const intptr_t global_prios[4] = {CQ_QUEUE_PRIORITY_HIGH, CQ_QUEUE_PRIORITY_DEFAULT,
                                         CQ_QUEUE_PRIORITY_LOW, CQ_QUEUE_PRIORITY_BACKGROUND};

static cq_queue_t global_queue(unsigned i)
{
    return cq_get_global_queue(global_prios[i % 4], 0);
}

/* The order checks of a sequenced submission (the main thread's own, FIFO per submitter). */
static void check_order_start(struct qrec *q, uint32_t seq, uint32_t prev_barrier, bool barrier,
                              const char *what, int id)
{
    if (q->serial) {
        unsigned old = atomic_exchange(&q->last_started, seq);
        if (old != seq - 1) {
            fail("serial queue %d \"%s\": %s %d (submission #%u) started after #%u: not FIFO",
                 q->o.id, q->label, what, id, seq, old);
        }
    }
    unsigned bdone = atomic_load(&q->barrier_done);
    if (bdone < prev_barrier) {
        fail("queue %d \"%s\": %s %d (#%u) started before the barrier #%u submitted before it "
             "completed (last completed barrier #%u)",
             q->o.id, q->label, what, id, seq, prev_barrier, bdone);
    }
    if (barrier) {
        unsigned completed = atomic_load(&q->completed);
        if (completed != seq - 1) {
            fail("queue %d \"%s\": barrier %d (#%u) started with %u of the %u submissions before "
                 "it completed",
                 q->o.id, q->label, id, seq, completed, seq - 1);
        }
    }
}

static void check_order_end(struct qrec *q, uint32_t seq, bool barrier)
{
    if (barrier) {
        atomic_store(&q->barrier_done, seq);
    }
    atomic_fetch_add(&q->completed, 1);
}

/* ---- behaviors ---- */

static void behave_forkjoin(struct task_rec *t)
{
    struct input *in = t->in;
    int idx = atomic_fetch_add(&in->nfj, 1);
    if (idx >= MAX_FJ) {
        atomic_fetch_sub(&in->nfj, 1);
        return;
    }
    int k = 1 + t->arg % 4;
    struct task_rec *kids[4];
    int nkids = 0;
    cq_group_t g = cq_group_create();
    HARNESS_ASSERT(g != NULL);
    obj_init(in, &in->fj[idx], R_GROUP, 1000 + idx, g);
    for (int i = 0; i < k; i++) {
        struct task_rec *c = task_new(in, NULL, B_PLAIN, t->depth + 1);
        if (c == NULL) {
            break;
        }
        atomic_fetch_add(&in->expected_work, 1);
        kids[nkids++] = c;
        cq_group_async_f(g, global_queue((unsigned)(t->arg >> 2) + (unsigned)i), c, run_task);
    }
    if (cq_group_wait(g, cq_time(CQ_TIME_NOW, PATIENCE_NS)) != 0) {
        fail("task %d: fork-join group of %d children on global queues never emptied", t->id,
             nkids);
    }
    for (int i = 0; i < nkids; i++) {
        if (!atomic_load(&kids[i]->done)) {
            fail("task %d: cq_group_wait returned 0 before child task %d finished", t->id,
                 kids[i]->id);
        }
    }
    obj_release(&in->fj[idx], g);
}

static void once_fn(void *ctx)
{
    struct once_rec *o = ctx;
    if (atomic_fetch_add(&o->runs, 1) != 0) {
        fail("cq_once_f ran its function twice");
    }
    spin_ns(2 * NSEC_PER_USEC); /* let other callers arrive and wait */
    atomic_store(&o->done, 1);
}

static void call_once(struct input *in, unsigned which)
{
    struct once_rec *o = &in->once[which % NONCE];
    cq_once_f(&o->pred, o, once_fn);
    if (!atomic_load(&o->done)) {
        fail("cq_once_f returned before the function completed");
    }
}

static void apply_iter(void *ctx, size_t i);

static void run_apply(struct apply_rec *a, cq_queue_t queue)
{
    for (size_t i = 0; i < a->n; i++) {
        atomic_init(&a->runs[i], 0);
    }
    atomic_init(&a->last, -1);
    cq_apply_f(a->n, queue, a, apply_iter);
    for (size_t i = 0; i < a->n; i++) {
        int r = atomic_load(&a->runs[i]);
        if (r != 1) {
            fail("cq_apply_f returned with iteration %zu of %zu run %d times", i, a->n, r);
        }
    }
}

static void merge(struct src_rec *sr, uintptr_t value);

static void behave(struct task_rec *t)
{
    struct input *in = t->in;
    switch (t->behavior) {
    case B_PLAIN:
        break;
    case B_SPIN:
        spin_ns((1 + t->arg % 16) * NSEC_PER_USEC);
        break;
    case B_SLEEP:
        sleep_ns((10 + (t->arg % 8) * 25) * NSEC_PER_USEC);
        break;
    case B_CHILD: {
        struct task_rec *c = task_new(in, t->child_q, t->arg2 % B_COUNT, t->depth + 1);
        if (c == NULL) {
            break;
        }
        c->barrier = t->arg & 0x80;
        c->arg = t->arg;
        atomic_fetch_add(&in->expected_work, 1);
        (c->barrier ? cq_barrier_async_f : cq_async_f)(t->child_queue, c, run_task);
        break;
    }
    case B_FORKJOIN:
        behave_forkjoin(t);
        break;
    case B_MERGE:
        merge((struct src_rec *)t->ref_rec, t->arg2 % 16);
        break;
    case B_SIGNAL: {
        struct srec *s = (struct srec *)t->ref_rec;
        atomic_fetch_add(&s->value, 1);
        cq_semaphore_signal(s->s);
        break;
    }
    case B_SEMWAIT: {
        struct srec *s = (struct srec *)t->ref_rec;
        if (cq_semaphore_wait(s->s, cq_time(CQ_TIME_NOW, (t->arg % 4) * 100 * NSEC_PER_USEC)) ==
            0) {
            atomic_fetch_sub(&s->value, 1);
            spin_ns(NSEC_PER_USEC);
            atomic_fetch_add(&s->value, 1); /* give it back: the count returns to where it was */
            cq_semaphore_signal(s->s);
        }
        break;
    }
    case B_NESTED_SYNC: {
        /* Rounds of "async, then sync" by this task onto one inner queue. Many tasks do this at
         * once, so each round checks FIFO per submitter with several producers: the sync must
         * not overtake this task's own earlier async, wherever other producers' pushes are. */
        struct qrec *iq = (t->arg & 1) ? in->inner_concurrent : in->inner_serial;
        int rounds = 1 + ((t->arg >> 4) & 3);
        for (int r = 0; r < rounds; r++) {
            struct task_rec *pre = NULL;
            if (t->arg & 4) {
                pre = task_new(in, iq, B_PLAIN, t->depth + 1);
                if (pre == NULL) {
                    break;
                }
                pre->barrier = t->arg & 8;
                atomic_fetch_add(&in->expected_work, 1);
                (pre->barrier ? cq_barrier_async_f : cq_async_f)(iq->q, pre, run_task);
            }
            struct task_rec *c = task_new(in, iq, B_PLAIN, t->depth + 1);
            if (c == NULL) {
                break;
            }
            c->barrier = t->arg & 2;
            if (pre && (iq->serial || pre->barrier || c->barrier)) {
                c->must_follow = pre;
            }
            atomic_fetch_add(&in->expected_work, 1);
            (c->barrier ? cq_barrier_sync_f : cq_sync_f)(iq->q, c, run_task);
            if (!atomic_load(&c->done)) {
                fail("task %d: nested cq_sync_f returned before its function %d completed",
                     t->id, c->id);
            }
        }
        break;
    }
    case B_APPLY: {
        struct apply_rec a;
        memset(&a, 0, sizeof a);
        a.in = in;
        a.n = 1 + t->arg % 16;
        run_apply(&a, global_queue(t->arg >> 4));
        break;
    }
    case B_ONCE:
        call_once(in, t->arg);
        break;
    case B_SPECIFIC: {
        void *v = cq_get_specific(&spec_keys[t->arg % NKEYS]);
        if (v != NULL) {
            struct vrec *vr = v;
            if (vr < in->values || vr >= in->values + MAX_VALUES || vr->key != t->arg % NKEYS) {
                fail("task %d: cq_get_specific(key %d) returned %p, which is not a value set for "
                     "that key",
                     t->id, t->arg % NKEYS, v);
            }
        }
        break;
    }
    case B_AFTER: {
        struct task_rec *c = task_new(in, NULL, B_PLAIN, t->depth + 1);
        if (c == NULL) {
            break;
        }
        int64_t delay = (t->arg % 8) * 100 * NSEC_PER_USEC;
        cq_time_t when = cq_time(CQ_TIME_NOW, delay);
        c->not_before = delay ? (int64_t)when : 0;
        c->not_before_clock = CLOCK_MONOTONIC;
        atomic_fetch_add(&in->expected_work, 1);
        cq_after_f(delay ? when : CQ_TIME_NOW, global_queue(t->arg >> 3), c, run_task);
        break;
    }
    default:
        HARNESS_ASSERT(0);
    }
}

static void run_task(void *ctx)
{
    struct task_rec *t = ctx;
    struct input *in = t->in;
    if (atomic_fetch_add(&t->runs, 1) != 0) {
        fail("task %d (%s) ran twice", t->id, behavior_names[t->behavior]);
    }
    if (t->not_before) {
        int64_t now = clock_ns(t->not_before_clock);
        if (now < t->not_before) {
            fail("cq_after_f task %d ran %lld ns before its time", t->id,
                 (long long)(t->not_before - now));
        }
    }
    struct qrec *q = t->q;
    if (q) {
        check_current(q, "task", t->id);
        if (q->serial || t->barrier) {
            cq_assert_queue_barrier(q->q);
        }
        if (t->seq) {
            check_order_start(q, t->seq, t->prev_barrier, t->barrier, "task", t->id);
        }
    }
    if (t->must_follow && !atomic_load(&t->must_follow->done)) {
        fail("%s task %d on queue %d \"%s\" started before task %d, which the same thread "
             "submitted to it earlier%s (FIFO per submitter)",
             t->barrier ? "barrier" : "sync", t->id, q ? q->o.id : -1, q ? q->label : "",
             t->must_follow->id, t->must_follow->barrier ? " as a barrier" : "");
    }
    if (t->notify_of) {
        for (int i = 0; i < t->notify_members; i++) {
            if (!atomic_load(t->notify_of->members[i])) {
                fail("group %d: notify %d ran before member %d of the %d registered before it "
                     "finished",
                     t->notify_of->o.id, t->id, i, t->notify_members);
            }
        }
    }
    int entered = enter_queues(in, q, t->barrier, "task");
    behave(t);
    leave_queues(entered);
    if (q && t->seq) {
        check_order_end(q, t->seq, t->barrier);
    }
    atomic_store(&t->done, 1);
    if (t->leave) {
        cq_group_leave(t->leave->g);
        obj_release(&t->leave->o, t->leave->g);
    }
    if (t->ref_rec) {
        obj_release(t->ref_rec, t->ref_obj);
    }
    work_done();
}

static void apply_iter(void *ctx, size_t i)
{
    struct apply_rec *a = ctx;
    if (i >= a->n) {
        fail("cq_apply_f called iteration %zu of %zu", i, a->n);
    }
    if (atomic_fetch_add(&a->runs[i], 1) != 0) {
        fail("cq_apply_f ran iteration %zu twice", i);
    }
    struct qrec *q = a->q;
    if (a->ordered) {
        long prev = atomic_exchange(&a->last, (long)i);
        if (prev != (long)i - 1) {
            fail("cq_apply_f on serial queue %d: iteration %zu ran after %ld (not in order)",
                 q ? q->o.id : -1, i, prev);
        }
    }
    if (q) {
        if (i == 0 && a->seq && q->serial) {
            check_order_start(q, a->seq, a->prev_barrier, false, "apply", 0);
        } else if (a->seq) {
            unsigned bdone = atomic_load(&q->barrier_done);
            if (bdone < a->prev_barrier) {
                fail("queue %d: apply iteration %zu ran before barrier #%u completed", q->o.id, i,
                     a->prev_barrier);
            }
        }
        if (!cq_queue_is_current(q->q)) {
            fail("apply iteration %zu on queue %d: cq_queue_is_current says no", i, q->o.id);
        }
    }
    int entered = enter_queues(a->in, q, false, "apply iteration");
    spin_ns(NSEC_PER_USEC / 2);
    leave_queues(entered);
}

/* ------------------------------------------------------------------------------------------ */
/* Sources                                                                                    */

/* The harness's account of a merge comes first: a handler may run before merge returns. */
static void merge(struct src_rec *sr, uintptr_t value)
{
    switch (sr->type) {
    case SRC_ADD:
        atomic_fetch_add(&sr->merged_sum, value);
        break;
    case SRC_OR:
        atomic_fetch_or(&sr->merged_or, value);
        break;
    case SRC_REPLACE:
        atomic_fetch_or(&sr->merged_set, 1ul << value);
        break;
    default:
        HARNESS_ASSERT(0);
    }
    cq_source_merge_data(sr->s, value);
}

static void handler_start(struct src_rec *sr, int kind, struct hrec *h)
{
    if (h && atomic_load(&h->destroyed)) {
        fail("source %d: a handler ran after its context's destructor", sr->o.id);
    }
    int expected = 0;
    if (!atomic_compare_exchange_strong(&sr->in_handler, &expected, kind)) {
        fail("source %d (%s): %s handler started while its %s handler was running", sr->o.id,
             src_type_names[sr->type], kind == 1 ? "event" : kind == 2 ? "cancel" : "registration",
             expected == 1 ? "event" : expected == 2 ? "cancel" : "registration");
    }
}

static void handler_end(struct src_rec *sr)
{
    atomic_store(&sr->in_handler, 0);
}

static void source_event(struct src_rec *sr, struct hrec *h)
{
    handler_start(sr, 1, h);
    if (atomic_load(&sr->cancel_runs)) {
        fail("source %d: event handler ran after the cancel handler", sr->o.id);
    }
    if (sr->has_registration && atomic_load(&sr->reg_runs) == 0) {
        fail("source %d: event handler ran before the registration handler", sr->o.id);
    }
    atomic_fetch_add(&sr->event_runs, 1);
    uintptr_t data = cq_source_get_data(sr->s);
    switch (sr->type) {
    case SRC_TIMER: {
        if (data == 0) {
            fail("timer source %d: event handler called with data 0", sr->o.id);
        }
        int64_t now = clock_ns(CLOCK_MONOTONIC);
        long long min_start = atomic_load(&sr->min_start);
        if (!atomic_load(&sr->wall_start) && now < min_start) {
            fail("timer source %d fired %lld ns before the earliest start it was given", sr->o.id,
                 (long long)(min_start - now));
        }
        if (atomic_load(&sr->rearm) > 0 && atomic_fetch_sub(&sr->rearm, 1) > 0) {
            /* Re-arming from the handler is allowed; the new start counts for the check. */
            int64_t start = clock_ns(CLOCK_MONOTONIC) + 200 * NSEC_PER_USEC;
            long long cur = atomic_load(&sr->min_start);
            while (start < cur && !atomic_compare_exchange_weak(&sr->min_start, &cur, start)) {
            }
            cq_source_set_timer(sr->s, (cq_time_t)start, CQ_TIME_FOREVER, 0);
        }
        break;
    }
    case SRC_ADD: {
        if (data == 0) {
            fail("DATA_ADD source %d: event handler called with data 0", sr->o.id);
        }
        unsigned long total = atomic_fetch_add(&sr->delivered_sum, data) + data;
        unsigned long merged = atomic_load(&sr->merged_sum);
        if (total > merged) {
            fail("DATA_ADD source %d delivered %lu in total, more than the %lu merged", sr->o.id,
                 total, merged);
        }
        break;
    }
    case SRC_OR: {
        unsigned long merged = atomic_load(&sr->merged_or);
        if (data == 0 || (data & ~merged)) {
            fail("DATA_OR source %d delivered %#lx; only %#lx was ever merged", sr->o.id,
                 (unsigned long)data, merged);
        }
        atomic_fetch_or(&sr->delivered_or, data);
        break;
    }
    case SRC_REPLACE: {
        unsigned long set = atomic_load(&sr->merged_set);
        if (data == 0 || data >= 64 || !((set >> data) & 1)) {
            fail("DATA_REPLACE source %d delivered %lu, a value never merged (merged set %#lx)",
                 sr->o.id, (unsigned long)data, set);
        }
        break;
    }
    default:
        HARNESS_ASSERT(0);
    }
    int entered = enter_queues(sr->in, NULL, false, "source handler");
    leave_queues(entered);
    handler_end(sr);
}

static void ev_plain(void *ctx)
{
    source_event(ctx, NULL);
}

static void ev_ctx(void *ctx)
{
    struct hrec *h = ctx;
    source_event(h->sr, h);
}

static void source_cancel_handler(struct src_rec *sr, struct hrec *h)
{
    handler_start(sr, 2, h);
    if (atomic_fetch_add(&sr->cancel_runs, 1) != 0) {
        fail("source %d: cancel handler ran twice", sr->o.id);
    }
    handler_end(sr);
    teardown_done();
}

static void cancel_plain(void *ctx)
{
    source_cancel_handler(ctx, NULL);
}

static void cancel_ctx(void *ctx)
{
    struct hrec *h = ctx;
    source_cancel_handler(h->sr, h);
}

static void source_reg_handler(struct src_rec *sr, struct hrec *h)
{
    handler_start(sr, 3, h);
    if (atomic_fetch_add(&sr->reg_runs, 1) != 0) {
        fail("source %d: registration handler ran twice", sr->o.id);
    }
    if (atomic_load(&sr->event_runs) || atomic_load(&sr->cancel_runs)) {
        fail("source %d: registration handler ran after another handler", sr->o.id);
    }
    handler_end(sr);
}

static void reg_plain(void *ctx)
{
    source_reg_handler(ctx, NULL);
}

static void reg_ctx(void *ctx)
{
    struct hrec *h = ctx;
    source_reg_handler(h->sr, h);
}

static void hrec_destroy(void *ctx)
{
    struct hrec *h = ctx;
    /* The handler itself checks `destroyed` on entry: a call after this point is caught. */
    if (atomic_fetch_add(&h->destroyed, 1) != 0) {
        fail("source %d: a handler context's destructor ran twice", h->sr->o.id);
    }
    teardown_done();
}

/* A handler record with its own context, or NULL when the records are used up. */
static struct hrec *hrec_new(struct input *in, struct src_rec *sr, int which, bool destructor)
{
    if (in->nhrecs >= MAX_HRECS) {
        return NULL;
    }
    struct hrec *h = &in->hrecs[in->nhrecs++];
    h->sr = sr;
    h->which = which;
    h->has_destructor = destructor;
    atomic_init(&h->destroyed, 0);
    if (destructor) {
        atomic_fetch_add(&in->expected_teardown, 1);
    }
    return h;
}

/* Sets a handler: mode 0 none, 1 plain (source context), 2 own context, 3 own context with a
 * destructor. */
static void set_handler(struct input *in, struct src_rec *sr, int which, int mode)
{
    static const cq_function_t plain[] = {ev_plain, cancel_plain, reg_plain};
    static const cq_function_t own[] = {ev_ctx, cancel_ctx, reg_ctx};
    static void (*const set_plain[])(cq_source_t, cq_function_t) = {
        cq_source_set_event_handler_f, cq_source_set_cancel_handler_f,
        cq_source_set_registration_handler_f};
    static void (*const set_own[])(cq_source_t, void *, cq_function_t, cq_function_t) = {
        cq_source_set_event_handler_ctx_f, cq_source_set_cancel_handler_ctx_f,
        cq_source_set_registration_handler_ctx_f};
    if (mode == 0) {
        return;
    }
    struct hrec *h = mode >= 2 ? hrec_new(in, sr, which, mode == 3) : NULL;
    if (h == NULL) {
        set_plain[which](sr->s, plain[which]);
    } else {
        set_own[which](sr->s, h, own[which], h->has_destructor ? hrec_destroy : NULL);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* The decoder                                                                                */

struct reader {
    const uint8_t *p;
    size_t n, i;
};

/* Past the end every read is 0, so a truncated operation still decodes to something valid. */
static uint8_t next(struct reader *rd)
{
    return rd->i < rd->n ? rd->p[rd->i++] : 0;
}

#define OPS(X)                                                                                  \
    X(OP_QUEUE_CREATE)                                                                          \
    X(OP_QUEUE_RELEASE)                                                                         \
    X(OP_ASYNC)                                                                                 \
    X(OP_SYNC)                                                                                  \
    X(OP_BARRIER_ASYNC)                                                                         \
    X(OP_BARRIER_SYNC)                                                                          \
    X(OP_SET_TARGET)                                                                            \
    X(OP_SUSPEND)                                                                               \
    X(OP_RESUME)                                                                                \
    X(OP_SET_SPECIFIC)                                                                          \
    X(OP_GET_SPECIFIC)                                                                          \
    X(OP_GROUP_CREATE)                                                                          \
    X(OP_GROUP_ASYNC)                                                                           \
    X(OP_GROUP_ENTER)                                                                           \
    X(OP_GROUP_LEAVE)                                                                           \
    X(OP_GROUP_LEAVE_TASK)                                                                      \
    X(OP_GROUP_NOTIFY)                                                                          \
    X(OP_GROUP_WAIT)                                                                            \
    X(OP_GROUP_RELEASE)                                                                         \
    X(OP_SEMA_CREATE)                                                                           \
    X(OP_SEMA_SIGNAL)                                                                           \
    X(OP_SEMA_WAIT)                                                                             \
    X(OP_SEMA_RELEASE)                                                                          \
    X(OP_ONCE)                                                                                  \
    X(OP_APPLY)                                                                                 \
    X(OP_AFTER)                                                                                 \
    X(OP_SOURCE_CREATE)                                                                         \
    X(OP_SOURCE_RESUME)                                                                         \
    X(OP_SOURCE_SUSPEND)                                                                        \
    X(OP_SOURCE_CANCEL)                                                                         \
    X(OP_SOURCE_SET_TIMER)                                                                      \
    X(OP_SOURCE_MERGE)                                                                          \
    X(OP_SOURCE_SET_TARGET)                                                                     \
    X(OP_SOURCE_SET_HANDLER)                                                                    \
    X(OP_SOURCE_RELEASE)                                                                        \
    X(OP_RETAIN)                                                                                \
    X(OP_UNRETAIN)                                                                              \
    X(OP_SLEEP)                                                                                 \
    X(OP_QUERY)

#define AS_ENUM(name) name,
#define AS_NAME(name) #name,
enum op { OPS(AS_ENUM) OP_COUNT };
static const char *const op_names[] = {OPS(AS_NAME)};

/*
 * A queue selector byte: 0-5 the queue in that slot (the default global queue if the slot is
 * empty), 6-9 the global queues (high, default, low, background), 10 the inner serial queue,
 * 11 the inner concurrent one. Returns the record of a program or inner queue, or NULL.
 */
enum { QSEL_COUNT = 12 };

static struct qrec *qsel(struct input *in, uint8_t b, cq_queue_t *out)
{
    unsigned v = b % QSEL_COUNT;
    struct qrec *q = NULL;
    if (v < NQ) {
        q = in->qslot[v];
    } else if (v == 10) {
        q = in->inner_serial;
    } else if (v == 11) {
        q = in->inner_concurrent;
    }
    *out = q ? q->q : global_queue(v < NQ ? 1 : v - NQ);
    return q;
}

/* Decodes a task: one byte (behavior), then what the behavior needs. The references it needs
 * are taken here, on the main thread, while the objects are certainly alive. */
static struct task_rec *decode_task(struct input *in, struct reader *rd, struct qrec *q)
{
    uint8_t b = next(rd);
    enum behavior beh = (enum behavior)(b % B_COUNT);
    uint8_t arg = 0, arg2 = 0;
    switch (beh) {
    case B_PLAIN:
        break;
    case B_CHILD:
    case B_MERGE:
        arg = next(rd);
        arg2 = next(rd);
        break;
    default:
        arg = next(rd);
        break;
    }
    /* Inner queues never sync onto inner queues (that could deadlock: A waits for B waits for
     * A); every other queue may, since no program queue targets an inner one. */
    if (beh == B_NESTED_SYNC && q && q->inner) {
        beh = B_PLAIN;
    }
    struct task_rec *t = task_new(in, q, (uint8_t)beh, 0);
    if (t == NULL) {
        return NULL;
    }
    t->arg = arg;
    t->arg2 = arg2;
    switch (beh) {
    case B_CHILD: {
        cq_queue_t cq;
        struct qrec *cr = qsel(in, arg2, &cq);
        t->child_q = cr;
        t->child_queue = cq;
        t->arg2 = b >> 4; /* the child's behavior */
        if (cr && !cr->inner) {
            obj_retain(&cr->o, cr->q);
            t->ref_rec = &cr->o;
            t->ref_obj = cr->q;
        }
        if (cr && cr->inner && t->arg2 % B_COUNT == B_NESTED_SYNC) {
            t->arg2 = B_PLAIN;
        }
        /* The child gets only behaviors that need no reference of their own. */
        switch (t->arg2 % B_COUNT) {
        case B_CHILD:
        case B_MERGE:
        case B_SIGNAL:
        case B_SEMWAIT:
            t->arg2 = B_PLAIN;
            break;
        default:
            break;
        }
        break;
    }
    case B_MERGE: {
        struct src_rec *sr = in->srcslot[arg % NSRC];
        if (sr == NULL || sr->type == SRC_TIMER) {
            t->behavior = B_PLAIN;
            break;
        }
        obj_retain(&sr->o, sr->s);
        t->ref_rec = &sr->o;
        t->ref_obj = sr->s;
        break;
    }
    case B_SIGNAL:
    case B_SEMWAIT: {
        struct srec *s = in->sslot[arg % NS];
        if (s == NULL) {
            t->behavior = B_PLAIN;
            break;
        }
        s->shared = true;
        obj_retain(&s->o, s->s);
        t->ref_rec = &s->o;
        t->ref_obj = s->s;
        break;
    }
    default:
        break;
    }
    return t;
}

/* ---- queues ---- */

static struct qrec *queue_new(struct input *in, bool serial, const char *label, bool label_null,
                              int rank)
{
    int n = atomic_load(&in->nqrecs);
    if (n >= MAX_QRECS) {
        return NULL;
    }
    struct qrec *q = &in->qrecs[n];
    memset(q, 0, sizeof *q);
    q->in = in;
    q->serial = serial;
    q->rank = rank;
    snprintf(q->label, sizeof q->label, "%s", label_null ? "" : label);
    q->q = cq_queue_create(label_null ? NULL : label,
                           serial ? CQ_QUEUE_SERIAL : CQ_QUEUE_CONCURRENT);
    HARNESS_ASSERT(q->q != NULL);
    obj_init(in, &q->o, R_QUEUE, n, q->q);
    if (in->keepalive) {
        obj_retain(&q->o, q->q); /* dropped at the end of the input */
    }
    const char *got = cq_queue_get_label(q->q);
    if (got == NULL || strcmp(got, q->label) != 0) {
        fail("cq_queue_get_label of a new queue is \"%s\", expected \"%s\"", got ? got : "(null)",
             q->label);
    }
    /* release: tasks that scan the records see a complete one */
    atomic_store_explicit(&in->nqrecs, n + 1, memory_order_release);
    return q;
}

static void queue_resume_all(struct input *in, struct qrec *q)
{
    if (q->suspend > 0) {
        in->suspended_queues--;
    }
    while (q->suspend > 0) {
        q->suspend--;
        cq_resume(q->q);
    }
}

static void queue_release_slot(struct input *in, int slot)
{
    struct qrec *q = in->qslot[slot];
    if (q == NULL) {
        return;
    }
    /* Releasing a suspended queue is misuse: its tasks could never run. */
    queue_resume_all(in, q);
    in->qslot[slot] = NULL;
    obj_release(&q->o, q->q);
}

static void op_queue_create(struct input *in, struct reader *rd)
{
    int slot = next(rd) % NQ;
    uint8_t flags = next(rd);
    bool serial = !(flags & 1);
    char label[LABEL_MAX + 1];
    bool label_null = false;
    switch ((flags >> 1) % 4) {
    case 0:
        label_null = true;
        label[0] = '\0';
        break;
    case 1:
        label[0] = '\0';
        break;
    case 2:
        snprintf(label, sizeof label, "fuzz.q%d", slot);
        break;
    default: {
        /* Raw bytes: whatever the input says, up to LABEL_MAX (a 0 ends it early). */
        size_t len = next(rd) % (LABEL_MAX + 1);
        for (size_t i = 0; i < len; i++) {
            label[i] = (char)next(rd);
        }
        label[len] = '\0';
        break;
    }
    }
    uint8_t target = next(rd);
    queue_release_slot(in, slot);
    struct qrec *q = queue_new(in, serial, label, label_null, slot);
    if (q == NULL) {
        return;
    }
    in->qslot[slot] = q;
    trace("queue_create slot %d %s label \"%s\"", slot, serial ? "serial" : "concurrent",
          q->label);
    /* A target in a lower slot, a global queue, or none (the default). */
    if (target & 0x80) {
        int t = (target & 0x7f) % (slot + 4);
        if (t < slot) {
            if (in->qslot[t]) {
                cq_set_target_queue(q->q, in->qslot[t]->q);
            }
        } else {
            cq_set_target_queue(q->q, global_queue((unsigned)(t - slot)));
        }
    }
}

/* How the main thread submits a counting task. */
enum submit { SUB_ASYNC, SUB_SYNC, SUB_BARRIER_ASYNC, SUB_BARRIER_SYNC };

static void sequence(struct qrec *q, struct task_rec *t, bool barrier)
{
    t->seq = ++q->next_seq;
    t->prev_barrier = q->last_barrier;
    t->barrier = barrier;
    if (barrier) {
        q->last_barrier = t->seq;
    }
}

static void op_submit(struct input *in, struct reader *rd, enum submit how)
{
    cq_queue_t queue;
    struct qrec *q = qsel(in, next(rd), &queue);
    bool sync = how == SUB_SYNC || how == SUB_BARRIER_SYNC;
    bool barrier = how == SUB_BARRIER_ASYNC || how == SUB_BARRIER_SYNC;
    /* A sync onto a queue whose chain is suspended would wait for the program's own later
     * resume: make it an async instead. */
    if (sync && q && !q->inner && in->suspended_queues > 0) {
        sync = false;
    }
    struct task_rec *t = decode_task(in, rd, q);
    if (t == NULL) {
        return;
    }
    if (q) {
        sequence(q, t, barrier);
    } else {
        t->barrier = false; /* a barrier on a global queue is a plain task */
    }
    trace("%s%s task %d (%s) on queue %d", sync ? "sync" : "async", barrier ? " barrier" : "",
          t->id, behavior_names[t->behavior], q ? q->o.id : -1);
    atomic_fetch_add(&in->expected_work, 1);
    if (sync) {
        (barrier ? cq_barrier_sync_f : cq_sync_f)(queue, t, run_task);
        if (!atomic_load(&t->done)) {
            fail("cq_%ssync_f returned before task %d completed", barrier ? "barrier_" : "",
                 t->id);
        }
    } else {
        (barrier ? cq_barrier_async_f : cq_async_f)(queue, t, run_task);
    }
}

static void op_set_target(struct input *in, struct reader *rd)
{
    int slot = next(rd) % NQ;
    uint8_t b = next(rd);
    struct qrec *q = in->qslot[slot];
    if (q == NULL) {
        return;
    }
    /* Only lower slots (ranks), global queues or NULL: every edge goes down, so no sequence
     * of retargets can close a cycle, whatever the runtime has applied yet. */
    int t = b % (slot + 5);
    if (t < slot) {
        if (in->qslot[t]) {
            trace("set_target queue %d -> queue %d", q->o.id, in->qslot[t]->o.id);
            cq_set_target_queue(q->q, in->qslot[t]->q);
        }
    } else if (t - slot < 4) {
        trace("set_target queue %d -> global %d", q->o.id, t - slot);
        cq_set_target_queue(q->q, global_queue((unsigned)(t - slot)));
    } else {
        trace("set_target queue %d -> NULL", q->o.id);
        cq_set_target_queue(q->q, NULL);
    }
}

static void op_suspend(struct input *in, struct reader *rd, bool suspend)
{
    struct qrec *q = in->qslot[next(rd) % NQ];
    if (q == NULL) {
        return;
    }
    if (suspend && q->suspend < 3) {
        if (q->suspend++ == 0) {
            in->suspended_queues++;
        }
        trace("suspend queue %d (%d)", q->o.id, q->suspend);
        cq_suspend(q->q);
    } else if (!suspend && q->suspend > 0) {
        if (--q->suspend == 0) {
            in->suspended_queues--;
        }
        trace("resume queue %d (%d)", q->o.id, q->suspend);
        cq_resume(q->q);
    }
}

static void value_destroy(void *ctx)
{
    struct vrec *v = ctx;
    if (!v->has_destructor) {
        fail("queue-specific value %d: a destructor ran that was never set", v->id);
    }
    if (atomic_fetch_add(&v->destroyed, 1) != 0) {
        fail("queue-specific value %d destroyed twice", v->id);
    }
    teardown_done();
}

static void op_set_specific(struct input *in, struct reader *rd)
{
    struct qrec *q = in->qslot[next(rd) % NQ];
    uint8_t b = next(rd);
    if (q == NULL) {
        return;
    }
    int key = b % NKEYS;
    int mode = (b >> 2) % 3; /* 0 remove, 1 value, 2 value with destructor */
    struct vrec *v = NULL;
    if (mode) {
        if (in->nvalues >= MAX_VALUES) {
            return;
        }
        v = &in->values[in->nvalues];
        v->id = in->nvalues++;
        v->key = key;
        v->has_destructor = mode == 2;
        atomic_init(&v->destroyed, 0);
        if (v->has_destructor) {
            atomic_fetch_add(&in->expected_teardown, 1);
        }
    }
    trace("set_specific queue %d key %d value %d", q->o.id, key, v ? v->id : -1);
    cq_queue_set_specific(q->q, &spec_keys[key], v, v && v->has_destructor ? value_destroy : NULL);
    q->spec[key] = v;
}

static void op_get_specific(struct input *in, struct reader *rd)
{
    struct qrec *q = in->qslot[next(rd) % NQ];
    int key = next(rd) % NKEYS;
    if (q == NULL) {
        return;
    }
    void *got = cq_queue_get_specific(q->q, &spec_keys[key]);
    if (got != q->spec[key]) {
        fail("cq_queue_get_specific(queue %d, key %d) returned %p, expected %p", q->o.id, key, got,
             (void *)q->spec[key]);
    }
    /* The main thread runs on no queue. */
    if (cq_get_specific(&spec_keys[key]) != NULL) {
        fail("cq_get_specific on the main thread (on no queue) returned a value");
    }
}

/* ---- groups ---- */

static void group_add_member(struct grec *g, atomic_int *done)
{
    if (g->nmembers < MAX_MEMBERS) {
        g->members[g->nmembers++] = done;
    }
}

static void group_leave_all(struct grec *g)
{
    while (g->nopen > 0) {
        int m = g->open_enters[--g->nopen];
        atomic_store(&g->manual[m], 1);
        cq_group_leave(g->g);
    }
}

static void group_release_slot(struct input *in, int slot)
{
    struct grec *g = in->gslot[slot];
    if (g == NULL) {
        return;
    }
    group_leave_all(g); /* nobody could leave them after our reference is gone */
    in->gslot[slot] = NULL;
    obj_release(&g->o, g->g);
}

static void op_group_create(struct input *in, struct reader *rd)
{
    int slot = next(rd) % NG;
    group_release_slot(in, slot);
    if (in->ngrecs >= MAX_GRECS) {
        return;
    }
    struct grec *g = &in->grecs[in->ngrecs];
    memset(g, 0, sizeof *g);
    g->g = cq_group_create();
    HARNESS_ASSERT(g->g != NULL);
    obj_init(in, &g->o, R_GROUP, in->ngrecs, g->g);
    in->ngrecs++;
    in->gslot[slot] = g;
    trace("group_create slot %d: group %d", slot, g->o.id);
}

static void op_group_async(struct input *in, struct reader *rd, bool leave_in_task)
{
    struct grec *g = in->gslot[next(rd) % NG];
    cq_queue_t queue;
    struct qrec *q = qsel(in, next(rd), &queue);
    struct task_rec *t = decode_task(in, rd, q);
    if (t == NULL) {
        return;
    }
    if (q) {
        sequence(q, t, false);
    }
    atomic_fetch_add(&in->expected_work, 1);
    if (g == NULL) {
        trace("async task %d (no group)", t->id);
        cq_async_f(queue, t, run_task);
        return;
    }
    group_add_member(g, &t->done);
    if (leave_in_task) {
        /* The main thread enters, the task leaves (with a reference of its own). */
        trace("group %d: enter, task %d leaves", g->o.id, t->id);
        cq_group_enter(g->g);
        obj_retain(&g->o, g->g);
        t->leave = g;
        cq_async_f(queue, t, run_task);
    } else {
        trace("group %d: group_async task %d", g->o.id, t->id);
        cq_group_async_f(g->g, queue, t, run_task);
    }
}

static void op_group_enter(struct input *in, struct reader *rd, bool enter)
{
    struct grec *g = in->gslot[next(rd) % NG];
    if (g == NULL) {
        return;
    }
    if (enter) {
        if (g->nmanual >= MAX_MEMBERS) {
            return;
        }
        int m = g->nmanual++;
        atomic_init(&g->manual[m], 0);
        g->open_enters[g->nopen++] = m;
        group_add_member(g, &g->manual[m]);
        trace("group %d: enter", g->o.id);
        cq_group_enter(g->g);
    } else if (g->nopen > 0) {
        int m = g->open_enters[--g->nopen];
        atomic_store(&g->manual[m], 1);
        trace("group %d: leave", g->o.id);
        cq_group_leave(g->g);
    }
}

static void op_group_notify(struct input *in, struct reader *rd)
{
    struct grec *g = in->gslot[next(rd) % NG];
    cq_queue_t queue;
    struct qrec *q = qsel(in, next(rd), &queue);
    struct task_rec *t = decode_task(in, rd, q);
    if (t == NULL) {
        return;
    }
    atomic_fetch_add(&in->expected_work, 1);
    if (g == NULL) {
        cq_async_f(queue, t, run_task);
        return;
    }
    t->notify_of = g;
    t->notify_members = g->nmembers;
    trace("group %d: notify task %d after %d members", g->o.id, t->id, g->nmembers);
    cq_group_notify_f(g->g, queue, t, run_task);
}

static int64_t short_timeout(uint8_t b)
{
    static const int64_t us[4] = {0, 50, 200, 1000};
    return us[b % 4] * NSEC_PER_USEC;
}

static void op_group_wait(struct input *in, struct reader *rd)
{
    struct grec *g = in->gslot[next(rd) % NG];
    int64_t timeout = short_timeout(next(rd));
    if (g == NULL) {
        return;
    }
    int n = g->nmembers;
    intptr_t r = cq_group_wait(g->g, timeout ? cq_time(CQ_TIME_NOW, timeout) : CQ_TIME_NOW);
    trace("group %d: wait %lld us -> %ld", g->o.id, (long long)(timeout / 1000), (long)r);
    if (r == 0) {
        if (g->nopen > 0) {
            fail("group %d: cq_group_wait returned 0 while the main thread holds %d enters",
                 g->o.id, g->nopen);
        }
        for (int i = 0; i < n; i++) {
            if (!atomic_load(g->members[i])) {
                fail("group %d: cq_group_wait returned 0 before member %d of %d finished",
                     g->o.id, i, n);
            }
        }
    }
}

/* ---- semaphores ---- */

static void sema_balance(struct srec *s)
{
    /* Releasing a semaphore below its initial count is misuse: give back what the program
     * took. Tasks only ever add (net), so it stays balanced. */
    while (atomic_load(&s->value) < s->initial) {
        atomic_fetch_add(&s->value, 1);
        cq_semaphore_signal(s->s);
    }
}

static void sema_release_slot(struct input *in, int slot)
{
    struct srec *s = in->sslot[slot];
    if (s == NULL) {
        return;
    }
    sema_balance(s);
    in->sslot[slot] = NULL;
    obj_release(&s->o, s->s);
}

static void op_sema_create(struct input *in, struct reader *rd)
{
    int slot = next(rd) % NS;
    long initial = next(rd) % 3;
    sema_release_slot(in, slot);
    if (in->nsrecs >= MAX_SRECS) {
        return;
    }
    struct srec *s = &in->srecs[in->nsrecs];
    memset(s, 0, sizeof *s);
    s->s = cq_semaphore_create(initial);
    HARNESS_ASSERT(s->s != NULL);
    s->initial = initial;
    atomic_init(&s->value, initial);
    obj_init(in, &s->o, R_SEMA, in->nsrecs, s->s);
    in->nsrecs++;
    in->sslot[slot] = s;
    trace("sema_create slot %d: semaphore %d (%ld)", slot, s->o.id, initial);
}

static void op_sema_signal(struct input *in, struct reader *rd)
{
    struct srec *s = in->sslot[next(rd) % NS];
    if (s == NULL) {
        return;
    }
    atomic_fetch_add(&s->value, 1);
    intptr_t woke = cq_semaphore_signal(s->s);
    trace("semaphore %d: signal -> %ld", s->o.id, (long)woke);
    if (!s->shared && woke) {
        fail("semaphore %d: cq_semaphore_signal reports a woken waiter, but nobody waits",
             s->o.id);
    }
}

static void op_sema_wait(struct input *in, struct reader *rd)
{
    struct srec *s = in->sslot[next(rd) % NS];
    int64_t timeout = short_timeout(next(rd));
    if (s == NULL) {
        return;
    }
    long before = atomic_load(&s->value);
    intptr_t r = cq_semaphore_wait(s->s, timeout ? cq_time(CQ_TIME_NOW, timeout) : CQ_TIME_NOW);
    trace("semaphore %d: wait %lld us (count %ld) -> %ld", s->o.id, (long long)(timeout / 1000),
          before, (long)r);
    if (r == 0) {
        atomic_fetch_sub(&s->value, 1);
    }
    if (!s->shared) {
        /* Only the main thread touches it: the outcome is determined by the count. */
        if (before > 0 && r != 0) {
            fail("semaphore %d: wait timed out with a count of %ld", s->o.id, before);
        }
        if (before <= 0 && r == 0) {
            fail("semaphore %d: wait succeeded with a count of %ld and nobody signalling",
                 s->o.id, before);
        }
    }
}

/* ---- once, apply, after ---- */

static void op_apply(struct input *in, struct reader *rd)
{
    cq_queue_t queue;
    struct qrec *q = qsel(in, next(rd), &queue);
    uint8_t b = next(rd);
    if (q && !q->inner && in->suspended_queues > 0) {
        return; /* apply is a sync onto the queue */
    }
    struct apply_rec *a = calloc(1, sizeof *a);
    HARNESS_ASSERT(a != NULL);
    a->in = in;
    a->q = q;
    a->n = 1 + b % MAX_APPLY;
    a->ordered = q && q->serial;
    if (q) {
        a->seq = ++q->next_seq;
        a->prev_barrier = q->last_barrier;
    }
    trace("apply %zu on queue %d", a->n, q ? q->o.id : -1);
    run_apply(a, queue);
    if (q) {
        if (q->serial && a->n > 0 && atomic_load(&q->last_started) != a->seq) {
            fail("serial queue %d: apply #%u did not run in its place", q->o.id, a->seq);
        }
        check_order_end(q, a->seq, false);
    }
    free(a);
}

static void op_after(struct input *in, struct reader *rd)
{
    cq_queue_t queue;
    struct qrec *q = qsel(in, next(rd), &queue);
    uint8_t d = next(rd);
    struct task_rec *t = decode_task(in, rd, q);
    if (t == NULL) {
        return;
    }
    int64_t delay = (d % 16) * 125 * NSEC_PER_USEC; /* up to ~2 ms */
    cq_time_t when = CQ_TIME_NOW;
    if (delay) {
        if (d & 0x10) {
            when = cq_walltime(NULL, delay);
            t->not_before = (int64_t)(when & ~(1ull << 63));
            t->not_before_clock = CLOCK_REALTIME;
        } else {
            when = cq_time(CQ_TIME_NOW, delay);
            t->not_before = (int64_t)when;
            t->not_before_clock = CLOCK_MONOTONIC;
        }
    }
    trace("after %lld us task %d on queue %d", (long long)(delay / 1000), t->id, q ? q->o.id : -1);
    atomic_fetch_add(&in->expected_work, 1);
    cq_after_f(when, queue, t, run_task);
}

/* ---- sources ---- */

/* One cq_resume. The first one starts the source even if suspends made before it keep it
 * suspended (as libdispatch's activation does). */
static void source_resume_once(struct src_rec *sr)
{
    HARNESS_ASSERT(sr->susp > 0);
    sr->susp--;
    sr->activated = true;
    cq_resume(sr->s);
}

static void source_finish(struct input *in, struct src_rec *sr)
{
    if (!sr->canceled) {
        sr->canceled = true;
        cq_source_cancel(sr->s);
    }
    /* Releasing a started source while suspended is misuse (its cancel handler could never
     * run); one never started may be released as it is, or started now (it then goes
     * straight to its cancel handler). */
    if (sr->activated || in->activate_all) {
        while (sr->susp > 0) {
            source_resume_once(sr);
        }
    }
    if (sr->activated && sr->has_cancel && atomic_load(&sr->expected_cancel) == 0) {
        atomic_store(&sr->expected_cancel, 1);
        atomic_fetch_add(&in->expected_teardown, 1);
    }
}

static void source_release_slot(struct input *in, int slot)
{
    struct src_rec *sr = in->srcslot[slot];
    if (sr == NULL) {
        return;
    }
    source_finish(in, sr);
    in->srcslot[slot] = NULL;
    obj_release(&sr->o, sr->s);
}

static void op_source_create(struct input *in, struct reader *rd)
{
    int slot = next(rd) % NSRC;
    uint8_t b = next(rd);
    cq_queue_t queue;
    struct qrec *q = qsel(in, next(rd), &queue);
    (void)q;
    source_release_slot(in, slot);
    if (in->nsrcrecs >= MAX_SRCRECS) {
        return;
    }
    static const cq_source_kind_t kinds[SRC_TYPES] = {
        CQ_SOURCE_KIND_TIMER, CQ_SOURCE_KIND_DATA_ADD, CQ_SOURCE_KIND_DATA_OR,
        CQ_SOURCE_KIND_DATA_REPLACE};
    struct src_rec *sr = &in->srcrecs[in->nsrcrecs];
    memset(sr, 0, sizeof *sr);
    sr->in = in;
    sr->type = b % SRC_TYPES;
    sr->s = cq_source_create(cq_source_type(kinds[sr->type]), 0, 0, queue);
    HARNESS_ASSERT(sr->s != NULL);
    obj_init(in, &sr->o, R_SOURCE, in->nsrcrecs, sr->s);
    in->nsrcrecs++;
    sr->susp = 1;
    atomic_init(&sr->min_start, INT64_MAX);
    int ev_mode = 1 + ((b >> 2) % 3);     /* plain, own context, own context + destructor */
    int cancel_mode = (b >> 4) % 4;       /* none, plain, own, own + destructor */
    int reg_mode = (b >> 6) % 4;
    sr->has_cancel = cancel_mode != 0;
    sr->has_registration = reg_mode != 0;
    set_handler(in, sr, H_EVENT, ev_mode);
    set_handler(in, sr, H_CANCEL, cancel_mode);
    set_handler(in, sr, H_REG, reg_mode);
    in->srcslot[slot] = sr;
    trace("source_create slot %d: source %d %s handlers e%d c%d r%d", slot, sr->o.id,
          src_type_names[sr->type], ev_mode, cancel_mode, reg_mode);
}

static void op_source_suspend(struct input *in, struct reader *rd, bool suspend)
{
    struct src_rec *sr = in->srcslot[next(rd) % NSRC];
    if (sr == NULL) {
        return;
    }
    if (suspend && sr->susp < 3) {
        sr->susp++;
        trace("source %d: suspend (%d)", sr->o.id, sr->susp);
        cq_suspend(sr->s);
    } else if (!suspend && sr->susp > 0) {
        trace("source %d: resume (%d)", sr->o.id, sr->susp - 1);
        source_resume_once(sr);
    }
}

static void op_source_cancel(struct input *in, struct reader *rd)
{
    struct src_rec *sr = in->srcslot[next(rd) % NSRC];
    if (sr == NULL || sr->canceled) {
        return;
    }
    sr->canceled = true;
    sr->early_cancel = true;
    trace("source %d: cancel", sr->o.id);
    cq_source_cancel(sr->s);
    if (!cq_source_testcancel(sr->s)) {
        fail("source %d: cq_source_testcancel is 0 after cq_source_cancel", sr->o.id);
    }
}

static void op_source_set_timer(struct input *in, struct reader *rd)
{
    struct src_rec *sr = in->srcslot[next(rd) % NSRC];
    uint8_t b1 = next(rd), b2 = next(rd);
    if (sr == NULL || sr->type != SRC_TIMER) {
        return;
    }
    int64_t delay = ((b1 >> 2) % 16) * 100 * NSEC_PER_USEC;
    cq_time_t start;
    switch (b1 % 4) {
    case 0:
        start = CQ_TIME_NOW;
        break;
    case 1:
        start = cq_time(CQ_TIME_NOW, delay);
        break;
    case 2:
        start = cq_walltime(NULL, delay);
        atomic_store(&sr->wall_start, true);
        break;
    default:
        start = CQ_TIME_FOREVER; /* disarmed */
        break;
    }
    if (start != CQ_TIME_FOREVER && !(start != CQ_TIME_NOW && (start >> 63))) {
        long long s = start == CQ_TIME_NOW ? clock_ns(CLOCK_MONOTONIC) : (long long)start;
        long long cur = atomic_load(&sr->min_start);
        while (s < cur && !atomic_compare_exchange_weak(&sr->min_start, &cur, s)) {
        }
    }
    uint64_t interval = b2 % 4 == 0 ? CQ_TIME_FOREVER
                                    : (uint64_t)(1 + (b2 >> 2) % 16) * 250 * NSEC_PER_USEC;
    uint64_t leeway = (uint64_t)(b2 >> 6) * 100 * NSEC_PER_USEC;
    atomic_store(&sr->rearm, (b1 >> 6) % 3);
    trace("source %d: set_timer start %d +%lld us interval %lld us leeway %lld us", sr->o.id,
          b1 % 4, (long long)(delay / 1000),
          interval == CQ_TIME_FOREVER ? -1ll : (long long)(interval / 1000),
          (long long)(leeway / 1000));
    cq_source_set_timer(sr->s, start, interval, leeway);
}

static void op_source_merge(struct input *in, struct reader *rd)
{
    struct src_rec *sr = in->srcslot[next(rd) % NSRC];
    uintptr_t value = next(rd) % 16;
    if (sr == NULL || sr->type == SRC_TIMER) {
        return;
    }
    trace("source %d: merge %lu", sr->o.id, (unsigned long)value);
    merge(sr, value);
}

static void op_source_set_target(struct input *in, struct reader *rd)
{
    struct src_rec *sr = in->srcslot[next(rd) % NSRC];
    cq_queue_t queue;
    struct qrec *q = qsel(in, next(rd), &queue);
    if (sr == NULL) {
        return;
    }
    trace("source %d: set_target queue %d", sr->o.id, q ? q->o.id : -1);
    cq_set_target_queue(sr->s, queue);
}

static void op_source_set_handler(struct input *in, struct reader *rd)
{
    struct src_rec *sr = in->srcslot[next(rd) % NSRC];
    uint8_t b = next(rd);
    if (sr == NULL) {
        return;
    }
    trace("source %d: replace event handler (mode %d)", sr->o.id, 1 + b % 3);
    set_handler(in, sr, H_EVENT, 1 + b % 3);
}

/* ---- references, sleeping, queries ---- */

static void op_retain(struct input *in, struct reader *rd)
{
    uint8_t b = next(rd);
    if (in->nextra >= MAX_EXTRA) {
        return;
    }
    struct obj_rec *r = NULL;
    void *obj = NULL;
    switch (b % 4) {
    case 0: {
        struct qrec *q = in->qslot[(b >> 2) % NQ];
        if (q) {
            r = &q->o;
            obj = q->q;
        }
        break;
    }
    case 1: {
        struct grec *g = in->gslot[(b >> 2) % NG];
        if (g) {
            r = &g->o;
            obj = g->g;
        }
        break;
    }
    case 2: {
        struct srec *s = in->sslot[(b >> 2) % NS];
        if (s) {
            /* Whoever releases it last must find it balanced: tasks only add, and the slot's
             * release balances it, but an extra reference may outlive the slot. */
            r = &s->o;
            obj = s->s;
        }
        break;
    }
    default: {
        struct src_rec *sr = in->srcslot[(b >> 2) % NSRC];
        if (sr) {
            r = &sr->o;
            obj = sr->s;
        }
        break;
    }
    }
    if (r == NULL) {
        return;
    }
    trace("retain %s %d", rec_kind_names[r->kind], r->id);
    obj_retain(r, obj);
    in->extra[in->nextra].rec = r;
    in->extra[in->nextra].obj = obj;
    in->nextra++;
}

static void op_unretain(struct input *in, struct reader *rd)
{
    int i = next(rd);
    if (in->nextra == 0) {
        return;
    }
    i %= in->nextra;
    struct obj_rec *r = in->extra[i].rec;
    void *obj = in->extra[i].obj;
    in->extra[i] = in->extra[--in->nextra];
    /* A semaphore may be below its initial count while its slot holds it, but then this is
     * not the last reference; a slot's release balanced it. */
    trace("release extra %s %d", rec_kind_names[r->kind], r->id);
    obj_release(r, obj);
}

static void op_query(struct input *in, struct reader *rd)
{
    uint8_t b = next(rd);
    switch (b % 4) {
    case 0: {
        struct qrec *q = in->qslot[(b >> 2) % NQ];
        if (q) {
            const char *l = cq_queue_get_label(q->q);
            if (l == NULL || strcmp(l, q->label) != 0) {
                fail("queue %d: cq_queue_get_label is \"%s\", expected \"%s\"", q->o.id,
                     l ? l : "(null)", q->label);
            }
            if (cq_queue_is_current(q->q)) {
                fail("queue %d: cq_queue_is_current is true on the main thread", q->o.id);
            }
        }
        if (cq_get_current_queue() != NULL || strcmp(cq_queue_get_label(NULL), "") != 0) {
            fail("the main thread (on no queue) has a current queue");
        }
        break;
    }
    case 1: {
        /* Odd priorities round to one of the four; a non-zero flag is refused, not fatal. */
        static const intptr_t odd[] = {1, -1, 3, -3, 100, -100, INTPTR_MAX, INTPTR_MIN};
        cq_queue_t g = cq_get_global_queue(odd[(b >> 2) % 8], 0);
        bool known = false;
        for (unsigned i = 0; i < 4; i++) {
            known |= g == global_queue(i);
        }
        if (!known) {
            fail("cq_get_global_queue(%ld) is not one of the four global queues",
                 (long)odd[(b >> 2) % 8]);
        }
        errno = 0;
        if (cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 1 + (b >> 5)) != NULL ||
            errno != EINVAL) {
            fail("cq_get_global_queue with non-zero flags did not fail with EINVAL");
        }
        break;
    }
    case 2: {
        struct cq_runtime_info info;
        cq_runtime_get_info(&info);
        if (info.workers < 1 || info.procs < info.workers || info.threads > info.thread_limit ||
            info.threads_peak > info.thread_limit) {
            fail("cq_runtime_get_info: workers %u procs %u threads %u (peak %u) limit %u",
                 info.workers, info.procs, info.threads, info.threads_peak, info.thread_limit);
        }
        break;
    }
    default: {
        /* Bad source arguments are reported, never fatal. */
        errno = 0;
        cq_source_t s = cq_source_create(CQ_SOURCE_TYPE_TIMER, 1 + (b >> 2), 0, NULL);
        if (s != NULL || errno != EINVAL) {
            fail("cq_source_create(TIMER, handle %d) did not fail with EINVAL", 1 + (b >> 2));
        }
        errno = 0;
        s = cq_source_create(CQ_SOURCE_TYPE_DATA_ADD, 0, 1, NULL);
        if (s != NULL || errno != EINVAL) {
            fail("cq_source_create(DATA_ADD, mask 1) did not fail with EINVAL");
        }
        if (cq_source_type((cq_source_kind_t)0) != NULL ||
            cq_source_type(CQ_SOURCE_KIND_DATA_ADD) != CQ_SOURCE_TYPE_DATA_ADD) {
            fail("cq_source_type maps kinds wrongly");
        }
        struct src_rec *sr = in->srcslot[(b >> 2) % NSRC];
        if (sr && (cq_source_get_handle(sr->s) != 0 || cq_source_get_mask(sr->s) != 0 ||
                   (cq_source_testcancel(sr->s) != 0) != sr->canceled)) {
            fail("source %d: handle, mask or testcancel wrong", sr->o.id);
        }
        break;
    }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* End of an input: quiesce, check, release, check again                                      */

/* Takes `expected` signals from `sem` (the expected count may grow while we wait: tasks add
 * their children before they signal themselves). */
static void collect(cq_semaphore_t sem, long *received, atomic_long *expected, const char *what,
                    struct input *in)
{
    cq_time_t deadline = cq_time(CQ_TIME_NOW, PATIENCE_NS);
    while (*received < atomic_load(expected)) {
        if (cq_semaphore_wait(sem, deadline) != 0) {
            /* Say which records are still missing. */
            int n = atomic_load(&in->ntasks);
            for (int i = 0; i < n; i++) {
                struct task_rec *t = &in->tasks[i];
                if (!atomic_load(&t->done)) {
                    fprintf(stderr, "cq-fuzz:   task %d (%s) on queue %d: runs %d, not done\n", i,
                            behavior_names[t->behavior], t->q ? t->q->o.id : -1,
                            atomic_load(&t->runs));
                }
            }
            fail("%s: only %ld of %ld completions arrived within %lld s (lost task, wake-up, "
                 "finalizer or handler)",
                 what, *received, atomic_load(expected), PATIENCE_NS / 1000000000ll);
        }
        (*received)++;
    }
}

static void wait_data_totals(struct input *in)
{
    int64_t start = clock_ns(CLOCK_MONOTONIC), deadline = start + PATIENCE_NS;
    for (int i = 0; i < NSRC; i++) {
        struct src_rec *sr = in->srcslot[i];
        if (sr == NULL || sr->early_cancel || !sr->activated) {
            continue;
        }
        for (;;) {
            bool ok = true;
            if (sr->type == SRC_ADD) {
                ok = atomic_load(&sr->delivered_sum) == atomic_load(&sr->merged_sum);
            } else if (sr->type == SRC_OR) {
                ok = atomic_load(&sr->delivered_or) == atomic_load(&sr->merged_or);
            }
            if (ok) {
                break;
            }
            int64_t now = clock_ns(CLOCK_MONOTONIC);
            if (now > deadline) {
                fail("%s source %d: delivered %lu (or %#lx) of %lu (or %#lx) merged, never the "
                     "rest",
                     src_type_names[sr->type], sr->o.id, atomic_load(&sr->delivered_sum),
                     atomic_load(&sr->delivered_or), atomic_load(&sr->merged_sum),
                     atomic_load(&sr->merged_or));
            }
            sleep_ns(20 * NSEC_PER_USEC);
        }
    }
}

static void check_semaphores(struct input *in)
{
    for (int i = 0; i < NS; i++) {
        struct srec *s = in->sslot[i];
        if (s == NULL) {
            continue;
        }
        /* Nobody waits or signals now: the count must be exactly what was given and taken. */
        long expected = atomic_load(&s->value);
        long got = 0;
        while (got <= expected + 1 && cq_semaphore_wait(s->s, CQ_TIME_NOW) == 0) {
            got++;
        }
        if (got != expected) {
            fail("semaphore %d: count is %ld, expected %ld (initial %ld): signals lost or "
                 "invented",
                 s->o.id, got, expected, s->initial);
        }
        atomic_store(&s->value, 0);
        sema_balance(s);
    }
}

static void check_groups(struct input *in)
{
    for (int i = 0; i < NG; i++) {
        struct grec *g = in->gslot[i];
        if (g == NULL) {
            continue;
        }
        /* Not CQ_TIME_NOW: a cq_group_async_f task leaves its group after its function has
         * returned, and the function is where it told us it was done. */
        if (cq_group_wait(g->g, cq_time(CQ_TIME_NOW, PATIENCE_NS)) != 0) {
            fail("group %d never became empty after all its work finished", g->o.id);
        }
    }
    for (int i = 0; i < in->ngrecs; i++) {
        struct grec *g = &in->grecs[i];
        for (int m = 0; m < g->nmembers; m++) {
            if (!atomic_load(g->members[m])) {
                fail("group %d: member %d never finished", g->o.id, m);
            }
        }
    }
}

static void check_records(struct input *in)
{
    int n = atomic_load(&in->ntasks);
    for (int i = 0; i < n; i++) {
        struct task_rec *t = &in->tasks[i];
        int runs = atomic_load(&t->runs);
        if (runs != 1 || !atomic_load(&t->done)) {
            fail("task %d (%s) ran %d times (done %d)", i, behavior_names[t->behavior], runs,
                 atomic_load(&t->done));
        }
    }
    struct obj_rec *all[MAX_QRECS + MAX_GRECS + MAX_FJ + MAX_SRECS + MAX_SRCRECS];
    int nall = 0;
    for (int i = 0; i < atomic_load(&in->nqrecs); i++) {
        all[nall++] = &in->qrecs[i].o;
    }
    for (int i = 0; i < in->ngrecs; i++) {
        all[nall++] = &in->grecs[i].o;
    }
    for (int i = 0; i < atomic_load(&in->nfj); i++) {
        all[nall++] = &in->fj[i];
    }
    for (int i = 0; i < in->nsrecs; i++) {
        all[nall++] = &in->srecs[i].o;
    }
    for (int i = 0; i < in->nsrcrecs; i++) {
        all[nall++] = &in->srcrecs[i].o;
    }
    for (int i = 0; i < nall; i++) {
        if (atomic_load(&all[i]->refs) != 0 || atomic_load(&all[i]->finalized) != 1) {
            fail("%s %d: %d references left, finalized %d times (leak or double free)",
                 rec_kind_names[all[i]->kind], all[i]->id, atomic_load(&all[i]->refs),
                 atomic_load(&all[i]->finalized));
        }
    }
    for (int i = 0; i < in->nsrcrecs; i++) {
        struct src_rec *sr = &in->srcrecs[i];
        if (atomic_load(&sr->cancel_runs) != atomic_load(&sr->expected_cancel)) {
            fail("source %d: cancel handler ran %d times, expected %d", sr->o.id,
                 atomic_load(&sr->cancel_runs), atomic_load(&sr->expected_cancel));
        }
        if (atomic_load(&sr->reg_runs) > 1) {
            fail("source %d: registration handler ran %d times", sr->o.id,
                 atomic_load(&sr->reg_runs));
        }
    }
    for (int i = 0; i < in->nvalues; i++) {
        struct vrec *v = &in->values[i];
        if (atomic_load(&v->destroyed) != (v->has_destructor ? 1 : 0)) {
            fail("queue-specific value %d: destructor ran %d times", v->id,
                 atomic_load(&v->destroyed));
        }
    }
    for (int i = 0; i < in->nhrecs; i++) {
        struct hrec *h = &in->hrecs[i];
        if (atomic_load(&h->destroyed) != (h->has_destructor ? 1 : 0)) {
            fail("source %d: handler context destructor ran %d times", h->sr->o.id,
                 atomic_load(&h->destroyed));
        }
    }
    for (int i = 0; i < NONCE; i++) {
        struct once_rec *o = &in->once[i];
        if (atomic_load(&o->runs) > 1 || (o->called && atomic_load(&o->runs) != 1)) {
            fail("once predicate %d: function ran %d times", i, atomic_load(&o->runs));
        }
    }
    /* Nothing more arrived than expected. Every record ran exactly once (checked above), so
     * a surplus means the semaphore itself counted a signal twice or invented one. */
    if (cq_semaphore_wait(work_sem, CQ_TIME_NOW) == 0) {
        fail("the completion semaphore holds more signals than tasks completed: "
             "cq_semaphore_signal/wait miscounted");
    }
    if (cq_semaphore_wait(teardown_sem, CQ_TIME_NOW) == 0) {
        fail("the teardown semaphore holds more signals than finalizers, destructors and "
             "cancel handlers ran: cq_semaphore_signal/wait miscounted");
    }
}

static void check_pool_idle(void)
{
    /* Every wait inside a task has returned, so no pool thread may still count as blocked. */
    struct cq_runtime_info info;
    for (int tries = 0;; tries++) {
        cq_runtime_get_info(&info);
        if (info.blocked == 0) {
            break;
        }
        if (tries == 1000) {
            fail("cq_runtime_get_info reports %u blocked pool threads after all work finished",
                 info.blocked);
        }
        sleep_ns(100 * NSEC_PER_USEC);
    }
    if (info.threads > info.thread_limit) {
        fail("%u runtime threads, above the limit of %u", info.threads, info.thread_limit);
    }
}

static void end_of_input(struct input *in)
{
    g_op_name = "end: resume";
    for (int i = 0; i < NQ; i++) {
        if (in->qslot[i]) {
            queue_resume_all(in, in->qslot[i]);
        }
    }
    for (int i = 0; i < NSRC; i++) {
        struct src_rec *sr = in->srcslot[i];
        if (sr == NULL) {
            continue;
        }
        if (sr->activated || in->activate_all) {
            while (sr->susp > 0) {
                source_resume_once(sr);
            }
        }
    }
    for (int i = 0; i < NG; i++) {
        if (in->gslot[i]) {
            group_leave_all(in->gslot[i]);
        }
    }
    g_op_name = "end: wait for every task";
    collect(work_sem, &in->received_work, &in->expected_work, "tasks", in);
    g_op_name = "end: data source totals";
    wait_data_totals(in);
    g_op_name = "end: semaphore counts";
    check_semaphores(in);
    g_op_name = "end: groups";
    check_groups(in);

    g_op_name = "end: release";
    while (in->nextra > 0) {
        in->nextra--;
        obj_release(in->extra[in->nextra].rec, in->extra[in->nextra].obj);
    }
    for (int i = 0; i < NSRC; i++) {
        source_release_slot(in, i);
    }
    for (int i = 0; i < NG; i++) {
        group_release_slot(in, i);
    }
    for (int i = 0; i < NS; i++) {
        sema_release_slot(in, i);
    }
    for (int i = NQ - 1; i >= 0; i--) {
        queue_release_slot(in, i);
    }
    if (in->keepalive) {
        atomic_store(&in->scan_open, false);
        while (atomic_load(&in->scanners) != 0) {
            sleep_ns(NSEC_PER_USEC);
        }
        int n = atomic_load(&in->nqrecs);
        for (int i = 0; i < n; i++) {
            struct qrec *q = &in->qrecs[i];
            if (!q->inner) {
                obj_release(&q->o, q->q);
            }
        }
    }
    obj_release(&in->inner_serial->o, in->inner_serial->q);
    obj_release(&in->inner_concurrent->o, in->inner_concurrent->q);

    g_op_name = "end: wait for finalizers, destructors, cancel handlers";
    collect(teardown_sem, &in->received_teardown, &in->expected_teardown, "teardown", in);
    g_op_name = "end: records";
    check_records(in);
    check_pool_idle();
}

/* ------------------------------------------------------------------------------------------ */
/* One input                                                                                  */

static void run_program(const uint8_t *data, size_t size)
{
    struct input *in = calloc(1, sizeof *in);
    HARNESS_ASSERT(in != NULL);
    struct reader rd = {data, size, 0};
    uint8_t header = next(&rd);
    in->keepalive = header & 1;
    atomic_init(&in->scan_open, in->keepalive);
    atomic_init(&in->scanners, 0);
    in->activate_all = header & 2;
    g_op_index = -1;
    g_op_name = "setup";
    trace("input of %zu bytes: keepalive %d activate_all %d", size, in->keepalive,
          in->activate_all);
    /* The inner queues: targets of nested syncs only (no program queue targets them). */
    in->inner_serial = queue_new(in, true, "fuzz.inner.serial", false, -1);
    in->inner_serial->inner = true;
    in->inner_concurrent = queue_new(in, false, "fuzz.inner.concurrent", false, -1);
    in->inner_concurrent->inner = true;
    if (in->keepalive) {
        /* queue_new took a keep-alive reference; the inner queues have one owner anyway. */
        obj_release(&in->inner_serial->o, in->inner_serial->q);
        obj_release(&in->inner_concurrent->o, in->inner_concurrent->q);
    }

    for (int op_i = 0; op_i < MAX_OPS && rd.i < rd.n; op_i++) {
        enum op op = (enum op)(next(&rd) % OP_COUNT);
        g_op_index = op_i;
        g_op_name = op_names[op];
        switch (op) {
        case OP_QUEUE_CREATE:
            op_queue_create(in, &rd);
            break;
        case OP_QUEUE_RELEASE: {
            int slot = next(&rd) % NQ;
            trace("queue_release slot %d", slot);
            queue_release_slot(in, slot);
            break;
        }
        case OP_ASYNC:
            op_submit(in, &rd, SUB_ASYNC);
            break;
        case OP_SYNC:
            op_submit(in, &rd, SUB_SYNC);
            break;
        case OP_BARRIER_ASYNC:
            op_submit(in, &rd, SUB_BARRIER_ASYNC);
            break;
        case OP_BARRIER_SYNC:
            op_submit(in, &rd, SUB_BARRIER_SYNC);
            break;
        case OP_SET_TARGET:
            op_set_target(in, &rd);
            break;
        case OP_SUSPEND:
            op_suspend(in, &rd, true);
            break;
        case OP_RESUME:
            op_suspend(in, &rd, false);
            break;
        case OP_SET_SPECIFIC:
            op_set_specific(in, &rd);
            break;
        case OP_GET_SPECIFIC:
            op_get_specific(in, &rd);
            break;
        case OP_GROUP_CREATE:
            op_group_create(in, &rd);
            break;
        case OP_GROUP_ASYNC:
            op_group_async(in, &rd, false);
            break;
        case OP_GROUP_ENTER:
            op_group_enter(in, &rd, true);
            break;
        case OP_GROUP_LEAVE:
            op_group_enter(in, &rd, false);
            break;
        case OP_GROUP_LEAVE_TASK:
            op_group_async(in, &rd, true);
            break;
        case OP_GROUP_NOTIFY:
            op_group_notify(in, &rd);
            break;
        case OP_GROUP_WAIT:
            op_group_wait(in, &rd);
            break;
        case OP_GROUP_RELEASE: {
            int slot = next(&rd) % NG;
            trace("group_release slot %d", slot);
            group_release_slot(in, slot);
            break;
        }
        case OP_SEMA_CREATE:
            op_sema_create(in, &rd);
            break;
        case OP_SEMA_SIGNAL:
            op_sema_signal(in, &rd);
            break;
        case OP_SEMA_WAIT:
            op_sema_wait(in, &rd);
            break;
        case OP_SEMA_RELEASE: {
            int slot = next(&rd) % NS;
            trace("sema_release slot %d", slot);
            sema_release_slot(in, slot);
            break;
        }
        case OP_ONCE: {
            unsigned which = next(&rd);
            trace("once %u", which % NONCE);
            in->once[which % NONCE].called = true;
            call_once(in, which);
            break;
        }
        case OP_APPLY:
            op_apply(in, &rd);
            break;
        case OP_AFTER:
            op_after(in, &rd);
            break;
        case OP_SOURCE_CREATE:
            op_source_create(in, &rd);
            break;
        case OP_SOURCE_RESUME:
            op_source_suspend(in, &rd, false);
            break;
        case OP_SOURCE_SUSPEND:
            op_source_suspend(in, &rd, true);
            break;
        case OP_SOURCE_CANCEL:
            op_source_cancel(in, &rd);
            break;
        case OP_SOURCE_SET_TIMER:
            op_source_set_timer(in, &rd);
            break;
        case OP_SOURCE_MERGE:
            op_source_merge(in, &rd);
            break;
        case OP_SOURCE_SET_TARGET:
            op_source_set_target(in, &rd);
            break;
        case OP_SOURCE_SET_HANDLER:
            op_source_set_handler(in, &rd);
            break;
        case OP_SOURCE_RELEASE: {
            int slot = next(&rd) % NSRC;
            trace("source_release slot %d", slot);
            source_release_slot(in, slot);
            break;
        }
        case OP_RETAIN:
            op_retain(in, &rd);
            break;
        case OP_UNRETAIN:
            op_unretain(in, &rd);
            break;
        case OP_SLEEP: {
            int us = (next(&rd) % 50) * 10;
            trace("sleep %d us", us);
            sleep_ns(us * NSEC_PER_USEC);
            break;
        }
        case OP_QUERY:
            op_query(in, &rd);
            break;
        case OP_COUNT:
            HARNESS_ASSERT(0);
        }
    }
    g_op_index = -1;
    end_of_input(in);
    free(in);
}

static void setup_once(void)
{
    static bool done;
    if (done) {
        return;
    }
    done = true;
    const char *t = getenv("CQ_FUZZ_TRACE");
    g_trace = t && *t && *t != '0';
    work_sem = cq_semaphore_create(0);
    teardown_sem = cq_semaphore_create(0);
    HARNESS_ASSERT(work_sem && teardown_sem);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup_once();
    run_program(data, size);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Standalone: replay files and directories, then pseudo-random inputs                        */

#ifdef CQ_FUZZ_STANDALONE
#include <dirent.h>
#include <sys/stat.h>

static long g_repeat = 1; /* -repeat: each file this many times (the findings are races) */

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "cq-fuzz: cannot open %s: %s\n", path, strerror(errno));
        return 1;
    }
    uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (g_trace) {
        fprintf(stderr, "cq-fuzz: %s\n", path);
    }
    for (long i = 0; i < g_repeat; i++) {
        LLVMFuzzerTestOneInput(buf, n);
    }
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory's regular files (not its subdirectories: regressions/open holds reproducers of
 * bugs not fixed yet), in name order. */
static int replay_path(const char *path, int *count)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "cq-fuzz: %s: %s\n", path, strerror(errno));
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        (*count)++;
        return replay_file(path);
    }
    DIR *d = opendir(path);
    if (d == NULL) {
        return 1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || (len > 3 && strcmp(e->d_name + len - 3, ".md") == 0)) {
            continue; /* notes, not inputs */
        }
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", path, e->d_name);
        if (stat(full, &st) != 0 || !S_ISREG(st.st_mode)) {
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            names = realloc(names, cap * sizeof *names);
            HARNESS_ASSERT(names != NULL);
        }
        names[n++] = strdup(full);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        rc |= replay_file(names[i]);
        (*count)++;
        free(names[i]);
    }
    free(names);
    return rc;
}

static uint64_t rng_state;

static uint64_t rng(void)
{
    /* xorshift64*: fixed seed, the same inputs on every machine */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

/* ---- the seed corpus: one small program per kind of operation ---- */

struct seed {
    const char *name;
    uint8_t bytes[64];
    size_t len;
};

#define SEED(name, ...)                                                                         \
    {name, {__VA_ARGS__}, sizeof((uint8_t[]){__VA_ARGS__})}

static const struct seed seeds[] = {
    /* header, then operations; see docs/fuzzing.md for the encoding */
    SEED("queues-serial-fifo", 1, OP_QUEUE_CREATE, 0, 4, 0, OP_ASYNC, 0, B_PLAIN, OP_ASYNC, 0,
         B_SPIN, 3, OP_BARRIER_ASYNC, 0, B_PLAIN, OP_SYNC, 0, B_PLAIN, OP_ASYNC, 0, B_SLEEP, 1,
         OP_BARRIER_SYNC, 0, B_PLAIN),
    SEED("queues-concurrent-barrier", 1, OP_QUEUE_CREATE, 1, 5, 0, OP_ASYNC, 1, B_SPIN, 5,
         OP_ASYNC, 1, B_SPIN, 9, OP_BARRIER_ASYNC, 1, B_PLAIN, OP_ASYNC, 1, B_PLAIN, OP_SYNC, 1,
         B_SPIN, 2, OP_BARRIER_SYNC, 1, B_PLAIN),
    SEED("queues-targets", 1, OP_QUEUE_CREATE, 0, 4, 0, OP_QUEUE_CREATE, 1, 5, 0x80,
         OP_QUEUE_CREATE, 2, 4, 0x81, OP_ASYNC, 2, B_SPIN, 1, OP_ASYNC, 1, B_SPIN, 1, OP_ASYNC,
         0, B_PLAIN, OP_SET_TARGET, 2, 5, OP_ASYNC, 2, B_PLAIN, OP_SET_TARGET, 1, 2, OP_SYNC, 2,
         B_PLAIN),
    SEED("queues-suspend", 0, OP_QUEUE_CREATE, 0, 4, 0, OP_SUSPEND, 0, OP_ASYNC, 0, B_PLAIN,
         OP_SUSPEND, 0, OP_ASYNC, 0, B_PLAIN, OP_RESUME, 0, OP_SYNC, 0, B_PLAIN, OP_RESUME, 0,
         OP_SYNC, 0, B_PLAIN),
    SEED("queues-labels-specific", 1, OP_QUEUE_CREATE, 0, 6, 3, 'a', 'b', 'c', 0,
         OP_QUEUE_CREATE, 1, 0, 0, OP_SET_SPECIFIC, 0, 8, OP_SET_SPECIFIC, 0, 4, OP_GET_SPECIFIC,
         0, 0, OP_ASYNC, 0, B_SPECIFIC, 0, OP_SET_SPECIFIC, 0, 0, OP_QUERY, 0, OP_QUEUE_RELEASE,
         0),
    SEED("globals-priorities", 0, OP_ASYNC, 6, B_PLAIN, OP_ASYNC, 7, B_SPIN, 1, OP_ASYNC, 8,
         B_PLAIN, OP_ASYNC, 9, B_PLAIN, OP_BARRIER_ASYNC, 7, B_PLAIN, OP_SYNC, 9, B_PLAIN,
         OP_QUERY, 1, OP_QUERY, 2),
    SEED("tasks-children", 1, OP_QUEUE_CREATE, 0, 4, 0, OP_ASYNC, 0, 0x03, 0x80, 1, OP_ASYNC,
         7, B_FORKJOIN, 3, OP_ASYNC, 0, B_NESTED_SYNC, 2, OP_ASYNC, 0, B_APPLY, 9, OP_ASYNC, 0,
         B_AFTER, 3),
    SEED("groups", 0, OP_GROUP_CREATE, 0, OP_QUEUE_CREATE, 0, 4, 0, OP_GROUP_ASYNC, 0, 0,
         B_SPIN, 2, OP_GROUP_ENTER, 0, OP_GROUP_NOTIFY, 0, 7, B_PLAIN, OP_GROUP_WAIT, 0, 1,
         OP_GROUP_LEAVE, 0, OP_GROUP_LEAVE_TASK, 0, 6, B_PLAIN, OP_GROUP_WAIT, 0, 3,
         OP_GROUP_RELEASE, 0),
    SEED("semaphores", 0, OP_SEMA_CREATE, 0, 1, OP_SEMA_WAIT, 0, 0, OP_SEMA_WAIT, 0, 1,
         OP_SEMA_SIGNAL, 0, OP_SEMA_WAIT, 0, 2, OP_ASYNC, 7, B_SIGNAL, 0, OP_ASYNC, 7,
         B_SEMWAIT, 2, OP_SEMA_RELEASE, 0),
    SEED("once-apply", 1, OP_ONCE, 0, OP_ASYNC, 7, B_ONCE, 1, OP_ONCE, 1, OP_QUEUE_CREATE, 0,
         4, 0, OP_APPLY, 0, 20, OP_APPLY, 7, 40, OP_APPLY, 11, 33),
    SEED("after", 0, OP_AFTER, 7, 4, B_PLAIN, OP_AFTER, 7, 0x14, B_PLAIN, OP_QUEUE_CREATE, 0,
         4, 0, OP_AFTER, 0, 2, B_PLAIN, OP_AFTER, 0, 0, B_SPIN, 1),
    SEED("source-timer", 0, OP_SOURCE_CREATE, 0, 0x54, 7, OP_SOURCE_SET_TIMER, 0, 0x45, 5,
         OP_SOURCE_RESUME, 0, OP_SLEEP, 40, OP_SOURCE_SUSPEND, 0, OP_SLEEP, 10, OP_SOURCE_RESUME,
         0, OP_SOURCE_CANCEL, 0),
    SEED("source-data-add", 1, OP_QUEUE_CREATE, 0, 4, 0, OP_SOURCE_CREATE, 0, 0x15, 0,
         OP_SOURCE_MERGE, 0, 3, OP_SOURCE_RESUME, 0, OP_SOURCE_MERGE, 0, 5, OP_ASYNC, 7, B_MERGE,
         0, 7, OP_SOURCE_SET_TARGET, 0, 7, OP_SOURCE_SET_HANDLER, 0, 2, OP_SOURCE_MERGE, 0, 1),
    SEED("source-data-or-replace", 2, OP_SOURCE_CREATE, 0, 0x26, 7, OP_SOURCE_CREATE, 1, 0x3b,
         11, OP_SOURCE_RESUME, 0, OP_SOURCE_RESUME, 1, OP_SOURCE_MERGE, 0, 6, OP_SOURCE_MERGE, 1,
         9, OP_SOURCE_MERGE, 0, 1, OP_SOURCE_MERGE, 1, 4, OP_SOURCE_RELEASE, 1),
    /* many tasks at once doing "async, then sync" onto the inner queues: FIFO per producer */
    SEED("fifo-producers", 1, OP_ASYNC, 6, B_NESTED_SYNC, 0x34, OP_ASYNC, 7, B_NESTED_SYNC, 0x3d,
         OP_ASYNC, 8, B_NESTED_SYNC, 0x3e, OP_ASYNC, 9, B_NESTED_SYNC, 0x3f, OP_ASYNC, 7,
         B_NESTED_SYNC, 0x34, OP_ASYNC, 6, B_NESTED_SYNC, 0x3d, OP_ASYNC, 7, B_NESTED_SYNC, 0x36,
         OP_ASYNC, 10, B_PLAIN, OP_SYNC, 10, B_PLAIN, OP_ASYNC, 11, B_PLAIN, OP_BARRIER_SYNC, 11,
         B_PLAIN),
    SEED("refs", 1, OP_QUEUE_CREATE, 0, 4, 0, OP_GROUP_CREATE, 0, OP_SEMA_CREATE, 0, 2,
         OP_RETAIN, 0, OP_RETAIN, 1, OP_RETAIN, 2, OP_QUEUE_RELEASE, 0, OP_UNRETAIN, 0,
         OP_GROUP_RELEASE, 0, OP_UNRETAIN, 0, OP_UNRETAIN, 0),
};

static int write_seeds(const char *dir)
{
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, seeds[i].name);
        FILE *f = fopen(path, "wb");
        if (f == NULL || fwrite(seeds[i].bytes, 1, seeds[i].len, f) != seeds[i].len) {
            fprintf(stderr, "cq-fuzz: cannot write %s\n", path);
            return 1;
        }
        fclose(f);
    }
    fprintf(stderr, "cq-fuzz: wrote %zu seeds to %s\n", sizeof seeds / sizeof seeds[0], dir);
    return 0;
}

/* Dictionary entries: whole, well-formed operations, so mutations can insert one at a time. */
static const struct seed snippets[] = {
    SEED("queue_serial", OP_QUEUE_CREATE, 0, 4, 0),
    SEED("queue_concurrent_on_0", OP_QUEUE_CREATE, 1, 5, 0x80),
    SEED("queue_serial_on_1", OP_QUEUE_CREATE, 2, 4, 0x81),
    SEED("async_0", OP_ASYNC, 0, B_PLAIN),
    SEED("async_1_spin", OP_ASYNC, 1, B_SPIN, 4),
    SEED("sync_0", OP_SYNC, 0, B_PLAIN),
    SEED("barrier_async_1", OP_BARRIER_ASYNC, 1, B_PLAIN),
    SEED("barrier_sync_1", OP_BARRIER_SYNC, 1, B_PLAIN),
    SEED("async_child", OP_ASYNC, 2, 0x44, 0x80, 1), /* child with a fork-join */
    SEED("async_forkjoin", OP_ASYNC, 0, B_FORKJOIN, 3),
    SEED("async_nested_sync", OP_ASYNC, 1, B_NESTED_SYNC, 2),
    SEED("retarget_2", OP_SET_TARGET, 2, 0),
    SEED("suspend_0", OP_SUSPEND, 0),
    SEED("resume_0", OP_RESUME, 0),
    SEED("specific", OP_SET_SPECIFIC, 0, 8),
    SEED("group", OP_GROUP_CREATE, 0),
    SEED("group_async", OP_GROUP_ASYNC, 0, 1, B_SPIN, 2),
    SEED("group_notify", OP_GROUP_NOTIFY, 0, 0, B_PLAIN),
    SEED("group_wait", OP_GROUP_WAIT, 0, 2),
    SEED("sema", OP_SEMA_CREATE, 0, 1),
    SEED("sema_wait", OP_SEMA_WAIT, 0, 1),
    SEED("apply_1", OP_APPLY, 1, 30),
    SEED("after_0", OP_AFTER, 0, 3, B_PLAIN),
    SEED("source_add", OP_SOURCE_CREATE, 0, 0x15, 1),
    SEED("source_timer", OP_SOURCE_CREATE, 1, 0x54, 0),
    SEED("timer_set", OP_SOURCE_SET_TIMER, 1, 0x45, 5),
    SEED("source_resume", OP_SOURCE_RESUME, 0),
    SEED("source_merge", OP_SOURCE_MERGE, 0, 3),
    SEED("task_merge", OP_ASYNC, 1, B_MERGE, 0, 5),
};

static int write_dict(const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "cq-fuzz: cannot write %s\n", path);
        return 1;
    }
    fprintf(f, "# libFuzzer dictionary for fuzz_api: whole operations (written by "
               "fuzz_api_replay -write-dict)\n");
    for (size_t i = 0; i < sizeof snippets / sizeof snippets[0]; i++) {
        fprintf(f, "%s=\"", snippets[i].name);
        for (size_t j = 0; j < snippets[i].len; j++) {
            fprintf(f, "\\x%02x", snippets[i].bytes[j]);
        }
        fprintf(f, "\"\n");
    }
    fclose(f);
    return 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: fuzz_api_replay [-repeat R] [-random N] [-seed S] [-max-seconds T] "
            "[FILE|DIR]...\n"
            "       fuzz_api_replay -write-seeds DIR | -write-dict FILE\n"
            "Replays each file R times (a directory: its regular files but *.md), then N\n"
            "pseudo-random inputs from seed S (stopping after T seconds).\n"
            "CQ_FUZZ_TRACE=1 prints each decoded operation.\n");
}

int main(int argc, char **argv)
{
    long random_runs = 0;
    uint64_t seed = 1;
    double max_seconds = 0;
    int rc = 0, count = 0;
    setup_once();
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-random") == 0 && i + 1 < argc) {
            random_runs = strtol(argv[++i], NULL, 0);
        } else if (strcmp(argv[i], "-seed") == 0 && i + 1 < argc) {
            seed = strtoull(argv[++i], NULL, 0);
        } else if (strcmp(argv[i], "-repeat") == 0 && i + 1 < argc) {
            g_repeat = strtol(argv[++i], NULL, 0);
        } else if (strcmp(argv[i], "-max-seconds") == 0 && i + 1 < argc) {
            max_seconds = strtod(argv[++i], NULL);
        } else if (strcmp(argv[i], "-write-seeds") == 0 && i + 1 < argc) {
            return write_seeds(argv[++i]);
        } else if (strcmp(argv[i], "-write-dict") == 0 && i + 1 < argc) {
            return write_dict(argv[++i]);
        } else if (argv[i][0] == '-') {
            usage();
            return 2;
        }
    }
    int64_t start = clock_ns(CLOCK_MONOTONIC);
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-') {
            i++;
            continue;
        }
        rc |= replay_path(argv[i], &count);
    }
    int replayed = count;
    rng_state = seed ? seed : 1;
    long done = 0;
    for (; done < random_runs; done++) {
        if (max_seconds > 0 && (double)(clock_ns(CLOCK_MONOTONIC) - start) / 1e9 > max_seconds) {
            break;
        }
        uint8_t buf[256];
        size_t len = 1 + rng() % sizeof buf;
        for (size_t j = 0; j < len; j++) {
            buf[j] = (uint8_t)(rng() >> 56);
        }
        if (g_trace) {
            fprintf(stderr, "cq-fuzz: random input %ld\n", done);
        }
        LLVMFuzzerTestOneInput(buf, len);
    }
    double secs = (double)(clock_ns(CLOCK_MONOTONIC) - start) / 1e9;
    fprintf(stderr, "cq-fuzz: %d files (x%ld) and %ld random inputs (seed %llu) in %.2f s: %s\n",
            replayed, g_repeat, done, (unsigned long long)seed, secs,
            rc ? "errors" : "all invariants held");
    return rc;
}
#endif
