/*
 * Dispatch sources: creation, handlers, the handler item, suspend/resume, cancel (see
 * source_internal.h for the state word, reactor.c and timer.c for where events come from).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sockios.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "events/reactor_command_internal.h"
#include "events/reactor_internal.h"
#include "events/source_internal.h"
#include "platform/diag_internal.h"
#include "platform/parker_internal.h"
#include "platform/rcu_internal.h"
#include "queue/queue_internal.h"
#include "scheduler/pool_internal.h"

#define VNODE_ALL                                                                                  \
    (CQ_VNODE_DELETE | CQ_VNODE_WRITE | CQ_VNODE_EXTEND | CQ_VNODE_ATTRIB | CQ_VNODE_LINK |        \
     CQ_VNODE_RENAME | CQ_VNODE_REVOKE)
#define PROC_ALL (CQ_PROC_EXIT | CQ_PROC_FORK | CQ_PROC_EXEC | CQ_PROC_SIGNAL)

const struct cq_source_type_s cq_source_type_timer_s = {CQ_SOURCE_KIND_TIMER, "timer", 0};
const struct cq_source_type_s cq_source_type_signal_s = {CQ_SOURCE_KIND_SIGNAL, "signal", 0};
const struct cq_source_type_s cq_source_type_read_s = {CQ_SOURCE_KIND_READ, "read", 0};
const struct cq_source_type_s cq_source_type_write_s = {CQ_SOURCE_KIND_WRITE, "write", 0};
const struct cq_source_type_s cq_source_type_proc_s = {CQ_SOURCE_KIND_PROC, "proc", PROC_ALL};
const struct cq_source_type_s cq_source_type_vnode_s = {CQ_SOURCE_KIND_VNODE, "vnode", VNODE_ALL};
const struct cq_source_type_s cq_source_type_data_add_s = {CQ_SOURCE_KIND_DATA_ADD, "data-add", 0};
const struct cq_source_type_s cq_source_type_data_or_s = {CQ_SOURCE_KIND_DATA_OR, "data-or", 0};
const struct cq_source_type_s cq_source_type_data_replace_s = {CQ_SOURCE_KIND_DATA_REPLACE,
                                                               "data-replace", 0};

static const struct cq_source_type_s *const types[] = {
    NULL,
    &cq_source_type_timer_s,
    &cq_source_type_signal_s,
    &cq_source_type_read_s,
    &cq_source_type_write_s,
    &cq_source_type_proc_s,
    &cq_source_type_vnode_s,
    &cq_source_type_data_add_s,
    &cq_source_type_data_or_s,
    &cq_source_type_data_replace_s,
};

cq_source_type_t cq_source_type(cq_source_kind_t kind)
{
    return kind >= 1 && kind < sizeof types / sizeof types[0] ? types[kind] : NULL;
}

static bool is_data(const struct cq_source_type_s *t)
{
    return t->kind >= CQ_SOURCE_KIND_DATA_ADD;
}

static void source_xref_dispose(struct cq__object *o);
static void source_dispose(struct cq__object *o);
static void source_suspend(struct cq__object *o);
static void source_resume(struct cq__object *o);
static uint32_t source_suspended(const struct cq__object *o);
static void source_set_target(struct cq__object *o, struct cq_queue_s *q);

const struct cq__class cq__source_class = {
    .kind = CQ__KIND_SOURCE,
    .name = "source",
    .xref_dispose = source_xref_dispose,
    .dispose = source_dispose,
    .suspend = source_suspend,
    .resume = source_resume,
    .suspended = source_suspended,
    .set_target = source_set_target,
};
CQ__CLASS_REGISTER(cq__source_class)

#define source_check cq__source_check

void cq__source_check_slow(cq_source_t s, const char *call)
{
    if (!cq__object_is(s, &cq__source_class)) {
        cq__object_check(s, CQ__KIND_SOURCE, call); /* aborts */
    }
    cq__crash("%s: source %p was created before the process forked; a source belongs to the "
              "reactor of the process that created it (create sources in the child)",
              call, (void *)s);
}

/* ---- creation ---------------------------------------------------------------------------- */

static cq_source_t fail(int err)
{
    errno = err;
    return NULL;
}

cq_source_t cq_source_create(cq_source_type_t type, uintptr_t handle, uintptr_t mask,
                             cq_queue_t queue)
{
    cq__rcu_throttle(); /* sources are freed after a grace period: rcu_internal.h */
    bool known = false;
    for (size_t i = 1; i < sizeof types / sizeof types[0]; i++) {
        known |= type == types[i];
    }
    if (!known || (mask & ~type->mask_allowed)) {
        return fail(EINVAL);
    }
    if (!is_data(type)) {
        int err = cq__reactor_ensure_started();
        if (err) {
            return fail(err);
        }
    }
    int fd = -1, wd = -1;
    switch (type->kind) {
    case CQ_SOURCE_KIND_SIGNAL:
        /* 32 up to SIGRTMIN are the C library's own (glibc: thread cancellation and set*id
         * broadcasts): it never lets them be blocked or caught, so a source on one would
         * never fire. */
        if (mask != 0 || handle < 1 || handle >= _NSIG || handle == SIGKILL || handle == SIGSTOP ||
            (handle >= 32 && handle < (uintptr_t)SIGRTMIN)) {
            return fail(EINVAL);
        }
        break;
    case CQ_SOURCE_KIND_READ:
    case CQ_SOURCE_KIND_WRITE:
        if (handle > INT_MAX || fcntl((int)handle, F_GETFD) < 0) {
            return fail(EBADF);
        }
        break;
    case CQ_SOURCE_KIND_PROC:
        if (mask == 0) {
            return fail(EINVAL);
        }
        if (handle == 0 || handle > INT_MAX) {
            return fail(ESRCH);
        }
        fd = (int)syscall(SYS_pidfd_open, (pid_t)handle, 0); /* close-on-exec by default */
        if (fd < 0) {
            return NULL; /* ESRCH, EMFILE, ... as the kernel said */
        }
        break;
    case CQ_SOURCE_KIND_VNODE:
        if (mask == 0) {
            return fail(EINVAL);
        }
        if (handle > INT_MAX || fcntl((int)handle, F_GETFD) < 0) {
            return fail(EBADF);
        }
        wd = cq__vnode_watch((int)handle, mask);
        if (wd < 0) {
            return NULL;
        }
        break;
    default: /* TIMER and DATA_* take no handle */
        if (handle != 0 || mask != 0) {
            return fail(EINVAL);
        }
        break;
    }
    struct cq_queue_s *q = queue ? cq__queue_check(queue, "cq_source_create")
                                 : cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0);
    struct cq_source_s *s = calloc(1, sizeof *s);
    if (s == NULL) {
        if (fd >= 0) {
            close(fd);
        }
        return fail(ENOMEM);
    }
    cq__object_init(&s->obj, &cq__source_class);
    atomic_init(&s->obj.inactive, 1); /* created suspended: the first resume activates it */
    cq__item_init(&s->item, CQ__ITEM_SOURCE, 0);
    cq__item_init(&s->cmd_item, 0, 0);
    s->type = type;
    s->handle = handle;
    s->mask = mask;
    s->fd = fd;
    s->wd = wd;
    s->slot = UINT32_MAX;
    s->fork_gen = cq__fork_gen;
    atomic_init(&s->state, CQ__SS_SUSPEND_ONE); /* created suspended */
    cq__ref_retain(&q->obj);
    cq__queue_mark_targeted(q);
    atomic_init(&s->target, q);
    cq__source_registry_add(s);
    return s;
}

/* (handlers: source_handler.c) */

/* ---- scheduling -------------------------------------------------------------------------- */

/* Whether the handler item has something to do in state `st`. */
static bool wants_run(struct cq_source_s *s, uint32_t st)
{
    if ((st & (CQ__SS_SCHEDULED | CQ__SS_SUSPEND_MASK)) || !(st & CQ__SS_ACTIVATED)) {
        return false;
    }
    if (st & CQ__SS_CANCELED) {
        return (st & CQ__SS_UNREGISTERED) && !(st & CQ__SS_CANCEL_DONE);
    }
    return (st & (CQ__SS_FIRED | CQ__SS_REGISTERED_NEW)) || cq__load(&s->pending, relaxed) != 0;
}

static void push_handler(struct cq_source_s *s)
{
    /* The target may be swapped meanwhile; RCU keeps the one we read alive while we push. */
    cq__rcu_read_lock();
    /* pairs with the acq_rel exchange in cq__source_set_target (RCU keeps the old one alive) */
    struct cq_queue_s *q = cq__load(&s->target, acquire);
    /* The item's flags are ours to write: it is pushed again only once it has run */
    s->item.flags = cq__load(&s->barrier, relaxed) ? CQ__ITEM_BARRIER : 0;
    cq__queue_push(q, &s->item, CQ__PUSH_TAIL);
    cq__rcu_read_unlock();
}

/* Schedules the handler item if it has something to do and nobody holds it. */
static void source_wake(struct cq_source_s *s)
{
    /* seq_cst: a merge of pending then this load, against the handler item's release of
     * SCHEDULED then its load of pending (cq__source_invoke): one of the two sees the other. Pairs
     * with the handler item's seq_cst CAS clearing SCHEDULED then its load of pending */
    uint32_t st = cq__load(&s->state, seq_cst);
    for (;;) {
        if (!wants_run(s, st)) {
            return;
        }
        /* acq_rel: our merge of pending / FIRED is visible to the item that runs; pairs with the
         * handler item's acquire loads of state in cq__source_invoke */
        if (cq__cas_weak(&s->state, &st, st | CQ__SS_SCHEDULED, acq_rel)) {
            break;
        }
    }
    cq__ref_retain(&s->obj); /* the handler item's reference */
    push_handler(s);
}

void cq__source_event(struct cq_source_s *s, uintptr_t value, bool fired)
{
    switch (s->type->kind) {
    case CQ_SOURCE_KIND_DATA_OR:
    case CQ_SOURCE_KIND_PROC:
    case CQ_SOURCE_KIND_VNODE:
        if (value) {
            /* pairs with the handler item's seq_cst CAS clearing SCHEDULED, then its load of
             * pending (design.md §10) */
            cq__or(&s->pending, value, seq_cst);
        }
        break;
    case CQ_SOURCE_KIND_DATA_REPLACE:
        /* pairs with the handler item's seq_cst CAS clearing SCHEDULED, then its load of pending
         * (design.md §10) */
        cq__store(&s->pending, value, seq_cst);
        break;
    default: /* counts: timers, signals, DATA_ADD */
        if (value) {
            /* pairs with the handler item's seq_cst CAS clearing SCHEDULED, then its load of
             * pending (design.md §10) */
            cq__add(&s->pending, value, seq_cst);
        }
        break;
    }
    if (fired) {
        /* pairs with the handler item's acquire and of FIRED in cq__source_invoke */
        cq__or(&s->state, CQ__SS_FIRED, release);
    }
    source_wake(s);
}

static bool still_ready(struct cq_source_s *s);

/* READ: bytes available, 0 at the end of file, 1 if the descriptor cannot tell and is readable
 * (FIONREAD fails on a listening socket, whose readiness is a pending connection, and on an
 * eventfd, timerfd or signalfd: libdispatch reports 1 for these too, where 0 would read as the
 * end of file; one no longer readable, whose event is stale, gives 0, which the caller drops);
 * WRITE: room to write (1 if unknown). */
static uintptr_t readiness_data(struct cq_source_s *s)
{
    int fd = (int)s->handle;
    int n = 0;
    if (s->type->kind == CQ_SOURCE_KIND_READ) {
        if (ioctl(fd, FIONREAD, &n) == 0) {
            return n > 0 ? (uintptr_t)n : 0;
        }
        return still_ready(s) ? 1 : 0; /* an event whose readiness went is no event */
    }
    int size = 0, queued = 0;
    socklen_t len = sizeof size;
    if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, &len) == 0 &&
        ioctl(fd, SIOCOUTQ, &queued) == 0) {
        return size > queued ? (uintptr_t)(size - queued) : 1;
    }
    int pipe_size = fcntl(fd, F_GETPIPE_SZ);
    if (pipe_size > 0 && ioctl(fd, FIONREAD, &queued) == 0) {
        return pipe_size > queued ? (uintptr_t)(pipe_size - queued) : 1;
    }
    return 1;
}

/* A regular file or a directory: epoll refuses it, and it counts as always ready. */
static bool always_ready(struct cq_source_s *s)
{
    struct stat st;
    return fstat((int)s->handle, &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode));
}

/* The descriptor's poll(2) state for the source's direction: 0 if not ready (or invalid). */
static short ready_events(struct cq_source_s *s)
{
    struct pollfd p = {(int)s->handle, s->type->kind == CQ_SOURCE_KIND_READ ? POLLIN : POLLOUT, 0};
    return poll(&p, 1, 0) == 1 && !(p.revents & POLLNVAL) ? p.revents : 0;
}

/* Is the descriptor still ready? (Edge-triggered epoll reports only changes.) */
static bool still_ready(struct cq_source_s *s)
{
    return ready_events(s) != 0;
}

/* A READ source found no byte to read (FIONREAD 0): the end of file (data 0), bytes that came
 * meanwhile (their count), or nothing at all, when the readiness this event reported went while
 * it waited (the program read the bytes elsewhere, e.g. while the source was suspended): then
 * no event, as data 0 would read as the end of file (*fired becomes false). Bytes that arrive
 * between the FIONREAD and the poll made a stale event report 0 with data waiting (1-2 times in
 * 77k sources): so the count is taken again once the poll says the descriptor is readable. */
static uintptr_t read_end_or_data(struct cq_source_s *s, bool *fired)
{
    if (!still_ready(s)) {
        *fired = false;
        return 0;
    }
    /* Count again: bytes that came meanwhile, or still 0: the end (a hang-up, or a regular
     * file's end), or a zero-length datagram */
    return readiness_data(s);
}

/* Puts back what the handler item took for an event handler it will not call now: the
 * resume (or the item's own finish, which looks at pending again) schedules it. */
static void give_back(struct cq_source_s *s, bool fired, uintptr_t data)
{
    if (data) {
        switch (s->type->kind) {
        case CQ_SOURCE_KIND_DATA_OR:
        case CQ_SOURCE_KIND_PROC:
        case CQ_SOURCE_KIND_VNODE:
            /* pairs with the next handler item's acquire exchange of pending */
            cq__or(&s->pending, data, release);
            break;
        case CQ_SOURCE_KIND_DATA_REPLACE: {
            /* a value merged since replaced ours: it stays. Pairs with the next handler item's
             * acquire exchange of pending */
            uintptr_t none = 0;
            cq__cas(&s->pending, &none, data, release);
            break;
        }
        default: /* counts */
            /* pairs with the next handler item's acquire exchange of pending */
            cq__add(&s->pending, data, release);
            break;
        }
    }
    if (fired) {
        /* pairs with the next handler item's acquire and of FIRED */
        cq__or(&s->state, CQ__SS_FIRED, release);
    }
}

void cq__source_invoke(struct cq_source_s *s)
{
    cq__source_free_retired(s);
    /* pairs with the acq_rel or's of CANCELED / UNREGISTERED / REGISTERED_NEW and the release or of
     * FIRED (cq__source_event) */
    uint32_t st = cq__load(&s->state, acquire);
    if (st & CQ__SS_SUSPEND_MASK) {
        /* Suspended after the item was queued: no handler starts once cq_suspend returned.
         * What arrived stays in pending / FIRED; the resume schedules the item again. */
        goto finish;
    }
    if (st & CQ__SS_REGISTERED_NEW) {
        /* REGISTERED_NEW becomes REG_DONE in one step: a registration handler set from now on
         * makes itself due (cq__source_registration_handler_set), and clearing REGISTERED_NEW
         * apart could erase its mark. seq_cst: before our load of the handler; pairs with the
         * setter's seq_cst exchange and load of the state */
        while (!cq__cas_weak(&s->state, &st, (st | CQ__SS_REG_DONE) & ~CQ__SS_REGISTERED_NEW,
                             seq_cst)) {
        }
        if (st & CQ__SS_CANCELED) {
            cq__source_drop_handler(s, CQ__HANDLER_REGISTRATION);
        } else {
            /* Each record runs at most once: dropped after its call unless a new one replaced
             * it meanwhile (which is due in its turn). */
            struct cq__handler *h = cq__source_call_registration(s);
            /* The handler may have cancelled or suspended the source: no event handler
             * starts after either returned. Pairs with the acq_rel or's of CANCELED / UNREGISTERED
             * / REGISTERED_NEW and the release or of FIRED (cq__source_event) */
            st = cq__load(&s->state, acquire);
            cq__source_drop_handler_if(s, CQ__HANDLER_REGISTRATION, h);
            if (st & CQ__SS_SUSPEND_MASK) {
                goto finish;
            }
        }
    }
    bool io = s->type->kind == CQ_SOURCE_KIND_READ || s->type->kind == CQ_SOURCE_KIND_WRITE;
    if (!(st & CQ__SS_CANCELED)) {
        /* pairs with the release or of FIRED in cq__source_event */
        bool fired = cq__and(&s->state, ~CQ__SS_FIRED, acquire) & CQ__SS_FIRED;
        /* acquire: pairs with the release merges of the events */
        uintptr_t data = cq__xchg(&s->pending, 0, acquire);
        /* Suspended since the look above? What we took may have been merged after cq_suspend
         * returned (the suspending thread's merges happen after its suspend: taking one of them
         * makes the suspend visible here), so it waits for the resume. Acquire: pairs with the
         * merges' seq_cst RMWs on pending, whose thread suspended before them. */
        if ((fired || data) && (cq__load(&s->state, acquire) & CQ__SS_SUSPEND_MASK)) {
            give_back(s, fired, data);
            goto finish;
        }
        if (io && fired) {
            data = readiness_data(s);
            if (data == 0 && s->type->kind == CQ_SOURCE_KIND_READ) {
                data = read_end_or_data(s, &fired);
            } else if (data == 0 && !still_ready(s)) {
                fired = false; /* WRITE: no room after all */
            }
        }
        if (fired || data) {
            cq__store(&s->data, data, relaxed);
            cq__count(source_events, 1);
            if (CQ_PROBE_ENABLED(source_event)) {
                struct cq__frame *f = cq__tls.frame;
                CQ_PROBE4(source_event, s->type->kind, data, s, f ? f->queue->label : "");
            }
            /* The data stays until the next event or the cancellation, as in libdispatch (code
             * that reads it outside the handler, e.g. a replace source's last value, sees the last
             * delivered one) */
            cq__source_call_handler(s, CQ__HANDLER_EVENT);
        }
        /* pairs with the acq_rel or's of CANCELED / UNREGISTERED / REGISTERED_NEW and the release
         * or of FIRED (cq__source_event) */
        st = cq__load(&s->state, acquire);
        /* Level-triggered: fire again while the descriptor is ready, except after telling a
         * READ source of the end of file (data 0), or a WRITE source of a hang-up or an error
         * (a socket whose peer has gone, a pipe whose reader has: POLLHUP, POLLERR): such a
         * descriptor stays "ready" for ever, and libdispatch reports the end once, where firing
         * again kept a thread busy until the program cancelled (a write source on a socket
         * whose peer closed fired ~470,000 times a second, each write failing with EPIPE;
         * libdispatch once). A new readiness event still fires. A regular file (or directory),
         * which epoll cannot watch, stays always ready, as in libdispatch: its end moves when
         * it grows, and only firing again sees that. */
        bool told_eof = s->type->kind == CQ_SOURCE_KIND_READ && data == 0 && !always_ready(s);
        if (io && fired && !told_eof && !(st & CQ__SS_CANCELED)) {
            short ev = ready_events(s);
            bool told_hup = s->type->kind == CQ_SOURCE_KIND_WRITE && (ev & (POLLHUP | POLLERR));
            if (ev != 0 && !told_hup) {
                cq__or(&s->state, CQ__SS_FIRED, relaxed);
            }
        }
    }
finish:
    /* Finish: run the cancel handler, go again, or let go. Pairs with the acq_rel or's of CANCELED
     * / UNREGISTERED / REGISTERED_NEW and the release or of FIRED (cq__source_event) */
    st = cq__load(&s->state, acquire);
    for (;;) {
        bool cancel = (st & CQ__SS_CANCELED) && (st & CQ__SS_UNREGISTERED) &&
                      !(st & (CQ__SS_CANCEL_DONE | CQ__SS_SUSPEND_MASK));
        if (cancel) {
            /* pairs with cq_source_cancel's acq_rel or of CANCELED and cq__source_unregistered's or
             */
            if (!cq__cas_weak(&s->state, &st, st | CQ__SS_CANCEL_DONE, acq_rel)) {
                continue;
            }
            /* From the cancel handler on, the data reads 0, as in libdispatch: a handler that
             * closes a descriptor or reports "what is left" must not see the last event's. */
            cq__store(&s->data, 0, relaxed);
            cq__source_call_handler(s, CQ__HANDLER_CANCEL);
            /* No handler of this source runs again. */
            for (int which = 0; which < 3; which++) {
                cq__source_drop_handler(s, which);
            }
            cq__source_free_retired(s);
            /* pairs with the acq_rel or's of CANCELED / UNREGISTERED / REGISTERED_NEW and the
             * release or of FIRED (cq__source_event) */
            st = cq__load(&s->state, acquire);
            continue;
        }
        uint32_t n = st & ~CQ__SS_SCHEDULED;
        if (wants_run(s, n)) {
            push_handler(s); /* again, behind whatever else the target has */
            return;
        }
        /* release: our handler's effects happen-before the next item's acquire; pairs with
         * source_wake's seq_cst load and acq_rel CAS setting SCHEDULED */
        if (cq__cas_weak(&s->state, &st, n, seq_cst)) {
            break;
        }
    }
    /* A merge of data does not touch the state word, so it can land after our look at pending
     * above, see SCHEDULED still set and leave the wake to us: look again now that SCHEDULED
     * is clear (the Dekker pair is in source_wake). */
    if (cq__load(&s->pending, seq_cst) != 0) {
        source_wake(s);
    }
    cq__ref_release(&s->obj); /* the handler item's reference; may free s */
}

/* ---- life cycle ---------------------------------------------------------------------------- */

static void source_suspend(struct cq__object *o)
{
    struct cq_source_s *s = source_check((struct cq_source_s *)o, "cq_suspend");
    uint32_t st = cq__add(&s->state, CQ__SS_SUSPEND_ONE, relaxed);
    if ((st & CQ__SS_SUSPEND_MASK) == CQ__SS_SUSPEND_MASK) {
        cq__crash("cq_suspend: suspend count of source %p overflowed", (void *)s);
    }
}

static uint32_t source_suspended(const struct cq__object *o)
{
    const struct cq_source_s *s = (const struct cq_source_s *)o;
    return (cq__load(&s->state, relaxed) & CQ__SS_SUSPEND_MASK) / CQ__SS_SUSPEND_ONE;
}

/* The first resume of a SIGNAL source returns once the reactor watches the signal: a signal
 * the program raises right after activating the source is delivered to it (libdispatch
 * registers later: such a signal is lost, or, for a default disposition, ends the process).
 * Not forever: a cancel meanwhile (the registration is then skipped), or a reactor that cannot
 * start, ends the wait after a second at most. */
static void wait_registered(struct cq_source_s *s)
{
    uint64_t start = cq__now_ns();
    /* acquire: pairs with cq__source_registered's release store */
    while (cq__load(&s->reg_word, acquire) == 0) {
        /* pairs with cq_source_cancel's acq_rel or of CANCELED */
        if ((cq__load(&s->state, acquire) & CQ__SS_CANCELED) ||
            cq__now_ns() - start > 1000000000ull) {
            return;
        }
        struct cq__deadline d;
        cq__deadline_init(&d, cq_time(CQ_TIME_NOW, 10000000)); /* looks at a cancel every 10 ms */
        cq__futex_wait(&s->reg_word, 0, &d);
    }
}

static void source_resume(struct cq__object *o)
{
    struct cq_source_s *s = source_check((struct cq_source_s *)o, "cq_resume");
    /* Ours until we return, as in cq_source_cancel and cq_source_merge_data: once the state
     * says activated (or once a merge is in pending), the handler item can run, cancel the
     * source and give up the program's last reference from its cancel handler (a one-shot
     * source that cleans up after itself), before our source_wake below reads the state. */
    cq__ref_retain(&s->obj);
    uint32_t st = cq__load(&s->state, relaxed), n;
    for (;;) {
        if (!(st & CQ__SS_SUSPEND_MASK)) {
            cq__crash("cq_resume: source %p is not suspended (resumed more often than suspended)",
                      (void *)s);
        }
        n = st - CQ__SS_SUSPEND_ONE;
        if (!(st & CQ__SS_ACTIVATED)) {
            n |= CQ__SS_ACTIVATED;
            if (st & CQ__SS_CANCELED) {
                n |= CQ__SS_UNREGISTERED; /* canceled before it started: nothing to register */
            } else if (is_data(s->type)) {
                n |= CQ__SS_NO_REACTOR | CQ__SS_REGISTERED_NEW; /* no descriptor, no timer */
            }
        }
        /* pairs with cq_source_cancel's acq_rel or and the handler item's acquire loads of state */
        if (cq__cas_weak(&s->state, &st, n, acq_rel)) {
            break;
        }
    }
    bool first = !(st & CQ__SS_ACTIVATED);
    if (first && !(n & (CQ__SS_UNREGISTERED | CQ__SS_NO_REACTOR))) {
        cq__ref_retain(&s->obj); /* the reactor's reference, until it unregisters */
        cq__reactor_command(s, CQ__CMD_REGISTER);
        /* A cancel since our CAS left the UNREGISTER to us: it must not reach the reactor
         * before the REGISTER (the reactor would let go of a reference it never had). Pairs with
         * cq_source_cancel's acq_rel or of CANCELED: whichever comes second sends UNREGISTER */
        if (cq__or(&s->state, CQ__SS_REG_QUEUED, acq_rel) & CQ__SS_CANCELED) {
            cq__reactor_command(s, CQ__CMD_UNREGISTER);
        } else if (s->type->kind == CQ_SOURCE_KIND_SIGNAL && !cq__reactor_is_current()) {
            wait_registered(s);
        }
    } else if (!first && !(n & CQ__SS_SUSPEND_MASK) && s->type->kind == CQ_SOURCE_KIND_TIMER) {
        cq__reactor_command(s, CQ__CMD_RESUMED); /* a parked timer counts what it missed */
    }
    source_wake(s);
    cq__ref_release(&s->obj);
}

void cq__source_registered(struct cq_source_s *s)
{
    if (s->type->kind == CQ_SOURCE_KIND_SIGNAL) {
        /* release: pairs with wait_registered's acquire load; the signal is watched */
        cq__store(&s->reg_word, 1, release);
        cq__futex_wake(&s->reg_word, INT_MAX);
    }
    /* pairs with the handler item's acquire loads of state (the registration handler runs after) */
    cq__or(&s->state, CQ__SS_REGISTERED_NEW, release);
    source_wake(s);
}

void cq__source_registration_handler_set(struct cq_source_s *s)
{
    /* seq_cst: after the setter's seq_cst exchange of the record; pairs with the handler item's
     * seq_cst CAS setting REG_DONE before its load of the record (one of the two sees the other) */
    uint32_t st = cq__load(&s->state, seq_cst);
    if ((st & CQ__SS_REG_DONE) && !(st & CQ__SS_CANCELED)) {
        /* pairs with the handler item's acquire loads of state */
        cq__or(&s->state, CQ__SS_REGISTERED_NEW, release);
        source_wake(s);
    }
}

void cq__source_unregistered(struct cq_source_s *s)
{
    /* pairs with the handler item's acquire loads of state (the cancel handler runs after) */
    cq__or(&s->state, CQ__SS_UNREGISTERED, acq_rel);
    source_wake(s);           /* the cancel handler may run now */
    cq__ref_release(&s->obj); /* the reactor's reference */
}

static void source_cancel(struct cq_source_s *s);

void cq_source_cancel(cq_source_t src)
{
    struct cq_source_s *s = source_check(src, "cq_source_cancel");
    cq__ref_retain(&s->obj); /* ours until we return: see source_resume */
    source_cancel(s);
    cq__ref_release(&s->obj);
}

static void source_cancel(struct cq_source_s *s)
{
    /* pairs with the activation's acq_rel or of REG_QUEUED: whichever comes second sends UNREGISTER
     */
    uint32_t st = cq__or(&s->state, CQ__SS_CANCELED, acq_rel);
    if (st & CQ__SS_CANCELED) {
        return;
    }
    if (st & CQ__SS_NO_REACTOR) {
        /* pairs with the handler item's acquire loads of state (the cancel handler runs after) */
        cq__or(&s->state, CQ__SS_UNREGISTERED, acq_rel);
        source_wake(s);
    } else if (st & CQ__SS_REG_QUEUED) {
        cq__reactor_command(s, CQ__CMD_UNREGISTER);
    }
    /* Not activated yet: the first resume sees CANCELED and goes straight to the cancel
     * handler. Activated but REGISTER not queued yet: the first resume sends the UNREGISTER
     * once it has (see CQ__SS_REG_QUEUED). */
}

void cq_source_set_handler_barrier(cq_source_t src, bool barrier)
{
    struct cq_source_s *s = source_check(src, "cq_source_set_handler_barrier");
    cq__store(&s->barrier, barrier, relaxed); /* from the next handler item on */
}

/*
 * The four getters below read the source and then mark a release for ThreadSanitizer, which
 * source_dispose acquires: the caller holds a reference while it reads, so its read happens
 * before the disposal, but the reference it gives up last may be a Swift wrapper's, whose
 * reference count (libswiftCore, not built for the sanitizer) is all that orders the two.
 * No-ops in normal builds.
 */
intptr_t cq_source_testcancel(cq_source_t src)
{
    struct cq_source_s *s = source_check(src, "cq_source_testcancel");
    /* pairs with cq_source_cancel's acq_rel or of CANCELED */
    intptr_t cancelled = (cq__load(&s->state, acquire) & CQ__SS_CANCELED) != 0;
    cq__tsan_release(s);
    return cancelled;
}

uintptr_t cq_source_get_data(cq_source_t src)
{
    struct cq_source_s *s = source_check(src, "cq_source_get_data");
    uintptr_t data = cq__load(&s->data, relaxed);
    cq__tsan_release(s);
    return data;
}

uintptr_t cq_source_get_handle(cq_source_t src)
{
    struct cq_source_s *s = source_check(src, "cq_source_get_handle");
    uintptr_t handle = s->handle;
    cq__tsan_release(s);
    return handle;
}

uintptr_t cq_source_get_mask(cq_source_t src)
{
    struct cq_source_s *s = source_check(src, "cq_source_get_mask");
    uintptr_t mask = s->mask;
    cq__tsan_release(s);
    return mask;
}

void cq_source_merge_data(cq_source_t src, uintptr_t value)
{
    struct cq_source_s *s = source_check(src, "cq_source_merge_data");
    if (cq__unlikely(!is_data(s->type))) {
        cq__crash("cq_source_merge_data: source %p is a %s source, not a data source", (void *)s,
                  s->type->name);
    }
    /* As cq_resume and cq_source_cancel, the merge must not read a source that a handler
     * freed meanwhile (see source_resume), but a reference of its own would be two
     * read-modify-writes on the object's header line, which every call reads: merges from four
     * threads took 20-37 ns each with it, 8-16 without. The memory is freed a grace period
     * after disposal instead (source_dispose), and a disposed source never wants a run
     * (CANCEL_DONE, or never activated): source_wake only reads its state. */
    cq__rcu_read_lock();
    cq__source_event(s, value, false);
    cq__rcu_read_unlock();
}

struct old_target {
    struct rcu_head rcu;
    struct cq_queue_s *queue;
};

static void release_old_target(struct rcu_head *head)
{
    cq__rcu_reclaim_begin(head);
    struct old_target *o = (struct old_target *)head;
    cq__ref_release(&o->queue->obj);
    free(o);
}

void cq__source_set_target(struct cq_source_s *s, struct cq_queue_s *q)
{
    cq__ref_retain(&q->obj);
    cq__queue_mark_targeted(q);
    /* pairs with the acquire load of s->target in source_wake's push under rcu_read_lock */
    struct cq_queue_s *old = cq__xchg(&s->target, q, acq_rel);
    struct old_target *o = malloc(sizeof *o);
    if (o == NULL) {
        cq__crash("cq_set_target_queue: out of memory");
    }
    o->queue = old;
    cq__rcu_defer(&o->rcu, release_old_target); /* after any push that read it */
}

static void source_set_target(struct cq__object *o, struct cq_queue_s *q)
{
    cq__source_set_target((struct cq_source_s *)o, q);
}

static void source_xref_dispose(struct cq__object *o)
{
    struct cq_source_s *s = (struct cq_source_s *)o;
    uint32_t st = cq__load(&s->state, relaxed);
    if ((st & CQ__SS_ACTIVATED) && (st & CQ__SS_SUSPEND_MASK) && !(st & CQ__SS_CANCEL_DONE)) {
        cq__crash("cq_release: last reference to source %p released while it is suspended "
                  "(resume it first: its cancel handler could never run)",
                  (void *)s);
    }
    if ((st & CQ__SS_ACTIVATED) && !(st & CQ__SS_CANCELED)) {
        /* As libdispatch: the last reference to an active source that was not cancelled stops
         * it, without calling its cancel handler (nobody holds the source any more: its
         * handlers would run on state the program may have freed, for ever). The runtime's own
         * references keep it until the reactor has let go. */
        cq__source_set_handler(s, CQ__HANDLER_CANCEL, NULL, NULL, false, NULL);
        source_cancel(s);
    }
}

static void source_free(struct rcu_head *head)
{
    cq__rcu_reclaim_begin(head);
    free((struct cq_source_s *)((char *)head - offsetof(struct cq_source_s, rcu)));
}

static void source_dispose(struct cq__object *o)
{
    struct cq_source_s *s = (struct cq_source_s *)o;
    cq__tsan_acquire(s); /* the getters' reads (see cq_source_testcancel) */
    cq_function_t fin = o->finalizer;
    void *ctx = o->context;
    struct cq_queue_s *q = cq__load(&s->target, relaxed);
    cq__source_registry_remove(s);
    cq__source_free_retired(s);
    for (int i = 0; i < 3; i++) {
        struct cq__handler *h = cq__load(&s->handlers[i], relaxed);
        if (h) {
            cq__source_handler_free(h);
        }
    }
    if (s->fd >= 0) {
        close(s->fd); /* a PROC source that never started */
    }
    if (s->timer) {
        cq__timer_free(s->timer);
    }
    o->cls = NULL;
    cq__rcu_defer(&s->rcu, source_free); /* a merge may still read it: cq_source_merge_data */
    if (fin && ctx) {                    /* as libdispatch: no context, no finalizer */
        cq_async_f(q, ctx, fin);
    }
    cq__ref_release(&q->obj);
}

static void source_item_run(struct cq__item *it)
{
    cq__source_invoke((struct cq_source_s *)((char *)it - offsetof(struct cq_source_s, item)));
}
CQ__ITEM_KIND_REGISTER(CQ__ITEM_SOURCE, source_item_run)
