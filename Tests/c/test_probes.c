/*
 * USDT probes: every probe is in the built shared library's ELF notes (.note.stapsdt, read with
 * `readelf -n`) under provider swiftqueues, with a semaphore; the static link of this test has
 * them too; with every semaphore raised (as a tracer does) the runtime still runs tasks,
 * groups, timers and sources correctly (the probe arguments are computed then). Thread naming:
 * a pool thread draining a serial queue takes its label as its name, and its own back after.
 * The note checks are skipped (with a message) when the library was built without <sys/sdt.h>
 * or readelf is missing.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>

#include "cq_test.h"

#if defined(__has_include)
#if __has_include(<sys/sdt.h>)
#define HAVE_SDT 1
#endif
#endif

static const char *const probes[] = {
    "task_enqueue", "task_start",    "task_finish",     "steal",
    "worker_park",  "worker_unpark", "spare_start",     "thread_limit",
    "source_event", "timer_fire",    "operation_state",
};
#define NPROBES (sizeof probes / sizeof probes[0])

/* Reads `readelf -n file`; marks the swiftqueues probes found. Returns false if readelf could
 * not run. */
static bool read_notes(const char *file, bool found[NPROBES], bool *semaphores)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "readelf -n '%s' 2>/dev/null", file);
    FILE *p = popen(cmd, "r");
    if (p == NULL) {
        return false;
    }
    char line[512];
    bool ours = false, any = false;
    *semaphores = true;
    while (fgets(line, sizeof line, p)) {
        any = true;
        char *v;
        if ((v = strstr(line, "Provider: ")) != NULL) {
            ours = strncmp(v + 10, "swiftqueues", 11) == 0;
        } else if (ours && (v = strstr(line, "Name: ")) != NULL) {
            v += 6;
            v[strcspn(v, "\n")] = '\0';
            for (size_t i = 0; i < NPROBES; i++) {
                if (strcmp(v, probes[i]) == 0) {
                    found[i] = true;
                }
            }
        } else if (ours && strstr(line, "Semaphore: 0x0000000000000000")) {
            *semaphores = false; /* a probe without a semaphore costs its arguments always */
        }
    }
    int status = pclose(p);
    return any && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int readelf_missing;

static void test_notes_in_shared_library(void)
{
    bool found[NPROBES] = {0}, sems;
    if (!read_notes(CQ_SHARED_LIBRARY, found, &sems)) {
        fprintf(stderr, "   readelf could not read %s: skipped\n", CQ_SHARED_LIBRARY);
        readelf_missing = 1;
        return;
    }
    for (size_t i = 0; i < NPROBES; i++) {
        if (!found[i]) {
            fprintf(stderr, "   probe swiftqueues:%s missing from %s\n", probes[i],
                    CQ_SHARED_LIBRARY);
        }
        CHECK(found[i]);
    }
    CHECK(sems);
}

static void test_notes_in_static_link(void)
{
    bool found[NPROBES] = {0}, sems;
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    REQUIRE(n > 0);
    self[n] = '\0'; /* our own path: /proc/self would be readelf's */
    if (readelf_missing || !read_notes(self, found, &sems)) {
        return;
    }
    CHECK(found[1]); /* task_start: item.c is always linked */
    CHECK(found[3]); /* steal */
    CHECK(sems);
}

#ifdef HAVE_SDT
/* The library's semaphores (hidden symbols, reachable from this static link). */
#define X(name) extern volatile unsigned short swiftqueues_##name##_semaphore;
X(task_enqueue)
X(task_start)
X(task_finish)
X(steal)
X(worker_park) X(worker_unpark) X(spare_start) X(thread_limit) X(source_event) X(timer_fire)
    X(operation_state) X(label_change)
#undef X

    /* Stands in for the tracer: perf writes these counters from outside the process, which
     * ThreadSanitizer never sees; the library reads them plainly (sys/sdt.h), so the stand-in's
     * writes are kept out of the race detector too. */
    __attribute__((no_sanitize("thread"))) static void set_all(unsigned short v)
{
    swiftqueues_task_enqueue_semaphore = v;
    swiftqueues_task_start_semaphore = v;
    swiftqueues_task_finish_semaphore = v;
    swiftqueues_steal_semaphore = v;
    swiftqueues_worker_park_semaphore = v;
    swiftqueues_worker_unpark_semaphore = v;
    swiftqueues_spare_start_semaphore = v;
    swiftqueues_thread_limit_semaphore = v;
    swiftqueues_source_event_semaphore = v;
    swiftqueues_timer_fire_semaphore = v;
    swiftqueues_operation_state_semaphore = v;
    swiftqueues_label_change_semaphore = v;
}
#endif

static void count(void *ctx)
{
    atomic_fetch_add((atomic_long *)ctx, 1);
}

static void signal_sema(void *ctx)
{
    cq_semaphore_signal(ctx);
}

/* Every probe "attached": the runtime computes the arguments and runs as before. */
static void test_runs_with_probes_enabled(void)
{
#ifdef HAVE_SDT
    set_all(1);
    CHECK(cq_probe_operation_enabled());
#endif
    cq_probe_operation_state("an operation", 1);
    cq_probe_operation_state(NULL, 2);
    atomic_long n = 0;
    cq_queue_t serial = cq_queue_create("probes.serial", CQ_QUEUE_SERIAL);
    cq_queue_t conc = cq_queue_create("probes.concurrent", CQ_QUEUE_CONCURRENT);
    cq_queue_t inner = cq_queue_create("probes.inner", CQ_QUEUE_CONCURRENT);
    cq_set_target_queue(inner, conc);
    cq_group_t g = cq_group_create();
    for (int i = 0; i < 1000; i++) {
        cq_group_async_f(g, serial, &n, count);
        cq_group_async_f(g, conc, &n, count);
        cq_group_async_f(g, inner, &n, count);
        cq_group_async_f(g, cq_get_global_queue(CQ_QUEUE_PRIORITY_HIGH, 0), &n, count);
    }
    for (int i = 0; i < 3; i++) {
        cq_group_enter(g);
        cq_after_f(cq_time(CQ_TIME_NOW, 1000000), serial, g, (cq_function_t)cq_group_leave);
    }
    cq_source_t src = cq_source_create(cq_source_type(CQ_SOURCE_KIND_DATA_ADD), 0, 0, serial);
    cq_semaphore_t s = cq_semaphore_create(0);
    cq_set_context(src, s);
    cq_source_set_event_handler_f(src, signal_sema);
    cq_activate(src);
    cq_source_merge_data(src, 3);
    WAIT_SEMA(s);
    WAIT_GROUP(g);
    cq_sync_f(serial, &n, count);
    CHECK(atomic_load(&n) == 4001);
    cq_source_cancel(src);
    cq_release(src);
    cq_release(s);
    cq_release(g);
    cq_release(inner);
    cq_release(conc);
    cq_release(serial);
#ifdef HAVE_SDT
    set_all(0);
#endif
}

struct naming {
    char want[16];
    atomic_int matched;
    cq_semaphore_t done;
};

static void read_name(void *ctx)
{
    struct naming *nm = ctx;
    char name[16] = "";
    pthread_getname_np(pthread_self(), name, sizeof name);
    if (strcmp(name, nm->want) == 0) {
        atomic_store(&nm->matched, 1);
    }
    cq_semaphore_signal(nm->done);
}

static void test_thread_naming(void)
{
    struct naming nm = {"tn.serial-queue", 0, cq_semaphore_create(0)};
    cq_queue_t q = cq_queue_create("com.example.tn.serial-queue", CQ_QUEUE_SERIAL);
    cq_runtime_set_thread_naming(true); /* every change of label, no rate limit */
    cq_async_f(q, &nm, read_name);      /* the drain names its worker before it runs this */
    WAIT_SEMA(nm.done);
    CHECK(atomic_load(&nm.matched));
    /* The name is the label's last 15 bytes, from a character's start: this label's last 15
     * bytes start inside an "é" (2 bytes), and the name was not valid UTF-8. */
    struct naming utf8 = {"\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9", 0, cq_semaphore_create(0)};
    cq_queue_t e = cq_queue_create("com.example.\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9",
                                   CQ_QUEUE_SERIAL);
    cq_async_f(e, &utf8, read_name);
    WAIT_SEMA(utf8.done);
    CHECK(atomic_load(&utf8.matched));
    cq_runtime_set_thread_naming(false);
    cq_release(e);
    cq_release(utf8.done);
    cq_release(q);
    cq_release(nm.done);
}

/* A serial queue's drain on an overcommit thread (every worker spins in a task of the global
 * queue) names that thread after the queue too, as a worker's; overcommit threads had no
 * naming, and under a loaded ctest the drain above ran on one (no name: 1 run in 3). */
static atomic_bool spin_release;
static atomic_int spinning;

static void spin_until_released(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&spinning, 1);
    uint64_t give_up = cq_test_now_ns() + 2 * (uint64_t)CQ_TEST_PATIENCE_NS;
    while (!atomic_load(&spin_release) && cq_test_now_ns() < give_up) {
    }
    atomic_fetch_sub(&spinning, 1);
}

static void test_thread_naming_on_overcommit_thread(void)
{
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    cq_group_t spinners = cq_group_create();
    for (uint32_t i = 0; i < 2 * info.workers; i++) {
        cq_group_async_f(spinners, cq_get_global_queue(0, 0), NULL, spin_until_released);
    }
    uint64_t deadline = cq_test_now_ns() + (uint64_t)CQ_TEST_PATIENCE_NS;
    while (atomic_load(&spinning) < (int)info.workers && cq_test_now_ns() < deadline) {
        sched_yield();
    }
    struct naming nm = {"oc.naming-queue", 0, cq_semaphore_create(0)};
    cq_queue_t q = cq_queue_create("com.example.oc.naming-queue", CQ_QUEUE_SERIAL);
    cq_runtime_set_thread_naming(true);
    cq_async_f(q, &nm, read_name);
    WAIT_SEMA(nm.done);
    int still_spinning = atomic_load(&spinning);
    atomic_store(&spin_release, true);
    CHECK(atomic_load(&nm.matched));
    CHECK(still_spinning >= (int)info.workers); /* so it ran on an overcommit thread */
    WAIT_GROUP(spinners);
    cq_runtime_set_thread_naming(false);
    cq_release(q);
    cq_release(nm.done);
    cq_release(spinners);
}

/* Naming turned off while a worker carries a queue's label: the worker takes its own name back
 * when it next runs work or parks, as it does with naming on. It kept the label for good: the
 * tasks of other queues it ran then showed under it (5-6 of 6), and so did its sleep. */
struct stale_task {
    cq_semaphore_t started, go, done;
};

static void stale_task_run(void *ctx)
{
    struct stale_task *st = ctx;
    cq_semaphore_signal(st->started);
    WAIT_SEMA(st->go);
    cq_semaphore_signal(st->done);
}

static void test_thread_naming_off_gives_names_back(void)
{
    struct stale_task st = {cq_semaphore_create(0), cq_semaphore_create(0), cq_semaphore_create(0)};
    cq_queue_t q = cq_queue_create("stale-label-q", CQ_QUEUE_SERIAL);
    cq_runtime_set_thread_naming(true);
    cq_async_f(q, &st, stale_task_run);
    WAIT_SEMA(st.started);
    CHECK_EQ(cq_test_thread_count_named("stale-label-q"), 1);
    cq_runtime_set_thread_naming(false); /* while the drain runs under the label */
    cq_semaphore_signal(st.go);
    WAIT_SEMA(st.done);
    /* Work of other queues never runs under the label. */
    for (int i = 0; i < 20; i++) {
        struct naming nm = {"stale-label-q", 0, cq_semaphore_create(0)};
        cq_async_f(cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), &nm, read_name);
        WAIT_SEMA(nm.done);
        CHECK(!atomic_load(&nm.matched));
        cq_release(nm.done);
    }
    /* And the worker that had it parks under its own name. */
    uint64_t deadline = cq_test_now_ns() + 30000000000ull;
    while (cq_test_thread_count_named("stale-label-q") != 0 && cq_test_now_ns() < deadline) {
        cq_semaphore_t pause = cq_semaphore_create(0);
        cq_semaphore_wait(pause, cq_time(CQ_TIME_NOW, 1000000));
        cq_release(pause);
    }
    CHECK_EQ(cq_test_thread_count_named("stale-label-q"), 0);
    cq_release(q);
    cq_release(st.started);
    cq_release(st.go);
    cq_release(st.done);
}

int main(void)
{
#ifdef HAVE_SDT
    RUN(test_notes_in_shared_library);
    RUN(test_notes_in_static_link);
#else
    fprintf(stderr, "probes skipped: built without <sys/sdt.h> (Debian: systemtap-sdt-dev)\n");
#endif
    CHECK(!cq_probe_operation_enabled());
    RUN(test_runs_with_probes_enabled);
    RUN(test_thread_naming);
    RUN(test_thread_naming_on_overcommit_thread);
    RUN(test_thread_naming_off_gives_names_back);
    if (readelf_missing) {
        fprintf(stderr, "probes skipped: readelf is missing\n");
    }
    TEST_MAIN_END();
}
