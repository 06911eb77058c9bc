/*
 * Semaphores through libdispatch's names: counting, timeouts on both clocks (and the count they
 * give back), ping-pong with a task, a semaphore limiting concurrency.
 */
#include "compat_test.h"

static void test_counting(void)
{
    dispatch_semaphore_t s = dispatch_semaphore_create(0);
    dispatch_semaphore_t three = dispatch_semaphore_create(3);
    int i;
    REQUIRE(s != NULL && three != NULL);
    CHECK(dispatch_semaphore_create(-1) == NULL);
    CHECK(dispatch_semaphore_wait(s, DISPATCH_TIME_NOW) != 0);
    CHECK_EQ(dispatch_semaphore_signal(s), 0); /* nobody was waiting */
    CHECK_EQ(dispatch_semaphore_wait(s, DISPATCH_TIME_NOW), 0);
    CHECK(dispatch_semaphore_wait(s, DISPATCH_TIME_NOW) != 0);
    for (i = 0; i < 3; i++) {
        CHECK_EQ(dispatch_semaphore_wait(three, DISPATCH_TIME_NOW), 0);
    }
    CHECK(dispatch_semaphore_wait(three, DISPATCH_TIME_NOW) != 0);
    for (i = 0; i < 3; i++) {
        dispatch_semaphore_signal(three); /* back to its initial value before the release */
    }
    dispatch_release(s);
    dispatch_release(three);
}

static void test_timeouts(void)
{
    dispatch_semaphore_t s = dispatch_semaphore_create(0);
    dispatch_time_t deadline = compat_short();
    struct timespec ts;

    errno = 0;
    /* libdispatch on Linux: -1 with errno ETIMEDOUT (its documentation: non-zero) */
    CHECK_EQ(dispatch_semaphore_wait(s, deadline), -1);
    CHECK_EQ(errno, ETIMEDOUT);
    CHECK(compat_now() >= deadline);
    errno = 0;
    CHECK_EQ(dispatch_semaphore_wait(s, DISPATCH_TIME_NOW), -1);
    CHECK_EQ(errno, ETIMEDOUT);
    /* the timed-out wait gave its decrement back: one signal makes one wait succeed */
    dispatch_semaphore_signal(s);
    CHECK_EQ(dispatch_semaphore_wait(s, DISPATCH_TIME_NOW), 0);

    /* wall-clock deadlines: in the past, in the future, from a timespec, from "now" */
    CHECK(dispatch_semaphore_wait(s, dispatch_walltime(NULL, -1)) != 0);
    CHECK(dispatch_semaphore_wait(s, dispatch_walltime(NULL, (int64_t)COMPAT_SHORT_NS)) != 0);
    REQUIRE(clock_gettime(CLOCK_REALTIME, &ts) == 0);
    CHECK(dispatch_semaphore_wait(s, dispatch_walltime(&ts, 10 * (int64_t)NSEC_PER_MSEC)) != 0);
    CHECK(dispatch_semaphore_wait(s, dispatch_time(DISPATCH_WALLTIME_NOW,
                                                   10 * (int64_t)NSEC_PER_MSEC)) != 0);
    dispatch_semaphore_signal(s);
    CHECK_EQ(dispatch_semaphore_wait(s, dispatch_walltime(NULL, (int64_t)NSEC_PER_SEC)), 0);
    dispatch_release(s);
}

struct pingpong {
    dispatch_semaphore_t ping, pong;
    long rounds;
};

#define ROUNDS 1000

static void ponger(void *context)
{
    struct pingpong *p = (struct pingpong *)context;
    int i;
    for (i = 0; i < ROUNDS; i++) {
        if (dispatch_semaphore_wait(p->ping, compat_deadline()) != 0) {
            return;
        }
        p->rounds++;
        dispatch_semaphore_signal(p->pong);
    }
}

static void test_pingpong(void)
{
    struct pingpong p;
    int i;
    p.ping = dispatch_semaphore_create(0);
    p.pong = dispatch_semaphore_create(0);
    p.rounds = 0;
    dispatch_async_f(compat_global(), &p, ponger);
    for (i = 0; i < ROUNDS; i++) {
        dispatch_semaphore_signal(p.ping);
        WAIT_SEMA(p.pong);
        CHECK_EQ(p.rounds, i + 1); /* the semaphore orders the two sides' memory */
        if (p.rounds != i + 1) {
            break;
        }
    }
    dispatch_release(p.ping);
    dispatch_release(p.pong);
}

struct limited {
    dispatch_semaphore_t slots;
    long inside, max_inside, done;
};

static void limited_task(void *context)
{
    struct limited *l = (struct limited *)context;
    int spin;
    if (dispatch_semaphore_wait(l->slots, compat_deadline()) != 0) {
        return;
    }
    compat_max(&l->max_inside, compat_add(&l->inside, 1));
    for (spin = 0; spin < 1000; spin++) {
        compat_load(&l->inside); /* stay inside a little, so tasks overlap */
    }
    compat_add(&l->inside, -1);
    compat_add(&l->done, 1);
    dispatch_semaphore_signal(l->slots);
}

static void test_limit_concurrency(void)
{
    struct limited l;
    dispatch_group_t g = dispatch_group_create();
    dispatch_queue_t q = dispatch_queue_create("compat.sema.limit", DISPATCH_QUEUE_CONCURRENT);
    int i;
    memset(&l, 0, sizeof l);
    l.slots = dispatch_semaphore_create(2);
    for (i = 0; i < 200; i++) {
        dispatch_group_async_f(g, q, &l, limited_task);
    }
    WAIT_GROUP(g);
    CHECK_EQ(l.done, 200);
    CHECK(l.max_inside >= 1 && l.max_inside <= 2);
    dispatch_release(l.slots);
    dispatch_release(q);
    dispatch_release(g);
}

int main(void)
{
    RUN(test_counting);
    RUN(test_timeouts);
    RUN(test_pingpong);
    RUN(test_limit_concurrency);
    TEST_MAIN_END();
}
