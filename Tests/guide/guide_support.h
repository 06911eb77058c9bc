/* Shared by the guide's C programs (Tests/guide/guide_*.c): a check that fails the program with
 * the line, and a generous deadline for waits that only a lost event could exceed. */
#ifndef GUIDE_SUPPORT_H
#define GUIDE_SUPPORT_H

#include <cqueuecore.h>
#include <stdio.h>
#include <stdlib.h>

#define GUIDE_CHECK(cond)                                                                    \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);         \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

/* 60 s from now: waits in the checks end on events; this only bounds a hang. */
static inline cq_time_t guide_patience(void)
{
    return cq_time(CQ_TIME_NOW, 60 * (int64_t)CQ_NSEC_PER_SEC);
}

static void guide_nothing(void *context) {}

/* cq_apply_f on a concurrent queue of the program's own, then a barrier on it. cq_apply_f
 * returns when every iteration has run, but helper tasks it queued for idle workers may still
 * be waiting to find nothing left to do; the barrier waits for them, so that a program that
 * exits right after does not leave them (and the state they share) behind for LeakSanitizer. */
static inline void guide_apply(size_t iterations, void *context, cq_apply_function_t function)
{
    cq_queue_t workers = cq_queue_create("guide-workers", CQ_QUEUE_CONCURRENT);
    cq_apply_f(iterations, workers, context, function);
    cq_barrier_sync_f(workers, NULL, guide_nothing);
    cq_release(workers);
}

#endif
