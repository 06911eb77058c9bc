/*
 * Source handlers: setting the event, cancel and registration handlers (any thread, records
 * replaced with a release push and freed by the handler item), and calling one.
 */
#include <stdlib.h>

#include "events/source_internal.h"
#include "platform/diag_internal.h"
#include "queue/queue_internal.h"

#define source_check cq__source_check

/* ---- handlers ------------------------------------------------------------------------------ */

void cq__source_handler_free(struct cq__handler *h)
{
    if (h->destructor) {
        h->destructor(h->context);
    }
    free(h);
}

/* Frees the records replaced so far: called by the handler item, the only user of records,
 * before it reads the current ones (so none of them can be in use), and at dispose. */
void cq__source_free_retired(struct cq_source_s *s)
{
    /* acquire: pairs with the release push in cq__source_set_handler */
    struct cq__handler *h = cq__xchg(&s->retired, NULL, acquire);
    while (h) {
        struct cq__handler *next = h->retired_next;
        cq__source_handler_free(h);
        h = next;
    }
}

void cq__source_set_handler(struct cq_source_s *s, int which, cq_function_t fn, void *ctx,
                            bool has_context, cq_function_t destructor)
{
    struct cq__handler *h = NULL;
    if (fn) {
        h = malloc(sizeof *h);
        if (h == NULL) {
            cq__crash("out of memory setting a source handler");
        }
        *h = (struct cq__handler){fn, ctx, destructor, has_context, NULL};
    } else if (destructor) {
        destructor(ctx); /* nothing will ever call it */
    }
    /* seq_cst: the record is published (and the old one is ours to retire) before a registration
     * handler's look at the state below; pairs with the handler item's acquire load in
     * cq__source_call_handler and its seq_cst load in cq__source_call_registration */
    struct cq__handler *old = cq__xchg(&s->handlers[which], h, seq_cst);
    if (old) {
        old->retired_next = cq__load(&s->retired, relaxed);
        /* pairs with the acquire exchange in cq__source_free_retired */
        while (!cq__cas_weak(&s->retired, &old->retired_next, old, release)) {
        }
    }
    if (h && which == CQ__HANDLER_REGISTRATION) {
        cq__source_registration_handler_set(s);
    }
}

void cq_source_set_event_handler_f(cq_source_t s, cq_function_t handler)
{
    cq__source_set_handler(source_check(s, "cq_source_set_event_handler_f"), CQ__HANDLER_EVENT,
                           handler, NULL, false, NULL);
}

void cq_source_set_cancel_handler_f(cq_source_t s, cq_function_t handler)
{
    cq__source_set_handler(source_check(s, "cq_source_set_cancel_handler_f"), CQ__HANDLER_CANCEL,
                           handler, NULL, false, NULL);
}

void cq_source_set_registration_handler_f(cq_source_t s, cq_function_t handler)
{
    cq__source_set_handler(source_check(s, "cq_source_set_registration_handler_f"),
                           CQ__HANDLER_REGISTRATION, handler, NULL, false, NULL);
}

void cq_source_set_event_handler_ctx_f(cq_source_t s, void *ctx, cq_function_t handler,
                                       cq_function_t destructor)
{
    cq__source_set_handler(source_check(s, "cq_source_set_event_handler_ctx_f"), CQ__HANDLER_EVENT,
                           handler, ctx, true, destructor);
}

void cq_source_set_cancel_handler_ctx_f(cq_source_t s, void *ctx, cq_function_t handler,
                                        cq_function_t destructor)
{
    cq__source_set_handler(source_check(s, "cq_source_set_cancel_handler_ctx_f"),
                           CQ__HANDLER_CANCEL, handler, ctx, true, destructor);
}

void cq_source_set_registration_handler_ctx_f(cq_source_t s, void *ctx, cq_function_t handler,
                                              cq_function_t destructor)
{
    cq__source_set_handler(source_check(s, "cq_source_set_registration_handler_ctx_f"),
                           CQ__HANDLER_REGISTRATION, handler, ctx, true, destructor);
}

void cq__source_call_handler(struct cq_source_s *s, int which)
{
    /* pairs with the acq_rel exchange in cq__source_set_handler */
    struct cq__handler *h = cq__load(&s->handlers[which], acquire);
    if (h) {
        h->function(h->has_context ? h->context : s->obj.context);
    }
}

struct cq__handler *cq__source_call_registration(struct cq_source_s *s)
{
    /* seq_cst: after the handler item's seq_cst CAS setting REG_DONE; pairs with the seq_cst
     * exchange in cq__source_set_handler and the setter's seq_cst load of the state: either
     * this sees the new record, or the setter sees REG_DONE and makes the handler due again */
    struct cq__handler *h = cq__load(&s->handlers[CQ__HANDLER_REGISTRATION], seq_cst);
    if (h) {
        h->function(h->has_context ? h->context : s->obj.context);
    }
    return h;
}

void cq__source_drop_handler_if(struct cq_source_s *s, int which, struct cq__handler *h)
{
    /* acquire: pairs with the seq_cst exchange in cq__source_set_handler (the record we free was
     * published by it) */
    if (h && cq__cas(&s->handlers[which], &h, NULL, acquire)) {
        cq__source_handler_free(h);
    }
}

/* A handler that can never be called again (it ran once, or the source is canceled): free its
 * record now rather than at dispose, so its destructor runs when libdispatch would release a
 * block. Called by the handler item only. */
void cq__source_drop_handler(struct cq_source_s *s, int which)
{
    /* pairs with the acq_rel exchange in cq__source_set_handler */
    struct cq__handler *h = cq__xchg(&s->handlers[which], NULL, acquire);
    if (h) {
        cq__source_handler_free(h);
    }
}
