/*
 * Runtime threads run at the pool's nice value (that of the thread that started the pool), and
 * only background workers at nice 19 (and express workers 2 below the pool's value, where the
 * process may lower it), whoever made the runtime start them. A new thread inherits
 * its creator's nice value and an unprivileged thread cannot lower its own, so before this test
 * a background task that created the process's first timer or read its first file left the
 * reactor (every timer and source) or the I/O thread at nice 19 for the life of the process, and
 * one that submitted high-priority work while the workers were busy did the same to the express
 * worker that high-priority work relies on.
 *
 * From a task on the background queue: the first cq_after_f (starts the reactor), the first
 * cq_read of a file (starts the I/O thread), and, with both normal workers held busy, a task on
 * the high-priority queue (starts the express worker). Then the nice value of each thread, read
 * from /proc, and of the high task's own thread.
 */
#include "cq_test.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>

static atomic_int gate_open;
static atomic_int gates_running;
static atomic_int high_nice = 100;
static atomic_int background_nice = 100;

static int my_nice(void)
{
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0); /* Linux: the calling thread's */
    return errno == 0 ? nice : 100;
}

/* Holds a normal worker until the test opens the gate. */
static void gate(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&gates_running, 1);
    uint64_t deadline = cq_test_now_ns() + (uint64_t)CQ_TEST_PATIENCE_NS;
    while (!atomic_load(&gate_open) && cq_test_now_ns() < deadline) {
    }
}

/* Runs on the express worker (both normal workers are in a gate), then lets them go on to the
 * timer's and the read's handlers. */
static void high_task(void *ctx)
{
    atomic_store(&high_nice, my_nice());
    atomic_store(&gate_open, 1);
    cq_group_leave(ctx);
}

static void timer_fired(void *ctx)
{
    cq_group_leave(ctx);
}

struct read_ctx {
    cq_group_t group;
    int fd;
    atomic_int error;
};

static void read_done(void *ctx, cq_data_t data, int error)
{
    struct read_ctx *r = ctx;
    (void)data;
    atomic_store(&r->error, error);
    close(r->fd);
    cq_group_leave(r->group);
}

static struct read_ctx reader;

static void in_background(void *ctx)
{
    cq_group_t group = ctx;
    atomic_store(&background_nice, my_nice());
    cq_queue_t global = cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0);
    cq_group_enter(group);
    cq_after_f(cq_time(CQ_TIME_NOW, 1000000), global, group, timer_fired);
    reader.group = group;
    reader.fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC); /* a regular file: the engine */
    if (reader.fd < 0) {
        atomic_store(&reader.error, errno);
    } else {
        cq_group_enter(group);
        cq_read_f(reader.fd, 4096, global, &reader, read_done);
    }
    cq_group_enter(group);
    cq_async_f(cq_get_global_queue(CQ_QUEUE_PRIORITY_HIGH, 0), group, high_task);
    cq_group_leave(group); /* the test's enter */
}

/* The nice value of the first runtime thread whose name starts with `prefix`, its name in
 * `name`; -100 if there is none. */
static int thread_nice(const char *prefix, char *name, size_t size)
{
    DIR *dir = opendir("/proc/self/task");
    REQUIRE(dir != NULL);
    int found = -100;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL && found == -100) {
        if (e->d_name[0] == '.') {
            continue;
        }
        char path[300], comm[64] = {0}, stat[1024] = {0};
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL || fgets(comm, sizeof comm, f) == NULL) {
            if (f) {
                fclose(f);
            }
            continue;
        }
        fclose(f);
        comm[strcspn(comm, "\n")] = '\0';
        if (strncmp(comm, prefix, strlen(prefix)) != 0) {
            continue;
        }
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        f = fopen(path, "r");
        if (f == NULL || fgets(stat, sizeof stat, f) == NULL) {
            if (f) {
                fclose(f);
            }
            continue;
        }
        fclose(f);
        /* field 19 is the nice value; fields 3.. follow the ')' that ends the command */
        char *p = strrchr(stat, ')');
        REQUIRE(p != NULL);
        int field = 2;
        for (char *tok = strtok(p + 1, " "); tok != NULL; tok = strtok(NULL, " ")) {
            if (++field == 19) {
                found = atoi(tok);
                snprintf(name, size, "%s", comm);
                break;
            }
        }
    }
    closedir(dir);
    return found;
}

/* Whether a thread of this process may lower its nice value below `base` (root, CAP_SYS_NICE,
 * RLIMIT_NICE): a thread of our own tries. */
static void *try_lower(void *arg)
{
    int *base = arg;
    *base = setpriority(PRIO_PROCESS, 0, *base - 1) == 0;
    return NULL;
}

static bool may_lower_nice(int base)
{
    if (base <= -20) {
        return false;
    }
    pthread_t t;
    int arg = base;
    REQUIRE(pthread_create(&t, NULL, try_lower, &arg) == 0);
    pthread_join(t, NULL);
    return arg == 1;
}

static void test_threads_started_from_background_work(void)
{
    int base = my_nice();
    cq_queue_t global = cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0);
    cq_group_t gates = cq_group_create();
    cq_group_async_f(gates, global, NULL, gate);
    cq_group_async_f(gates, global, NULL, gate);
    uint64_t deadline = cq_test_now_ns() + (uint64_t)CQ_TEST_PATIENCE_NS;
    while (atomic_load(&gates_running) < 2) {
        REQUIRE(cq_test_now_ns() < deadline);
        struct timespec d = {0, 100000};
        nanosleep(&d, NULL);
    }
    cq_group_t group = cq_group_create();
    cq_group_enter(group); /* in_background leaves it, once it has entered for what it started */
    cq_async_f(cq_get_global_queue(CQ_QUEUE_PRIORITY_BACKGROUND, 0), group, in_background);
    WAIT_GROUP(group);
    WAIT_GROUP(gates);
    cq_release(gates);
    cq_release(group);

    char name[64] = "";
    fprintf(stderr, "   base nice %d; background task ran at %d, high task at %d\n", base,
            atomic_load(&background_nice), atomic_load(&high_nice));
    CHECK_EQ(atomic_load(&background_nice), 19);
    /* The express worker runs 2 below the pool's nice value where the process may lower it
     * (worker.c), else at it. */
    int express = may_lower_nice(base) ? (base - 2 > -20 ? base - 2 : -20) : base;
    CHECK_EQ(atomic_load(&high_nice), express);
    CHECK_EQ(atomic_load(&reader.error), 0);
    int nice = thread_nice("cq-reactor", name, sizeof name);
    fprintf(stderr, "   %s: nice %d\n", name, nice);
    CHECK_EQ(nice, base);
    nice = thread_nice("cq-io", name, sizeof name); /* cq-io (io_uring) or cq-io-pool */
    fprintf(stderr, "   %s: nice %d\n", name, nice);
    CHECK_EQ(nice, base);
    nice = thread_nice("cq-high", name, sizeof name);
    fprintf(stderr, "   %s: nice %d\n", name, nice);
    CHECK_EQ(nice, express);
}

/* ---- a background task's sync onto a busy queue of higher priority ----------------------- */

static cq_queue_t state_q;
static cq_semaphore_t holder_in, holder_go;
static atomic_int section_nice = 100, section_runs, section_on_queue;
static int state_key;

static void holder(void *ctx)
{
    (void)ctx;
    cq_semaphore_signal(holder_in);
    WAIT_SEMA(holder_go); /* state_q is held (busy) until the test lets go */
}

static void state_section(void *ctx)
{
    (void)ctx;
    atomic_store(&section_nice, my_nice());
    atomic_fetch_add(&section_runs, 1);
    if (cq_get_specific(&state_key) == &state_key) {
        atomic_fetch_add(&section_on_queue, 1);
    }
}

static atomic_int bg_caller_nice = 100;

static void count_state_queued(void *ctx, const struct cq_introspect_queue *queue)
{
    if (queue->queue == (const void *)state_q) {
        *(uint32_t *)ctx = queue->queued;
    }
}

static uint32_t state_queued(void)
{
    struct cq_introspect_visitor visitor = {.queue = count_state_queued};
    uint32_t queued = 0;
    cq_introspect(&visitor, &queued);
    return queued;
}

static void background_sync(void *ctx)
{
    atomic_store(&bg_caller_nice, my_nice());
    cq_sync_f(state_q, NULL, state_section);
    cq_group_leave((cq_group_t)ctx);
}

/* A background task (nice 19) syncs onto a default-priority serial queue that is busy: the
 * sync is made by a worker at the pool's nice value, so the queue is never held by a thread
 * that the kernel runs after everything else (with other processes busy, ~1.5 % of a CPU:
 * every waiter behind it waited that much longer). The section still runs on the queue, once,
 * before cq_sync_f returns. */
static void test_background_sync_onto_a_busy_queue(void)
{
    int base = my_nice();
    state_q = cq_queue_create("state", NULL);
    cq_queue_set_specific(state_q, &state_key, &state_key, NULL);
    holder_in = cq_semaphore_create(0);
    holder_go = cq_semaphore_create(0);
    cq_async_f(state_q, NULL, holder);
    WAIT_SEMA(holder_in);
    cq_group_t group = cq_group_create();
    cq_group_enter(group);
    cq_async_f(cq_get_global_queue(CQ_QUEUE_PRIORITY_BACKGROUND, 0), group, background_sync);
    /* until the sync waits at state_q (someone's sync item queued behind the holder) */
    uint64_t deadline = cq_test_now_ns() + (uint64_t)CQ_TEST_PATIENCE_NS;
    while (state_queued() == 0) {
        REQUIRE(cq_test_now_ns() < deadline);
        struct timespec d = {0, 200000};
        nanosleep(&d, NULL);
    }
    cq_semaphore_signal(holder_go);
    WAIT_GROUP(group);
    fprintf(stderr, "   background caller at nice %d, its section at %d\n",
            atomic_load(&bg_caller_nice), atomic_load(&section_nice));
    CHECK_EQ(atomic_load(&bg_caller_nice), 19);
    CHECK_EQ(atomic_load(&section_runs), 1);
    CHECK_EQ(atomic_load(&section_on_queue), 1);
    CHECK_EQ(atomic_load(&section_nice), base);
    cq_release(group);
    cq_release(holder_in);
    cq_release(holder_go);
    cq_release(state_q);
}

#ifndef CQ_TEST_IO_FALLBACK
#define CQ_TEST_IO_FALLBACK 0
#endif

int main(void)
{
    setenv("CQ_WORKERS", "2", 1); /* before the pool starts */
    if (CQ_TEST_IO_FALLBACK) {
        /* the file read runs on the blocking pool, as where io_uring is unavailable (or its
         * setup fails on a loaded machine): its threads ran unnamed, with their creator's name */
        setenv("CQ_IO_URING", "0", 1);
    }
    RUN(test_threads_started_from_background_work);
    RUN(test_background_sync_onto_a_busy_queue);
    TEST_MAIN_END();
}
