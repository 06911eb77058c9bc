/*
 * Time values through libdispatch's names: the constants, dispatch_time and dispatch_walltime
 * arithmetic, and waits on both clocks. (dispatch_time_t values are opaque in both runtimes:
 * only monotonic times are compared here; wall-clock times are only waited on.)
 */
#include "compat_test.h"

static void test_constants(void)
{
    CHECK(NSEC_PER_SEC == 1000000000ull);
    CHECK(NSEC_PER_MSEC == 1000000ull);
    CHECK(USEC_PER_SEC == 1000000ull);
    CHECK(NSEC_PER_USEC == 1000ull);
    CHECK(DISPATCH_TIME_NOW == 0ull);
    CHECK(DISPATCH_TIME_FOREVER == ~0ull);
    CHECK(sizeof(dispatch_time_t) == 8);
}

static void test_monotonic_arithmetic(void)
{
    dispatch_time_t a = dispatch_time(DISPATCH_TIME_NOW, 0);
    dispatch_time_t b = dispatch_time(a, (int64_t)NSEC_PER_SEC);
    CHECK(a != DISPATCH_TIME_NOW && a != DISPATCH_TIME_FOREVER);
    CHECK(b > a);
    CHECK_EQ(b - a, NSEC_PER_SEC);
    CHECK(dispatch_time(b, -(int64_t)NSEC_PER_SEC) == a);
    CHECK(dispatch_time(a, 0) == a);
    CHECK(dispatch_time(DISPATCH_TIME_FOREVER, 5) == DISPATCH_TIME_FOREVER);
    CHECK(dispatch_time(DISPATCH_TIME_FOREVER, -5) == DISPATCH_TIME_FOREVER);
    CHECK(dispatch_time(DISPATCH_TIME_NOW, INT64_MAX) == DISPATCH_TIME_FOREVER);
    CHECK(dispatch_time(DISPATCH_TIME_NOW, (int64_t)NSEC_PER_SEC) >= b - NSEC_PER_SEC);
    CHECK(compat_now() >= a);
}

static void test_wall_clock(void)
{
    dispatch_time_t w = dispatch_walltime(NULL, 0);
    dispatch_group_t g = dispatch_group_create();
    struct timespec ts;
    CHECK(w != DISPATCH_TIME_NOW && w != DISPATCH_TIME_FOREVER);
    CHECK(dispatch_walltime(NULL, INT64_MAX) == DISPATCH_TIME_FOREVER);
    CHECK(dispatch_time(w, 0) == w);
    /* waits on wall-clock deadlines time out when the wall clock passes them */
    dispatch_group_enter(g);
    CHECK(dispatch_group_wait(g, dispatch_walltime(NULL, 10 * (int64_t)NSEC_PER_MSEC)) != 0);
    CHECK(dispatch_group_wait(g, dispatch_time(w, 10 * (int64_t)NSEC_PER_MSEC)) != 0);
    REQUIRE(clock_gettime(CLOCK_REALTIME, &ts) == 0);
    CHECK(dispatch_group_wait(g, dispatch_walltime(&ts, 1)) != 0);
    CHECK(dispatch_group_wait(g, DISPATCH_WALLTIME_NOW) != 0);
    dispatch_group_leave(g);
    CHECK_EQ(dispatch_group_wait(g, dispatch_walltime(NULL, (int64_t)NSEC_PER_SEC)), 0);
    dispatch_release(g);
}

int main(void)
{
    RUN(test_constants);
    RUN(test_monotonic_arithmetic);
    RUN(test_wall_clock);
    TEST_MAIN_END();
}
