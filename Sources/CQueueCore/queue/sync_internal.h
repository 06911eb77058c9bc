/*
 * Sync waiters: a thread blocked in cq_sync_f on a busy queue, as an item in that queue's list.
 *   CQ__ITEM_SYNC_WAITER  the drainer hands the queue to the waiter (LOCK and the drain's
 *                         reference, drain_ref = true) or, for a non-barrier waiter on a
 *                         concurrent queue, one unit of width; then signals the event.
 *   CQ__ITEM_EXEC_WAITER  for queues bound to the main thread: the drainer runs the function
 *                         itself, then signals the event.
 * The waiter lives on the waiting thread's stack; after the signal the drainer must not touch
 * it again.
 */
#ifndef CQ_SYNC_INTERNAL_H
#define CQ_SYNC_INTERNAL_H

#include "platform/parker_internal.h"
#include "scheduler/item_internal.h"
#include "scheduler/thread_internal.h"

struct cq__sync_waiter {
    struct cq__item item;
    struct cq__event event;
    bool drain_ref;         /* written by the drainer before the signal */
    bool can_drain;         /* written before the push: a serial queue's items ahead of the
                               waiter may run on its thread (cq__queue_pass_to_waiter); false
                               deep in nested help */
    bool drain_first;       /* written by the holder before the signal: the waiter was handed the
                               queue to run the items ahead of it first */
    cq_function_t function; /* CQ__ITEM_EXEC_WAITER only */
    void *context;
    /* EXEC: frames of the queues the waiting thread holds on the main thread's behalf, pushed
     * by the main thread around the call (top, ..., bottom; NULL if none). */
    struct cq__frame *frames_top;
    struct cq__frame *frames_bottom;
};

#endif /* CQ_SYNC_INTERNAL_H */
