/*
 * cq_apply_f helpers: CQ__ITEM_APPLY items (in struct cq__task memory) that take chunks of a
 * shared iteration range.
 */
#ifndef CQ_APPLY_INTERNAL_H
#define CQ_APPLY_INTERNAL_H

#include "scheduler/item_internal.h"

CQ_INTERNAL void cq__apply_invoke(struct cq__item *it);

/* A wait (semaphore, group) is about to put the calling thread to sleep (wait_internal.h). If
 * the thread is inside an iteration of an apply, the rest of that iteration's chunk goes to a
 * new helper item, so that an iteration waiting for a later one of its own chunk (a semaphore
 * that one signals) does not wait for ever. One thread-local load when no apply runs. */
CQ_INTERNAL void cq__apply_before_sleep(void);

#endif /* CQ_APPLY_INTERNAL_H */
