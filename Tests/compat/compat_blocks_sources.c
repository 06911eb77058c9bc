/*
 * Source handlers as blocks through libdispatch's names (clang -fblocks, C and C++): event,
 * cancel and registration handlers, replacing a handler, the source's own context left to the
 * application, timers with blocks. Needs the core's handler-context calls
 * (cq_source_set_*_handler_ctx_f).
 */
#include "compat_test.h"

#ifndef __BLOCKS__
#error "compat_blocks_sources.c needs clang -fblocks"
#endif

static void test_data_handlers(void)
{
    static int app_context;
    __block long sum = 0, calls = 0, registered = 0, reg_first = 0, cancelled = 0;
    __block long context_ok = 1;
    __block long second_calls = 0;
    dispatch_semaphore_t got = dispatch_semaphore_create(0);
    dispatch_semaphore_t cancel_done = dispatch_semaphore_create(0);
    dispatch_source_t s = dispatch_source_create(DISPATCH_SOURCE_TYPE_DATA_ADD, 0, 0,
                                                 compat_global());
    REQUIRE(s != NULL);
    dispatch_set_context(s, &app_context); /* the application's, untouched by block handlers */
    dispatch_source_set_registration_handler(s, ^{
        registered++;
    });
    dispatch_source_set_event_handler(s, ^{
        if (registered == 1 && calls == 0) {
            reg_first = 1;
        }
        if (dispatch_get_context(s) != &app_context) {
            context_ok = 0;
        }
        calls++;
        sum += (long)dispatch_source_get_data(s);
        if (sum == 10) {
            dispatch_semaphore_signal(got);
        }
    });
    dispatch_source_set_cancel_handler(s, ^{
        if (dispatch_get_context(s) != &app_context) {
            context_ok = 0;
        }
        cancelled++;
        dispatch_semaphore_signal(cancel_done);
    });
    dispatch_source_merge_data(s, 4);
    dispatch_source_merge_data(s, 6);
    dispatch_activate(s);
    WAIT_SEMA(got);
    CHECK_EQ(sum, 10);
    CHECK_EQ(calls, 1);
    CHECK_EQ(registered, 1);
    CHECK_EQ(reg_first, 1);

    /* replace the event handler: later events go to the new block */
    dispatch_suspend(s);
    dispatch_source_set_event_handler(s, ^{
        second_calls += (long)dispatch_source_get_data(s);
        dispatch_semaphore_signal(got);
    });
    dispatch_source_merge_data(s, 5);
    dispatch_resume(s);
    WAIT_SEMA(got);
    CHECK_EQ(second_calls, 5);
    CHECK_EQ(sum, 10); /* the first handler saw nothing more */

    dispatch_source_cancel(s);
    WAIT_SEMA(cancel_done);
    CHECK_EQ(cancelled, 1);
    CHECK_EQ(context_ok, 1);
    CHECK(dispatch_get_context(s) == &app_context);
    dispatch_release(s);
    dispatch_release(got);
    dispatch_release(cancel_done);
}

static void test_timer_blocks(void)
{
    __block long fires = 0, calls = 0;
    __block dispatch_time_t last_call = 0;
    dispatch_semaphore_t done = dispatch_semaphore_create(0);
    dispatch_queue_t q = dispatch_queue_create("compat.blocks.timer", NULL);
    dispatch_source_t t = dispatch_source_create(DISPATCH_SOURCE_TYPE_TIMER, 0, 0, q);
    dispatch_time_t started = compat_now();
    REQUIRE(t != NULL);
    dispatch_source_set_timer(t, dispatch_time(DISPATCH_TIME_NOW, 0), 2 * NSEC_PER_MSEC, 0);
    dispatch_source_set_event_handler(t, ^{
        last_call = compat_now();
        calls++;
        fires += (long)dispatch_source_get_data(t);
        if (fires >= 3) {
            dispatch_source_cancel(t);
        }
    });
    dispatch_source_set_cancel_handler(t, ^{
        dispatch_semaphore_signal(done);
    });
    dispatch_resume(t);
    WAIT_SEMA(done);
    /* (fires >= 3 holds by construction: the handler cancels once they reach it.) The block
     * ran, and the fires it was given add up to no more than one per 2 ms interval since the
     * start (plus the first fire, and one of slack). */
    CHECK(calls >= 1 && calls <= fires);
    CHECK(fires <= (long)((last_call - started) / (2 * NSEC_PER_MSEC)) + 2);
    dispatch_release(t);
    dispatch_release(done);
    dispatch_release(q);
}

static void test_read_with_blocks(void)
{
    static char buf_storage[16];
    char *buf = buf_storage;
    __block long got_bytes = 0;
    dispatch_semaphore_t done = dispatch_semaphore_create(0);
    dispatch_semaphore_t closed = dispatch_semaphore_create(0);
    dispatch_source_t r;
    int fds[2], rfd;
    REQUIRE(pipe(fds) == 0);
    rfd = fds[0];
    r = dispatch_source_create(DISPATCH_SOURCE_TYPE_READ, (uintptr_t)rfd, 0, compat_global());
    REQUIRE(r != NULL);
    dispatch_source_set_event_handler(r, ^{
        ssize_t n = read(rfd, buf + got_bytes, sizeof buf_storage - (size_t)got_bytes);
        if (n > 0) {
            got_bytes += n;
        }
        if (got_bytes >= 4) {
            dispatch_semaphore_signal(done);
        }
    });
    dispatch_source_set_cancel_handler(r, ^{
        close(rfd);
        dispatch_semaphore_signal(closed);
    });
    dispatch_resume(r);
    REQUIRE(write(fds[1], "ping", 4) == 4);
    WAIT_SEMA(done);
    CHECK(got_bytes == 4 && memcmp(buf, "ping", 4) == 0);
    dispatch_source_cancel(r);
    WAIT_SEMA(closed);
    close(fds[1]);
    dispatch_release(r);
    dispatch_release(done);
    dispatch_release(closed);
}

/* A NULL block removes a handler: the source then runs no event handler. */
static void test_remove_handler(void)
{
    __block long calls = 0;
    dispatch_semaphore_t cancelled = dispatch_semaphore_create(0);
    dispatch_queue_t q = dispatch_queue_create("compat.blocks.removed", NULL);
    dispatch_source_t s = dispatch_source_create(DISPATCH_SOURCE_TYPE_DATA_OR, 0, 0, q);
    REQUIRE(s != NULL);
    dispatch_source_set_event_handler(s, ^{
        calls++;
    });
    dispatch_source_set_event_handler(s, NULL);
    dispatch_source_set_cancel_handler(s, ^{
        dispatch_semaphore_signal(cancelled);
    });
    dispatch_resume(s);
    dispatch_source_merge_data(s, 1);
    dispatch_sync(q, ^{
    }); /* after the handler the merge scheduled on q, if any */
    CHECK_EQ(calls, 0);
    dispatch_source_cancel(s);
    WAIT_SEMA(cancelled);
    CHECK_EQ(calls, 0);
    dispatch_release(s);
    dispatch_release(cancelled);
    dispatch_release(q);
}

int main(void)
{
    RUN(test_data_handlers);
    RUN(test_timer_blocks);
    RUN(test_read_with_blocks);
    RUN(test_remove_handler);
    TEST_MAIN_END();
}
