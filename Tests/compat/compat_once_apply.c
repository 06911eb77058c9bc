/*
 * dispatch_once_f and dispatch_apply_f through libdispatch's names.
 */
#include "compat_test.h"

/* ---- once ----------------------------------------------------------------------------------- */

static dispatch_once_t once_predicate;
static long once_runs;
static long once_value;

static void once_init(void *context)
{
    compat_add(&once_runs, 1);
    once_value = *(long *)context;
}

static void call_once(void *context, size_t i)
{
    static long value = 7;
    long *seen = (long *)context;
    (void)i;
    dispatch_once_f(&once_predicate, &value, once_init);
    /* every caller returns after the function has completed, and sees its effects */
    if (once_value == 7) {
        compat_add(seen, 1);
    }
}

static void test_once(void)
{
    long seen = 0;
    dispatch_once_t local = 0;
    static long other = 9;
    dispatch_apply_f(64, compat_global(), &seen, call_once);
    CHECK_EQ(once_runs, 1);
    CHECK_EQ(seen, 64);
    CHECK(once_predicate != 0);
    dispatch_once_f(&once_predicate, &other, once_init);
    CHECK_EQ(once_runs, 1);
    dispatch_once_f(&local, &other, once_init); /* a new predicate runs again */
    CHECK_EQ(once_runs, 2);
    CHECK_EQ(once_value, 9);
}

/* ---- apply ---------------------------------------------------------------------------------- */

#define N_ITER 10000

struct slots {
    long hits[N_ITER];
    long last;
    long out_of_order;
};

static void hit(void *context, size_t i)
{
    compat_add(&((struct slots *)context)->hits[i], 1);
}

static void hit_in_order(void *context, size_t i)
{
    struct slots *s = (struct slots *)context;
    if ((long)i != s->last + 1) {
        s->out_of_order++;
    }
    s->last = (long)i;
    s->hits[i]++;
}

static int all_hit_once(struct slots *s, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        if (s->hits[i] != 1) {
            fprintf(stderr, "   iteration %zu ran %ld times\n", i, s->hits[i]);
            return 0;
        }
    }
    return 1;
}

static struct slots slots;

static void test_apply_concurrent(void)
{
    dispatch_queue_t q = dispatch_queue_create("compat.apply", DISPATCH_QUEUE_CONCURRENT);
    memset(&slots, 0, sizeof slots);
    dispatch_apply_f(N_ITER, compat_global(), &slots, hit);
    CHECK(all_hit_once(&slots, N_ITER));
    memset(&slots, 0, sizeof slots);
    dispatch_apply_f(N_ITER, q, &slots, hit);
    CHECK(all_hit_once(&slots, N_ITER));
    memset(&slots, 0, sizeof slots);
    dispatch_apply_f(N_ITER, DISPATCH_APPLY_AUTO, &slots, hit);
    CHECK(all_hit_once(&slots, N_ITER));
    memset(&slots, 0, sizeof slots);
    dispatch_apply_f(0, DISPATCH_APPLY_AUTO, &slots, hit);
    CHECK_EQ(slots.hits[0], 0);
    dispatch_release(q);
}

static void test_apply_serial(void)
{
    dispatch_queue_t q = dispatch_queue_create("compat.apply.serial", NULL);
    memset(&slots, 0, sizeof slots);
    slots.last = -1;
    dispatch_apply_f(N_ITER, q, &slots, hit_in_order);
    CHECK(all_hit_once(&slots, N_ITER));
    CHECK_EQ(slots.out_of_order, 0);
    dispatch_release(q);
}

struct nested {
    long total;
};

static void inner(void *context, size_t i)
{
    compat_add(&((struct nested *)context)->total, (long)i);
}

static void outer(void *context, size_t i)
{
    (void)i;
    dispatch_apply_f(100, compat_global(), context, inner);
}

static void apply_in_task(void *context)
{
    dispatch_apply_f(10, compat_global(), context, outer);
}

static void test_apply_nested(void)
{
    struct nested n;
    dispatch_group_t g = dispatch_group_create();
    int i;
    n.total = 0;
    /* nested applies, from several tasks at once */
    for (i = 0; i < 4; i++) {
        dispatch_group_async_f(g, compat_global(), &n, apply_in_task);
    }
    WAIT_GROUP(g);
    CHECK_EQ(n.total, 4L * 10 * (99 * 100 / 2));
    dispatch_release(g);
}

int main(void)
{
    RUN(test_once);
    RUN(test_apply_concurrent);
    RUN(test_apply_serial);
    RUN(test_apply_nested);
    TEST_MAIN_END();
}
