/*
 * Introspection (include/cqueuecore/introspect.h): the live-source list, cq_introspect, the
 * human-readable dump, and the dump on a signal (CQ_DUMP_SIGNAL) written by the reactor.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cqueuecore/introspect.h>
#include <cqueuecore/runtime.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "events/source_internal.h"
#include "platform/diag_internal.h"
#include "platform/fork_internal.h"
#include "platform/rcu_internal.h"
#include "queue/queue_internal.h"
#include "scheduler/pool_internal.h"

/* ---- the live-source list ------------------------------------------------------------------ */

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cq_source_s *reg_head, *reg_tail;

/* CQ_DUMP_SIGNAL's watch (see below), or NULL: a forked child takes the inherited one off its
 * list, as the child's pool makes its own. Under reg_lock; set by cq__source_registry_add for
 * the source that dump_signal_start's thread is creating. */
static struct cq_source_s *dump_watch;
static __thread bool creating_dump_watch;

void cq__source_registry_add(struct cq_source_s *s)
{
    pthread_mutex_lock(&reg_lock);
    if (creating_dump_watch) {
        dump_watch = s; /* under the lock: a fork sees the source and this together */
    }
    s->reg_next = NULL;
    s->reg_prev = reg_tail;
    if (reg_tail) {
        reg_tail->reg_next = s;
    } else {
        reg_head = s;
    }
    reg_tail = s;
    pthread_mutex_unlock(&reg_lock);
}

/* Takes s off the list; reg_lock held. */
static void unlink_source(struct cq_source_s *s)
{
    if (s == dump_watch) {
        dump_watch = NULL;
    }
    if (s->reg_prev == NULL && reg_head != s) {
        return; /* not on the list (an inherited watch, taken off in a forked child) */
    }
    if (s->reg_prev) {
        s->reg_prev->reg_next = s->reg_next;
    } else {
        reg_head = s->reg_next;
    }
    if (s->reg_next) {
        s->reg_next->reg_prev = s->reg_prev;
    } else {
        reg_tail = s->reg_prev;
    }
    s->reg_prev = s->reg_next = NULL;
}

void cq__source_registry_remove(struct cq_source_s *s)
{
    pthread_mutex_lock(&reg_lock);
    unlink_source(s);
    pthread_mutex_unlock(&reg_lock);
}

static void describe_source(struct cq_source_s *s, struct cq_introspect_source *d)
{
    uint32_t st = cq__load(&s->state, relaxed);
    d->source = s;
    d->type = s->type->name;
    d->kind = (uint32_t)s->type->kind;
    d->handle = s->handle;
    d->mask = s->mask;
    d->suspend_count = (st & CQ__SS_SUSPEND_MASK) / CQ__SS_SUSPEND_ONE;
    d->activated = (st & CQ__SS_ACTIVATED) != 0;
    d->cancelled = (st & CQ__SS_CANCELED) != 0;
    /* the reactor's own flag, read racily: a hint, exact once the reactor is idle */
    d->registered = (st & CQ__SS_NO_REACTOR) ? d->activated && !d->cancelled
                                             : d->activated && !(st & CQ__SS_UNREGISTERED) &&
                                                   ((st & CQ__SS_REG_QUEUED) != 0);
    struct cq_queue_s *q = cq__load(&s->target, relaxed); /* see the RCU note in cq_introspect */
    d->target_label = q && q->label ? q->label : "";
}

/* ---- cq_introspect --------------------------------------------------------------------------- */

/* Set while this thread runs cq_introspect's visitors. They run with the runtime's locks held
 * (the queue registry's, the source list's): a visitor that called cq_introspect or
 * cq_introspect_dump (a dump when it sees something odd) waited for ever on a lock its own
 * thread held, from a queue or source visitor. */
static __thread bool visiting;

void cq_introspect(const struct cq_introspect_visitor *v, void *ctx)
{
    if (v == NULL) {
        return;
    }
    if (cq__unlikely(visiting)) {
        cq__crash("cq_introspect: called from inside one of its visitors, which run with the "
                  "runtime's locks held (call it, or cq_introspect_dump, after the walk)");
    }
    visiting = true;
    cq__pool_introspect(v->pool, v->worker, ctx);
    if (v->queue) {
        cq__queue_introspect(v->queue, ctx);
    }
    if (v->source) {
        struct cq_introspect_source d;
        /* A source's target may be swapped (cq_set_target_queue) and the old one freed after an
         * RCU grace period: read it inside a read-side section. */
        cq__rcu_read_lock();
        pthread_mutex_lock(&reg_lock);
        for (struct cq_source_s *s = reg_head; s; s = s->reg_next) {
            describe_source(s, &d);
            v->source(ctx, &d);
        }
        pthread_mutex_unlock(&reg_lock);
        cq__rcu_read_unlock();
    }
    visiting = false;
}

/* ---- the dump ------------------------------------------------------------------------------ */

static const char *queue_kind_name(cq_introspect_queue_kind_t k)
{
    switch (k) {
    case CQ_INTROSPECT_QUEUE_SERIAL:
        return "serial";
    case CQ_INTROSPECT_QUEUE_CONCURRENT:
        return "concurrent";
    case CQ_INTROSPECT_QUEUE_GLOBAL:
        return "global";
    case CQ_INTROSPECT_QUEUE_MAIN:
        return "main";
    }
    return "?";
}

static const char *worker_state_name(cq_introspect_worker_state_t s)
{
    switch (s) {
    case CQ_INTROSPECT_WORKER_RUNNING:
        return "running";
    case CQ_INTROSPECT_WORKER_SEARCHING:
        return "searching";
    case CQ_INTROSPECT_WORKER_PARKED:
        return "parked";
    case CQ_INTROSPECT_WORKER_IDLE:
        return "idle";
    case CQ_INTROSPECT_WORKER_RETIRED:
        return "retired";
    }
    return "?";
}

static const char *const band_names[] = {"normal", "express", "background"};

static void dump_pool(void *ctx, const struct cq_introspect_pool *p)
{
    FILE *out = ctx;
    struct cq_runtime_counters c;
    cq_runtime_get_counters(&c, sizeof c);
    fprintf(out,
            "pool: %u workers, %u threads (limit %u), %u blocked in runtime waits, %u spares "
            "parked, %u workers asleep in tasks\n",
            p->workers, p->threads, p->thread_limit, p->blocked, p->spares_parked,
            p->blocked_in_tasks);
    fprintf(out,
            "counters: tasks %llu (%llu outside workers), steals %llu, parks %llu, unparks %llu, "
            "spare threads %llu, thread-limit hits %llu, timer fires %llu, source events %llu\n",
            (unsigned long long)c.tasks_run, (unsigned long long)c.tasks_outside,
            (unsigned long long)c.steals, (unsigned long long)c.parks,
            (unsigned long long)c.unparks, (unsigned long long)c.spare_threads,
            (unsigned long long)c.thread_limit_hits, (unsigned long long)c.timer_fires,
            (unsigned long long)c.source_events);
    fprintf(out, "workers:\n");
}

static void dump_worker(void *ctx, const struct cq_introspect_worker *w)
{
    FILE *out = ctx;
    fprintf(out, "  #%-3u %-10s %-9s tid %-7d tasks %llu steals %llu parks %llu%s\n", w->index,
            w->band < 3 ? band_names[w->band] : "?", worker_state_name(w->state), (int)w->tid,
            (unsigned long long)w->tasks_run, (unsigned long long)w->steals,
            (unsigned long long)w->parks, w->extra ? " (extra)" : "");
}

struct dump_ctx {
    FILE *out;
    bool queues_header, sources_header;
};

static void dump_queue(void *ctx, const struct cq_introspect_queue *q)
{
    struct dump_ctx *d = ctx;
    if (!d->queues_header) {
        fprintf(d->out, "queues:\n");
        d->queues_header = true;
    }
    /* Labels are the application's: escaped, a label with a newline could forge dump lines. */
    char label[128];
    cq__escape_label(q->label, label, sizeof label);
    if (label[0] == '\0') {
        snprintf(label, sizeof label, "(no label) %p", q->queue); /* was blank */
    }
    if (q->kind == CQ_INTROSPECT_QUEUE_GLOBAL) {
        fprintf(d->out, "  %-32s global\n", label);
        return;
    }
    fprintf(d->out, "  %-32s %-10s", label, queue_kind_name(q->kind));
    fprintf(d->out, " running %u", q->running);
    if (q->queued) {
        fprintf(d->out, ", %u waiting", q->queued);
    }
    fprintf(d->out, "%s", q->inactive ? ", inactive" : "");
    if (q->suspend_count) {
        fprintf(d->out, ", suspended %u", q->suspend_count);
    }
    if (q->target_label[0]) {
        fprintf(d->out, " -> %s", cq__escape_label(q->target_label, label, sizeof label));
    } else if (q->kind != CQ_INTROSPECT_QUEUE_MAIN) {
        fprintf(d->out, " -> (no label)");
    }
    fprintf(d->out, "\n");
}

static void dump_source(void *ctx, const struct cq_introspect_source *s)
{
    struct dump_ctx *d = ctx;
    if (!d->sources_header) {
        fprintf(d->out, "sources:\n");
        d->sources_header = true;
    }
    char label[128];
    cq__escape_label(s->target_label, label, sizeof label);
    fprintf(d->out, "  %-7s handle %-6llu mask %#llx on %s%s%s%s", s->type,
            (unsigned long long)s->handle, (unsigned long long)s->mask,
            label[0] ? label : "(no label)", s->registered ? ", registered" : "",
            s->cancelled ? ", cancelled" : "", s->activated ? "" : ", not activated");
    if (s->suspend_count && s->activated) {
        fprintf(d->out, ", suspended %u", s->suspend_count);
    }
    fprintf(d->out, "\n");
}

static void dump_pool_ctx(void *ctx, const struct cq_introspect_pool *p)
{
    dump_pool(((struct dump_ctx *)ctx)->out, p);
}

static void dump_worker_ctx(void *ctx, const struct cq_introspect_worker *w)
{
    dump_worker(((struct dump_ctx *)ctx)->out, w);
}

static void dump_into(FILE *out)
{
    struct dump_ctx d = {out, false, false};
    fprintf(d.out, "---- SwiftQueues runtime, pid %d ----\n", (int)getpid());
    static const struct cq_introspect_visitor v = {
        .pool = dump_pool_ctx,
        .queue = dump_queue,
        .worker = dump_worker_ctx,
        .source = dump_source,
    };
    cq_introspect(&v, &d);
    fprintf(d.out, "---- end ----\n");
}

/* The dump, formatted in memory (NULL if memory is short). cq_introspect's visitors run under
 * the registries' locks and in an RCU read-side section: writing straight to a stream that
 * blocks (stderr into a pipe nobody reads, a terminal paused with Ctrl-S) held them, and every
 * cq_queue_create and cq_source_create waited for the reader (found by a user-side probe). */
static char *dump_to_memory(size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&buf, &n);
    if (m == NULL) {
        return NULL;
    }
    dump_into(m);
    if (fclose(m) != 0) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

void cq_introspect_dump(FILE *out)
{
    out = out ? out : stderr;
    size_t n;
    char *buf = dump_to_memory(&n);
    if (buf == NULL) {
        fputs("---- SwiftQueues runtime: no memory for the dump ----\n", out);
    } else {
        fwrite(buf, 1, n, out);
        free(buf);
    }
    fflush(out);
}

/* ---- CQ_DUMP_SIGNAL ----------------------------------------------------------------------------
 */

int cq__dump_signo;

/* A dump still being written by its thread: the next signal's is dropped (with a line). */
static atomic_bool dump_writing;

struct dump_write {
    char *buf;
    size_t len;
};

static void *dump_writer(void *arg)
{
    struct dump_write *w = arg;
    size_t off = 0;
    while (off < w->len) {
        ssize_t k = write(STDERR_FILENO, w->buf + off, w->len - off);
        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k <= 0) {
            break;
        }
        off += (size_t)k;
    }
    free(w->buf);
    free(w);
    /* release: pairs with the acquire exchange in cq__introspect_dump_signal (nothing of this
     * write is read there; the order keeps a dump from starting before this one is done) */
    atomic_store_explicit(&dump_writing, false, memory_order_release);
    return NULL;
}

/* A one-line notice from the reactor: written only if stderr takes it now. The dump before it
 * may be stuck on a stderr that nobody reads, and a notice written into that blocked the
 * reactor, every timer and source of the process with it, at the second signal (a user's
 * stalled-stderr probe signalled twice; the first dump's thread was still waiting). */
static void notice_if_room(const char *line, size_t len)
{
    struct pollfd p = {.fd = STDERR_FILENO, .events = POLLOUT};
    if (poll(&p, 1, 0) == 1 && (p.revents & POLLOUT)) {
        ssize_t ignored = write(STDERR_FILENO, line, len);
        (void)ignored;
    }
}

/*
 * On the reactor thread, when the signal arrives. The dump is formatted here, then written by
 * a thread of its own: the reactor writing it to a stderr that blocks stopped every timer and
 * source of the process until a reader came (and, with the registries' locks held, every
 * queue creation too). A signal while a dump is still being written gets one line instead,
 * if stderr takes it at once (notice_if_room).
 */
void cq__introspect_dump_signal(void)
{
    /* acquire: pairs with dump_writer's release store */
    if (atomic_exchange_explicit(&dump_writing, true, memory_order_acquire)) {
        static const char busy[] = "---- SwiftQueues runtime: a dump is still being written; "
                                   "this signal's is skipped ----\n";
        notice_if_room(busy, sizeof busy - 1);
        return;
    }
    struct dump_write *w = malloc(sizeof *w);
    if (w != NULL) {
        w->buf = dump_to_memory(&w->len);
    }
    if (w == NULL || w->buf == NULL) {
        free(w);
        atomic_store_explicit(&dump_writing, false, memory_order_relaxed);
        static const char nomem[] = "---- SwiftQueues runtime: no memory for the dump ----\n";
        notice_if_room(nomem, sizeof nomem - 1);
        return;
    }
    pthread_attr_t attr;
    pthread_t t;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the writer takes no signal of the process */
    bool started = pthread_attr_init(&attr) == 0 &&
                   pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
                   pthread_create(&t, &attr, dump_writer, w) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (!started) {
        dump_writer(w); /* no thread to be had: here, as before */
    }
}

/* A run of decimal digits and nothing else (no sign, no blank); saturates at INT_MAX. */
static bool parse_digits(const char *v, int *out)
{
    if (*v == '\0') {
        return false;
    }
    long n = 0;
    for (; *v; v++) {
        if (*v < '0' || *v > '9') {
            return false;
        }
        n = n * 10 + (*v - '0');
        if (n > INT_MAX) {
            n = INT_MAX;
        }
    }
    *out = (int)n;
    return true;
}

/*
 * "SIGUSR2", "USR2", "12"; "RTMIN", "RTMIN+n", "RTMAX", "RTMAX-n" (each with or without "SIG",
 * names in any case) -> the number, or 0 if not a signal name or number. A number comes back as
 * it is (see watchable); a name is a standard signal's; RTMIN+n and RTMAX-n must land in
 * SIGRTMIN..SIGRTMAX, which the C library sets at run time (glibc keeps 32 and 33 for itself).
 */
static int parse_signal(const char *v)
{
    if (strncasecmp(v, "SIG", 3) == 0) {
        v += 3;
    }
    int n;
    if (parse_digits(v, &n)) {
        return n;
    }
    bool min = strncasecmp(v, "RTMIN", 5) == 0;
    if (min || strncasecmp(v, "RTMAX", 5) == 0) {
        const char *off = v + 5;
        if (*off == '\0') {
            return min ? SIGRTMIN : SIGRTMAX;
        }
        if (*off != (min ? '+' : '-') || !parse_digits(off + 1, &n) || n > SIGRTMAX - SIGRTMIN) {
            return 0;
        }
        return min ? SIGRTMIN + n : SIGRTMAX - n;
    }
    for (int s = 1; s < SIGRTMIN; s++) {
        const char *name = sigabbrev_np(s);
        if (name && strcasecmp(name, v) == 0) {
            return s;
        }
    }
    return 0;
}

/* true if the runtime can watch signal `signo` (> 0); else false with why not in `why`. */
static bool watchable(int signo, char *why, size_t size)
{
    if (signo == SIGKILL || signo == SIGSTOP) {
        snprintf(why, size, "SIGKILL and SIGSTOP cannot be caught");
    } else if (signo == SIGSEGV || signo == SIGBUS || signo == SIGFPE || signo == SIGILL ||
               signo == SIGTRAP || signo == SIGSYS) {
        /* A fault's signal, watched, returned to the faulting instruction, which faulted
         * again: a NULL dereference never ended the process and wrote 8,000 dumps a second
         * (found by a user-side probe). */
        snprintf(why, size,
                 "a fault signal (SEGV, BUS, FPE, ILL, TRAP, SYS) must end the "
                 "process");
    } else if (signo < SIGRTMIN && sigabbrev_np(signo) == NULL) {
        snprintf(why, size,
                 "the C library keeps it for itself: real-time signals are SIGRTMIN %d to "
                 "SIGRTMAX %d here",
                 SIGRTMIN, SIGRTMAX);
    } else if (signo > SIGRTMAX) {
        snprintf(why, size, "above SIGRTMAX, %d here", SIGRTMAX);
    } else {
        return true;
    }
    return false;
}

/* After the pool first starts (with the first queue: cq__pool_start_with_queues): watch the
 * signal with a SIGNAL source (no handler: the reactor
 * itself writes the dump when the signal arrives, see reactor_signal.c). In a forked child, again
 * when the child's pool starts (the inherited source belongs to the parent's reactor). */
static void dump_signal_start(void)
{
    creating_dump_watch = true;
    cq_source_t s =
        cq_source_create(cq_source_type(CQ_SOURCE_KIND_SIGNAL), (uintptr_t)cq__dump_signo, 0, NULL);
    creating_dump_watch = false;
    if (s == NULL) {
        cq__report("CQ_DUMP_SIGNAL: cannot watch signal %d", cq__dump_signo);
        return;
    }
    cq_activate(s); /* kept for the life of the process */
}

CQ_EARLY_INIT static void dump_signal_init(void)
{
    const char *v = getenv("CQ_DUMP_SIGNAL");
    if (v == NULL || *v == '\0') {
        return;
    }
    int signo = parse_signal(v);
    if (signo <= 0) {
        cq__report("CQ_DUMP_SIGNAL=%s: not a signal name or number; no dump on a signal", v);
        return;
    }
    char why[128];
    if (!watchable(signo, why, sizeof why)) {
        cq__report("CQ_DUMP_SIGNAL=%s: cannot watch that signal (%s); no dump on a signal", v, why);
        return;
    }
    cq__dump_signo = signo;
    /* Until the reactor watches it, the signal must not end the process (SIGUSR1/2's default):
     * ignore it meanwhile (the watch takes an ignored signal over as a default one). */
    struct sigaction old;
    if (sigaction(cq__dump_signo, NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
        old.sa_handler == SIG_DFL) {
        signal(cq__dump_signo, SIG_IGN);
    }
    cq__pool_on_start_register(dump_signal_start);
    cq__pool_start_with_queues = true;
}

static void registry_fork_prepare(void)
{
    pthread_mutex_lock(&reg_lock);
}

static void registry_fork_parent(void)
{
    pthread_mutex_unlock(&reg_lock);
}

/* The child keeps the parent's sources on its list (abandoned, as their registrations are),
 * except the dump's own: the child's pool watches the signal with a new one when it starts, and
 * the list must show one watch, not one more per fork. */
static void registry_fork_child(void)
{
    if (dump_watch) {
        unlink_source(dump_watch); /* and dump_watch = NULL */
    }
    pthread_mutex_unlock(&reg_lock);
}

CQ__FORK_REGISTER(source_registry, CQ__FORK_RANK_REGISTRY, registry_fork_prepare,
                  registry_fork_parent, registry_fork_child)
