/*
 * The runtime used before main, from a program's constructor, as libdispatch allows: tasks on a
 * global and a serial queue, a group, cq_after_f, cq_apply_f and a sync. The runtime registers
 * its parts from constructors of its own; without a priority they ran after this file's (the
 * test links the static library, this object first), and the first task stopped the process
 * with "internal error: unknown item kind" (a user-side probe: every submission but a plain
 * sync, from constructors and C++ static initializers alike).
 */
#include "cq_test.h"

static atomic_int tasks_ran, serial_ran, after_ran, applied, synced;
static atomic_int constructor_done;

static void task(void *ctx)
{
    atomic_fetch_add((atomic_int *)ctx, 1);
}

static void iteration(void *ctx, size_t i)
{
    (void)ctx;
    (void)i;
    atomic_fetch_add(&applied, 1);
}

static void after(void *ctx)
{
    atomic_fetch_add(&after_ran, 1);
    cq_group_leave(ctx);
}

__attribute__((constructor)) static void uses_the_runtime(void)
{
    cq_group_t group = cq_group_create();
    cq_queue_t serial = cq_queue_create("constructor.serial", NULL);
    for (int i = 0; i < 100; i++) {
        cq_group_async_f(group, cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), &tasks_ran,
                         task);
        cq_group_async_f(group, serial, &serial_ran, task);
    }
    cq_group_enter(group);
    cq_after_f(cq_time(CQ_TIME_NOW, 1000000), cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0),
               group, after);
    cq_apply_f(64, cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), NULL, iteration);
    cq_sync_f(serial, &synced, task);
    if (cq_group_wait(group, cq_test_deadline()) == 0) {
        atomic_store(&constructor_done, 1);
    }
    cq_release(serial);
    cq_release(group);
}

static void test_runtime_used_before_main(void)
{
    CHECK_EQ(atomic_load(&constructor_done), 1);
    CHECK_EQ(atomic_load(&tasks_ran), 100);
    CHECK_EQ(atomic_load(&serial_ran), 100);
    CHECK_EQ(atomic_load(&after_ran), 1);
    CHECK_EQ(atomic_load(&applied), 64);
    CHECK_EQ(atomic_load(&synced), 1);
}

int main(void)
{
    RUN(test_runtime_used_before_main);
    TEST_MAIN_END();
}
