/*
 * The block forms through libdispatch's names (clang -fblocks, C and C++): async, sync, barriers,
 * after, apply, once, groups, and blocks that outlive the stack frame that made them.
 */
#include "compat_test.h"

#ifndef __BLOCKS__
#error "compat_blocks.c needs clang -fblocks"
#endif

static void test_async_sync(void)
{
    static long order_storage[100];
    long *order = order_storage; /* blocks capture pointers, not arrays */
    __block long next = 0;
    __block long ran = 0;
    dispatch_queue_t q = dispatch_queue_create("compat.blocks.serial", NULL);
    dispatch_queue_t other = dispatch_queue_create("compat.blocks.other", NULL);
    long i;
    for (i = 0; i < 100; i++) {
        long value = i; /* captured by copy at submission */
        dispatch_async(q, ^{
            order[next++] = value;
        });
    }
    dispatch_sync(q, ^{
        ran = next;
    });
    CHECK_EQ(ran, 100);
    for (i = 0; i < 100; i++) {
        if (order[i] != i) {
            CHECK_EQ(order[i], i);
            break;
        }
    }
    /* nested sync, returning results through __block */
    dispatch_sync(q, ^{
        dispatch_sync(other, ^{
            ran = -1;
        });
        ran *= 2;
    });
    CHECK_EQ(ran, -2);
    dispatch_release(q);
    dispatch_release(other);
}

struct eight {
    long v[8];
};

/* A block made in a frame that has returned before it runs: only a copy survives. */
static void submit_from_frame(dispatch_queue_t q, dispatch_group_t g, long *out, long value)
{
    struct eight local; /* captured by value, inside the block */
    int i;
    for (i = 0; i < 8; i++) {
        local.v[i] = value + i;
    }
    dispatch_group_enter(g);
    dispatch_async(q, ^{
        *out = local.v[0] + local.v[7];
        dispatch_group_leave(g);
    });
}

static long clobber_stack(long seed)
{
    volatile long junk[256];
    long sum = 0;
    int i;
    for (i = 0; i < 256; i++) {
        junk[i] = seed * i;
    }
    for (i = 0; i < 256; i++) {
        sum += junk[i];
    }
    return sum;
}

static void test_escaping_block(void)
{
    long out[16];
    dispatch_queue_t q = dispatch_queue_create("compat.blocks.escape", NULL);
    dispatch_group_t g = dispatch_group_create();
    long i;
    dispatch_suspend(q); /* nothing runs until every frame is gone */
    for (i = 0; i < 16; i++) {
        out[i] = -1;
        submit_from_frame(q, g, &out[i], i * 100);
        (void)clobber_stack(i); /* reuse the stack the frame used */
    }
    dispatch_resume(q);
    WAIT_GROUP(g);
    for (i = 0; i < 16; i++) {
        CHECK_EQ(out[i], 2 * i * 100 + 7);
    }
    dispatch_release(g);
    dispatch_release(q);
}

static void test_barriers(void)
{
    __block long before = 0, after = 0, seen_before = -1, seen_after = -1, sync_seen = -1;
    dispatch_queue_t q = dispatch_queue_create("compat.blocks.barrier", DISPATCH_QUEUE_CONCURRENT);
    dispatch_group_t g = dispatch_group_create();
    int i;
    for (i = 0; i < 20; i++) {
        dispatch_group_async(g, q, ^{
            compat_add(&before, 1);
        });
    }
    dispatch_barrier_async(q, ^{
        seen_before = compat_load(&before);
        seen_after = compat_load(&after);
    });
    for (i = 0; i < 20; i++) {
        dispatch_group_async(g, q, ^{
            compat_add(&after, 1);
        });
    }
    dispatch_barrier_sync(q, ^{
        sync_seen = compat_load(&after);
    });
    WAIT_GROUP(g);
    CHECK_EQ(seen_before, 20);
    CHECK_EQ(seen_after, 0);
    CHECK_EQ(sync_seen, 20);
    dispatch_release(g);
    dispatch_release(q);
}

static void test_after(void)
{
    __block long early = 0;
    __block long ran = 0;
    dispatch_semaphore_t done = dispatch_semaphore_create(0);
    dispatch_time_t due = dispatch_time(DISPATCH_TIME_NOW, 10 * (int64_t)NSEC_PER_MSEC);
    dispatch_after(due, compat_global(), ^{
        if (compat_now() < due) {
            early = 1;
        }
        ran++;
        dispatch_semaphore_signal(done);
    });
    dispatch_after(DISPATCH_TIME_FOREVER, compat_global(), ^{
        ran += 100; /* never */
    });
    WAIT_SEMA(done);
    /* "Never" cannot be proven by an event: this sees a FOREVER block that ran by the time
     * the 10 ms one did (FOREVER taken as "now", or as any deadline before 10 ms). */
    CHECK_EQ(ran, 1);
    CHECK_EQ(early, 0);
    dispatch_release(done);
}

static void test_apply(void)
{
    static long hits_storage[1000];
    long *hits = hits_storage;
    __block long in_order = 1;
    __block long last = -1;
    dispatch_queue_t serial = dispatch_queue_create("compat.blocks.apply", NULL);
    long i;
    memset(hits_storage, 0, sizeof hits_storage);
    dispatch_apply(1000, compat_global(), ^(size_t k) {
        compat_add(&hits[k], 1);
    });
    dispatch_apply(1000, DISPATCH_APPLY_AUTO, ^(size_t k) {
        compat_add(&hits[k], 1);
    });
    dispatch_apply(1000, serial, ^(size_t k) {
        if ((long)k != last + 1) {
            in_order = 0;
        }
        last = (long)k;
        hits[k]++;
    });
    for (i = 0; i < 1000; i++) {
        if (hits[i] != 3) {
            CHECK_EQ(hits[i], 3);
            break;
        }
    }
    CHECK_EQ(in_order, 1);
    dispatch_release(serial);
}

static void test_once(void)
{
    static dispatch_once_t predicate;
    __block long runs = 0;
    dispatch_apply(32, compat_global(), ^(size_t k) {
        (void)k;
        dispatch_once(&predicate, ^{
            compat_add(&runs, 1);
        });
    });
    dispatch_once(&predicate, ^{
        compat_add(&runs, 1);
    });
    CHECK_EQ(runs, 1);
}

static void test_groups(void)
{
    __block long done = 0;
    __block long at_notify = -1;
    dispatch_group_t g = dispatch_group_create();
    dispatch_semaphore_t notified = dispatch_semaphore_create(0);
    dispatch_queue_t q = dispatch_queue_create("compat.blocks.group", DISPATCH_QUEUE_CONCURRENT);
    int i;
    dispatch_group_enter(g);
    for (i = 0; i < 100; i++) {
        dispatch_group_async(g, i % 2 ? q : compat_global(), ^{
            compat_add(&done, 1);
        });
    }
    dispatch_group_notify(g, q, ^{
        at_notify = compat_load(&done);
        dispatch_semaphore_signal(notified);
    });
    dispatch_group_leave(g);
    WAIT_GROUP(g);
    WAIT_SEMA(notified);
    CHECK_EQ(done, 100);
    CHECK_EQ(at_notify, 100);
#if defined(dispatch_wait) && defined(dispatch_notify)
    /* the type-generic forms (C11) */
    dispatch_group_async(g, q, ^{
        compat_add(&done, 1);
    });
    CHECK_EQ(dispatch_wait(g, compat_deadline()), 0);
    dispatch_notify(g, q, ^{
        dispatch_semaphore_signal(notified);
    });
    CHECK_EQ(dispatch_wait(notified, compat_deadline()), 0);
    CHECK_EQ(done, 101);
#endif
    dispatch_release(notified);
    dispatch_release(q);
    dispatch_release(g);
}

int main(void)
{
    RUN(test_async_sync);
    RUN(test_escaping_block);
    RUN(test_barriers);
    RUN(test_after);
    RUN(test_apply);
    RUN(test_once);
    RUN(test_groups);
    TEST_MAIN_END();
}
