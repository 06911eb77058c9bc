/*
 * Groups. The state word:
 *   bit 0       WAITERS  a thread sleeps in cq_group_wait (the emptying leave wakes it)
 *   bit 1       NOTIFY   notify functions are registered (the emptying leave schedules them)
 *   bits 2-31   minus the count (enters minus leaves), modulo 2^30: 0 is empty, all ones is 1
 *   bits 32-63  generation: the leave that empties the group adds one to bits 2-31, whose carry
 *               bumps the generation in the same atomic add. So the generation of a waiter or
 *               a notify names exactly the emptying it waits for, even when the group is
 *               entered again before anyone reacted to that emptying. Waiters sleep on it (a
 *               futex on the upper half of the word).
 * An enter subtracts one; from empty that would borrow from the generation, so an enter is a
 * CAS that puts the borrow back. A count above zero holds one internal reference (taken by the
 * 0->1 enter, dropped by the 1->0 leave), so tasks keep their group alive without touching the
 * reference count. Each registered notify records the generation whose emptying runs it.
 */
#ifndef CQ_GROUP_INTERNAL_H
#define CQ_GROUP_INTERNAL_H

#include <cqueuecore/group.h>
#include <pthread.h>

#include "object_internal.h"

#define CQ__GS_WAITERS 0x1ull
#define CQ__GS_NOTIFY 0x2ull
#define CQ__GS_COUNT_ONE 0x4ull
#define CQ__GS_COUNT_MASK 0xfffffffcull
#define CQ__GS_GEN_ONE (1ull << 32)
#define CQ__GS_COUNT(s) ((uint32_t)(((0u - ((uint32_t)(s) & (uint32_t)CQ__GS_COUNT_MASK)) & \
                                     (uint32_t)CQ__GS_COUNT_MASK) >> 2))
#define CQ__GS_COUNT_MAX (CQ__GS_COUNT_MASK >> 2)
#define CQ__GS_GEN(s) ((uint32_t)((s) >> 32))

struct cq__group_notify;

struct cq_group_s {
    struct cq__object obj;
    _Atomic uint64_t state CQ_CACHE_ALIGNED;
    pthread_mutex_t notify_lock;            /* guards the list and NOTIFY transitions; the list
                                             * is in generation order */
    struct cq__group_notify *notify_head;
    struct cq__group_notify *notify_tail;
};

/* A group task finished: leave its group. */
CQ_INTERNAL void cq__group_task_done(struct cq_group_s *g);

#endif /* CQ_GROUP_INTERNAL_H */
