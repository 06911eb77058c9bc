/*
 * A registration handler that cancels or suspends its source: no event handler starts after
 * the cancel (or the suspend) returned, even though events were pending when the source was
 * activated. (Found from Swift: the handler item read the state before the registration
 * handler and went on to the event handler with it.)
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
    TEST_MAIN_END();
}
