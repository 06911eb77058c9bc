/*
 * A registration handler that cancels or suspends its source: no event handler starts after
 * the cancel (or the suspend) returned, even though events were pending when the source was
 * activated. (Found from Swift: the handler item read the state before the registration
 * handler and went on to the event handler with it.) And the same for a suspend by another
 * thread just after the registration handler returned: what is merged once cq_suspend has
 * returned reaches the event handler only after the resume. (Found from Swift under
 * ThreadSanitizer: the handler item checked the state, the test thread suspended and merged,
 * then the item took the merged data and called the event handler with 83 of 100 merges.)
 */
#include "cq_test.h"

struct reg_case {
    cq_source_t source;
    atomic_int events;
    atomic_int cancels;
    bool suspend; /* suspend instead of cancel */
    cq_semaphore_t registered;
    cq_semaphore_t cancelled;
};

static void on_registration(void *ctx)
{
    struct reg_case *c = ctx;
    if (c->suspend) {
        cq_suspend(c->source);
    } else {
        cq_source_cancel(c->source);
    }
    cq_semaphore_signal(c->registered);
}

static void on_event(void *ctx)
{
    atomic_fetch_add(&((struct reg_case *)ctx)->events, 1);
}

static void on_cancel(void *ctx)
{
    struct reg_case *c = ctx;
    atomic_fetch_add(&c->cancels, 1);
    cq_semaphore_signal(c->cancelled);
}

static void noop(void *ctx)
{
    (void)ctx;
}

static void run_case(bool suspend)
{
    enum { ROUNDS = 200 };
    int events = 0;
    cq_queue_t q = cq_queue_create("registration", NULL);
    for (int i = 0; i < ROUNDS; i++) {
        struct reg_case c = {.suspend = suspend,
                             .registered = cq_semaphore_create(0),
                             .cancelled = cq_semaphore_create(0)};
        c.source = cq_source_create(CQ_SOURCE_TYPE_DATA_ADD, 0, 0, q);
        REQUIRE(c.source != NULL);
        cq_set_context(c.source, &c);
        cq_source_set_registration_handler_f(c.source, on_registration);
        cq_source_set_event_handler_f(c.source, on_event);
        cq_source_set_cancel_handler_f(c.source, on_cancel);
        cq_source_merge_data(c.source, 1); /* pending before activation */
        cq_activate(c.source);
        WAIT_SEMA(c.registered);
        /* Anything the source's queue had was run by now: its handler item included. */
        cq_sync_f(q, NULL, noop);
        events += atomic_load(&c.events);
        if (suspend) {
            cq_source_cancel(c.source);
            cq_resume(c.source);
        }
        WAIT_SEMA(c.cancelled);
        CHECK_EQ(atomic_load(&c.cancels), 1);
        cq_release(c.source);
        cq_release(c.registered);
        cq_release(c.cancelled);
    }
    fprintf(stderr, "   %s in the registration handler: %d of %d sources ran an event handler\n",
            suspend ? "suspended" : "cancelled", events, ROUNDS);
    CHECK_EQ(events, 0);
    cq_release(q);
}

struct late_case {
    cq_semaphore_t registered;
    cq_semaphore_t delivered;
    atomic_bool resumed;   /* set before cq_resume */
    atomic_int early;      /* event handler calls before it */
    atomic_uintptr_t data; /* the last call's data */
    cq_source_t source;
};

static void late_registration(void *ctx)
{
    cq_semaphore_signal(((struct late_case *)ctx)->registered);
}

static void late_event(void *ctx)
{
    struct late_case *c = ctx;
    if (!atomic_load(&c->resumed)) {
        atomic_fetch_add(&c->early, 1);
    }
    atomic_store(&c->data, cq_source_get_data(c->source));
    cq_semaphore_signal(c->delivered);
}

static void test_suspend_right_after_registration(void)
{
    enum { ROUNDS = 3000, MERGES = 100 };
    int early = 0;
    cq_queue_t q = cq_queue_create("registration", NULL);
    for (int i = 0; i < ROUNDS; i++) {
        struct late_case c = {.registered = cq_semaphore_create(0),
                              .delivered = cq_semaphore_create(0)};
        c.source = cq_source_create(CQ_SOURCE_TYPE_DATA_ADD, 0, 0, q);
        REQUIRE(c.source != NULL);
        cq_set_context(c.source, &c);
        cq_source_set_registration_handler_f(c.source, late_registration);
        cq_source_set_event_handler_f(c.source, late_event);
        cq_activate(c.source);
        WAIT_SEMA(c.registered);
        /* The handler item may still be running (it called the registration handler): it must
         * not deliver what arrives from here on before the resume. */
        cq_suspend(c.source);
        for (int k = 0; k < MERGES; k++) {
            cq_source_merge_data(c.source, 1);
        }
        atomic_store(&c.resumed, true);
        cq_resume(c.source);
        WAIT_SEMA(c.delivered);
        early += atomic_load(&c.early);
        CHECK_EQ(atomic_load(&c.data), (uintptr_t)MERGES); /* one call, every merge */
        cq_source_cancel(c.source);
        cq_sync_f(q, NULL, noop);
        cq_release(c.source);
        cq_release(c.registered);
        cq_release(c.delivered);
    }
    fprintf(stderr, "   suspended by another thread: %d of %d sources delivered early\n", early,
            ROUNDS);
    CHECK_EQ(early, 0);
    cq_release(q);
}

static void test_cancel_in_registration_handler(void)
{
    run_case(false);
}

static void test_suspend_in_registration_handler(void)
{
    run_case(true);
}

int main(void)
{
    RUN(test_cancel_in_registration_handler);
    RUN(test_suspend_in_registration_handler);
    RUN(test_suspend_right_after_registration);
    TEST_MAIN_END();
}
