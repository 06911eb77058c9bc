/*
 * cq_time / cq_walltime: arithmetic on both clocks, saturation, the special values, and the
 * conversions to timespec.
 */
#include "cq_test.h"

#define WALL (1ull << 63)

static void test_monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t before = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    cq_time_t now = cq_time(CQ_TIME_NOW, 0);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t after = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    CHECK(now >= before && now <= after);
    CHECK((now & WALL) == 0);
    CHECK_EQ(cq_time(now, 1000), now + 1000);
    CHECK_EQ(cq_time(now, -1000), now - 1000);
    CHECK_EQ(cq_time(now, -(int64_t)now - 5), 1); /* before the origin: the earliest time */
    CHECK(cq_time(now, INT64_MAX) == CQ_TIME_FOREVER);
    CHECK(cq_time(CQ_TIME_FOREVER, -1000) == CQ_TIME_FOREVER);
    CHECK(cq_time(CQ_TIME_FOREVER, 1000) == CQ_TIME_FOREVER);
    CHECK(cq_time(CQ_TIME_NOW, 5 * (int64_t)CQ_NSEC_PER_SEC) > now);
    CHECK(cq_time(1, INT64_MIN) == 1);
    /* the largest monotonic value: anything later is forever, never a wall-clock time */
    CHECK(cq_time((cq_time_t)INT64_MAX, 100000000) == CQ_TIME_FOREVER);
    CHECK_EQ(cq_time((cq_time_t)INT64_MAX, 0), (cq_time_t)INT64_MAX); /* as libdispatch */
    CHECK_EQ(cq_time((cq_time_t)INT64_MAX, -1000), (cq_time_t)INT64_MAX - 1000);
    CHECK(cq_time((cq_time_t)INT64_MAX - 1, 1) == CQ_TIME_FOREVER);
    CHECK_EQ(cq_time((cq_time_t)INT64_MAX - 2, 1), (cq_time_t)INT64_MAX - 1);
}

static void test_walltime(void)
{
    struct timespec ts = {.tv_sec = 1000, .tv_nsec = 5};
    cq_time_t w = cq_walltime(&ts, 10);
    CHECK((w & WALL) != 0);
    CHECK_EQ(w & ~WALL, 1000ull * 1000000000ull + 15);
    CHECK_EQ(cq_time(w, 100) & ~WALL, 1000ull * 1000000000ull + 115);
    CHECK((cq_time(w, 100) & WALL) != 0); /* stays on the wall clock */
    CHECK_EQ(cq_time(w, -INT64_MAX) & ~WALL, 0);
    CHECK(cq_time(w, INT64_MAX) == CQ_TIME_FOREVER);
    struct timespec far = {.tv_sec = (time_t)1 << 62, .tv_nsec = 0};
    CHECK(cq_walltime(&far, 0) == CQ_TIME_FOREVER);
    struct timespec before_epoch = {.tv_sec = -5, .tv_nsec = 0};
    CHECK_EQ(cq_walltime(&before_epoch, 0), WALL);
    struct timespec real;
    clock_gettime(CLOCK_REALTIME, &real);
    cq_time_t now = cq_walltime(NULL, 0);
    uint64_t rn = (uint64_t)real.tv_sec * 1000000000ull + (uint64_t)real.tv_nsec;
    CHECK((now & ~WALL) >= rn);
    CHECK((now & ~WALL) - rn < 10ull * 1000000000ull);
}

static void test_conversions(void)
{
    int clock = -1;
    struct timespec ts;
    CHECK(!cq_time_to_timespec(CQ_TIME_FOREVER, &clock, &ts));
    CHECK(cq_time_to_timespec(cq_time(CQ_TIME_NOW, 0), &clock, &ts));
    CHECK_EQ(clock, CLOCK_MONOTONIC);
    struct timespec in = {.tv_sec = 77, .tv_nsec = 123};
    CHECK(cq_time_to_timespec(cq_walltime(&in, 0), &clock, &ts));
    CHECK_EQ(clock, CLOCK_REALTIME);
    CHECK_EQ(ts.tv_sec, 77);
    CHECK_EQ(ts.tv_nsec, 123);
    CHECK_EQ(cq_time_nanoseconds_until(CQ_TIME_FOREVER), INT64_MAX);
    CHECK_EQ(cq_time_nanoseconds_until(CQ_TIME_NOW), 0);
    CHECK_EQ(cq_time_nanoseconds_until(cq_time(CQ_TIME_NOW, -1000)), 0);
    int64_t left = cq_time_nanoseconds_until(cq_time(CQ_TIME_NOW, 10 * (int64_t)CQ_NSEC_PER_SEC));
    CHECK(left > 9 * (int64_t)CQ_NSEC_PER_SEC && left <= 10 * (int64_t)CQ_NSEC_PER_SEC);
    int64_t wleft = cq_time_nanoseconds_until(cq_walltime(NULL, 10 * (int64_t)CQ_NSEC_PER_SEC));
    CHECK(wleft > 9 * (int64_t)CQ_NSEC_PER_SEC && wleft <= 10 * (int64_t)CQ_NSEC_PER_SEC);
}

/* Timed waits honour both clocks. */
static void test_timed_waits(void)
{
    cq_semaphore_t s = cq_semaphore_create(0);
    uint64_t t0 = cq_test_now_ns();
    CHECK(cq_semaphore_wait(s, cq_time(CQ_TIME_NOW, 30 * 1000000ll)) != 0);
    CHECK(cq_test_now_ns() - t0 >= 30 * 1000000ull);
    t0 = cq_test_now_ns();
    CHECK(cq_semaphore_wait(s, cq_walltime(NULL, 30 * 1000000ll)) != 0);
    CHECK(cq_test_now_ns() - t0 >= 25 * 1000000ull); /* the two clocks may drift slightly */
    CHECK(cq_semaphore_wait(s, CQ_TIME_NOW) != 0);
    cq_release(s);
}

int main(void)
{
    RUN(test_monotonic);
    RUN(test_walltime);
    RUN(test_conversions);
    RUN(test_timed_waits);
    TEST_MAIN_END();
}
