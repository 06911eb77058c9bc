/*
 * Groups. The state word:
 *   bit 0       WAITERS  a thread sleeps in cq_group_wait (the emptying leave wakes it)
 *   bit 1       NOTIFY   notify functions are registered (the emptying leave schedules them)
 *   bit 2       ORPHAN   the last external reference went while the group was busy: the leave
 *                        that empties it drops the internal reference kept for that
 *   bits 3-31   minus the count (enters minus leaves), modulo 2^29: 0 is empty, all ones is 1
 *   bits 32-63  generation: the leave that empties the group adds one to bits 3-31, whose carry
 *               bumps the generation in the same atomic add. So the generation of a waiter or
 *               a notify names exactly the emptying it waits for, even when the group is
 *               entered again before anyone reacted to that emptying. Waiters sleep on it (a
 *               futex on the upper half of the word).
 * An enter subtracts one from bits 3-31 alone: a CAS that keeps the upper half, so the borrow
 * from empty never reaches the generation (a plain subtraction would undo the emptying's carry,
 * and an emptying followed by an enter would leave the word exactly as before: no generation
 * could survive that).
 *
 * Lifetime, with no reference count traffic on enter and leave: only a leave that sees WAITERS,
 * NOTIFY or ORPHAN in its add's result touches the group after that add.
 *   - ORPHAN: the last cq_release of a busy group takes an internal reference and sets ORPHAN
 *     with a CAS that needs the count non-zero; the emptying leave sees it and drops it. A group
 *     released while empty is freed at once, or when the wakers below are done.
 *   - Wakers: every emptying that sees WAITERS or NOTIFY calls group_wake, which must find the
 *     group alive even if its waiters have returned and released it meanwhile. So from the
 *     first flag set until no flag is set and every such call has finished, the group holds
 *     one internal reference (wake_ref). The calls are counted without touching the word: the
 *     flags go from none to some and back only under notify_lock, and an interval of the word
 *     with a flag set from generation a to generation b (both read by those CASes) saw exactly
 *     b - a emptyings, each of which called group_wake. wakes_due sums the closed intervals;
 *     each call adds one to wakes_done when it is finished with the group.
 */
#ifndef CQ_GROUP_INTERNAL_H
#define CQ_GROUP_INTERNAL_H

#include <cqueuecore/group.h>
#include <pthread.h>

#include "platform/object_internal.h"

#define CQ__GS_WAITERS 0x1ull
#define CQ__GS_NOTIFY 0x2ull
#define CQ__GS_FLAGS (CQ__GS_WAITERS | CQ__GS_NOTIFY)
#define CQ__GS_ORPHAN 0x4ull
#define CQ__GS_COUNT_SHIFT 3
#define CQ__GS_COUNT_ONE (1ull << CQ__GS_COUNT_SHIFT)
#define CQ__GS_COUNT_MASK 0xfffffff8ull
#define CQ__GS_GEN_ONE (1ull << 32)
/* The low half's count field: 0 when empty, COUNT_MASK for a count of 1, COUNT_ONE at the
 * maximum (the count is kept negated). */
#define CQ__GS_FIELD(s) ((uint32_t)(s) & (uint32_t)CQ__GS_COUNT_MASK)
#define CQ__GS_COUNT(s)                                                                            \
    ((uint32_t)(((0u - CQ__GS_FIELD(s)) & (uint32_t)CQ__GS_COUNT_MASK) >> CQ__GS_COUNT_SHIFT))
#define CQ__GS_COUNT_MAX (CQ__GS_COUNT_MASK >> CQ__GS_COUNT_SHIFT)
#define CQ__GS_GEN(s) ((uint32_t)((s) >> 32))

struct cq__group_notify;

struct cq_group_s {
    struct cq__object obj;
    _Atomic uint64_t state CQ_CACHE_ALIGNED;
    pthread_mutex_t notify_lock;          /* guards the list, the fields below and the flags'
                                           * none <-> some transitions */
    struct cq__group_notify *notify_head; /* in generation order */
    struct cq__group_notify *notify_tail;
    /* under notify_lock (see above) */
    uint32_t flag_gen;   /* the generation when the flags were last set */
    uint32_t wakes_due;  /* group_wake calls of closed flag intervals */
    uint32_t wakes_done; /* group_wake calls finished */
    bool wake_ref;       /* the group holds the wakers' reference */
    /* The generation (as the state word shows it after an emptying) whose notifies are all
     * queued: group_wake raises it before it wakes the waiters, and a waiter that sees the group
     * empty with notifies still in flight waits for it (group.c, settle) */
    _Atomic uint32_t notified_gen;
    struct cq_queue_s *_Atomic fin_target; /* cq_set_target_queue: the finalizer's queue */
};

/* A group task finished: leave its group. */
CQ_INTERNAL void cq__group_task_done(struct cq_group_s *g);

#endif /* CQ_GROUP_INTERNAL_H */
