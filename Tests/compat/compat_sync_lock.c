/*
 * Queues used as locks through libdispatch's names, from many tasks on a global queue at once:
 * a serial queue taken with dispatch_sync (the commonest GCD lock), a concurrent queue read
 * with dispatch_sync and written with dispatch_barrier_sync, and tasks that queue work with
 * dispatch_async and then wait for the queue with dispatch_sync. Every task must finish, every
 * section run alone (a write) or beside reads only, and the process must not grow a thread per
 * waiting task: libdispatch ran these on 4-7 threads; CQueueCore started one thread per waiting
 * task up to its limit (255), printed the limit message, and at the limit hung for good in the
 * reader/writer case (4 of 4 runs) and in the serial case (7 of 31); the third case ran on one
 * thread per task in some runs, and with 400 tasks hung at the limit in 4 of 4 runs
 * (libdispatch: 0.16 s on 9 threads). The fourth case is the third through a serial queue that
 * targets another serial queue; the fifth gives the work through a group and waits for the
 * group; the sixth makes some of its syncs from another serial queue's work onto a chain of
 * three; the seventh has a concurrent queue in the middle of its chain; in the eighth, the
 * queue's work sleeps in the kernel.
 */
#include "compat_test.h"

#include <dirent.h>

#define LOCK_TASKS 1000
#define RW_TASKS 600
#define MIXED_TASKS 400
#define MIXED_ROUNDS 50
/* Generous against libdispatch's 4-7: a waiting task per thread would be hundreds. libdispatch
 * itself adds threads when its workers stop running for a while, which CPUs busy with other
 * processes make it do: 53 beside two CPU hogs and a parallel ctest (the reference build only;
 * ours stays at this bound there too). */
#ifdef COMPAT_USE_LIBDISPATCH
#define MAX_THREADS 128
#else
#define MAX_THREADS 48
#endif
/* Through a chain CQueueCore grows more (7-36 beside a parallel ctest; libdispatch 9-10): its
 * waiters help only when no worker has, after a look that comes 1-64 ms later. Still far from a
 * thread per task (400). Under ThreadSanitizer, which makes everything 5-15 times slower, the
 * monitor's schedule for waits kept behind others adds more in the longer run: 71-78. */
#if defined(__SANITIZE_THREAD__)
#define COMPAT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define COMPAT_TSAN 1
#endif
#endif
#if defined(COMPAT_TSAN) || defined(COMPAT_USE_LIBDISPATCH)
#define MAX_THREADS_CHAIN 128
#else
#define MAX_THREADS_CHAIN 64
#endif

/* The threads of this process now, from /proc/self/task. */
static long thread_count(void)
{
    DIR *dir = opendir("/proc/self/task");
    long n = 0;
    struct dirent *e;
    REQUIRE(dir != NULL);
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] != '.') {
            n++;
        }
    }
    closedir(dir);
    return n;
}

/* Waits for g (with the harness's patience), sampling the thread count meanwhile; returns the
 * most seen. */
static long wait_counting_threads(dispatch_group_t g)
{
    dispatch_time_t deadline = compat_deadline();
    long most = thread_count();
    for (;;) {
        if (dispatch_group_wait(g, dispatch_time(DISPATCH_TIME_NOW, 2 * (int64_t)NSEC_PER_MSEC)) ==
            0) {
            break;
        }
        long n = thread_count();
        most = n > most ? n : most;
        REQUIRE(compat_now() < deadline);
    }
    return most;
}

/* Runs n tasks on a global queue, task i with context i, and waits for them, sampling the
 * thread count meanwhile; returns the most seen. */
static long run_counting_threads(long n, dispatch_function_t fn)
{
    dispatch_group_t g = dispatch_group_create();
    long i;
    for (i = 0; i < n; i++) {
        dispatch_group_async_f(g, compat_global(), (void *)(intptr_t)i, fn);
    }
    long most = wait_counting_threads(g);
    dispatch_release(g);
    return most;
}

/* Holds the CPU for about `us` microseconds (work done under the lock). */
static void hold(long us)
{
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) * 1000000L + (now.tv_nsec - start.tv_nsec) / 1000 < us);
}

/* ---- a serial queue as a lock -------------------------------------------------------------- */

static dispatch_queue_t lock_q;
static long lock_counter; /* only touched on lock_q */
static long lock_inside;  /* sections running now: never above 1 */
static long lock_overlap;

static void locked_section(void *context)
{
    (void)context;
    if (compat_add(&lock_inside, 1) != 1) {
        compat_add(&lock_overlap, 1);
    }
    hold(50);
    lock_counter++;
    compat_add(&lock_inside, -1);
}

static void lock_task(void *context)
{
    (void)context;
    dispatch_sync_f(lock_q, NULL, locked_section);
}

static void test_serial_queue_as_lock(void)
{
    lock_q = dispatch_queue_create("compat.lock", NULL);
    long most = run_counting_threads(LOCK_TASKS, lock_task);
    dispatch_sync_f(lock_q, NULL, compat_noop);
    fprintf(stderr, "   %d tasks took turns through dispatch_sync: at most %ld threads\n",
            LOCK_TASKS, most);
    CHECK_EQ(lock_counter, LOCK_TASKS);
    CHECK_EQ(compat_load(&lock_overlap), 0);
    CHECK(most <= MAX_THREADS);
    dispatch_release(lock_q);
}

/* ---- readers and writers on a concurrent queue ------------------------------------------- */

static dispatch_queue_t rw_q;
static long rw_value;   /* written by barrier sections only */
static long rw_readers; /* read sections running now */
static long rw_writers; /* write sections running now */
static long rw_bad;     /* a write beside anything, or a read beside a write */
static long rw_reads;

static void read_section(void *context)
{
    (void)context;
    compat_add(&rw_readers, 1);
    if (compat_load(&rw_writers) != 0) {
        compat_add(&rw_bad, 1);
    }
    hold(20);
    compat_add(&rw_reads, 1);
    compat_add(&rw_readers, -1);
}

static void write_section(void *context)
{
    (void)context;
    if (compat_add(&rw_writers, 1) != 1 || compat_load(&rw_readers) != 0) {
        compat_add(&rw_bad, 1);
    }
    hold(50);
    rw_value++;
    compat_add(&rw_writers, -1);
}

static void rw_task(void *context)
{
    long i = (long)(intptr_t)context;
    if (i % 10 == 0) {
        dispatch_barrier_sync_f(rw_q, NULL, write_section);
    } else {
        dispatch_sync_f(rw_q, NULL, read_section);
    }
}

static void test_readers_and_writers(void)
{
    rw_q = dispatch_queue_create("compat.rw", DISPATCH_QUEUE_CONCURRENT);
    long most = run_counting_threads(RW_TASKS, rw_task);
    dispatch_barrier_sync_f(rw_q, NULL, compat_noop);
    fprintf(stderr,
            "   %d readers and writers through sync and barrier sync: at most %ld threads\n",
            RW_TASKS, most);
    CHECK_EQ(rw_value, RW_TASKS / 10);
    CHECK_EQ(compat_load(&rw_reads), RW_TASKS - RW_TASKS / 10);
    CHECK_EQ(compat_load(&rw_bad), 0);
    CHECK(most <= MAX_THREADS);
    dispatch_release(rw_q);
}

/* ---- queueing work, then waiting for the queue ------------------------------------------- */

static dispatch_queue_t mixed_q;
static long mixed_counter; /* only touched on mixed_q */

static void mixed_increment(void *context)
{
    (void)context;
    mixed_counter++;
}

static void mixed_task(void *context)
{
    int i;
    (void)context;
    for (i = 0; i < MIXED_ROUNDS; i++) {
        dispatch_async_f(mixed_q, NULL, mixed_increment);
        dispatch_sync_f(mixed_q, NULL, mixed_increment);
    }
}

static void test_async_then_sync(void)
{
    mixed_q = dispatch_queue_create("compat.mixed", NULL);
    long most = run_counting_threads(MIXED_TASKS, mixed_task);
    dispatch_sync_f(mixed_q, NULL, compat_noop);
    fprintf(stderr,
            "   %d tasks queueing work, then waiting with dispatch_sync: at most %ld "
            "threads\n",
            MIXED_TASKS, most);
    CHECK_EQ(mixed_counter, 2L * MIXED_TASKS * MIXED_ROUNDS);
    CHECK(most <= MAX_THREADS);
    dispatch_release(mixed_q);
}

/* ---- the same through a chain of serial queues ------------------------------------------- */

#define CHAIN_TASKS 400
#define CHAIN_ROUNDS 20

static dispatch_queue_t chain_outer, chain_inner; /* chain_inner targets chain_outer */
static long chain_counts[2];                      /* only touched on chain_outer (and so inner) */
static long chain_inside;                         /* sections running now: never above 1 */
static long chain_overlap;

static void chain_increment(void *context)
{
    if (compat_add(&chain_inside, 1) != 1) {
        compat_add(&chain_overlap, 1);
    }
    chain_counts[(intptr_t)context]++;
    compat_add(&chain_inside, -1);
}

static void chain_task(void *context)
{
    intptr_t which = (intptr_t)context % 2;
    dispatch_queue_t q = which ? chain_inner : chain_outer;
    int i;
    for (i = 0; i < CHAIN_ROUNDS; i++) {
        dispatch_async_f(q, (void *)which, chain_increment);
        dispatch_sync_f(q, (void *)which, chain_increment);
    }
}

/* Half the tasks use a serial queue that targets another serial queue, half that other one:
 * the work of both runs one section at a time. CQueueCore stalled for good (30 s, 80-108
 * threads; before that, the thread limit); libdispatch took 0.2 s on 9-10 threads. */
static void test_async_then_sync_through_a_chain(void)
{
    chain_outer = dispatch_queue_create("compat.chain.outer", NULL);
    chain_inner = dispatch_queue_create("compat.chain.inner", NULL);
    dispatch_set_target_queue(chain_inner, chain_outer);
    long most = run_counting_threads(CHAIN_TASKS, chain_task);
    dispatch_sync_f(chain_inner, NULL, compat_noop);
    fprintf(stderr,
            "   %d tasks queueing work, then waiting, on two chained queues: at most %ld "
            "threads\n",
            CHAIN_TASKS, most);
    CHECK_EQ(chain_counts[0], 2L * CHAIN_ROUNDS * (CHAIN_TASKS / 2));
    CHECK_EQ(chain_counts[1], 2L * CHAIN_ROUNDS * (CHAIN_TASKS / 2));
    CHECK_EQ(compat_load(&chain_overlap), 0);
    CHECK(most <= MAX_THREADS_CHAIN);
    dispatch_release(chain_inner);
    dispatch_release(chain_outer);
}

/* ---- giving work to a serial queue through a group, then waiting for the group ---------- */

#define GROUP_TASKS 300
#define GROUP_ITEMS 2
#define GROUP_ITEM_US 300

static dispatch_queue_t group_q;
static long group_counter; /* only touched on group_q */
static long group_inside;  /* items running now: never above 1 */
static long group_overlap;

static void group_item(void *context)
{
    (void)context;
    if (compat_add(&group_inside, 1) != 1) {
        compat_add(&group_overlap, 1);
    }
    hold(GROUP_ITEM_US);
    group_counter++;
    compat_add(&group_inside, -1);
}

static void group_task(void *context)
{
    dispatch_group_t g = dispatch_group_create();
    int i;
    (void)context;
    for (i = 0; i < GROUP_ITEMS; i++) {
        dispatch_group_async_f(g, group_q, NULL, group_item);
    }
    dispatch_group_wait(g, DISPATCH_TIME_FOREVER);
    dispatch_release(g);
}

/* Each task gives two items of 0.3 ms to one serial queue through a group and waits for the
 * group. CQueueCore handed each waiting task's CPU to a new thread, which took the next task:
 * with 1 ms items, 400 tasks reached the thread limit (255) and its message; libdispatch ran
 * them on 6 threads in the same time. */
static void test_group_wait_for_a_serial_queue(void)
{
    group_q = dispatch_queue_create("compat.group", NULL);
    long most = run_counting_threads(GROUP_TASKS, group_task);
    dispatch_sync_f(group_q, NULL, compat_noop);
    fprintf(stderr,
            "   %d tasks waiting for their groups' work on a serial queue: at most %ld "
            "threads\n",
            GROUP_TASKS, most);
    CHECK_EQ(group_counter, (long)GROUP_TASKS * GROUP_ITEMS);
    CHECK_EQ(compat_load(&group_overlap), 0);
    CHECK(most <= MAX_THREADS);
    dispatch_release(group_q);
}

/* ---- from a queue's work, through a chain of three serial queues ------------------------- */

#define DEEP_TASKS 100
#define DEEP_ROUNDS 30
#define DEEP_LEVELS 3
#define DEEP_OWNERS 1

static dispatch_queue_t deep_q[DEEP_LEVELS];   /* deep_q[i] targets deep_q[i + 1] */
static dispatch_queue_t deep_own[DEEP_OWNERS]; /* serial queues the syncs are made from */
static long deep_counts[DEEP_LEVELS];          /* only touched on deep_q[DEEP_LEVELS - 1] */
static long deep_inside;                       /* sections running now: never above 1 */
static long deep_overlap;

static void deep_increment(void *context)
{
    if (compat_add(&deep_inside, 1) != 1) {
        compat_add(&deep_overlap, 1);
    }
    deep_counts[(intptr_t)context]++;
    compat_add(&deep_inside, -1);
}

/* On a deep_own queue: queue work one level up, then wait for the level itself. */
static void deep_owned(void *context)
{
    intptr_t level = (intptr_t)context;
    intptr_t next = (level + 1) % DEEP_LEVELS;
    dispatch_async_f(deep_q[next], (void *)next, deep_increment);
    dispatch_sync_f(deep_q[level], (void *)level, deep_increment);
}

static void deep_task(void *context)
{
    intptr_t task = (intptr_t)context;
    int r;
    for (r = 0; r < DEEP_ROUNDS; r++) {
        intptr_t level = (task + r) % DEEP_LEVELS;
        dispatch_async_f(deep_q[level], (void *)level, deep_increment);
        if (r % 3 == 0) {
            dispatch_sync_f(deep_own[task % DEEP_OWNERS], (void *)level, deep_owned);
        } else {
            dispatch_sync_f(deep_q[level], (void *)level, deep_increment);
        }
    }
}

/* Tasks queue work on the levels of a chain of three serial queues and wait for them, now and
 * then from a block on another serial queue. A sync made from a queue's work onto a chain of
 * three or more waited for the monitor to add threads (30 tasks: 17-20 s on 34 threads, or
 * hung; libdispatch 0.02 s on 7). */
static void test_from_a_queue_through_three_levels(void)
{
    int i;
    long total = 0, expected = 0;
    for (i = DEEP_LEVELS - 1; i >= 0; i--) {
        deep_q[i] = dispatch_queue_create("compat.deep", NULL);
        if (i < DEEP_LEVELS - 1) {
            dispatch_set_target_queue(deep_q[i], deep_q[i + 1]);
        }
    }
    for (i = 0; i < DEEP_OWNERS; i++) {
        deep_own[i] = dispatch_queue_create("compat.deep.owner", NULL);
    }
    long most = run_counting_threads(DEEP_TASKS, deep_task);
    dispatch_sync_f(deep_q[0], NULL, compat_noop);
    fprintf(stderr,
            "   %d tasks waiting for a chain of %d serial queues, some from another "
            "queue's work: at most %ld threads\n",
            DEEP_TASKS, DEEP_LEVELS, most);
    for (i = 0; i < DEEP_LEVELS; i++) {
        total += deep_counts[i];
    }
    for (i = 0; i < DEEP_ROUNDS; i++) {
        expected += i % 3 == 0 ? 3 : 2; /* an async and a sync; the owned rounds one async more */
    }
    CHECK_EQ(total, expected * DEEP_TASKS);
    CHECK_EQ(compat_load(&deep_overlap), 0);
    CHECK(most <= MAX_THREADS);
    for (i = 0; i < DEEP_OWNERS; i++) {
        dispatch_release(deep_own[i]);
    }
    for (i = 0; i < DEEP_LEVELS; i++) {
        dispatch_release(deep_q[i]);
    }
}

/* ---- a serial queue on a concurrent queue on a serial queue ------------------------------ */

#define MIXED3_TASKS 32
#define MIXED3_ROUNDS 20

static dispatch_queue_t m3_lane, m3_pool, m3_top; /* lane -> pool (concurrent) -> top */
static long m3_in_lane, m3_in_pool, m3_in_top, m3_barrier;
static long m3_bad, m3_ran;
static long m3_last[MIXED3_TASKS]; /* per task: the last lane section's sequence number */

static void m3_enter(void)
{
    if (compat_add(&m3_in_top, 1) != 1) { /* everything runs inside top: one at a time */
        compat_add(&m3_bad, 1);
    }
    compat_add(&m3_in_pool, 1);
    if (compat_load(&m3_barrier)) {
        compat_add(&m3_bad, 1);
    }
}

static void m3_leave(void)
{
    compat_add(&m3_in_pool, -1);
    compat_add(&m3_in_top, -1);
    compat_add(&m3_ran, 1);
}

/* context: task * MIXED3_ROUNDS * 2 + its sequence number on the lane */
static void m3_lane_section(void *context)
{
    intptr_t c = (intptr_t)context;
    intptr_t task = c / (MIXED3_ROUNDS * 2), seq = c % (MIXED3_ROUNDS * 2);
    m3_enter();
    if (compat_add(&m3_in_lane, 1) != 1 || m3_last[task] != seq - 1) {
        compat_add(&m3_bad, 1);
    }
    m3_last[task] = seq;
    compat_add(&m3_in_lane, -1);
    m3_leave();
}

static void m3_pool_section(void *context)
{
    (void)context;
    m3_enter();
    m3_leave();
}

static void m3_barrier_section(void *context)
{
    (void)context;
    if (compat_add(&m3_in_top, 1) != 1 || compat_add(&m3_in_pool, 1) != 1) {
        compat_add(&m3_bad, 1);
    }
    compat_add(&m3_barrier, 1);
    compat_add(&m3_barrier, -1);
    compat_add(&m3_in_pool, -1);
    compat_add(&m3_in_top, -1);
    compat_add(&m3_ran, 1);
}

static void m3_top_section(void *context)
{
    (void)context;
    if (compat_add(&m3_in_top, 1) != 1) {
        compat_add(&m3_bad, 1);
    }
    compat_add(&m3_in_top, -1);
    compat_add(&m3_ran, 1);
}

/* An async (h == 0) or a sync (h == 1) of `fn` onto q, as a barrier or not. */
static void m3_submit(dispatch_queue_t q, int h, bool barrier, void *c, dispatch_function_t fn)
{
    if (barrier) {
        (h ? dispatch_barrier_sync_f : dispatch_barrier_async_f)(q, c, fn);
    } else {
        (h ? dispatch_sync_f : dispatch_async_f)(q, c, fn);
    }
}

static void m3_task(void *context)
{
    intptr_t task = (intptr_t)context;
    intptr_t seq = 0;
    int r, h;
    for (r = 0; r < MIXED3_ROUNDS; r++) {
        for (h = 0; h < 2; h++) { /* an async, then a sync of the same kind */
            switch ((task + r) % 4) {
            case 0:
                m3_submit(m3_lane, h, false, (void *)(task * MIXED3_ROUNDS * 2 + seq++),
                          m3_lane_section);
                break;
            case 1:
                m3_submit(m3_pool, h, false, NULL, m3_pool_section);
                break;
            case 2:
                m3_submit(m3_pool, h, true, NULL, m3_barrier_section);
                break;
            default:
                m3_submit(m3_top, h, false, NULL, m3_top_section);
                break;
            }
        }
    }
}

/* Tasks queue work and sync onto each level of a chain with a concurrent queue in the middle
 * (syncs, barrier syncs, tasks and barriers on it): every section once, the lane's in order
 * per task, nothing beside a barrier, and everything one at a time under the top queue. The
 * holder of the lane waits for the concurrent queue's drain, which can be queued behind tasks
 * that each become a waiter keeping its worker's CPU: CQueueCore took 0.5-6 s in some runs
 * (libdispatch 0.02 s), waiting for the monitor's additions of threads, a second apart at
 * most; the same with the lane straight on a global queue, 7-20 s (libdispatch hangs there). */
static void test_through_a_concurrent_level(void)
{
    int i;
    m3_top = dispatch_queue_create("compat.m3.top", NULL);
    m3_pool = dispatch_queue_create("compat.m3.pool", DISPATCH_QUEUE_CONCURRENT);
    dispatch_set_target_queue(m3_pool, m3_top);
    m3_lane = dispatch_queue_create("compat.m3.lane", NULL);
    dispatch_set_target_queue(m3_lane, m3_pool);
    for (i = 0; i < MIXED3_TASKS; i++) {
        m3_last[i] = -1;
    }
    long most = run_counting_threads(MIXED3_TASKS, m3_task);
    dispatch_sync_f(m3_lane, NULL, compat_noop);
    dispatch_barrier_sync_f(m3_pool, NULL, compat_noop);
    dispatch_sync_f(m3_top, NULL, compat_noop);
    fprintf(stderr,
            "   %d tasks on a serial queue on a concurrent queue on a serial queue: at most "
            "%ld threads\n",
            MIXED3_TASKS, most);
    CHECK_EQ(compat_load(&m3_ran), 2L * MIXED3_TASKS * MIXED3_ROUNDS);
    CHECK_EQ(compat_load(&m3_bad), 0);
    dispatch_release(m3_lane);
    dispatch_release(m3_pool);
    dispatch_release(m3_top);
}

/* ---- waiting for a serial queue whose work sleeps ------------------------------------------ */

#define SLEEPY_BLOCKS 10
#define SLEEPY_BLOCK_US 50000
#define SLEEPY_TASKS 200

static dispatch_queue_t sleepy_q;
static long sleepy_counter; /* only touched on sleepy_q */
static long sleepy_inside;  /* sections running now: never above 1 */
static long sleepy_overlap;

static void sleepy_section(void *context)
{
    if (compat_add(&sleepy_inside, 1) != 1) {
        compat_add(&sleepy_overlap, 1);
    }
    if (context != NULL) {
        struct timespec nap; /* asleep in the kernel: a worker that blocks */
        nap.tv_sec = 0;
        nap.tv_nsec = SLEEPY_BLOCK_US * 1000L;
        nanosleep(&nap, NULL);
    }
    sleepy_counter++;
    compat_add(&sleepy_inside, -1);
}

static void sleepy_task(void *context)
{
    (void)context;
    dispatch_sync_f(sleepy_q, NULL, sleepy_section);
}

/* A serial queue holds ten 50 ms blocks that sleep, and 200 tasks wait for it with
 * dispatch_sync. A task asleep in the kernel gets a thread to replace it, but the replacement's
 * task only joins the line: CQueueCore added a thread every millisecond while the sleeper slept,
 * 204 threads in 0.5 s, where libdispatch used 6 in the same time. */
static void test_sync_behind_work_that_sleeps(void)
{
    int i;
    sleepy_q = dispatch_queue_create("compat.sleepy", NULL);
    for (i = 0; i < SLEEPY_BLOCKS; i++) {
        dispatch_async_f(sleepy_q, (void *)1, sleepy_section);
    }
    long most = run_counting_threads(SLEEPY_TASKS, sleepy_task);
    dispatch_sync_f(sleepy_q, NULL, compat_noop);
    fprintf(stderr,
            "   %d tasks waiting behind %d blocks of %d ms that sleep: at most %ld threads\n",
            SLEEPY_TASKS, SLEEPY_BLOCKS, SLEEPY_BLOCK_US / 1000, most);
    CHECK_EQ(sleepy_counter, SLEEPY_BLOCKS + SLEEPY_TASKS);
    CHECK_EQ(compat_load(&sleepy_overlap), 0);
    CHECK(most <= MAX_THREADS);
    dispatch_release(sleepy_q);
}

int main(void)
{
    RUN(test_serial_queue_as_lock);
    RUN(test_readers_and_writers);
    RUN(test_async_then_sync);
    RUN(test_async_then_sync_through_a_chain);
    RUN(test_group_wait_for_a_serial_queue);
    RUN(test_from_a_queue_through_three_levels);
    RUN(test_through_a_concurrent_level);
    RUN(test_sync_behind_work_that_sleeps);
    TEST_MAIN_END();
}
