/*
 * cq-profile-demo: a small service-shaped load for the recipes in docs/profiling.md. Three
 * serial queues with different amounts of work per task (com.example.db: heavy,
 * com.example.render: medium, com.example.log: light) fed by a timer source every millisecond,
 * plus bursts on the default global queue; runs for the seconds given (default 3), then prints
 * the runtime's counters. With `hang` as the second argument, com.example.db's task blocks
 * forever instead (a stuck service, for the CQ_DUMP_SIGNAL recipe).
 *
 * Linked against the shared library, so `perf probe -x libcqueuecore.so` finds the probes.
 */
#include <cqueuecore.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;
static int hang;

static void spin(unsigned n)
{
    uint64_t x = sink;
    for (unsigned i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    }
    sink = x;
}

static void db_task(void *ctx)
{
    (void)ctx;
    if (hang) {
        cq_semaphore_t never = cq_semaphore_create(0);
        cq_semaphore_wait(never, CQ_TIME_FOREVER); /* a lost reply: the queue is stuck */
    }
    spin(200000);
}

static void render_task(void *ctx)
{
    (void)ctx;
    spin(60000);
}

static void log_task(void *ctx)
{
    (void)ctx;
    spin(5000);
}

static void burst_task(void *ctx)
{
    (void)ctx;
    spin(2000);
}

static cq_queue_t db, render, logq;

static void tick(void *ctx)
{
    (void)ctx;
    cq_async_f(db, NULL, db_task);
    cq_async_f(render, NULL, render_task);
    for (int i = 0; i < 4; i++) {
        cq_async_f(logq, NULL, log_task);
    }
    for (int i = 0; i < 8; i++) {
        cq_async_f(cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), NULL, burst_task);
    }
}

int main(int argc, char **argv)
{
    int seconds = argc > 1 ? atoi(argv[1]) : 3;
    hang = argc > 2 && strcmp(argv[2], "hang") == 0;
    db = cq_queue_create("com.example.db", CQ_QUEUE_SERIAL);
    render = cq_queue_create("com.example.render", CQ_QUEUE_SERIAL);
    logq = cq_queue_create("com.example.log", CQ_QUEUE_SERIAL);
    cq_queue_t timers = cq_queue_create("com.example.ticker", CQ_QUEUE_SERIAL);
    cq_source_t t = cq_source_create(cq_source_type(CQ_SOURCE_KIND_TIMER), 0, 0, timers);
    cq_source_set_event_handler_f(t, tick);
    cq_source_set_timer(t, cq_time(CQ_TIME_NOW, 0), 1000000, 100000);
    cq_activate(t);
    fprintf(stderr, "cq-profile-demo: pid %d, %d s%s\n", (int)getpid(), seconds,
            hang ? ", com.example.db hangs" : "");
    struct timespec left = {seconds, 0}; /* a signal (CQ_DUMP_SIGNAL) cuts a sleep short */
    while (nanosleep(&left, &left) != 0) {
    }
    cq_source_cancel(t);
    struct cq_runtime_counters c;
    cq_runtime_get_counters(&c, sizeof c);
    fprintf(stderr,
            "tasks %" PRIu64 ", steals %" PRIu64 ", parks %" PRIu64 ", timer fires %" PRIu64
            ", source events %" PRIu64 "\n",
            c.tasks_run, c.steals, c.parks, c.timer_fires, c.source_events);
    return 0;
}
