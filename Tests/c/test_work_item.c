/*
 * Work items: perform, submit (async, sync, after, group), wait, notify, cancel — before the
 * first run, while queued, while running — barriers, repeated runs, lifetime and bad input.
 */
#include "cq_test.h"

static void noop(void *ctx)
{
    (void)ctx;
}

struct counter {
    atomic_int runs;
    atomic_int notified;
    cq_semaphore_t notify_sema;
};

static void count_run(void *ctx)
{
    atomic_fetch_add(&((struct counter *)ctx)->runs, 1);
}

static void count_notify(void *ctx)
{
    struct counter *c = ctx;
    atomic_fetch_add(&c->notified, 1);
    cq_semaphore_signal(c->notify_sema);
}

static cq_queue_t global(void)
{
    return cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0);
}

static void test_perform_wait_notify(void)
{
    struct counter c = {.notify_sema = cq_semaphore_create(0)};
    cq_work_item_t w = cq_work_item_create_f(0, &c, count_run);
    REQUIRE(w != NULL);
    CHECK(cq_work_item_wait(w, CQ_TIME_NOW) != 0); /* not finished: the wait times out */
    cq_work_item_notify_f(w, global(), &c, count_notify);
    cq_work_item_perform(w);
    CHECK_EQ(atomic_load(&c.runs), 1);
    CHECK_EQ(cq_work_item_wait(w, cq_test_deadline()), 0);
    WAIT_SEMA(c.notify_sema);
    cq_work_item_notify_f(w, global(), &c, count_notify); /* after finishing: at once */
    WAIT_SEMA(c.notify_sema);
    /* Performing again runs again; the item finished once. */
    cq_work_item_perform(w);
    CHECK_EQ(atomic_load(&c.runs), 2);
    CHECK_EQ(cq_work_item_wait(w, CQ_TIME_NOW), 0);
    cq_release(w);
    cq_release(c.notify_sema);
}

static void test_submissions(void)
{
    struct counter c = {.notify_sema = cq_semaphore_create(0)};
    cq_work_item_t w = cq_work_item_create_f(0, &c, count_run);
    cq_queue_t q = cq_queue_create("work-items", NULL);
    cq_async_work_item(q, w);
    cq_sync_work_item(q, w); /* after the async: both have run when it returns */
    CHECK_EQ(atomic_load(&c.runs), 2);
    cq_group_t g = cq_group_create();
    cq_group_async_work_item(g, global(), w);
    WAIT_GROUP(g);
    CHECK_EQ(atomic_load(&c.runs), 3);
    cq_work_item_notify_f(w, global(), &c, count_notify);
    cq_after_work_item(cq_time(CQ_TIME_NOW, 1000000), q, w);
    cq_release(w); /* the submission keeps it alive */
    WAIT_SEMA(c.notify_sema); /* the item finished long ago: the notification comes at once */
    uint64_t deadline = cq_test_now_ns() + (uint64_t)CQ_TEST_PATIENCE_NS;
    while (atomic_load(&c.runs) < 4) { /* the after_f submission: no event of its own */
        REQUIRE(cq_test_now_ns() < deadline);
        cq_sync_f(q, NULL, noop);
    }
    CHECK_EQ(atomic_load(&c.runs), 4);
    cq_release(g);
    cq_release(q);
    cq_release(c.notify_sema);
}

/* ---- cancel ---------------------------------------------------------------------------- */

struct gate {
    cq_semaphore_t entered, open;
};

static void hold(void *ctx)
{
    struct gate *g = ctx;
    cq_semaphore_signal(g->entered);
    WAIT_SEMA(g->open);
}

static void test_cancel_before_run(void)
{
    struct counter c = {.notify_sema = cq_semaphore_create(0)};
    cq_work_item_t w = cq_work_item_create_f(0, &c, count_run);
    cq_work_item_notify_f(w, global(), &c, count_notify);
    /* Queued behind a task that holds a serial queue, cancelled while it waits there. */
    struct gate gate = {cq_semaphore_create(0), cq_semaphore_create(0)};
    cq_queue_t q = cq_queue_create("cancel-queued", NULL);
    cq_async_f(q, &gate, hold);
    WAIT_SEMA(gate.entered);
    cq_async_work_item(q, w);
    CHECK_EQ(cq_work_item_testcancel(w), 0);
    cq_work_item_cancel(w);
    CHECK(cq_work_item_testcancel(w) != 0);
    /* It finished at the cancel: the notification runs and the wait returns while the
     * queue is still held. */
    WAIT_SEMA(c.notify_sema);
    CHECK_EQ(cq_work_item_wait(w, cq_test_deadline()), 0);
    cq_semaphore_signal(gate.open);
    cq_sync_f(q, NULL, noop); /* the queued submission has been reached: skipped */
    cq_work_item_perform(w);         /* and so is any later run */
    cq_sync_work_item(q, w);
    CHECK_EQ(atomic_load(&c.runs), 0);
    CHECK_EQ(atomic_load(&c.notified), 1);
    cq_work_item_cancel(w); /* idempotent */
    cq_release(w);
    cq_release(q);
    cq_release(gate.entered);
    cq_release(gate.open);
    cq_release(c.notify_sema);
}

struct running {
    struct gate gate;
    cq_work_item_t self;
    atomic_int saw_cancel;
    atomic_int finished_run;
};

static void run_until_opened(void *ctx)
{
    struct running *r = ctx;
    cq_semaphore_signal(r->gate.entered);
    WAIT_SEMA(r->gate.open);
    atomic_store(&r->saw_cancel, (int)cq_work_item_testcancel(r->self));
    atomic_store(&r->finished_run, 1);
}

static void test_cancel_while_running(void)
{
    struct running r = {.gate = {cq_semaphore_create(0), cq_semaphore_create(0)}};
    r.self = cq_work_item_create_f(0, &r, run_until_opened);
    cq_async_work_item(global(), r.self);
    WAIT_SEMA(r.gate.entered);
    cq_work_item_cancel(r.self);
    /* A run in progress is not interrupted: the item is not finished yet. */
    CHECK(cq_work_item_wait(r.self, cq_time(CQ_TIME_NOW, 1000000)) != 0);
    cq_semaphore_signal(r.gate.open);
    CHECK_EQ(cq_work_item_wait(r.self, cq_test_deadline()), 0);
    CHECK_EQ(atomic_load(&r.finished_run), 1); /* the wait returned after the run */
    CHECK_EQ(atomic_load(&r.saw_cancel), 1);
    cq_release(r.self);
    cq_release(r.gate.entered);
    cq_release(r.gate.open);
}

/* Cancel racing the first run: the item runs at most once, finishes exactly once. */
static void test_cancel_races_run(void)
{
    enum { ROUNDS = 2000 };
    int ran = 0;
    for (int i = 0; i < ROUNDS; i++) {
        struct counter c = {.notify_sema = cq_semaphore_create(0)};
        cq_work_item_t w = cq_work_item_create_f(0, &c, count_run);
        cq_work_item_notify_f(w, global(), &c, count_notify);
        cq_async_work_item(global(), w);
        cq_work_item_cancel(w);
        CHECK_EQ(cq_work_item_wait(w, cq_test_deadline()), 0);
        WAIT_SEMA(c.notify_sema);
        ran += atomic_load(&c.runs);
        CHECK(atomic_load(&c.runs) <= 1);
        cq_release(w);
        cq_release(c.notify_sema);
    }
    fprintf(stderr, "   %d of %d raced items ran before the cancel\n", ran, ROUNDS);
}

/* Waiting and notifying racing the item's finish (the completion group is made on first use):
 * every notification fires exactly once, every wait returns, and a notification requested after
 * the finish still fires. */
static void test_wait_notify_race_finish(void)
{
    enum { ROUNDS = 2000 };
    for (int i = 0; i < ROUNDS; i++) {
        struct counter c = {.notify_sema = cq_semaphore_create(0)};
        cq_work_item_t w = cq_work_item_create_f(0, &c, count_run);
        cq_async_work_item(global(), w);
        if (i % 2) {
            cq_work_item_notify_f(w, global(), &c, count_notify);
            CHECK_EQ(cq_work_item_wait(w, cq_test_deadline()), 0);
        } else {
            CHECK_EQ(cq_work_item_wait(w, cq_test_deadline()), 0);
            cq_work_item_notify_f(w, global(), &c, count_notify);
        }
        CHECK_EQ(atomic_load(&c.runs), 1); /* the wait returned after the run */
        WAIT_SEMA(c.notify_sema);
        cq_work_item_notify_f(w, global(), &c, count_notify); /* finished: fires at once */
        WAIT_SEMA(c.notify_sema);
        CHECK_EQ(atomic_load(&c.notified), 2);
        cq_release(w);
        cq_release(c.notify_sema);
    }
}

/* ---- the inline form (swift_support.h: SwiftQueues' SQWorkItem) ----------------------- */

struct inline_state {
    atomic_int runs;
    atomic_int destroyed;
    cq_semaphore_t destroyed_sema;
};

static void inline_call(void *bytes)
{
    struct inline_state *st = *(struct inline_state **)bytes;
    atomic_fetch_add(&st->runs, 1);
}

static void inline_destroy(void *bytes)
{
    struct inline_state *st = *(struct inline_state **)bytes;
    atomic_fetch_add(&st->destroyed, 1);
    cq_semaphore_signal(st->destroyed_sema);
}

static void test_inline_item(void)
{
    struct inline_state st = {.destroyed_sema = cq_semaphore_create(0)};
    void *bytes = NULL;
    cq_work_item_t w = cq_swift_work_item_create(0, inline_call, inline_destroy, &bytes);
    REQUIRE(w != NULL);
    REQUIRE(bytes != NULL);
    CHECK_EQ((uintptr_t)bytes % 8, 0);
    memcpy(bytes, &(struct inline_state *){&st}, sizeof(void *));
    cq_work_item_perform(w);
    cq_work_item_perform(w); /* the bytes are not consumed by a run */
    CHECK_EQ(atomic_load(&st.runs), 2);
    cq_release(w);
    CHECK_EQ(atomic_load(&st.destroyed), 1); /* synchronously, by the last release */

    /* Submitted and released at once: destroyed after the submission's run, exactly once. */
    cq_work_item_t s = cq_swift_work_item_create(0, inline_call, inline_destroy, &bytes);
    REQUIRE(s != NULL);
    memcpy(bytes, &(struct inline_state *){&st}, sizeof(void *));
    cq_async_work_item(global(), s);
    cq_release(s);
    WAIT_SEMA(st.destroyed_sema); /* the first item's signal */
    WAIT_SEMA(st.destroyed_sema);
    CHECK_EQ(atomic_load(&st.runs), 3);
    CHECK_EQ(atomic_load(&st.destroyed), 2);

    errno = 0;
    CHECK(cq_swift_work_item_create(0, inline_call, NULL, &bytes) == NULL);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK(cq_swift_work_item_create(0, NULL, inline_destroy, &bytes) == NULL);
    CHECK_EQ(errno, EINVAL);
    cq_release(st.destroyed_sema);
}

/* ---- barrier flag --------------------------------------------------------------------- */

struct barrier_check {
    atomic_int inside;
    atomic_int overlaps;
};

static void concurrent_task(void *ctx)
{
    struct barrier_check *b = ctx;
    atomic_fetch_add(&b->inside, 1);
    cq_test_burn_cpu_ns(200000);
    atomic_fetch_sub(&b->inside, 1);
}

static void barrier_task(void *ctx)
{
    struct barrier_check *b = ctx;
    if (atomic_load(&b->inside) != 0) {
        atomic_fetch_add(&b->overlaps, 1);
    }
}

static void test_barrier_flag(void)
{
    struct barrier_check b = {0};
    cq_queue_t q = cq_queue_create("concurrent", CQ_QUEUE_CONCURRENT);
    cq_work_item_t w = cq_work_item_create_f(CQ_WORK_ITEM_BARRIER, &b, barrier_task);
    cq_group_t g = cq_group_create();
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 8; i++) {
            cq_group_async_f(g, q, &b, concurrent_task);
        }
        cq_group_async_work_item(g, q, w);
    }
    WAIT_GROUP(g);
    CHECK_EQ(atomic_load(&b.overlaps), 0);
    cq_release(g);
    cq_release(w);
    cq_release(q);
}

/* ---- a barrier due later, while the global queues are busy ---------------------------- */

/* Reader/writer code on a concurrent queue: a reader runs, a writer (a BARRIER item) is due
 * 10 ms later, and the default global queue is saturated by CPU-bound tasks. Once the writer
 * is due it must be queued on the concurrent queue, so that a reader submitted after that
 * runs after it. Ours used to make it due as a task on the busy global queue, which submitted
 * it when a worker got to it: a reader submitted 30 ms after the writer's deadline ran beside
 * the first reader, before the writer (37 of 80 rounds; libdispatch, whose timer thread
 * submits the barrier, none). Here the writer must appear in the queue's list while the
 * spinners hold every worker; the old code showed nothing until they stopped. */

struct late_writer {
    cq_queue_t q;
    cq_semaphore_t reader_started, release_reader;
    atomic_bool stop_spinning;
    atomic_int order, reader_done, writer_start, writer_done, reader2_start;
};

static void late_reader(void *ctx)
{
    struct late_writer *lw = ctx;
    cq_semaphore_signal(lw->reader_started);
    CHECK_EQ(cq_semaphore_wait(lw->release_reader, cq_test_deadline()), 0);
    atomic_store(&lw->reader_done, atomic_fetch_add(&lw->order, 1) + 1);
}

static void late_writer_run(void *ctx)
{
    struct late_writer *lw = ctx;
    atomic_store(&lw->writer_start, atomic_fetch_add(&lw->order, 1) + 1);
    atomic_store(&lw->writer_done, atomic_fetch_add(&lw->order, 1) + 1);
}

static void late_reader2(void *ctx)
{
    struct late_writer *lw = ctx;
    atomic_store(&lw->reader2_start, atomic_fetch_add(&lw->order, 1) + 1);
}

static void spin_until_stopped(void *ctx)
{
    struct late_writer *lw = ctx;
    uint64_t deadline = cq_test_now_ns() + (uint64_t)CQ_TEST_PATIENCE_NS;
    while (!atomic_load(&lw->stop_spinning) && cq_test_now_ns() < deadline) {
    }
}

static cq_queue_t late_writer_queue;

static void signal_marker(void *ctx)
{
    cq_semaphore_signal(ctx);
}

static void count_late_writer_queued(void *ctx, const struct cq_introspect_queue *queue)
{
    if (queue->queue == (const void *)late_writer_queue) {
        *(uint32_t *)ctx = queue->queued;
    }
}

static uint32_t late_writer_queued(void)
{
    struct cq_introspect_visitor visitor = {.queue = count_late_writer_queued};
    uint32_t queued = 0;
    cq_introspect(&visitor, &queued);
    return queued;
}

/* A concurrent queue with a reader running on it (until released), in group *g. */
static void readers_writer_start(struct late_writer *lw, cq_group_t *g)
{
    *lw = (struct late_writer){.q = cq_queue_create("readers-writer", CQ_QUEUE_CONCURRENT),
                               .reader_started = cq_semaphore_create(0),
                               .release_reader = cq_semaphore_create(0)};
    late_writer_queue = lw->q;
    *g = cq_group_create();
    cq_group_async_f(*g, lw->q, lw, late_reader);
    WAIT_SEMA(lw->reader_started);
}

/* The writer is queued: a second reader comes, the first is released; the reader, then the
 * writer alone, then the second reader must have run. */
static void readers_writer_finish(struct late_writer *lw, cq_group_t g, cq_work_item_t writer)
{
    cq_group_async_f(g, lw->q, lw, late_reader2);
    atomic_store(&lw->stop_spinning, true);
    cq_semaphore_signal(lw->release_reader);
    WAIT_GROUP(g);
    CHECK(cq_work_item_wait(writer, cq_test_deadline()) == 0);
    CHECK(atomic_load(&lw->reader_done) < atomic_load(&lw->writer_start));
    CHECK(atomic_load(&lw->writer_done) < atomic_load(&lw->reader2_start));
    cq_release(writer);
    cq_release(g);
    cq_release(lw->release_reader);
    cq_release(lw->reader_started);
    cq_release(lw->q);
}

static void test_after_barrier_under_load(void)
{
    struct late_writer lw;
    cq_group_t g;
    readers_writer_start(&lw, &g);
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    for (uint32_t i = 0; i < info.workers + 1; i++) {
        cq_group_async_f(g, global(), &lw, spin_until_stopped);
    }
    cq_work_item_t writer = cq_work_item_create_f(CQ_WORK_ITEM_BARRIER, &lw, late_writer_run);
    cq_time_t due = cq_time(CQ_TIME_NOW, 10 * (int64_t)CQ_NSEC_PER_MSEC);
    cq_after_work_item(due, lw.q, writer);
    /* A marker due 1 ms later, onto the high queue (the express worker runs it while the
     * spinners hold the others): timers fire in deadline order, so once it has run, the writer
     * has come due and waits in the queue's list, behind the reader. */
    cq_semaphore_t marker = cq_semaphore_create(0);
    cq_after_f(cq_time(due, (int64_t)CQ_NSEC_PER_MSEC),
               cq_get_global_queue(CQ_QUEUE_PRIORITY_HIGH, 0), marker, signal_marker);
    WAIT_SEMA(marker);
    CHECK_EQ(late_writer_queued(), 1u);
    cq_release(marker);
    readers_writer_finish(&lw, g, writer);
}

/* A BARRIER work item as another item's notification is queued as a barrier by the thread
 * that finishes that item: the second reader, submitted after, runs after it. */
static void test_notify_barrier_item(void)
{
    struct late_writer lw;
    cq_group_t g;
    readers_writer_start(&lw, &g);
    cq_work_item_t item = cq_work_item_create_f(0, NULL, noop);
    cq_work_item_t writer = cq_work_item_create_f(CQ_WORK_ITEM_BARRIER, &lw, late_writer_run);
    cq_work_item_notify_work_item(item, lw.q, writer);
    CHECK_EQ(late_writer_queued(), 0u); /* not before `item` finishes */
    cq_work_item_perform(item);
    CHECK_EQ(late_writer_queued(), 1u); /* behind the reader, at once */
    cq_release(item);
    readers_writer_finish(&lw, g, writer);
}

/* ---- lifetime and bad input ----------------------------------------------------------- */

static void finalized(void *ctx)
{
    cq_semaphore_signal(ctx);
}

static void test_lifetime(void)
{
    cq_semaphore_t fin = cq_semaphore_create(0);
    struct counter c = {0};
    cq_work_item_t w = cq_work_item_create_f(0, &c, count_run);
    cq_set_context(w, fin);
    cq_set_finalizer_f(w, finalized);
    cq_async_work_item(global(), w);
    cq_release(w);
    WAIT_SEMA(fin); /* freed once the submission has run */
    CHECK_EQ(atomic_load(&c.runs), 1);
    cq_release(fin);
}

static void test_bad_input(void)
{
    errno = 0;
    CHECK(cq_work_item_create_f(0, NULL, NULL) == NULL);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK(cq_work_item_create_f(0x40, NULL, noop) == NULL);
    CHECK_EQ(errno, EINVAL);
    cq_work_item_t w = cq_work_item_create_f(CQ_WORK_ITEM_DETACHED | CQ_WORK_ITEM_ENFORCE_QOS_CLASS,
                                             NULL, noop);
    CHECK(w != NULL); /* QoS flags: accepted */
    cq_release(w);
}

int main(void)
{
    RUN(test_perform_wait_notify);
    RUN(test_submissions);
    RUN(test_cancel_before_run);
    RUN(test_cancel_while_running);
    RUN(test_cancel_races_run);
    RUN(test_wait_notify_race_finish);
    RUN(test_inline_item);
    RUN(test_barrier_flag);
    RUN(test_after_barrier_under_load);
    RUN(test_notify_barrier_item);
    RUN(test_lifetime);
    RUN(test_bad_input);
    TEST_MAIN_END();
}
