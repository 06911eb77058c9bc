/*
 * Groups. The state word:
 *   bit 0       WAITERS  a thread sleeps in cq_group_wait (the emptying leave wakes it)
 *   bit 1       NOTIFY   notify functions are registered (the emptying leave schedules them)
 *   bits 2-31   count    enters minus leaves
 *   bits 32-63  generation, bumped each time a waking leave empties the group; waiters sleep
 *               on it (a futex on the upper half of the word)
 * A count above zero holds one internal reference (taken by the 0->1 enter, dropped by the
 * 1->0 leave), so tasks keep their group alive without touching the reference count.
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
#define CQ__GS_COUNT(s) ((uint32_t)(((s)&CQ__GS_COUNT_MASK) >> 2))
#define CQ__GS_GEN(s) ((uint32_t)((s) >> 32))

struct cq__group_notify;

struct cq_group_s {
    struct cq__object obj;
    _Atomic uint64_t state CQ_CACHE_ALIGNED;
    pthread_mutex_t notify_lock;            /* guards the list and NOTIFY transitions */
    struct cq__group_notify *notify_head;
    struct cq__group_notify *notify_tail;
};

/* A group task finished: leave its group. */
CQ_INTERNAL void cq__group_task_done(struct cq_group_s *g);

#endif /* CQ_GROUP_INTERNAL_H */
