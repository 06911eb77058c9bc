/*
 * cq_runtime_get_counters: tasks run grow by at least the tasks submitted (global, serial,
 * concurrent queues, group tasks), timer fires by the cq_after_f calls, source events by the
 * handlers run; workers park once idle; a short `size` gets only the fields it covers; counts
 * never go down.
 */
#include "cq_test.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#include <dirent.h>
#include <pthread.h>

static void noop(void *ctx)
{
    (void)ctx;
}

static void signal_sema(void *ctx)
{
    cq_semaphore_signal(ctx);
}

static struct cq_runtime_counters read_counters(void)
{
    struct cq_runtime_counters c;
    memset(&c, 0xff, sizeof c);
    CHECK_EQ(cq_runtime_get_counters(&c, sizeof c), sizeof c);
    return c;
}

#define N 2000

static void test_tasks_counted(void)
{
    struct cq_runtime_counters before = read_counters();
    cq_queue_t serial = cq_queue_create("counters.serial", CQ_QUEUE_SERIAL);
    cq_queue_t conc = cq_queue_create("counters.concurrent", CQ_QUEUE_CONCURRENT);
    cq_group_t g = cq_group_create();
    for (int i = 0; i < N; i++) {
        cq_group_async_f(g, cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), NULL, noop);
        cq_group_async_f(g, serial, NULL, noop);
        cq_group_async_f(g, conc, NULL, noop);
    }
    WAIT_GROUP(g);
    /* the group empties when the last task leaves it, inside that task: one more round trip
     * makes sure every counted task has returned */
    cq_semaphore_t s = cq_semaphore_create(0);
    cq_async_f(serial, s, signal_sema);
    WAIT_SEMA(s);
    struct cq_runtime_counters after = read_counters();
    CHECK(after.tasks_run - before.tasks_run >= 3 * N);
    CHECK(after.workers_counted >= 1);
    CHECK(after.steals >= before.steals);
    CHECK(after.parks >= before.parks);
    fprintf(stderr,
            "   tasks %" PRIu64 " -> %" PRIu64 ", steals %" PRIu64 ", parks %" PRIu64
            ", unparks %" PRIu64 "\n",
            before.tasks_run, after.tasks_run, after.steals, after.parks, after.unparks);
    cq_release(s);
    cq_release(g);
    cq_release(serial);
    cq_release(conc);
}

/* tasks_outside: what no worker's count has. At rest, the workers' counts and it add up to
 * tasks_run (the dump printed the workers' counts and the total, which then did not add up
 * when the main thread had run tasks, and said nothing of the difference). */
static void add_worker_tasks(void *ctx, const struct cq_introspect_worker *w)
{
    *(uint64_t *)ctx += w->tasks_run;
}

static void test_tasks_outside_workers(void)
{
    struct cq_runtime_counters before = read_counters();
    /* The main thread syncing onto the main queue runs the tasks queued there first. */
    for (int i = 0; i < 10; i++) {
        cq_async_f(cq_get_main_queue(), NULL, noop);
    }
    cq_sync_f(cq_get_main_queue(), NULL, noop);
    struct cq_runtime_counters after = read_counters();
    CHECK(after.tasks_outside - before.tasks_outside >= 10);
    /* At rest (no task ran between the two reads around the workers' counts), the sum adds
     * up exactly. */
    bool at_rest = false;
    for (int attempt = 0; attempt < 1000 && !at_rest; attempt++) {
        uint64_t workers = 0;
        struct cq_introspect_visitor v = {.worker = add_worker_tasks};
        struct cq_runtime_counters first = read_counters();
        cq_introspect(&v, &workers);
        struct cq_runtime_counters second = read_counters();
        if (first.tasks_run == second.tasks_run) {
            at_rest = true;
            CHECK_EQ(workers + second.tasks_outside, second.tasks_run);
        }
    }
    CHECK(at_rest);
}

static void test_timers_and_sources_counted(void)
{
    struct cq_runtime_counters before = read_counters();
    cq_group_t g = cq_group_create();
    cq_queue_t q = cq_queue_create("counters.timers", CQ_QUEUE_SERIAL);
    for (int i = 0; i < 5; i++) {
        cq_group_enter(g);
        cq_after_f(cq_time(CQ_TIME_NOW, 1000000), q, g, (cq_function_t)cq_group_leave);
    }
    WAIT_GROUP(g);
    cq_source_t src = cq_source_create(cq_source_type(CQ_SOURCE_KIND_DATA_ADD), 0, 0, q);
    REQUIRE(src != NULL);
    cq_semaphore_t s = cq_semaphore_create(0);
    cq_set_context(src, s);
    cq_source_set_event_handler_f(src, signal_sema);
    cq_activate(src);
    cq_source_merge_data(src, 1);
    WAIT_SEMA(s);
    struct cq_runtime_counters after = read_counters();
    CHECK(after.timer_fires - before.timer_fires >= 5);
    CHECK(after.source_events - before.source_events >= 1);
    cq_source_cancel(src);
    cq_release(src);
    cq_release(g);
    cq_release(q);
    cq_release(s);
}

/* Idle workers park: wait (on the counter, with the usual patience) for one more park. */
static void test_parks_when_idle(void)
{
    struct cq_runtime_counters before = read_counters();
    cq_semaphore_t s = cq_semaphore_create(0);
    cq_async_f(cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), s, signal_sema);
    WAIT_SEMA(s);
    cq_release(s);
    uint64_t deadline = cq_test_now_ns() + (uint64_t)CQ_TEST_PATIENCE_NS;
    struct cq_runtime_counters now = read_counters();
    while (now.parks == before.parks && cq_test_now_ns() < deadline) {
        struct timespec d = {0, 1000000};
        nanosleep(&d, NULL);
        now = read_counters();
    }
    CHECK(now.parks > before.parks);
}

static void test_short_size(void)
{
    struct cq_runtime_counters c;
    memset(&c, 0xab, sizeof c);
    CHECK_EQ(cq_runtime_get_counters(&c, sizeof c.tasks_run), sizeof c.tasks_run);
    CHECK(c.tasks_run != 0xababababababababull);
    CHECK_EQ(c.steals, 0xababababababababull); /* beyond `size`: untouched */
    CHECK_EQ(cq_runtime_get_counters(NULL, 0), 0);
    CHECK_EQ(cq_runtime_get_counters(&c, 4096), sizeof c); /* a newer caller's bigger struct */
}

/* A reader while queues drain one task each (a drain and a task per submission): tasks_run
 * never goes down. It did, by up to a thousand, when it was the difference of two counters (all
 * items started, minus the drains) read while a worker updated them. */
struct round_robin {
    cq_queue_t queues[64];
    cq_group_t group;
    int n;
    atomic_bool submitted;
};

static void *submit_round_robin(void *arg)
{
    struct round_robin *r = arg;
    for (int i = 0; i < r->n; i++) {
        cq_group_async_f(r->group, r->queues[i % 64], NULL, noop);
    }
    atomic_store(&r->submitted, true);
    return NULL;
}

static void test_tasks_run_never_goes_down(void)
{
    struct round_robin r = {.group = cq_group_create(), .n = 400000};
    for (int i = 0; i < 64; i++) {
        r.queues[i] = cq_queue_create("counters.drain", CQ_QUEUE_SERIAL);
    }
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, submit_round_robin, &r) == 0);
    uint64_t last = read_counters().tasks_run;
    long reads = 0, down = 0;
    while (!atomic_load(&r.submitted) || cq_group_wait(r.group, CQ_TIME_NOW) != 0) {
        uint64_t now = read_counters().tasks_run;
        down += now < last;
        last = now;
        reads++;
    }
    pthread_join(t, NULL);
    WAIT_GROUP(r.group);
    fprintf(stderr, "   %ld reads while %d tasks ran, %ld of them lower than the one before\n",
            reads, r.n, down);
    CHECK_EQ(down, 0);
    for (int i = 0; i < 64; i++) {
        cq_release(r.queues[i]);
    }
    cq_release(r.group);
}

/* Every thread the runtime starts carries a "cq-" name (ps -L, perf and top show whose it is)
 * and is counted in threads_started: liburcu's call_rcu thread, which a released queue starts,
 * once carried the program's name and was not counted. */
static void test_every_runtime_thread_is_named(void)
{
    cq_queue_t q = cq_queue_create("counters.released", CQ_QUEUE_SERIAL);
    cq_sync_f(q, NULL, noop);
    cq_release(q); /* its memory goes through call_rcu */
    cq_group_t g = cq_group_create();
    cq_group_async_f(g, cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), NULL, noop);
    WAIT_GROUP(g);
    cq_release(g);
    pid_t self = getpid();
    int named = 0, others = 0;
    DIR *d = opendir("/proc/self/task");
    REQUIRE(d != NULL);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.' || atoi(e->d_name) == self) {
            continue; /* the main thread is the program's */
        }
        char path[300], comm[64] = {0};
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL || fgets(comm, sizeof comm, f) == NULL) {
            if (f) {
                fclose(f);
            }
            continue; /* gone meanwhile */
        }
        fclose(f);
        comm[strcspn(comm, "\n")] = '\0';
        if (strncmp(comm, "cq-", 3) == 0) {
            named++;
        } else {
            fprintf(stderr, "   thread %s is named \"%s\"\n", e->d_name, comm);
            others++;
        }
    }
    closedir(d);
    uint64_t started = read_counters().threads_started;
    fprintf(stderr, "   %d runtime threads named cq-*, %d others; %" PRIu64 " started\n", named,
            others, started);
    if (!SANITIZED) {
        CHECK_EQ(others, 0);
    } /* else the sanitizer's runtime has threads of its own, named after the program */
    CHECK(started >= (uint64_t)named);
}

int main(void)
{
    RUN(test_tasks_counted);
    RUN(test_tasks_outside_workers);
    RUN(test_timers_and_sources_counted);
    RUN(test_parks_when_idle);
    RUN(test_short_size);
    RUN(test_tasks_run_never_goes_down);
    RUN(test_every_runtime_thread_is_named);
    TEST_MAIN_END();
}
