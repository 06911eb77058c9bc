/*
 * Introspection: cq_introspect reports a known set of queues (labels, kinds, widths, suspend
 * counts, inactive, running and waiting items, targets), the workers (one of them running the
 * task that holds a serial queue) and sources (types, targets, activated, cancelled); a freed
 * queue leaves the list; cq_introspect_dump prints them. (CQ_DUMP_SIGNAL: test_dump_signal.c.)
 */
#include <pthread.h>
#include <sched.h>

#include "cq_test.h"

#define MAXQ 64
struct seen {
    int nqueues, nworkers, nsources, pool_calls;
    struct cq_introspect_queue q[MAXQ];
    char qlabel[MAXQ][64], qtarget[MAXQ][64];
    struct cq_introspect_worker w[512];
    struct cq_introspect_source s[MAXQ];
    char starget[MAXQ][64], stype[MAXQ][16];
    struct cq_introspect_pool pool;
};

static void on_pool(void *ctx, const struct cq_introspect_pool *p)
{
    struct seen *s = ctx;
    s->pool = *p;
    s->pool_calls++;
}

static void on_queue(void *ctx, const struct cq_introspect_queue *q)
{
    struct seen *s = ctx;
    if (s->nqueues < MAXQ) {
        s->q[s->nqueues] = *q;
        snprintf(s->qlabel[s->nqueues], 64, "%s", q->label);
        snprintf(s->qtarget[s->nqueues], 64, "%s", q->target_label);
        s->nqueues++;
    }
}

static void on_worker(void *ctx, const struct cq_introspect_worker *w)
{
    struct seen *s = ctx;
    if (s->nworkers < 512) {
        s->w[s->nworkers++] = *w;
    }
}

static void on_source(void *ctx, const struct cq_introspect_source *src)
{
    struct seen *s = ctx;
    if (s->nsources < MAXQ) {
        s->s[s->nsources] = *src;
        snprintf(s->starget[s->nsources], 64, "%s", src->target_label);
        snprintf(s->stype[s->nsources], 16, "%s", src->type);
        s->nsources++;
    }
}

static const struct cq_introspect_visitor visitor = {on_pool, on_queue, on_worker, on_source};

static struct seen *look(void)
{
    struct seen *s = calloc(1, sizeof *s);
    REQUIRE(s != NULL);
    cq_introspect(&visitor, s);
    return s;
}

static int find_queue(struct seen *s, const char *label)
{
    for (int i = 0; i < s->nqueues; i++) {
        if (strcmp(s->qlabel[i], label) == 0) {
            return i;
        }
    }
    return -1;
}

static int find_source(struct seen *s, const void *src)
{
    for (int i = 0; i < s->nsources; i++) {
        if (s->s[i].source == src) {
            return i;
        }
    }
    return -1;
}

struct holder {
    cq_semaphore_t started;
    atomic_bool release;
};

/* Holds its queue (and its worker) until released. It spins, so its worker stays "running":
 * a runtime wait would hand its CPU on, and a thread asleep in the kernel (it waited on a
 * condition variable) for a few of the monitor's ticks loses its worker to a new thread (the
 * monitor's compensation for blocked tasks): the dump then showed no worker running, when the
 * main thread, beside two CPU hogs and another test, took that long to look (1 run in ~40). */
static void hold(void *ctx)
{
    struct holder *h = ctx;
    cq_semaphore_signal(h->started);
    while (!atomic_load_explicit(&h->release, memory_order_acquire)) {
    }
}

static void noop(void *ctx)
{
    (void)ctx;
}

static void signal_sema(void *ctx)
{
    cq_semaphore_signal(ctx);
}

/* Every worker that has a thread names it, also one that parked without running a task (it
 * showed tid 0: the tid was recorded only when a task ran). Run first, before other tests give
 * every worker a task. The snapshot is taken from inside a task, so at least its own worker is
 * running; the others are whatever they are at that moment (no waiting for them to settle). */
struct tid_look {
    struct seen *s;
    cq_semaphore_t done;
};

static uint64_t parks_so_far(void)
{
    struct cq_runtime_counters c;
    memset(&c, 0, sizeof c);
    cq_runtime_get_counters(&c, sizeof c);
    return c.parks;
}

static void look_from_task(void *ctx)
{
    struct tid_look *l = ctx;
    /* Give the other workers the chance to park first (the state the defect showed in): until
     * one more park is counted, or 50 ms have passed. Not a condition of the test: it only
     * makes the parked case likelier. (Bounded in yields, 100,000 of them, it took over the
     * test's 60 s patience beside eight CPU hogs: each yield gave a hog its slice.) */
    uint64_t parks = parks_so_far();
    uint64_t until = cq_test_now_ns() + 50 * 1000000ull;
    while (parks_so_far() == parks && cq_test_now_ns() < until) {
        sched_yield();
    }
    l->s = look();
    cq_semaphore_signal(l->done);
}

/* The dump, as a string in buf. */
static void dump_text(char *buf, size_t size)
{
    FILE *f = tmpfile();
    REQUIRE(f != NULL);
    cq_introspect_dump(f);
    rewind(f);
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static void test_worker_tids(void)
{
    cq_semaphore_t warm = cq_semaphore_create(0);
    cq_async_f(cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), warm, signal_sema);
    CHECK(cq_semaphore_wait(warm, cq_test_deadline()) == 0); /* a second worker was woken */
    cq_release(warm);
    struct tid_look l = {NULL, cq_semaphore_create(0)};
    cq_async_f(cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), &l, look_from_task);
    REQUIRE(cq_semaphore_wait(l.done, cq_test_deadline()) == 0);
    struct seen *s = l.s;
    int with_thread = 0;
    for (int k = 0; k < s->nworkers; k++) {
        /* Running or parked: its thread has started (a searching one's may still be
         * starting, its tid not known yet). */
        cq_introspect_worker_state_t st = s->w[k].state;
        if (st == CQ_INTROSPECT_WORKER_PARKED || st == CQ_INTROSPECT_WORKER_RUNNING) {
            with_thread++;
            char path[64];
            snprintf(path, sizeof path, "/proc/self/task/%d", (int)s->w[k].tid);
            CHECK(s->w[k].tid > 0);
            CHECK(access(path, F_OK) == 0); /* a thread of this process */
        }
    }
    CHECK(with_thread >= 1); /* at least the worker running the look */
    free(s);
    cq_release(l.done);
}

static void test_queues_workers_sources(void)
{
    cq_queue_t serial = cq_queue_create("intro.serial", CQ_QUEUE_SERIAL);
    cq_queue_t conc = cq_queue_create("intro.concurrent", CQ_QUEUE_CONCURRENT);
    cq_queue_t inactive = cq_queue_create_inactive("intro.inactive", CQ_QUEUE_SERIAL);
    cq_queue_t suspended = cq_queue_create("intro.suspended", CQ_QUEUE_SERIAL);
    cq_queue_t child = cq_queue_create("intro.child", CQ_QUEUE_SERIAL);
    cq_set_target_queue(child, serial);
    cq_suspend(suspended);
    cq_suspend(suspended);
    cq_async_f(suspended, NULL, noop); /* both wait in the list */
    cq_async_f(suspended, NULL, noop);

    struct holder h = {.started = cq_semaphore_create(0), .release = false};
    cq_async_f(serial, &h, hold);
    for (int k = 0; k < 3; k++) {
        cq_async_f(serial, NULL, noop); /* wait behind hold */
    }
    WAIT_SEMA(h.started);

    cq_source_t data = cq_source_create(cq_source_type(CQ_SOURCE_KIND_DATA_ADD), 0, 0, conc);
    cq_source_t timer = cq_source_create(cq_source_type(CQ_SOURCE_KIND_TIMER), 0, 0, child);
    REQUIRE(data && timer);
    cq_activate(data);

    struct seen *s = look();
    CHECK_EQ(s->pool_calls, 1);
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    CHECK_EQ(s->pool.workers, info.workers);
    CHECK(s->pool.threads >= 1);

    /* the global queues and the main queue come first */
    CHECK(s->nqueues >= 10);
    CHECK_EQ(strcmp(s->qlabel[0], "cq.global.high"), 0);
    CHECK_EQ(s->q[1].kind, CQ_INTROSPECT_QUEUE_GLOBAL);
    CHECK_EQ(strcmp(s->qlabel[4], "cq.main-thread"), 0);
    CHECK_EQ(s->q[4].kind, CQ_INTROSPECT_QUEUE_MAIN);
    CHECK_EQ(s->q[4].width, 1);

    int i = find_queue(s, "intro.serial");
    REQUIRE(i >= 0);
    CHECK_EQ(s->q[i].kind, CQ_INTROSPECT_QUEUE_SERIAL);
    CHECK_EQ(s->q[i].width, 1);
    CHECK_EQ(s->q[i].suspend_count, 0);
    CHECK_EQ(s->q[i].running, 1);
    CHECK_EQ(s->q[i].queued, 3); /* an exact count */
    CHECK_EQ(strcmp(s->qtarget[i], "cq.global.default"), 0);
    CHECK(s->q[i].queue == (const void *)serial);

    i = find_queue(s, "intro.concurrent");
    REQUIRE(i >= 0);
    CHECK_EQ(s->q[i].kind, CQ_INTROSPECT_QUEUE_CONCURRENT);
    CHECK_EQ(s->q[i].width, 0);
    CHECK(s->q[i].running <= 1); /* the data source's registration may be running on it */

    i = find_queue(s, "intro.inactive");
    REQUIRE(i >= 0);
    CHECK(s->q[i].inactive);
    CHECK_EQ(s->q[i].suspend_count, 1);

    i = find_queue(s, "intro.suspended");
    REQUIRE(i >= 0);
    CHECK_EQ(s->q[i].suspend_count, 2);
    CHECK(!s->q[i].inactive);
    CHECK_EQ(s->q[i].queued, 2);
    CHECK_EQ(s->q[i].running, 0);

    i = find_queue(s, "intro.child");
    REQUIRE(i >= 0);
    CHECK_EQ(strcmp(s->qtarget[i], "intro.serial"), 0);

    /* workers: every proc, one of them running hold() */
    CHECK(s->nworkers >= (int)info.workers);
    int running = 0;
    for (int k = 0; k < s->nworkers; k++) {
        CHECK(s->w[k].state >= CQ_INTROSPECT_WORKER_RUNNING &&
              s->w[k].state <= CQ_INTROSPECT_WORKER_RETIRED);
        CHECK(s->w[k].band <= 2);
        running += s->w[k].state == CQ_INTROSPECT_WORKER_RUNNING;
    }
    CHECK(running >= 1);

    int d = find_source(s, data), t = find_source(s, timer);
    REQUIRE(d >= 0 && t >= 0);
    CHECK_EQ(strcmp(s->stype[d], "data-add"), 0);
    CHECK_EQ(s->s[d].kind, CQ_SOURCE_KIND_DATA_ADD);
    CHECK(s->s[d].activated);
    CHECK(!s->s[d].cancelled);
    CHECK_EQ(strcmp(s->starget[d], "intro.concurrent"), 0);
    CHECK_EQ(strcmp(s->stype[t], "timer"), 0);
    CHECK(!s->s[t].activated);
    CHECK_EQ(s->s[t].suspend_count, 1);
    CHECK_EQ(strcmp(s->starget[t], "intro.child"), 0);
    free(s);

    cq_source_cancel(data);
    s = look();
    d = find_source(s, data);
    REQUIRE(d >= 0);
    CHECK(s->s[d].cancelled);
    free(s);

    /* the dump names them */
    char buf[65536];
    dump_text(buf, sizeof buf);
    CHECK(strstr(buf, "intro.serial") != NULL);
    CHECK(strstr(buf, "suspended 2") != NULL);
    CHECK(strstr(buf, "data-add") != NULL);
    CHECK(strstr(buf, "workers:") != NULL);

    atomic_store_explicit(&h.release, true, memory_order_release);
    cq_sync_f(serial, NULL, noop); /* hold has returned: h may go */
    cq_release(h.started);
    cq_source_cancel(timer);
    cq_activate(timer);
    cq_release(data);
    cq_release(timer);
    cq_activate(inactive);
    cq_resume(suspended);
    cq_resume(suspended);
    cq_release(inactive);
    cq_release(suspended);
    cq_release(child);
    cq_release(conc);
    cq_release(serial);
}

/* Labels are the application's: the dump escapes their control characters, so a label cannot
 * forge lines of it (it printed a fake "queues:" line and a fake queue). */
static void test_dump_escapes_labels(void)
{
    cq_queue_t q = cq_queue_create("intro.evil\nqueues:\n  forged.queue serial", CQ_QUEUE_SERIAL);
    FILE *f = tmpfile();
    REQUIRE(f != NULL);
    cq_introspect_dump(f);
    rewind(f);
    char line[512];
    int queue_headers = 0, forged = 0, escaped = 0;
    while (fgets(line, sizeof line, f)) {
        queue_headers += strcmp(line, "queues:\n") == 0;
        forged += strncmp(line, "  forged.queue", 14) == 0;
        escaped += strstr(line, "intro.evil\\nqueues:\\n  forged.queue") != NULL;
    }
    fclose(f);
    CHECK_EQ(queue_headers, 1);
    CHECK_EQ(forged, 0);
    CHECK_EQ(escaped, 1);
    cq_release(q);
}

/* A queue made without a label is named by its address in the dump, and a queue or source on
 * it says "(no label)": both were blank ("on ,"), and nothing told which queue it was. */
static void test_dump_names_unlabelled_queues(void)
{
    cq_queue_t anon = cq_queue_create(NULL, CQ_QUEUE_SERIAL);
    cq_queue_t on = cq_queue_create("intro.on-unlabelled", CQ_QUEUE_SERIAL);
    cq_set_target_queue(on, anon);
    cq_source_t s = cq_source_create(CQ_SOURCE_TYPE_DATA_ADD, 0, 0, anon);
    REQUIRE(s != NULL);
    char buf[65536];
    dump_text(buf, sizeof buf);
    char named[64];
    snprintf(named, sizeof named, "(no label) %p", (void *)anon);
    CHECK(strstr(buf, named) != NULL);
    CHECK(strstr(buf, "intro.on-unlabelled") != NULL &&
          strstr(strstr(buf, "intro.on-unlabelled"), "-> (no label)") != NULL);
    CHECK(strstr(buf, "data-add handle 0      mask 0 on (no label)") != NULL);
    CHECK(strstr(buf, " on ,") == NULL);
    cq_source_cancel(s);
    cq_activate(s);
    cq_release(s);
    cq_release(on);
    cq_release(anon);
}

/* A released queue leaves the list once it is freed (after its last task). */
static void test_freed_queue_leaves(void)
{
    cq_queue_t q = cq_queue_create("intro.short-lived", CQ_QUEUE_SERIAL);
    struct seen *s = look();
    CHECK(find_queue(s, "intro.short-lived") >= 0);
    free(s);
    cq_release(q); /* idle, no finalizer: freed inside this call */
    s = look();
    CHECK(find_queue(s, "intro.short-lived") < 0);
    free(s);
}

int main(void)
{
    RUN(test_worker_tids);
    RUN(test_queues_workers_sources);
    RUN(test_dump_escapes_labels);
    RUN(test_dump_names_unlabelled_queues);
    RUN(test_freed_queue_leaves);
    TEST_MAIN_END();
}
