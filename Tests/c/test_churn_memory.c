/*
 * Objects made and dropped in a loop, from several threads, cost bounded memory:
 *   - queues made and released by four threads: the memory of every released queue went to
 *     liburcu's callback thread, which four such threads outran: 500,000 queues each peaked at
 *     940 MB (libdispatch: 3 MB). A queue that was never anyone's target is freed at once;
 *   - sources, which still go through a grace period: the deferred frees are bounded (the
 *     creating threads wait for reclamation past a limit: platform/rcu_internal.h);
 *   - a queue-specific value set again and again: stored in place (a new array and a deferred
 *     free per set piled up arrays), each replaced value's destructor run once.
 * The peak is the resident set's high-water mark (VmHWM), reset before each burst. Under ASan
 * or TSan the resident set holds shadow memory and quarantine: printed, not judged.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cq_test.h"

#include <pthread.h>
#include <sched.h>

#define THREADS 4
#define PEAK_LIMIT_KIB (64 * 1024)

/* ThreadSanitizer (read only by TSan builds): liburcu is not instrumented, so its callback
 * thread's frees of what a creating thread left when it ended (its reader registration, its
 * callback queue) look like races with that thread's writes; 2 of 6 runs reported them. */
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void)
{
    return "called_from_lib:liburcu-bp.so\n";
}

/* Resets VmHWM to the current resident set (clear_refs 5); false if the kernel refuses. */
static bool reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f == NULL) {
        return false;
    }
    bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

static long peak_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    REQUIRE(f != NULL);
    char line[256];
    long kib = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "VmHWM:", 6) == 0) {
            kib = atol(line + 6);
        }
    }
    fclose(f);
    return kib;
}

static void judge(const char *what, long before, long peak)
{
    fprintf(stderr, "   %s: resident %ld KiB before, peak %ld KiB (+%ld)%s\n", what, before, peak,
            peak - before, CQ_TEST_RSS_MEANINGFUL ? "" : " (sanitizer: not judged)");
    if (CQ_TEST_RSS_MEANINGFUL) {
        CHECK(peak - before < PEAK_LIMIT_KIB);
    }
}

/* Runs `body` on THREADS threads at once and reports the resident set's growth. */
static void burst(const char *what, void *(*body)(void *))
{
    bool reset = reset_peak();
    long before = cq_test_rss_kib();
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        REQUIRE(pthread_create(&t[i], NULL, body, NULL) == 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
    }
    if (reset) {
        judge(what, before, peak_kib());
    } else {
        fprintf(stderr, "   %s: /proc/self/clear_refs refused: peak not measured\n", what);
    }
}

#define QUEUES (CQ_TEST_RSS_MEANINGFUL ? 250000 : 20000)

static void *make_queues(void *unused)
{
    (void)unused;
    for (int i = 0; i < QUEUES; i++) {
        cq_queue_t q = cq_queue_create("churn.queue", CQ_QUEUE_SERIAL);
        REQUIRE(q != NULL);
        cq_release(q);
    }
    return NULL;
}

static void test_queue_churn(void)
{
    burst("queues made and released", make_queues);
}

#define SOURCES (CQ_TEST_RSS_MEANINGFUL ? 200000 : 10000)

static void *make_sources(void *unused)
{
    (void)unused;
    cq_queue_t q = cq_queue_create("churn.source-target", CQ_QUEUE_SERIAL);
    for (int i = 0; i < SOURCES; i++) {
        cq_source_t s = cq_source_create(cq_source_type(CQ_SOURCE_KIND_DATA_ADD), 0, 0, q);
        REQUIRE(s != NULL);
        cq_source_cancel(s);
        cq_release(s);
    }
    cq_release(q);
    return NULL;
}

static void test_source_churn(void)
{
    burst("sources made, cancelled and released", make_sources);
}

/* ---- a specific value set again and again ----------------------------------------------- */

#define SETS 100000

static atomic_long destroyed;
static int key;

static void destroy(void *value)
{
    (void)value;
    atomic_fetch_add(&destroyed, 1);
}

struct reader {
    cq_queue_t q;
    atomic_bool stop;
    atomic_long reads, missing;
};

static void read_specific(void *ctx)
{
    struct reader *r = ctx;
    if (cq_get_specific(&key) == NULL) {
        atomic_fetch_add(&r->missing, 1);
    }
    atomic_fetch_add(&r->reads, 1);
}

static void *read_loop(void *arg)
{
    struct reader *r = arg;
    while (!atomic_load(&r->stop)) {
        cq_sync_f(r->q, r, read_specific);
    }
    return NULL;
}

static void wait_destroyed(long n)
{
    uint64_t deadline = cq_test_now_ns() + (uint64_t)CQ_TEST_PATIENCE_NS;
    while (atomic_load(&destroyed) < n && cq_test_now_ns() < deadline) {
        struct timespec d = {0, 1000000};
        nanosleep(&d, NULL);
    }
}

static void test_specific_set_in_place(void)
{
    static char values[SETS];
    struct reader r = {.q = cq_queue_create("churn.specific", CQ_QUEUE_SERIAL)};
    cq_queue_set_specific(r.q, &key, &values[0], destroy);
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, read_loop, &r) == 0);
    /* The reader is reading before the sets start: on a loaded machine it did not always get
     * a CPU before the 100,000 sets were over (0 reads). */
    uint64_t deadline = cq_test_now_ns() + (uint64_t)CQ_TEST_PATIENCE_NS;
    while (atomic_load(&r.reads) == 0 && cq_test_now_ns() < deadline) {
        sched_yield();
    }
    long before = cq_test_rss_kib();
    for (int i = 1; i < SETS; i++) {
        cq_queue_set_specific(r.q, &key, &values[i], destroy);
    }
    long after = cq_test_rss_kib();
    atomic_store(&r.stop, true);
    pthread_join(t, NULL);
    CHECK(cq_queue_get_specific(r.q, &key) == &values[SETS - 1]);
    /* every value but the last was replaced: its destructor ran once */
    wait_destroyed(SETS - 1);
    CHECK_EQ(atomic_load(&destroyed), SETS - 1);
    CHECK(atomic_load(&r.reads) > 0);
    CHECK_EQ(atomic_load(&r.missing), 0); /* a reader never found the key gone */
    fprintf(stderr, "   %d sets beside %ld reads: resident %ld KiB before, %ld after\n", SETS,
            atomic_load(&r.reads), before, after);
    if (CQ_TEST_RSS_MEANINGFUL) {
        CHECK(after - before < 8 * 1024);
    }
    cq_release(r.q); /* the last value's destructor runs with the queue's end */
    wait_destroyed(SETS);
    CHECK_EQ(atomic_load(&destroyed), SETS);
}

int main(void)
{
    /* The pool, the reactor and liburcu's callback thread exist before the first figure. */
    cq_sync_f(cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), NULL, (cq_function_t)free);
    RUN(test_source_churn);
    RUN(test_queue_churn);
    RUN(test_specific_set_in_place);
    TEST_MAIN_END();
}
