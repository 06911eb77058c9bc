/* The guide's "operations with dependencies", in C: groups and notify (docs/guide.md). */
#include "guide_support.h"
#include <string.h>

/* guide:begin operations */
struct build {
    cq_queue_t log_queue; /* serializes the log */
    char log[128];
    cq_semaphore_t finished;
};

struct step {
    struct build *build;
    const char *name;
};

static void append_name(void *context)
{
    struct step *step = context;
    strcat(step->build->log, step->name);
    strcat(step->build->log, " ");
}

static void run_step(void *context) /* the work of one "operation" */
{
    struct step *step = context;
    cq_sync_f(step->build->log_queue, step, append_name);
}

static void publish(void *context) /* runs once `compile` and `test` are both done */
{
    struct step *step = context;
    run_step(step);
    cq_semaphore_signal(step->build->finished);
}

static void fetch_then_fan_out(void *context)
{
    struct step *steps = context; /* fetch, compile, test, publish */
    run_step(&steps[0]);
    cq_queue_t pool = cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0);
    cq_group_t both = cq_group_create();
    cq_group_async_f(both, pool, &steps[1], run_step); /* compile and test depend on fetch */
    cq_group_async_f(both, pool, &steps[2], run_step);
    cq_group_notify_f(both, pool, &steps[3], publish); /* publish depends on both */
    cq_release(both);
}
/* guide:end operations */

int main(void)
{
    struct build build = {cq_queue_create("log", CQ_QUEUE_SERIAL), "", cq_semaphore_create(0)};
    struct step steps[4] = {
        {&build, "fetch"}, {&build, "compile"}, {&build, "test"}, {&build, "publish"}};
    cq_async_f(cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0), steps, fetch_then_fan_out);
    GUIDE_CHECK(cq_semaphore_wait(build.finished, guide_patience()) == 0);
    GUIDE_CHECK(strcmp(build.log, "fetch compile test publish ") == 0 ||
                strcmp(build.log, "fetch test compile publish ") == 0);
    cq_release(build.log_queue);
    cq_release(build.finished);
    return 0;
}
