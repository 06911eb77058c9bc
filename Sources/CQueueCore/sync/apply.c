/*
 * cq_apply_f. The range is cut into chunks (about 16 per worker) taken with one atomic add
 * each; the caller and up to workers-1 helper items take chunks until none are left. The
 * context is reference counted: helpers that start after the caller has returned (their
 * workers were busy) find no chunk and just drop their reference, so the caller never waits
 * for a helper that has not started — only for chunks in progress.
 */
#include <stdlib.h>

#include <cqueuecore/apply.h>

#include "platform/diag_internal.h"
#include "platform/parker_internal.h"
#include "queue/queue_internal.h"
#include "scheduler/pool_internal.h"
#include "scheduler/task_internal.h"
#include "sync/apply_internal.h"

/* The iterations of the applies whose chunks this thread is running, multiplied (saturating);
 * 0 outside any. An apply inside another shares the workers the outer one already spreads
 * over: with W workers and N enclosing iterations it uses W / N of them, and runs on the
 * calling thread alone once that is 1 (as libdispatch). Each nested apply pushed a helper task
 * that found nothing left when it ran, long after, holding ~240 bytes until then: 1M outer
 * iterations of an apply of 10 grew the process by 190 MB (libdispatch: 3 MB). */
static __thread size_t enclosing_iterations;

static size_t times(size_t a, size_t b)
{
    size_t r;
    return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

struct apply {
    _Atomic size_t next CQ_CACHE_ALIGNED; /* first iteration of the next chunk */
    _Atomic size_t done CQ_CACHE_ALIGNED; /* iterations completed */
    _Atomic uint32_t refs;                /* the caller and every helper not yet finished */
    struct cq__event finished;            /* signalled by whoever completes the last chunk */
    size_t iterations;
    size_t chunk;
    size_t nesting; /* enclosing_iterations while its chunks run (this apply's included) */
    cq_apply_function_t function; /* one of the two is set */
    cq_apply_range_function_t ranges;
    void *context;
    struct cq_queue_s *queue; /* where helpers go (the caller is inside the apply meanwhile) */
};

/*
 * The chunk of iterations the calling thread runs, innermost apply first: `end` shrinks when a
 * wait inside iteration `i` hands the rest of the chunk to a new helper (cq__apply_before_sleep).
 * Chunks (about 16 per worker) make small bodies cheap, but they put later iterations behind
 * earlier ones on one thread: an iteration that waited for a later one of its chunk (a
 * semaphore that one signals; 64 iterations on 2 CPUs, chunks of 2) waited for ever, where
 * libdispatch, which hands out iterations one at a time, returns.
 */
struct apply_frame {
    struct apply *a;
    size_t i, end;
    struct apply_frame *outer;
};
static __thread struct apply_frame *apply_frame;

/* Runs iterations [start, end) with whichever function the caller gave; returns how many ran
 * here (fewer than end - start when a wait handed the rest to a helper). */
static size_t run_chunk(struct apply *a, size_t start, size_t end)
{
    if (a->ranges) {
        a->ranges(a->context, start, end);
        return end - start;
    }
    cq_apply_function_t function = a->function;
    void *context = a->context;
    struct apply_frame f = {a, start, end, apply_frame};
    apply_frame = &f;
    /* f.i in memory (a store an iteration) and f.end read again after each call: the hook may
     * run inside any of them */
    for (size_t i = start; i < f.end; i++) {
        f.i = i;
        function(context, i);
    }
    apply_frame = f.outer;
    return f.end - start;
}

/* Iterations [start, end) on the calling thread alone (an apply that runs serially). */
static void run_range(cq_apply_function_t function, cq_apply_range_function_t ranges, void *context,
                      size_t start, size_t end)
{
    if (ranges) {
        ranges(context, start, end);
        return;
    }
    for (size_t i = start; i < end; i++) {
        function(context, i);
    }
}

/* `ran` iterations are done. */
static void complete(struct apply *a, size_t ran)
{
    /* acq_rel: our iterations happen-before whoever sees the total (then the caller); pairs
     * with the other helpers' adds; the one that completes the total acquires them all */
    if (cq__add(&a->done, ran, acq_rel) + ran == a->iterations) {
        cq__event_signal(&a->finished);
    }
}

static void participate(struct apply *a)
{
    const size_t n = a->iterations, chunk = a->chunk;
    size_t saved = enclosing_iterations;
    enclosing_iterations = a->nesting;
    for (;;) {
        size_t start = cq__add(&a->next, chunk, relaxed);
        if (start >= n) {
            enclosing_iterations = saved;
            return;
        }
        complete(a, run_chunk(a, start, start + chunk < n ? start + chunk : n));
    }
}

static void apply_release(struct apply *a)
{
    /* pairs with the other reference drops (the last one acquires them all) */
    if (cq__sub(&a->refs, 1, acq_rel) == 1) {
        free(a);
    }
}

/* A helper item: one that takes chunks, or (inline_words[1] != 0) one that first runs the
 * range [inline_words[0], inline_words[1]) a waiting iteration left. */
static void push_helper(struct apply *a, size_t from, size_t to)
{
    struct cq__task *t = cq__task_alloc();
    cq__item_init(&t->item, CQ__ITEM_APPLY, 0);
    t->context = a;
    t->inline_words[0] = from;
    t->inline_words[1] = to;
    cq__queue_push(a->queue, &t->item, CQ__PUSH_TAIL);
}

void cq__apply_before_sleep(void)
{
    struct apply_frame *f = apply_frame;
    if (cq__likely(f == NULL) || f->i + 1 >= f->end) {
        return;
    }
    size_t from = f->i + 1, to = f->end;
    f->end = from;                    /* this thread stops after iteration i */
    cq__add(&f->a->refs, 1, relaxed); /* the helper's; the caller's keeps `a` alive until then */
    push_helper(f->a, from, to);
}

void cq__apply_invoke(struct cq__item *it)
{
    struct cq__task *t = (struct cq__task *)it;
    struct apply *a = t->context;
    size_t from = (size_t)t->inline_words[0], to = (size_t)t->inline_words[1];
    cq__task_free(t);
    if (to != 0) { /* a range a waiting iteration left */
        size_t saved = enclosing_iterations;
        enclosing_iterations = a->nesting;
        complete(a, run_chunk(a, from, to));
        enclosing_iterations = saved;
    }
    participate(a);
    apply_release(a);
}

/* Whether some queue along q's chain runs one task at a time (q's chain is held: stable). */
static bool chain_is_serial(struct cq_queue_s *q)
{
    for (; q; q = cq__queue_target(q)) {
        if (cq__queue_is_exclusive(q)) {
            return true;
        }
    }
    return false;
}

struct apply_start {
    size_t iterations;
    cq_apply_function_t function;
    cq_apply_range_function_t ranges;
    void *context;
    struct cq_queue_s *queue;
    struct apply *shared; /* out: NULL if it ran serially */
};

/* Runs inside a sync onto the queue, so the caller takes part "on" it and holds its chain. */
static void apply_on_queue(void *ctx)
{
    struct apply_start *st = ctx;
    const size_t n = st->iterations;
    uint32_t workers = cq__pool_workers();
    size_t enclosing = enclosing_iterations;
    if (enclosing > 0) {
        workers = enclosing < workers ? workers / (uint32_t)enclosing : 1;
    }
    size_t nesting = times(enclosing ? enclosing : 1, n);
    if (n == 1 || workers == 1 || chain_is_serial(st->queue)) {
        enclosing_iterations = nesting;
        run_range(st->function, st->ranges, st->context, 0, n);
        enclosing_iterations = enclosing;
        return;
    }
    size_t pieces = (size_t)workers * 16;
    size_t chunk = n / pieces ? n / pieces : 1;
    size_t chunks = (n + chunk - 1) / chunk;
    uint32_t helpers = workers - 1;
    if (helpers > chunks - 1) {
        helpers = (uint32_t)(chunks - 1);
    }
    struct apply *a = aligned_alloc(CQ_CACHELINE, sizeof *a);
    if (a == NULL) {
        cq__crash("cq_apply_f: out of memory");
    }
    atomic_init(&a->next, 0);
    atomic_init(&a->done, 0);
    atomic_init(&a->refs, helpers + 1);
    cq__event_init(&a->finished);
    a->iterations = n;
    a->chunk = chunk;
    a->nesting = nesting;
    a->function = st->function;
    a->ranges = st->ranges;
    a->context = st->context;
    a->queue = st->queue;
    for (uint32_t h = 0; h < helpers; h++) {
        push_helper(a, 0, 0);
    }
    participate(a);
    st->shared = a;
}

static void apply(size_t iterations, cq_queue_t q, void *ctx, cq_apply_function_t fn,
                  cq_apply_range_function_t ranges, const char *call)
{
    cq__queue_check(q, call);
    if (fn == NULL && ranges == NULL) {
        cq__crash("%s: NULL function", call);
    }
    if (iterations == 0) {
        return;
    }
    if (cq__unlikely(iterations > PTRDIFF_MAX)) {
        cq__crash("%s: %zu iterations is too many (a negative count converted to size_t?)", call,
                  iterations);
    }
    struct apply_start st = {iterations, fn, ranges, ctx, q, NULL};
    cq__sync_named(q, &st, apply_on_queue, call);
    if (st.shared) {
        /* Only chunks in progress on helpers are waited for; helpers that never started
         * find nothing left and drop their reference. */
        cq__event_wait(&st.shared->finished);
        apply_release(st.shared);
    }
}

void cq_apply_f(size_t iterations, cq_queue_t q, void *ctx, cq_apply_function_t fn)
{
    apply(iterations, q, ctx, fn, NULL, "cq_apply_f");
}

void cq_apply_ranges_f(size_t iterations, cq_queue_t q, void *ctx, cq_apply_range_function_t ranges)
{
    apply(iterations, q, ctx, NULL, ranges, "cq_apply_ranges_f");
}

CQ__ITEM_KIND_REGISTER(CQ__ITEM_APPLY, cq__apply_invoke)
