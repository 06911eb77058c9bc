/*
 * Dispatch sources: the object, its state word and how its handlers get scheduled. The
 * reactor (reactor.c) and the timers (timer.c) feed events in; source.c runs the handlers.
 *
 * State word:
 *   SCHEDULED   the handler item is queued on the target or running. Only its holder runs
 *               handlers, so handlers never run concurrently with themselves.
 *   FIRED       an event arrived that carries no count (READ/WRITE readiness, VNODE, PROC).
 *   CANCELED    cq_source_cancel was called.
 *   CANCEL_DONE the cancel handler has been scheduled (exactly once).
 *   ACTIVATED   the first resume happened: the source is (being) registered with the reactor.
 *   UNREGISTERED the reactor has let go of the source (after a cancel).
 *   REGISTERED_NEW registered: the registration handler is due (run by the handler item).
 *   REG_DONE    the registration handler's turn has come (the handler item took REGISTERED_NEW):
 *               a registration handler set from then on is due at once (REGISTERED_NEW again),
 *               as libdispatch invokes one set on a source that is already registered.
 *   NO_REACTOR  a data source: registration and unregistration are immediate.
 *   REG_QUEUED  the REGISTER command is on the reactor's list. A cancel sends UNREGISTER only
 *               after it; if the cancel comes between ACTIVATED and REG_QUEUED, the resume
 *               sends it (whichever of the two ORs on the word comes second sees the other).
 *   SUSPEND     suspend count (bits 16-31); a source starts at 1.
 * Event data that counts (timer fires, signals, merges) accumulates in `pending` and is taken
 * by the handler item with an exchange.
 *
 * References: the creator's; one while ACTIVATED and not UNREGISTERED (the reactor's); one
 * while SCHEDULED (the handler item's).
 */
#ifndef CQ_SOURCE_INTERNAL_H
#define CQ_SOURCE_INTERNAL_H

#include <cqueuecore/source.h>

#include "platform/fork_internal.h"
#include "platform/object_internal.h"
#include "platform/rcu_internal.h"
#include "scheduler/item_internal.h"

#define CQ__SS_SCHEDULED 0x1u
#define CQ__SS_FIRED 0x2u
#define CQ__SS_CANCELED 0x4u
#define CQ__SS_CANCEL_DONE 0x8u
#define CQ__SS_ACTIVATED 0x10u
#define CQ__SS_UNREGISTERED 0x20u
#define CQ__SS_REGISTERED_NEW 0x40u /* registered: the registration handler is due */
#define CQ__SS_NO_REACTOR 0x80u     /* a data source: nothing to register */
#define CQ__SS_REG_QUEUED 0x100u    /* the first resume has queued the REGISTER command */
#define CQ__SS_REG_DONE 0x200u      /* registered: a registration handler set now is due at once */
#define CQ__SS_SUSPEND_ONE (1u << 16)
#define CQ__SS_SUSPEND_MASK (0xffffu << 16)

struct cq_source_type_s {
    cq_source_kind_t kind;
    const char *name;
    uintptr_t mask_allowed;
};

/* A handler and the context it is called with; replaced records are freed by the handler item
 * (the only user) once no invocation can be using them. */
struct cq__handler {
    cq_function_t function;
    void *context;            /* valid if has_context, else the source's context is used */
    cq_function_t destructor; /* called with context when the record is freed, or NULL */
    bool has_context;
    struct cq__handler *retired_next;
};

struct cq__timer;

struct cq_source_s {
    struct cq__object obj;
    struct cq__item item;                /* the handler item, pushed on the target */
    const struct cq_source_type_s *type; /* written once */
    uint32_t fork_gen;                   /* cq__fork_gen at creation */
    uintptr_t handle, mask;              /* written once */
    _Atomic uint32_t state;
    _Atomic uintptr_t pending;               /* counted event data not yet handled */
    _Atomic uintptr_t data;                  /* the running (or last) handler's data */
    _Atomic bool barrier;                    /* its item runs as a barrier on its target */
    _Atomic uint32_t reg_word;               /* SIGNAL: 1 once registered (futex word) */
    struct cq_queue_s *_Atomic target;       /* RCU: read on every event, swapped rarely */
    struct cq__handler *_Atomic handlers[3]; /* event, cancel, registration */
    struct cq__handler *_Atomic retired;     /* replaced handler records (a stack) */
    /* reactor-side registration (owned by the reactor thread) */
    bool registered;                 /* between do_register and do_unregister */
    int fd;                          /* the descriptor in epoll (a pidfd for PROC) */
    uint32_t slot;                   /* its registration slot, see reactor.c */
    struct cq_source_s *next_on_key; /* other sources on the same descriptor/signal/watch */
    int wd;                          /* VNODE: inotify watch */
    int64_t vnode_size;              /* VNODE: last size and link count seen */
    uint64_t vnode_nlink;
    uint64_t vnode_dev, vnode_ino; /* VNODE: the file its descriptor named when registered */
    bool vnode_deleted;            /* VNODE: DELETE reported (once per source) */
    struct cq__timer *timer;       /* TIMER: its schedule */
    /* commands to the reactor, see reactor.c */
    struct cq__item cmd_item;
    _Atomic uint32_t cmds;
    struct cq_source_s *reg_prev, *reg_next; /* live-source list (introspect.c), its lock */
    struct rcu_head rcu; /* its memory is freed a grace period after it is disposed: see
                            cq_source_merge_data */
};

enum { CQ__HANDLER_EVENT = 0, CQ__HANDLER_CANCEL = 1, CQ__HANDLER_REGISTRATION = 2 };

extern const struct cq__class cq__source_class; /* source.c */

/* Not a source, or a source from before a fork() used in the child: aborts naming `call`. */
CQ_INTERNAL __attribute__((noreturn)) void cq__source_check_slow(cq_source_t s, const char *call);

CQ_INLINE struct cq_source_s *cq__source_check(cq_source_t s, const char *call)
{
    if (cq__unlikely(!cq__object_is(s, &cq__source_class) || s->fork_gen != cq__fork_gen)) {
        cq__source_check_slow(s, call);
    }
    return s;
}

/* introspect.c: the live-source list (create / dispose); the CQ_DUMP_SIGNAL signal's number
 * (0: none), checked by the reactor as signals arrive, and the dump it writes then. */
CQ_INTERNAL void cq__source_registry_add(struct cq_source_s *s);
CQ_INTERNAL void cq__source_registry_remove(struct cq_source_s *s);
CQ_INTERNAL extern int cq__dump_signo;
CQ_INTERNAL void cq__introspect_dump_signal(void);

/* source.c */
CQ_INTERNAL void cq__source_invoke(struct cq_source_s *s); /* the handler item ran */
/* An event arrived: merge `value` into pending (or set FIRED if value is 0 and `fired`), then
 * schedule the handler if it may run. Callable from any thread. */
CQ_INTERNAL void cq__source_event(struct cq_source_s *s, uintptr_t value, bool fired);
/* The reactor has unregistered the source (after a cancel): drop its reference. */
CQ_INTERNAL void cq__source_unregistered(struct cq_source_s *s);
/* The reactor has registered the source: the registration handler is due. */
CQ_INTERNAL void cq__source_registered(struct cq_source_s *s);
/* A registration handler was just set: due at once if the registration already happened. */
CQ_INTERNAL void cq__source_registration_handler_set(struct cq_source_s *s);
/* Replaces a handler (which: CQ__HANDLER_*); `has_context`: call it with `ctx` instead of the
 * source's context; `destructor(ctx)` runs when the record is freed. */
CQ_INTERNAL void cq__source_set_handler(struct cq_source_s *s, int which, cq_function_t fn,
                                        void *ctx, bool has_context, cq_function_t destructor);
CQ_INTERNAL void cq__source_set_target(struct cq_source_s *s, struct cq_queue_s *q);

/* timer.c (reactor thread unless noted) */
CQ_INTERNAL void cq__timer_apply(struct cq_source_s *s);  /* CQ__CMD_TIMER / RESUMED */
CQ_INTERNAL void cq__timer_remove(struct cq_source_s *s); /* on unregister */
/* Fires what is due (and does cq_after_f's part, cq__after_run), and sets the next wake-up
 * (absolute) per clock in `mono` / `wall` (INT64_MAX: none). */
CQ_INTERNAL void cq__timers_run(int64_t *mono_next, int64_t *wall_next);
CQ_INTERNAL void cq__timer_free(struct cq__timer *t); /* any thread, on dispose */

/* after.c (cq_after_f). The reactor's part, on every turn: fires wall-clock windows, starts a
 * firer before a monotonic window, fires what a stuck firer left late; sets when to look
 * again per clock (INT64_MAX: never). Fork hooks, called by timer.c's. */
CQ_INTERNAL void cq__after_run(int64_t *mono_next, int64_t *wall_next);
/* The word the firer sleeps on (cq__futex_wait), for tests that make its thread oversleep. */
CQ_INTERNAL _Atomic uint32_t *cq__after_firer_word(void);
CQ_INTERNAL void cq__after_fork_prepare(void);
CQ_INTERNAL void cq__after_fork_parent(void);
CQ_INTERNAL void cq__after_fork_child(void);

/* source_handler.c, for source.c: handler records (see cq__handler). */
CQ_INTERNAL void cq__source_handler_free(struct cq__handler *h);
/* Frees the records replaced so far (the handler item, before it reads the current ones; and
 * dispose). */
CQ_INTERNAL void cq__source_free_retired(struct cq_source_s *s);
CQ_INTERNAL void cq__source_call_handler(struct cq_source_s *s, int which);
CQ_INTERNAL void cq__source_drop_handler(struct cq_source_s *s, int which);
/* The registration handler, once: calls the current record (if any) and returns it, for
 * cq__source_drop_handler_if. */
CQ_INTERNAL struct cq__handler *cq__source_call_registration(struct cq_source_s *s);
/* Frees the record `h` if it is still the current one (a handler set since stays). */
CQ_INTERNAL void cq__source_drop_handler_if(struct cq_source_s *s, int which,
                                            struct cq__handler *h);

/* fork(): timer.c registers these (platform/fork_internal.h); they call cq_after_f's. */
CQ__FORK_HOOKS(timer)

#endif /* CQ_SOURCE_INTERNAL_H */
