/*
 * Data objects (cqueuecore/data.h): every call, the empty object, destructors (once, on their
 * queue, after the last release), flattening, clamping, apply, copy_region, create_map, and the
 * allocations each call costs (malloc and free are wrapped: counted on the calling thread).
 */
// link-wrap: malloc free
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/mman.h>

#include "cq_test.h"

/* ---- counting the library's allocations on this thread --------------------------------------- */

void *__real_malloc(size_t size);
void __real_free(void *p);
void *__wrap_malloc(size_t size);
void __wrap_free(void *p);

static __thread long mallocs_here;
static __thread long frees_here;
static void *_Atomic watched_free;    /* a pointer whose free is counted (any thread) */
static atomic_int watched_free_count; /* how often it was freed */

void *__wrap_malloc(size_t size)
{
    mallocs_here++;
    return __real_malloc(size);
}

void __wrap_free(void *p)
{
    if (p != NULL) {
        frees_here++;
        if (p == atomic_load(&watched_free)) {
            atomic_fetch_add(&watched_free_count, 1);
        }
    }
    __real_free(p);
}

/* ---- helpers ----------------------------------------------------------------------------------
 */

/* A data object of `size` bytes, byte i = seed + i (copied: DEFAULT destructor). */
static cq_data_t make_data(size_t size, uint8_t seed)
{
    uint8_t *buf = malloc(size ? size : 1);
    for (size_t i = 0; i < size; i++) {
        buf[i] = (uint8_t)(seed + i);
    }
    cq_data_t d = cq_data_create_f(buf, size, NULL, CQ_DATA_DESTRUCTOR_DEFAULT);
    free(buf);
    REQUIRE(d != NULL);
    return d;
}

/* The bytes of d, through cq_data_apply_f, in a malloc'd buffer (size d's size). */
static bool gather(void *ctx, cq_data_t region, size_t offset, const void *buffer, size_t size)
{
    (void)region;
    memcpy((uint8_t *)ctx + offset, buffer, size);
    return true;
}

static uint8_t *bytes_of(cq_data_t d)
{
    size_t n = cq_data_get_size(d);
    uint8_t *out = malloc(n ? n : 1);
    CHECK(cq_data_apply_f(d, out, gather));
    return out;
}

/* d holds exactly the bytes expected[0..n). Checked three ways: apply, copy_bytes, regions. */
static void check_bytes(cq_data_t d, const uint8_t *expected, size_t n)
{
    CHECK_EQ(cq_data_get_size(d), n);
    uint8_t *got = bytes_of(d);
    CHECK(n == 0 || memcmp(got, expected, n) == 0);
    memset(got, 0, n);
    CHECK_EQ(cq_data_copy_bytes(d, 0, got, n + 10), n);
    CHECK(n == 0 || memcmp(got, expected, n) == 0);
    free(got);
    size_t regions = cq_data_get_region_count(d), at = 0;
    for (size_t i = 0; i < regions; i++) {
        size_t size = 0, offset = 0;
        const uint8_t *p = cq_data_get_region(d, i, &size, &offset);
        CHECK_EQ(offset, at);
        CHECK(size > 0 && memcmp(p, expected + offset, size) == 0);
        CHECK_EQ(cq_data_region_index(d, offset), i);
        CHECK_EQ(cq_data_region_index(d, offset + size - 1), i);
        at += size;
    }
    CHECK_EQ(at, n);
    CHECK_EQ(cq_data_region_index(d, n), regions);
}

/* Records the applier's calls. */
struct applied {
    int calls;
    int stop_after; /* return false on this call (1-based); 0: never */
    cq_data_t regions[16];
    size_t offsets[16];
    const void *buffers[16];
    size_t sizes[16];
};

static bool record_apply(void *ctx, cq_data_t region, size_t offset, const void *buffer,
                         size_t size)
{
    struct applied *a = ctx;
    if (a->calls < 16) {
        a->regions[a->calls] = region;
        a->offsets[a->calls] = offset;
        a->buffers[a->calls] = buffer;
        a->sizes[a->calls] = size;
    }
    a->calls++;
    return a->calls != a->stop_after;
}

/* The bytes of a leaf made by make_data (its only region). */
static const uint8_t *leaf_bytes(cq_data_t leaf)
{
    REQUIRE(cq_data_get_region_count(leaf) == 1);
    return cq_data_get_region(leaf, 0, NULL, NULL);
}

/* ---- the empty object --------------------------------------------------------------------------
 */

static void test_empty(void)
{
    cq_data_t e = cq_data_empty;
    CHECK(e == cq_data_get_empty());
    CHECK_EQ(cq_data_get_size(e), 0);
    for (int i = 0; i < 5; i++) { /* retain and release do nothing on it */
        cq_release(e);
    }
    cq_retain(e);
    CHECK_EQ(cq_data_get_size(e), 0);
    struct applied a = {0};
    CHECK(cq_data_apply_f(e, &a, record_apply));
    CHECK_EQ(a.calls, 0);
    const void *buf = (const void *)1;
    size_t size = 7;
    cq_data_t m = cq_data_create_map(e, &buf, &size);
    CHECK(m == e && buf == NULL && size == 0);
    size_t off = 99;
    CHECK(cq_data_copy_region(e, 0, &off) == e);
    CHECK_EQ(off, 0);
    CHECK_EQ(cq_data_get_region_count(e), 0);
    CHECK_EQ(cq_data_region_index(e, 0), 0);
    CHECK(cq_data_create_concat(e, e) == e);
    CHECK(cq_data_create_subrange(e, 0, 10) == e);
    CHECK_EQ(cq_data_copy_bytes(e, 0, NULL, 0), 0);
    cq_set_context(e, (void *)1); /* static: no context */
    CHECK(cq_get_context(e) == NULL);
}

/* ---- creation and destructors -----------------------------------------------------------------
 */

static void test_create_default_copies(void)
{
    uint8_t buf[100];
    for (int i = 0; i < 100; i++) {
        buf[i] = (uint8_t)i;
    }
    long m0 = mallocs_here;
    cq_data_t d = cq_data_create_f(buf, sizeof buf, NULL, CQ_DATA_DESTRUCTOR_DEFAULT);
    CHECK_EQ(mallocs_here - m0, 1); /* the object and its bytes: one allocation */
    REQUIRE(d != NULL);
    CHECK(leaf_bytes(d) != buf);
    uint8_t expected[100];
    memcpy(expected, buf, sizeof buf);
    memset(buf, 0xee, sizeof buf); /* the caller's buffer is its own again */
    check_bytes(d, expected, sizeof expected);
    long f0 = frees_here;
    cq_release(d);
    CHECK_EQ(frees_here - f0, 1);
}

static void test_create_zero_size(void)
{
    uint8_t b = 1;
    long m0 = mallocs_here;
    CHECK(cq_data_create_f(&b, 0, NULL, CQ_DATA_DESTRUCTOR_DEFAULT) == cq_data_empty);
    CHECK(cq_data_create_f(NULL, 0, NULL, CQ_DATA_DESTRUCTOR_DEFAULT) == cq_data_empty);
    CHECK(cq_data_create_f(NULL, 5, NULL, CQ_DATA_DESTRUCTOR_NONE) == cq_data_empty);
    CHECK_EQ(mallocs_here - m0, 0);
    /* size 0 hands the buffer to its destructor at once */
    void *p = malloc(16);
    atomic_store(&watched_free, p);
    atomic_store(&watched_free_count, 0);
    CHECK(cq_data_create_f(p, 0, NULL, CQ_DATA_DESTRUCTOR_FREE) == cq_data_empty);
    CHECK_EQ(atomic_load(&watched_free_count), 1);
    atomic_store(&watched_free, NULL);
}

struct dtor_probe {
    cq_queue_t expected_queue; /* NULL: any global queue */
    const void *expected_context;
    atomic_int runs;
    atomic_int wrong_queue;
    atomic_int wrong_context;
    cq_semaphore_t ran;
};

static struct dtor_probe *current_probe;

static void noop(void *ctx)
{
    (void)ctx;
}

static void probe_destructor(void *context)
{
    struct dtor_probe *p = current_probe;
    if (p->expected_queue != NULL && !cq_queue_is_current(p->expected_queue)) {
        atomic_fetch_add(&p->wrong_queue, 1);
    }
    /* a global queue's task has no current queue: it must at least run on a pool thread */
    if (p->expected_queue == NULL && cq_thread_is_main()) {
        atomic_fetch_add(&p->wrong_queue, 1);
    }
    if (context != p->expected_context) {
        atomic_fetch_add(&p->wrong_context, 1);
    }
    atomic_fetch_add(&p->runs, 1);
    cq_semaphore_signal(p->ran);
}

static void probe_init(struct dtor_probe *p, cq_queue_t q, const void *context)
{
    p->expected_queue = q;
    p->expected_context = context;
    atomic_init(&p->runs, 0);
    atomic_init(&p->wrong_queue, 0);
    atomic_init(&p->wrong_context, 0);
    p->ran = cq_semaphore_create(0);
    current_probe = p;
}

static void probe_done(struct dtor_probe *p, cq_queue_t q)
{
    WAIT_SEMA(p->ran);
    if (q != NULL) {
        cq_sync_f(q, NULL, noop); /* anything queued behind it has run */
    }
    CHECK_EQ(atomic_load(&p->runs), 1);
    CHECK_EQ(atomic_load(&p->wrong_queue), 0);
    CHECK_EQ(atomic_load(&p->wrong_context), 0);
    cq_release(p->ran);
    current_probe = NULL;
}

static void test_destructor_once_on_queue_after_last_release(void)
{
    static uint8_t buf[64];
    cq_queue_t q = cq_queue_create("data.destructor", NULL);
    struct dtor_probe p;
    probe_init(&p, q, buf);
    cq_data_t d = cq_data_create_f(buf, sizeof buf, q, probe_destructor);
    REQUIRE(d != NULL);
    CHECK(leaf_bytes(d) == buf); /* not copied */
    cq_retain(d);
    cq_data_t c = cq_data_create_concat(d, d); /* two records on the same leaf */
    cq_data_t s = cq_data_create_subrange(d, 10, 20);
    cq_release(d);
    cq_release(d); /* the caller's references are gone; c and s still refer to it */
    cq_sync_f(cq_get_global_queue(0, 0), NULL, noop);
    CHECK_EQ(atomic_load(&p.runs), 0); /* never submitted before the last release */
    cq_release(c);
    CHECK_EQ(atomic_load(&p.runs), 0);
    cq_release(s); /* the last reference: the destructor is submitted to q */
    probe_done(&p, q);
    cq_release(q);
}

static void test_destructor_default_queue(void)
{
    static uint8_t buf[8];
    struct dtor_probe p;
    probe_init(&p, NULL, buf);
    cq_data_t d = cq_data_create_f(buf, sizeof buf, NULL, probe_destructor);
    cq_release(d);
    probe_done(&p, NULL);
}

static void test_destructor_zero_size_runs_on_queue(void)
{
    static uint8_t buf[1];
    cq_queue_t q = cq_queue_create("data.zero", NULL);
    struct dtor_probe p;
    probe_init(&p, q, buf);
    CHECK(cq_data_create_f(buf, 0, q, probe_destructor) == cq_data_empty);
    WAIT_SEMA(p.ran);
    cq_sync_f(q, NULL, noop);
    CHECK_EQ(atomic_load(&p.runs), 1);
    CHECK_EQ(atomic_load(&p.wrong_queue), 0);
    cq_release(p.ran);
    cq_release(q);
}

static void test_destructor_ctx(void)
{
    static uint8_t buf[8];
    static int token;
    cq_queue_t q = cq_queue_create("data.ctx", NULL);
    struct dtor_probe p;
    probe_init(&p, q, &token);
    cq_data_t d = cq_data_create_ctx_f(buf, sizeof buf, q, &token, probe_destructor);
    CHECK(leaf_bytes(d) == buf);
    cq_release(d);
    WAIT_SEMA(p.ran);
    cq_sync_f(q, NULL, noop);
    CHECK_EQ(atomic_load(&p.runs), 1);
    CHECK_EQ(atomic_load(&p.wrong_queue), 0);
    CHECK_EQ(atomic_load(&p.wrong_context), 0);
    cq_release(p.ran);
    cq_release(q);
}

static void test_destructor_free(void)
{
    uint8_t *buf = malloc(32);
    memset(buf, 7, 32);
    atomic_store(&watched_free, buf);
    atomic_store(&watched_free_count, 0);
    long m0 = mallocs_here;
    cq_data_t d = cq_data_create_f(buf, 32, NULL, CQ_DATA_DESTRUCTOR_FREE);
    CHECK_EQ(mallocs_here - m0, 1); /* the object only */
    CHECK(leaf_bytes(d) == buf);
    cq_data_t s = cq_data_create_subrange(d, 1, 2);
    cq_release(d);
    CHECK_EQ(atomic_load(&watched_free_count), 0);
    cq_release(s); /* freed inside the last release */
    CHECK_EQ(atomic_load(&watched_free_count), 1);
    atomic_store(&watched_free, NULL);
}

static void test_destructor_munmap(void)
{
    long page = sysconf(_SC_PAGESIZE);
    uint8_t *map =
        mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(map != MAP_FAILED);
    map[0] = 42;
    cq_data_t d = cq_data_create_f(map, (size_t)page * 2, NULL, CQ_DATA_DESTRUCTOR_MUNMAP);
    CHECK(leaf_bytes(d) == map);
    unsigned char vec[2];
    CHECK(mincore(map, (size_t)page * 2, vec) == 0); /* mapped */
    cq_release(d);
    errno = 0;
    CHECK(mincore(map, (size_t)page * 2, vec) == -1 && errno == ENOMEM); /* unmapped */
}

static void test_destructor_none(void)
{
    static uint8_t buf[16] = {1, 2, 3};
    long f0 = frees_here;
    cq_data_t d = cq_data_create_f(buf, sizeof buf, NULL, CQ_DATA_DESTRUCTOR_NONE);
    CHECK(leaf_bytes(d) == buf);
    cq_release(d);
    CHECK_EQ(frees_here - f0, 1); /* the object, not the buffer */
    CHECK_EQ(buf[2], 3);
}

static void fin(void *ctx)
{
    cq_semaphore_signal(ctx);
}

static void test_context_finalizer(void)
{
    cq_data_t d = make_data(10, 0);
    cq_semaphore_t s = cq_semaphore_create(0);
    cq_set_context(d, s);
    CHECK(cq_get_context(d) == s);
    cq_set_finalizer_f(d, fin);
    cq_release(d);
    WAIT_SEMA(s);
    cq_release(s);
}

/* ---- concat -------------------------------------------------------------------------------- */

static void test_concat(void)
{
    cq_data_t a = make_data(10, 0), b = make_data(20, 10), c = make_data(30, 30),
              d = make_data(40, 60);
    uint8_t expected[100];
    for (int i = 0; i < 100; i++) {
        expected[i] = (uint8_t)i;
    }
    long m0 = mallocs_here;
    cq_data_t ab = cq_data_create_concat(a, b);
    CHECK_EQ(mallocs_here - m0, 1); /* one composite, no copy */
    cq_data_t cd = cq_data_create_concat(c, d);
    check_bytes(ab, expected, 30);
    CHECK_EQ(cq_data_get_region_count(ab), 2);

    m0 = mallocs_here;
    cq_data_t abcd = cq_data_create_concat(ab, cd);
    CHECK_EQ(mallocs_here - m0, 1);
    check_bytes(abcd, expected, 100);
    /* flattened: four regions, each one of the original leaves */
    struct applied ap = {0};
    CHECK(cq_data_apply_f(abcd, &ap, record_apply));
    CHECK_EQ(ap.calls, 4);
    cq_data_t leaves[4] = {a, b, c, d};
    size_t offsets[4] = {0, 10, 30, 60};
    for (int i = 0; i < 4; i++) {
        CHECK(ap.regions[i] == leaves[i]);
        CHECK_EQ(ap.offsets[i], offsets[i]);
        CHECK(ap.buffers[i] == leaf_bytes(leaves[i]));
    }
    /* a concat of a concat and a leaf, and of the result with itself */
    cq_data_t abcda = cq_data_create_concat(abcd, a);
    CHECK_EQ(cq_data_get_region_count(abcda), 5);
    cq_data_t twice = cq_data_create_concat(abcda, abcda);
    CHECK_EQ(cq_data_get_region_count(twice), 10);
    uint8_t exp2[220];
    memcpy(exp2, expected, 100);
    memcpy(exp2 + 100, expected, 10);
    memcpy(exp2 + 110, exp2, 110);
    check_bytes(twice, exp2, 220);

    /* with the empty object: the other one itself */
    CHECK(cq_data_create_concat(a, cq_data_empty) == a);
    CHECK(cq_data_create_concat(cq_data_empty, ab) == ab);
    cq_release(a);
    cq_release(ab);

    /* the originals can go first: the composites keep their leaves */
    cq_release(a);
    cq_release(b);
    cq_release(c);
    cq_release(d);
    cq_release(ab);
    cq_release(cd);
    check_bytes(abcd, expected, 100);
    cq_release(abcd);
    cq_release(abcda);
    check_bytes(twice, exp2, 220);
    cq_release(twice);
}

static void test_concat_adjacent_merges(void)
{
    cq_data_t a = make_data(10, 0);
    cq_data_t x = cq_data_create_subrange(a, 0, 4), y = cq_data_create_subrange(a, 4, 3),
              z = cq_data_create_subrange(a, 7, 3);
    cq_data_t xy = cq_data_create_concat(x, y);
    CHECK_EQ(cq_data_get_region_count(xy), 1); /* contiguous in the same leaf: one region */
    CHECK(cq_data_get_region(xy, 0, NULL, NULL) == leaf_bytes(a));
    cq_data_t xyz = cq_data_create_concat(xy, z);
    CHECK(xyz == a); /* the whole leaf again is the leaf */
    cq_data_t zx = cq_data_create_concat(z, x);
    CHECK_EQ(cq_data_get_region_count(zx), 2);
    uint8_t exp[7] = {7, 8, 9, 0, 1, 2, 3};
    check_bytes(zx, exp, 7);
    cq_release(zx);
    cq_release(xyz);
    cq_release(xy);
    cq_release(x);
    cq_release(y);
    cq_release(z);
    cq_release(a);
}

/* ---- subrange ----------------------------------------------------------------------------- */

static void test_subrange(void)
{
    cq_data_t a = make_data(10, 0), b = make_data(20, 10), c = make_data(30, 30);
    cq_data_t ab = cq_data_create_concat(a, b);
    cq_data_t abc = cq_data_create_concat(ab, c);
    uint8_t expected[60];
    for (int i = 0; i < 60; i++) {
        expected[i] = (uint8_t)i;
    }

    /* of a leaf: one region into the leaf's own bytes */
    long m0 = mallocs_here;
    cq_data_t s = cq_data_create_subrange(a, 3, 4);
    CHECK_EQ(mallocs_here - m0, 1);
    CHECK_EQ(cq_data_get_region_count(s), 1);
    CHECK(cq_data_get_region(s, 0, NULL, NULL) == leaf_bytes(a) + 3);
    check_bytes(s, expected + 3, 4);
    cq_release(s);

    /* across region boundaries */
    m0 = mallocs_here;
    s = cq_data_create_subrange(abc, 5, 40); /* a[5..10) b[0..20) c[0..15) */
    CHECK_EQ(mallocs_here - m0, 1);
    CHECK_EQ(cq_data_get_region_count(s), 3);
    check_bytes(s, expected + 5, 40);
    struct applied ap = {0};
    CHECK(cq_data_apply_f(s, &ap, record_apply));
    CHECK_EQ(ap.calls, 3);
    CHECK(ap.regions[0] == a && ap.regions[1] == b && ap.regions[2] == c);
    CHECK(ap.buffers[0] == leaf_bytes(a) + 5 && ap.sizes[0] == 5);
    CHECK(ap.buffers[2] == leaf_bytes(c) && ap.sizes[2] == 15);
    /* a subrange of a subrange */
    cq_data_t ss = cq_data_create_subrange(s, 4, 3); /* bytes 9..12: a[9], b[0..2) */
    CHECK_EQ(cq_data_get_region_count(ss), 2);
    check_bytes(ss, expected + 9, 3);
    cq_release(ss);
    cq_release(s);

    /* exactly one whole leaf inside a composite: that leaf */
    s = cq_data_create_subrange(abc, 10, 20);
    CHECK(s == b);
    cq_release(s);

    /* clamping, as libdispatch */
    CHECK(cq_data_create_subrange(abc, 60, 1) == cq_data_empty);  /* offset at the end */
    CHECK(cq_data_create_subrange(abc, 100, 1) == cq_data_empty); /* past it */
    CHECK(cq_data_create_subrange(abc, 5, 0) == cq_data_empty);   /* length 0 */
    s = cq_data_create_subrange(abc, 50, 1000);                   /* runs past the end */
    check_bytes(s, expected + 50, 10);
    cq_release(s);
    s = cq_data_create_subrange(abc, 50, SIZE_MAX);
    check_bytes(s, expected + 50, 10);
    cq_release(s);
    s = cq_data_create_subrange(abc, 0, 60); /* the whole: the object itself */
    CHECK(s == abc);
    cq_release(s);
    s = cq_data_create_subrange(abc, 0, SIZE_MAX);
    CHECK(s == abc);
    cq_release(s);
    s = cq_data_create_subrange(abc, 59, 1);
    check_bytes(s, expected + 59, 1);
    cq_release(s);

    cq_release(abc);
    cq_release(ab);
    cq_release(a);
    cq_release(b);
    cq_release(c);
}

/* Three leaves a (na bytes), b, c of make_data's counting pattern, consecutive (b starts where
 * a ends), and their concatenations ab and abc. */
struct three {
    cq_data_t a, b, c, ab, abc;
};

static struct three three_make(size_t na, size_t nb, size_t nc)
{
    struct three t = {make_data(na, 0), make_data(nb, na), make_data(nc, na + nb), NULL, NULL};
    t.ab = cq_data_create_concat(t.a, t.b);
    t.abc = cq_data_create_concat(t.ab, t.c);
    return t;
}

static void three_release(struct three *t)
{
    cq_release(t->abc);
    cq_release(t->ab);
    cq_release(t->a);
    cq_release(t->b);
    cq_release(t->c);
}

/* ---- apply ------------------------------------------------------------------------------------
 */

static void test_apply_stops(void)
{
    struct three t = three_make(1, 2, 3);
    cq_data_t a = t.a, abc = t.abc;
    struct applied ap = {.stop_after = 2};
    long m0 = mallocs_here;
    CHECK(!cq_data_apply_f(abc, &ap, record_apply));
    CHECK_EQ(mallocs_here - m0, 0); /* apply allocates nothing */
    CHECK_EQ(ap.calls, 2);
    CHECK_EQ(ap.offsets[0], 0);
    CHECK_EQ(ap.offsets[1], 1);
    ap = (struct applied){.stop_after = 1};
    CHECK(!cq_data_apply_f(a, &ap, record_apply)); /* a leaf: one call, its result */
    CHECK_EQ(ap.calls, 1);
    ap = (struct applied){0};
    CHECK(cq_data_apply_f(abc, &ap, record_apply));
    CHECK_EQ(ap.calls, 3);
    CHECK(ap.offsets[2] == 3 && ap.sizes[2] == 3);
    three_release(&t);
}

/* ---- copy_region -------------------------------------------------------------------------------
 */

static void test_copy_region(void)
{
    struct three t = three_make(10, 20, 30);
    cq_data_t a = t.a, b = t.b, c = t.c, abc = t.abc;
    size_t off = 12345;
    cq_data_t r = cq_data_copy_region(abc, 0, &off);
    CHECK(r == a && off == 0);
    cq_release(r);
    r = cq_data_copy_region(abc, 15, &off);
    CHECK(r == b && off == 10);
    cq_release(r);
    r = cq_data_copy_region(abc, 29, &off);
    CHECK(r == b && off == 10);
    cq_release(r);
    r = cq_data_copy_region(abc, 59, &off);
    CHECK(r == c && off == 30);
    cq_release(r);
    r = cq_data_copy_region(abc, 60, &off);
    CHECK(r == cq_data_empty && off == 60);
    r = cq_data_copy_region(a, 3, &off); /* a leaf: itself */
    CHECK(r == a && off == 0);
    cq_release(r);

    /* regions that are parts of a leaf: subranges of it, no copy */
    cq_data_t s = cq_data_create_subrange(abc, 5, 40);
    uint8_t expected[60];
    for (int i = 0; i < 60; i++) {
        expected[i] = (uint8_t)i;
    }
    r = cq_data_copy_region(s, 2, &off);
    CHECK_EQ(off, 0);
    check_bytes(r, expected + 5, 5);
    CHECK(cq_data_get_region(r, 0, NULL, NULL) == leaf_bytes(a) + 5);
    cq_release(r);
    r = cq_data_copy_region(s, 5, &off);
    CHECK(r == b && off == 5);
    cq_release(r);
    r = cq_data_copy_region(s, 39, &off);
    CHECK_EQ(off, 25);
    check_bytes(r, expected + 30, 15);
    cq_release(r);
    cq_release(s);
    three_release(&t);
}

/* ---- create_map ----------------------------------------------------------------------------- */

static void test_create_map(void)
{
    cq_data_t a = make_data(10, 0), b = make_data(20, 10);
    const void *buf = NULL;
    size_t size = 0;
    /* a single region: no copy, the object itself */
    long m0 = mallocs_here;
    cq_data_t m = cq_data_create_map(a, &buf, &size);
    CHECK_EQ(mallocs_here - m0, 0);
    CHECK(m == a && buf == leaf_bytes(a) && size == 10);
    cq_release(m);
    /* a subrange of one region: still no copy */
    cq_data_t s = cq_data_create_subrange(b, 5, 10);
    m0 = mallocs_here;
    m = cq_data_create_map(s, &buf, &size);
    CHECK_EQ(mallocs_here - m0, 0);
    CHECK(m == s && buf == leaf_bytes(b) + 5 && size == 10);
    cq_release(m);
    cq_release(s);
    /* several regions: one copy, owned by the result */
    cq_data_t ab = cq_data_create_concat(a, b);
    m0 = mallocs_here;
    m = cq_data_create_map(ab, &buf, &size);
    CHECK_EQ(mallocs_here - m0, 1);
    CHECK(m != ab && size == 30);
    CHECK_EQ(cq_data_get_region_count(m), 1);
    CHECK(cq_data_get_region(m, 0, NULL, NULL) == buf);
    uint8_t expected[30];
    for (int i = 0; i < 30; i++) {
        expected[i] = (uint8_t)i;
    }
    CHECK(memcmp(buf, expected, 30) == 0);
    cq_release(ab); /* the map does not depend on it */
    cq_release(a);
    cq_release(b);
    CHECK(memcmp(buf, expected, 30) == 0);
    /* NULL out-pointers are fine */
    cq_data_t m2 = cq_data_create_map(m, NULL, NULL);
    CHECK(m2 == m);
    cq_release(m2);
    cq_release(m);
}

/* ---- region access, copy_bytes --------------------------------------------------------------- */

static void test_regions_and_copy_bytes(void)
{
    struct three t = three_make(3, 4, 5);
    cq_data_t b = t.b, abc = t.abc;
    CHECK_EQ(cq_data_get_region_count(abc), 3);
    size_t size, offset;
    const uint8_t *p = cq_data_get_region(abc, 1, &size, &offset);
    CHECK(p == leaf_bytes(b) && size == 4 && offset == 3);
    for (size_t loc = 0; loc < 12; loc++) {
        CHECK_EQ(cq_data_region_index(abc, loc), loc < 3 ? 0 : loc < 7 ? 1 : 2);
    }
    uint8_t out[12];
    memset(out, 0xff, sizeof out);
    CHECK_EQ(cq_data_copy_bytes(abc, 2, out, 6), 6); /* across three regions */
    for (int i = 0; i < 6; i++) {
        CHECK_EQ(out[i], 2 + i);
    }
    CHECK_EQ(out[6], 0xff);
    CHECK_EQ(cq_data_copy_bytes(abc, 10, out, 6), 2); /* clamped */
    CHECK_EQ(out[0], 10);
    CHECK_EQ(out[1], 11);
    CHECK_EQ(cq_data_copy_bytes(abc, 12, out, 6), 0);
    three_release(&t);
}

/* ---- random trees against a reference ---------------------------------------------------------
 */

struct ref {
    cq_data_t data;
    uint8_t *bytes;
    size_t size;
};

static void test_random_against_reference(void)
{
    enum { SLOTS = 24, STEPS = 4000 };
    struct ref refs[SLOTS];
    uint64_t seed = 0x5eed;
    for (int i = 0; i < SLOTS; i++) {
        size_t n = below(&seed, 50);
        refs[i].data = make_data(n, (uint8_t)(i * 7));
        refs[i].size = n;
        refs[i].bytes = bytes_of(refs[i].data);
    }
    for (int step = 0; step < STEPS; step++) {
        int x = (int)below(&seed, SLOTS), y = (int)below(&seed, SLOTS),
            z = (int)below(&seed, SLOTS);
        struct ref r;
        if (below(&seed, 2) == 0) {
            if (refs[x].size + refs[y].size > 4096) {
                continue;
            }
            r.data = cq_data_create_concat(refs[x].data, refs[y].data);
            r.size = refs[x].size + refs[y].size;
            r.bytes = malloc(r.size ? r.size : 1);
            memcpy(r.bytes, refs[x].bytes, refs[x].size);
            memcpy(r.bytes + refs[x].size, refs[y].bytes, refs[y].size);
        } else {
            size_t off = below(&seed, (uint32_t)refs[x].size + 2);
            size_t len = below(&seed, (uint32_t)refs[x].size + 2);
            r.data = cq_data_create_subrange(refs[x].data, off, len);
            size_t end = off + len > refs[x].size ? refs[x].size : off + len;
            r.size = off >= refs[x].size || len == 0 ? 0 : end - off;
            r.bytes = malloc(r.size ? r.size : 1);
            memcpy(r.bytes, refs[x].bytes + (r.size ? off : 0), r.size);
        }
        if (step % 50 == 0) {
            check_bytes(r.data, r.bytes, r.size);
            if (r.size > 0) {
                size_t loc = below(&seed, (uint32_t)r.size), off;
                cq_data_t region = cq_data_copy_region(r.data, loc, &off);
                size_t rs = cq_data_get_size(region);
                CHECK(off <= loc && loc < off + rs);
                uint8_t *rb = bytes_of(region);
                CHECK(memcmp(rb, r.bytes + off, rs) == 0);
                free(rb);
                cq_release(region);
            }
            const void *mb;
            size_t ms;
            cq_data_t m = cq_data_create_map(r.data, &mb, &ms);
            CHECK(ms == r.size && (ms == 0 || memcmp(mb, r.bytes, ms) == 0));
            cq_release(m);
        }
        cq_release(refs[z].data);
        free(refs[z].bytes);
        refs[z] = r;
    }
    for (int i = 0; i < SLOTS; i++) {
        check_bytes(refs[i].data, refs[i].bytes, refs[i].size);
        cq_release(refs[i].data);
        free(refs[i].bytes);
    }
}

/* ---- threads share objects ------------------------------------------------------------------- */

struct shared {
    cq_data_t data;
    atomic_int bad;
};

static void share_iteration(void *ctx, size_t i)
{
    struct shared *sh = ctx;
    for (int k = 0; k < 200; k++) {
        cq_retain(sh->data);
        cq_data_t s = cq_data_create_subrange(sh->data, (i + (size_t)k) % 50, 30);
        cq_data_t c = cq_data_create_concat(s, sh->data);
        if (cq_data_get_size(c) != cq_data_get_size(s) + 100) {
            atomic_fetch_add(&sh->bad, 1);
        }
        cq_release(c);
        cq_release(s);
        cq_release(sh->data);
    }
}

static void test_threads_share(void)
{
    static uint8_t buf[50];
    cq_queue_t q = cq_queue_create("data.share", NULL);
    struct dtor_probe p;
    probe_init(&p, q, buf);
    cq_data_t leaf = cq_data_create_f(buf, sizeof buf, q, probe_destructor);
    struct shared sh = {.data = cq_data_create_concat(leaf, leaf)};
    atomic_init(&sh.bad, 0);
    cq_release(leaf);
    cq_apply_f(64, cq_get_global_queue(0, 0), &sh, share_iteration);
    CHECK_EQ(atomic_load(&sh.bad), 0);
    CHECK_EQ(atomic_load(&p.runs), 0);
    cq_release(sh.data);
    probe_done(&p, q);
    cq_release(q);
}

/* ---- the internal constructors the I/O channels use (io/data_internal.h) --------------------- */

#include <sys/uio.h>

cq_data_t cq__data_create_owned(void *buf, size_t size);
cq_data_t cq__data_alloc(size_t capacity, void **bytes_out);
cq_data_t cq__data_set_size(cq_data_t data, size_t size);
size_t cq__data_iov(cq_data_t data, size_t offset, struct iovec *iov, size_t max);

static void test_internal_constructors(void)
{
    /* owned: no copy, one allocation, freed with the object */
    uint8_t *buf = malloc(40);
    memset(buf, 5, 40);
    atomic_store(&watched_free, buf);
    atomic_store(&watched_free_count, 0);
    long m0 = mallocs_here;
    cq_data_t d = cq__data_create_owned(buf, 40);
    CHECK_EQ(mallocs_here - m0, 1);
    CHECK(leaf_bytes(d) == buf);
    cq_release(d);
    CHECK_EQ(atomic_load(&watched_free_count), 1);
    atomic_store(&watched_free, NULL);
    void *none = malloc(1);
    CHECK(cq__data_create_owned(none, 0) == cq_data_empty); /* freed */

    /* alloc: bytes inline, filled by the caller, shortened before sharing */
    void *bytes = NULL;
    m0 = mallocs_here;
    d = cq__data_alloc(4096, &bytes);
    CHECK_EQ(mallocs_here - m0, 1);
    REQUIRE(d != NULL && bytes != NULL);
    CHECK(leaf_bytes(d) == bytes);
    memset(bytes, 9, 100);
    d = cq__data_set_size(d, 100); /* may move: shrunk to what was read */
    uint8_t nines[100];
    memset(nines, 9, sizeof nines);
    check_bytes(d, nines, 100);
    cq_data_t same = cq__data_set_size(d, 100);
    CHECK(same == d);
    cq_release(d);
    d = cq__data_alloc(10, &bytes);
    CHECK(cq__data_set_size(d, 0) == cq_data_empty); /* released */
    CHECK(cq__data_alloc(0, &bytes) == cq_data_empty && bytes == NULL);

    /* iov: the regions from an offset on */
    struct three t = three_make(10, 20, 30);
    cq_data_t a = t.a, b = t.b, c = t.c, abc = t.abc;
    struct iovec iov[4];
    CHECK_EQ(cq__data_iov(abc, 0, iov, 4), 3);
    CHECK(iov[0].iov_base == leaf_bytes(a) && iov[0].iov_len == 10);
    CHECK(iov[2].iov_base == leaf_bytes(c) && iov[2].iov_len == 30);
    CHECK_EQ(cq__data_iov(abc, 15, iov, 4), 2);
    CHECK(iov[0].iov_base == leaf_bytes(b) + 5 && iov[0].iov_len == 15);
    CHECK_EQ(cq__data_iov(abc, 15, iov, 1), 1);
    CHECK_EQ(cq__data_iov(abc, 60, iov, 4), 0);
    CHECK_EQ(cq__data_iov(a, 4, iov, 4), 1);
    CHECK(iov[0].iov_base == leaf_bytes(a) + 4 && iov[0].iov_len == 6);
    three_release(&t);
}

/* ---- misuse ------------------------------------------------------------------------------------
 */

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) /* see test_misuse */
static void over_release(void *arg)
{
    (void)arg;
    cq_data_t d = make_data(10, 0);
    cq_release(d);
    cq_release(d); /* one too many: the object is gone */
}
#endif

static void not_data(void *arg)
{
    (void)arg;
    cq_semaphore_t s = cq_semaphore_create(0);
    (void)cq_data_get_size((cq_data_t)(void *)s);
}

static void null_data(void *arg)
{
    (void)arg;
    cq_data_t d = cq_data_create_concat(NULL, cq_data_empty);
    cq_release(d);
}

static void bad_region_index(void *arg)
{
    (void)arg;
    cq_data_t d = make_data(10, 0);
    (void)cq_data_get_region(d, 1, NULL, NULL);
}

static void marker_called(void *arg)
{
    (void)arg;
    cq_function_t f = CQ_DATA_DESTRUCTOR_FREE;
    f(NULL);
}

static void test_misuse(void)
{
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    /* The second release reads the freed object: reported as an over-release, or as "not a
     * CQueueCore object (or was already freed)" once malloc reused the memory. Meaningful only
     * without a sanitizer watching. */
    expect_abort("over-release", over_release, NULL, "CQueueCore: cq_release: ");
#endif
    expect_abort("not a data object", not_data, NULL, "cq_data_get_size: semaphore");
    expect_abort("not a data object", not_data, NULL, "is not a data object");
    expect_abort("NULL data", null_data, NULL, "cq_data_create_concat: NULL object");
    expect_abort("region index", bad_region_index, NULL, "cq_data_get_region: region 1 of");
    expect_abort("marker", marker_called, NULL, "CQ_DATA_DESTRUCTOR_FREE");
}

int main(void)
{
    RUN(test_misuse); /* forks: before the runtime starts */
    RUN(test_empty);
    RUN(test_create_default_copies);
    RUN(test_create_zero_size);
    RUN(test_destructor_once_on_queue_after_last_release);
    RUN(test_destructor_default_queue);
    RUN(test_destructor_zero_size_runs_on_queue);
    RUN(test_destructor_ctx);
    RUN(test_destructor_free);
    RUN(test_destructor_munmap);
    RUN(test_destructor_none);
    RUN(test_context_finalizer);
    RUN(test_concat);
    RUN(test_concat_adjacent_merges);
    RUN(test_subrange);
    RUN(test_apply_stops);
    RUN(test_copy_region);
    RUN(test_create_map);
    RUN(test_regions_and_copy_bytes);
    RUN(test_random_against_reference);
    RUN(test_threads_share);
    RUN(test_internal_constructors);
    TEST_MAIN_END();
}
