/*
 * Work items with their function's state inside the item (for SwiftQueues' SQWorkItem, which
 * keeps its closure there instead of in a separate box).
 */
#ifndef CQ_WORK_ITEM_INTERNAL_H
#define CQ_WORK_ITEM_INTERNAL_H

#include <cqueuecore/work_item.h>
#include <stdbool.h>

#include "platform/atomic_internal.h"

#define CQ__WORK_ITEM_INLINE_BYTES 16

/*
 * cq__work_item_create_inline
 *   As cq_work_item_create_f, with CQ__WORK_ITEM_INLINE_BYTES bytes (8-byte aligned,
 *   uninitialised) inside the item, whose address is stored in *bytes: every run calls
 *   call(bytes), and destroy(bytes) is called once, synchronously, on the thread that drops the
 *   item's last reference, before the memory is freed. The caller initialises the bytes before
 *   it shares the item. NULL with errno EINVAL for a NULL call or destroy or an unknown flag,
 *   ENOMEM without memory. Thread-safe; never blocks.
 */
CQ_INTERNAL cq_work_item_t cq__work_item_create_inline(unsigned long flags, cq_function_t call,
                                                       cq_function_t destroy, void **bytes);

/*
 * Late submissions of a work item, made by the layers above when it comes due (after.c's
 * timers, group.c's notifications), so that a BARRIER item is queued as a barrier at its
 * deadline or when its group empties, not first as a task on a global queue, where under load
 * it waited behind that queue's work while later work overtook it.
 *   cq__work_item_is_barrier     checks `item` for `call` (stops the process on a bad one) and
 *                                says whether it is a BARRIER item.
 *   cq__work_item_submission     retains it for one submission: queue fn(ctx) (as a barrier if
 *                                it is one); running it performs the item and releases it.
 */
CQ_INTERNAL bool cq__work_item_is_barrier(cq_work_item_t item, const char *call);
/* The group `item` leaves when it finishes (made on first use), checked for `call`. */
CQ_INTERNAL cq_group_t cq__work_item_completion_group(cq_work_item_t item, const char *call);
CQ_INTERNAL void cq__work_item_submission(cq_work_item_t item, cq_function_t *fn, void **ctx);

#endif /* CQ_WORK_ITEM_INTERNAL_H */
