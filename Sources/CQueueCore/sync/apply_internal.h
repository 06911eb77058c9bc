/*
 * cq_apply_f helpers: CQ__ITEM_APPLY items (in struct cq__task memory) that take chunks of a
 * shared iteration range.
 */
#ifndef CQ_APPLY_INTERNAL_H
#define CQ_APPLY_INTERNAL_H

#include "scheduler/item_internal.h"

CQ_INTERNAL void cq__apply_invoke(struct cq__item *it);

#endif /* CQ_APPLY_INTERNAL_H */
