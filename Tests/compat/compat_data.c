/*
 * Dispatch data objects (dispatch_data_*) through libdispatch's names, with clang -fblocks, in C
 * and C++, on both runtimes: the empty object, the destructors, concat (flattened), subrange
 * (clamped), apply (stops on false), copy_region, create_map. Identity (which object a call
 * returns) is checked only where libdispatch documents it or both runtimes agree.
 */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, mincore */
#endif
#include "compat_test.h"

#ifndef __BLOCKS__
#error "compat_data.c needs clang -fblocks"
#endif

#include <sys/mman.h>

/* A data object of n bytes, byte i = seed + i (copied). */
static dispatch_data_t make(size_t n, unsigned char seed)
{
    unsigned char buf[256];
    REQUIRE(n <= sizeof buf);
    for (size_t i = 0; i < n; i++) {
        buf[i] = (unsigned char)(seed + i);
    }
    return dispatch_data_create(buf, n, NULL, DISPATCH_DATA_DESTRUCTOR_DEFAULT);
}

/* Whether d holds exactly bytes[0..n). */
static bool holds(dispatch_data_t d, const unsigned char *bytes, size_t n)
{
    if (dispatch_data_get_size(d) != n) {
        return false;
    }
    __block bool same = true;
    bool all = dispatch_data_apply(d, ^bool(dispatch_data_t region, size_t offset,
                                            const void *buffer, size_t size) {
        (void)region;
        same = same && offset + size <= n && memcmp(bytes + offset, buffer, size) == 0;
        return true;
    });
    return all && same;
}

static size_t regions_of(dispatch_data_t d)
{
    __block size_t count = 0;
    dispatch_data_apply(d, ^bool(dispatch_data_t region, size_t offset, const void *buffer,
                                 size_t size) {
        (void)region;
        (void)offset;
        (void)buffer;
        (void)size;
        count++;
        return true;
    });
    return count;
}

static void test_empty(void)
{
    CHECK_EQ(dispatch_data_get_size(dispatch_data_empty), 0);
    char b = 0;
    dispatch_data_t d = dispatch_data_create(&b, 0, NULL, DISPATCH_DATA_DESTRUCTOR_DEFAULT);
    CHECK(d == dispatch_data_empty);
    dispatch_release(d);
    CHECK_EQ(regions_of(dispatch_data_empty), 0);
    const void *p = &b;
    size_t n = 5;
    dispatch_data_t m = dispatch_data_create_map(dispatch_data_empty, &p, &n);
    CHECK(p == NULL);
    CHECK_EQ(n, 0);
    CHECK_EQ(dispatch_data_get_size(m), 0);
    dispatch_release(m);
}

static void test_destructors(void)
{
    /* a block, on its queue, once, after the last release */
    dispatch_queue_t q = dispatch_queue_create("compat.data", DISPATCH_QUEUE_SERIAL);
    dispatch_semaphore_t ran = dispatch_semaphore_create(0);
    static unsigned char buf[64];
    __block long runs = 0;
    dispatch_data_t d = dispatch_data_create(buf, sizeof buf, q, ^{
        runs++;
        dispatch_semaphore_signal(ran);
    });
    dispatch_data_t s = dispatch_data_create_subrange(d, 1, 10);
    dispatch_release(d);
    CHECK(dispatch_semaphore_wait(ran, compat_short()) != 0); /* s still refers to it */
    dispatch_release(s);
    WAIT_SEMA(ran);
    dispatch_sync(q, ^{
    });
    CHECK_EQ(runs, 1);

    /* free and munmap take ownership */
    unsigned char *heap = (unsigned char *)malloc(100);
    memset(heap, 3, 100);
    d = dispatch_data_create(heap, 100, NULL, DISPATCH_DATA_DESTRUCTOR_FREE);
    CHECK_EQ(dispatch_data_get_size(d), 100);
    dispatch_release(d);
#ifndef COMPAT_USE_LIBDISPATCH
    /* Not run against libdispatch: its MUNMAP destructor, run later on a global queue, crashes
     * now and then on Linux (SIGILL in _dispatch_data_destructor_munmap_block_invoke, about one
     * run in fifty under parallel load; seen with the Swift 6.3 toolchain's libdispatch). */
    void *map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(map != MAP_FAILED);
    d = dispatch_data_create(map, 4096, NULL, DISPATCH_DATA_DESTRUCTOR_MUNMAP);
    CHECK_EQ(dispatch_data_get_size(d), 4096);
    dispatch_release(d);
    /* unmapped inside the last release */
    unsigned char vec[1];
    CHECK(mincore(map, 4096, vec) == -1);
#endif

    dispatch_release(ran);
    dispatch_release(q);
}

static void test_concat_subrange(void)
{
    unsigned char all[100];
    for (int i = 0; i < 100; i++) {
        all[i] = (unsigned char)i;
    }
    dispatch_data_t a = make(10, 0), b = make(20, 10), c = make(30, 30), e = make(40, 60);
    dispatch_data_t ab = dispatch_data_create_concat(a, b);
    dispatch_data_t ce = dispatch_data_create_concat(c, e);
    dispatch_data_t abce = dispatch_data_create_concat(ab, ce);
    CHECK(holds(abce, all, 100));
    CHECK_EQ(regions_of(abce), 4); /* flattened: the four leaves */
    dispatch_data_t ae = dispatch_data_create_concat(a, dispatch_data_empty);
    CHECK(holds(ae, all, 10));
    dispatch_release(ae);

    dispatch_data_t s = dispatch_data_create_subrange(abce, 5, 40);
    CHECK(holds(s, all + 5, 40));
    CHECK_EQ(regions_of(s), 3);
    dispatch_release(s);
    s = dispatch_data_create_subrange(abce, 90, 1000); /* clamped at the end */
    CHECK(holds(s, all + 90, 10));
    dispatch_release(s);
    s = dispatch_data_create_subrange(abce, 100, 1);
    CHECK(s == dispatch_data_empty);
    s = dispatch_data_create_subrange(abce, 3, 0);
    CHECK(s == dispatch_data_empty);
    s = dispatch_data_create_subrange(abce, 0, 100);
    CHECK(s == abce); /* the whole range is the object itself */
    dispatch_release(s);

    /* apply stops at the first false */
    __block int calls = 0;
    bool done = dispatch_data_apply(abce, ^bool(dispatch_data_t region, size_t offset,
                                                const void *buffer, size_t size) {
        (void)region;
        (void)buffer;
        (void)size;
        calls++;
        return offset < 10;
    });
    CHECK(!done);
    CHECK_EQ(calls, 2);

    /* copy_region: the region holding a location, and where it starts */
    size_t off = 0;
    dispatch_data_t r = dispatch_data_copy_region(abce, 15, &off);
    CHECK_EQ(off, 10);
    CHECK(holds(r, all + 10, 20));
    dispatch_release(r);
    r = dispatch_data_copy_region(abce, 99, &off);
    CHECK_EQ(off, 60);
    CHECK(holds(r, all + 60, 40));
    dispatch_release(r);
    r = dispatch_data_copy_region(abce, 100, &off);
    CHECK(r == dispatch_data_empty);
    CHECK_EQ(off, 100);

    /* create_map: one region is mapped in place, several are copied once */
    const void *p = NULL;
    size_t n = 0;
    dispatch_data_t m = dispatch_data_create_map(a, &p, &n);
    CHECK(m == a);
    CHECK_EQ(n, 10);
    CHECK(p != NULL && memcmp(p, all, 10) == 0);
    dispatch_release(m);
    m = dispatch_data_create_map(abce, &p, &n);
    CHECK_EQ(n, 100);
    CHECK(p != NULL && memcmp(p, all, 100) == 0);
    CHECK_EQ(regions_of(m), 1);
    dispatch_release(abce);
    CHECK(memcmp(p, all, 100) == 0); /* the map owns its copy */
    dispatch_release(m);

    dispatch_release(ab);
    dispatch_release(ce);
    dispatch_release(a);
    dispatch_release(b);
    dispatch_release(c);
    dispatch_release(e);
}

int main(void)
{
    RUN(test_empty);
    RUN(test_destructors);
    RUN(test_concat_subrange);
    TEST_MAIN_END();
}
