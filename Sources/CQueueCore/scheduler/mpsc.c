/*
 * The slow path of the multi-producer list (see item_internal.h).
 */
#include <sched.h>

#include "scheduler/item_internal.h"

struct cq__item *cq__mpsc_wait_link(struct cq__item *_Atomic *link)
{
    /* A producer has exchanged the tail and is about to store this link: a few instructions,
     * unless it was preempted in between, so spin briefly and then yield the CPU to it. */
    for (uint32_t i = 0;; i++) {
        /* acquire: pairs with the producer's release store of the link */
        struct cq__item *it = cq__load(link, acquire);
        if (it) {
            return it;
        }
        if (i < 1024) {
            cq__cpu_relax();
        } else {
            sched_yield();
        }
    }
}
