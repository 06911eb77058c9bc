/*
 * Counting semaphores.
 *
 *   value  the count; negative: that many waiters. One atomic on each side when it need not
 *          wait.
 *   wake   a futex word: the low 16 bits count wake-up tokens granted by signals to waiters and
 *          not yet taken, the high 16 bits count waiters asleep on it. A signal adds a token
 *          and learns in the same atomic operation whether anyone sleeps, so it never touches
 *          the semaphore after publishing the token (the waiter may then release it at once);
 *          it makes a system call only when somebody sleeps.
 * A waiter spins for a token before it sleeps; one that times out gives its decrement back
 * unless a signal already counted it, in which case it takes the token that signal grants.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include <cqueuecore/queue.h>
#include <cqueuecore/semaphore.h>

#include "platform/diag_internal.h"
#include "platform/object_internal.h"
#include "platform/parker_internal.h"
#include "queue/queue_internal.h"
#include "sync/wait_internal.h"

#define WAKE_TOKEN 1u
#define WAKE_TOKENS(w) ((w)&0xffffu)
#define WAKE_SLEEPER 0x10000u

struct cq_semaphore_s {
    struct cq__object obj;
    _Atomic int64_t value CQ_CACHE_ALIGNED;
    _Atomic uint32_t wake;
    int64_t orig;                          /* written once */
    struct cq_queue_s *_Atomic fin_target; /* cq_set_target_queue: the finalizer's queue */
};

static void semaphore_xref_dispose(struct cq__object *o);
static void semaphore_dispose(struct cq__object *o);

static void semaphore_set_target(struct cq__object *o, struct cq_queue_s *target)
{
    cq__finalizer_target_set(&((struct cq_semaphore_s *)o)->fin_target, target);
}

static const struct cq__class cq__semaphore_class = {
    .kind = CQ__KIND_SEMAPHORE,
    .name = "semaphore",
    .xref_dispose = semaphore_xref_dispose,
    .dispose = semaphore_dispose,
    .set_target = semaphore_set_target,
};
CQ__CLASS_REGISTER(cq__semaphore_class)

static inline struct cq_semaphore_s *sema_check(cq_semaphore_t s, const char *call)
{
    if (cq__unlikely(!cq__object_is(s, &cq__semaphore_class))) {
        /* (aborts; taking s back from it spares the fast paths a saved register) */
        s = (struct cq_semaphore_s *)cq__object_check(s, CQ__KIND_SEMAPHORE, call);
    }
    return s;
}

cq_semaphore_t cq_semaphore_create(intptr_t value)
{
    if (value < 0) {
        cq__report("cq_semaphore_create: negative initial value %" PRIdPTR " (returning NULL)",
                   value);
        errno = EINVAL;
        return NULL;
    }
    struct cq_semaphore_s *s = aligned_alloc(CQ_CACHELINE, sizeof *s);
    if (s == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    cq__object_init(&s->obj, &cq__semaphore_class);
    atomic_init(&s->value, value);
    atomic_init(&s->wake, 0);
    s->orig = value;
    atomic_init(&s->fin_target, NULL);
    return s;
}

static void semaphore_xref_dispose(struct cq__object *o)
{
    struct cq_semaphore_s *s = (struct cq_semaphore_s *)o;
    int64_t v = cq__load(&s->value, relaxed);
    if (cq__unlikely(v < s->orig)) {
        cq__crash("cq_release: semaphore %p released while in use (count %" PRId64
                  " is below its initial value %" PRId64 ")",
                  (void *)s, v, s->orig);
    }
}

static void semaphore_dispose(struct cq__object *o)
{
    cq_function_t fin = o->finalizer;
    void *ctx = o->context;
    /* relaxed: see cq__finalizer_run (the last reference drop orders the setters before us) */
    struct cq_queue_s *target = cq__load(&((struct cq_semaphore_s *)o)->fin_target, relaxed);
    o->cls = NULL;
    free(o);
    cq__finalizer_run(target, ctx, fin);
}

static CQ_NOINLINE void signal_overflow(struct cq_semaphore_s *s)
{
    cq__crash("cq_semaphore_signal: the count of %s overflowed", CQ_DESCRIBE(s));
}

intptr_t cq_semaphore_signal(cq_semaphore_t sema)
{
    struct cq_semaphore_s *s = sema_check(sema, "cq_semaphore_signal");
    /* release: pairs with the waiter's acquire decrement or token CAS */
    intptr_t old = cq__add(&s->value, 1, release);
    if (cq__likely(old >= 0)) {
        if (cq__unlikely(old == INTPTR_MAX)) {
            signal_overflow(s);
        }
        return 0;
    }
    /* A waiter counted on us: grant it a token. release: pairs with take_token's acquire. */
    uint32_t w = cq__add(&s->wake, WAKE_TOKEN, release);
    if (w >= WAKE_SLEEPER) {
        cq__futex_wake(&s->wake, 1); /* no access to *s: it may be gone already */
    }
    return 1;
}

/* Takes a token if one is there; `sleeping`: we are registered as a sleeper and leave. */
static inline bool take_token(struct cq_semaphore_s *s, bool sleeping)
{
    uint32_t w = cq__load(&s->wake, relaxed);
    while (WAKE_TOKENS(w) != 0) {
        uint32_t n = w - WAKE_TOKEN - (sleeping ? WAKE_SLEEPER : 0);
        /* acquire: pairs with the signaller's release */
        if (cq__cas_weak(&s->wake, &w, n, acquire)) {
            return true;
        }
    }
    return false;
}

/* Gives our decrement back after a timeout; false if a signal already counted us (then a token
 * is or will be granted, and we must take it). */
static bool undo_wait(struct cq_semaphore_s *s)
{
    int64_t v = cq__load(&s->value, relaxed);
    while (v < 0) {
        if (cq__cas_weak(&s->value, &v, v + 1, relaxed)) {
            return true;
        }
    }
    return false;
}

/* ---- the slow path of a wait (sync/wait_internal.h) ---- */

struct sema_wait {
    struct cq_semaphore_s *s;
    bool sleeper; /* counted in the wake word's sleepers */
};

static bool sema_done(void *ctx)
{
    struct sema_wait *w = ctx;
    if (take_token(w->s, w->sleeper)) {
        w->sleeper = false; /* take_token(.., true) no longer counts us */
        return true;
    }
    return false;
}

static bool sema_announce(void *ctx, _Atomic uint32_t **word, uint32_t *value)
{
    struct sema_wait *w = ctx;
    if (!w->sleeper) {
        cq__add(&w->s->wake, WAKE_SLEEPER, relaxed);
        w->sleeper = true;
        return false; /* a token granted before we counted ourselves: look again */
    }
    uint32_t v = cq__load(&w->s->wake, relaxed);
    if (WAKE_TOKENS(v) != 0) {
        return false;
    }
    *word = &w->s->wake;
    *value = v;
    return true;
}

static bool sema_timed_out(void *ctx)
{
    struct sema_wait *w = ctx;
    if (!undo_wait(w->s)) {
        return false; /* a signal counted us: its token is on the way */
    }
    if (w->sleeper) {
        cq__sub(&w->s->wake, WAKE_SLEEPER, relaxed);
        w->sleeper = false;
    }
    return true;
}

static const struct cq__wait_ops sema_wait_ops = {
    .done = sema_done, .announce = sema_announce, .timed_out = sema_timed_out};

static CQ_NOINLINE intptr_t wait_slow(struct cq_semaphore_s *s, cq_time_t timeout, bool behind)
{
    struct sema_wait w = {.s = s, .sleeper = false};
    return cq__wait_keeping(&sema_wait_ops, &w, timeout, false, behind);
}

/*
 * CQ_TIME_NOW takes a unit only if one is there, and never counts itself as a waiter. Counted
 * as one (the decrement below), a wait whose timeout undo found that a signal had counted it
 * had to wait for that signal's token, and another waiter counted meanwhile could take that
 * token first: the wait "without waiting" then waited for the next signal. Swift's
 * waitForSignal() retries with such a wait after listing its task, and the signal that would
 * have come was the one its own task makes after resuming: two tasks taking turns through two
 * semaphores stopped for good (found by a user-side probe, in most runs with other tasks
 * adding timing noise).
 */
static intptr_t try_take(struct cq_semaphore_s *s)
{
    int64_t v = cq__load(&s->value, relaxed);
    while (v > 0) {
        /* acquire: pairs with the release increment of the signal that gave us the resource */
        if (cq__cas_weak(&s->value, &v, v - 1, acquire)) {
            return 0;
        }
    }
    errno = ETIMEDOUT;
    return -1;
}

intptr_t cq_semaphore_wait(cq_semaphore_t sema, cq_time_t timeout)
{
    struct cq_semaphore_s *s = sema_check(sema, "cq_semaphore_wait");
    if (timeout == CQ_TIME_NOW) {
        return try_take(s);
    }
    /* acquire: pairs with the release increment of the signal that gave us the resource */
    int64_t before = cq__sub(&s->value, 1, acquire);
    if (cq__likely(before > 0)) {
        return 0;
    }
    /* before < 0: another waiter is ahead of us (CQ__CROWDED_WAITS, block.c) */
    return wait_slow(s, timeout, before < 0);
}
