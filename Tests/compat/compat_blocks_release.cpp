/*
 * Block memory through libdispatch's names (clang++ -fblocks): a C++ object captured by a block
 * is copied with the block and destroyed when the block is released, so it tells whether a block
 * submitted for later was copied (Block_copy) and released after it ran, whether a block run
 * before the call returns was left uncopied, and whether source handlers are released when
 * replaced, after running once (cancel, registration), or with the source.
 */
#include "compat_test.h"

#ifndef __BLOCKS__
#error "compat_blocks_release.cpp needs clang++ -fblocks"
#endif

namespace {

/* Counts the live copies of one tracker and their copy constructions; signals when none is left. */
struct Census {
    long live = 0;
    long copies = 0;
    dispatch_semaphore_t gone = dispatch_semaphore_create(0);
    ~Census() { dispatch_release(gone); }

    /* Waits until every copy has been destroyed (a block released), with a generous timeout. */
    bool all_gone()
    {
        return dispatch_semaphore_wait(gone, compat_deadline()) == 0 && compat_load(&live) == 0;
    }
};

class Tracker {
  public:
    explicit Tracker(Census *census) : census_(census) { compat_add(&census_->live, 1); }
    Tracker(const Tracker &other) : census_(other.census_)
    {
        compat_add(&census_->live, 1);
        compat_add(&census_->copies, 1);
    }
    Tracker &operator=(const Tracker &) = delete;
    ~Tracker()
    {
        if (compat_add(&census_->live, -1) == 0) {
            dispatch_semaphore_signal(census_->gone);
        }
    }
    long id() const { return 1; }

  private:
    Census *census_;
};

void test_async_released_after_running()
{
    Census census;
    __block long ran = 0;
    dispatch_queue_t q = dispatch_queue_create("compat.release.async", NULL);
    dispatch_suspend(q);
    {
        Tracker t(&census);
        dispatch_async(q, ^{
            ran += t.id();
        });
        dispatch_barrier_async(q, ^{
            ran += t.id();
        });
    }
    CHECK_EQ(compat_load(&census.live), 2); /* the copies made at submission are alive */
    dispatch_resume(q);
    CHECK(census.all_gone()); /* released after running */
    dispatch_sync(q, ^{
    });
    CHECK_EQ(ran, 2);
    dispatch_release(q);
}

void test_group_blocks_released()
{
    Census census;
    __block long ran = 0;
    dispatch_group_t g = dispatch_group_create();
    dispatch_semaphore_t notified = dispatch_semaphore_create(0);
    {
        Tracker t(&census);
        for (int i = 0; i < 10; i++) {
            dispatch_group_async(g, compat_global(), ^{
                compat_add(&ran, t.id());
            });
        }
        dispatch_group_notify(g, compat_global(), ^{
            (void)t.id();
            dispatch_semaphore_signal(notified);
        });
    }
    WAIT_GROUP(g);
    WAIT_SEMA(notified);
    CHECK(census.all_gone());
    CHECK_EQ(ran, 10);
    dispatch_release(notified);
    dispatch_release(g);
}

void test_after_released()
{
    Census census;
    dispatch_semaphore_t ran = dispatch_semaphore_create(0);
    {
        Tracker t(&census);
        dispatch_after(dispatch_time(DISPATCH_TIME_NOW, 2 * (int64_t)NSEC_PER_MSEC),
                       compat_global(), ^{
                           (void)t.id();
                           dispatch_semaphore_signal(ran);
                       });
    }
    WAIT_SEMA(ran);
    CHECK(census.all_gone());
    dispatch_release(ran);
}

/* sync, barrier_sync, apply and once run the block before returning: no copy is made. */
void test_sync_forms_do_not_copy()
{
    Census census;
    static dispatch_once_t once;
    __block long ran = 0;
    dispatch_queue_t q = dispatch_queue_create("compat.release.sync", DISPATCH_QUEUE_CONCURRENT);
    {
        Tracker t(&census);
        void (^work)(void) = ^{
            ran += t.id();
        };
        long copies = compat_load(&census.copies);
        dispatch_sync(q, work);
        dispatch_barrier_sync(q, work);
        dispatch_once(&once, work);
        dispatch_apply(4, q, ^(size_t) {
            compat_add(&ran, t.id());
        });
        /* the apply literal made one copy of t when it was created; the calls made none */
        CHECK_EQ(compat_load(&census.copies) - copies, 1);
    }
    CHECK_EQ(ran, 7);
    CHECK(census.all_gone());
    dispatch_release(q);
}

void test_source_handlers_released()
{
    Census first, second, cancel, registration;
    dispatch_semaphore_t got = dispatch_semaphore_create(0);
    dispatch_semaphore_t cancelled = dispatch_semaphore_create(0);
    dispatch_source_t s = dispatch_source_create(DISPATCH_SOURCE_TYPE_DATA_ADD, 0, 0,
                                                 compat_global());
    REQUIRE(s != NULL);
    {
        Tracker t1(&first), t2(&second), tc(&cancel), tr(&registration);
        dispatch_source_set_registration_handler(s, ^{
            (void)tr.id();
        });
        dispatch_source_set_event_handler(s, ^{
            (void)t1.id();
            dispatch_semaphore_signal(got);
        });
        dispatch_source_set_cancel_handler(s, ^{
            (void)tc.id();
            dispatch_semaphore_signal(cancelled);
        });
        dispatch_activate(s);
        dispatch_source_merge_data(s, 1);
        WAIT_SEMA(got);
        /* replacing the event handler releases the first one */
        dispatch_source_set_event_handler(s, ^{
            (void)t2.id();
            dispatch_semaphore_signal(got);
        });
        dispatch_source_merge_data(s, 1);
        WAIT_SEMA(got);
    }
    CHECK(first.all_gone());
    CHECK(registration.all_gone()); /* it has run; it never runs again */
    dispatch_source_cancel(s);
    WAIT_SEMA(cancelled);
    dispatch_release(s);
    CHECK(cancel.all_gone());
    CHECK(second.all_gone()); /* released with the cancelled source */
    dispatch_release(got);
    dispatch_release(cancelled);
}

} // namespace

int main()
{
    RUN(test_async_released_after_running);
    RUN(test_group_blocks_released);
    RUN(test_after_released);
    RUN(test_sync_forms_do_not_copy);
    RUN(test_source_handlers_released);
    TEST_MAIN_END();
}
