/*
 * The header every CQueueCore object starts with, and its two reference counts.
 *
 *   xref  external references, the ones cq_retain/cq_release count. Together they hold one
 *         internal reference. When xref reaches zero the class's xref_dispose checks for misuse
 *         (a suspended queue, an unbalanced group) and the internal reference is dropped.
 *   ref   internal references: held by the runtime while the object has queued work (a queue
 *         on its target, a task's group, a queue's target). At zero, dispose runs: the
 *         finalizer is scheduled and the memory freed.
 * Global queues and the main queue are immortal: xref holds CQ__IMMORTAL and is never changed.
 */
#ifndef CQ_OBJECT_INTERNAL_H
#define CQ_OBJECT_INTERNAL_H

#include <cqueuecore/object.h>

#include "platform/atomic_internal.h"

#define CQ__IMMORTAL INT32_MAX

enum cq__kind {
    CQ__KIND_QUEUE = 1,
    CQ__KIND_SEMAPHORE,
    CQ__KIND_GROUP,
    CQ__KIND_SOURCE,
    CQ__KIND_WORK_ITEM,
    CQ__KIND_DATA,
    CQ__KIND_IO,
};

struct cq__object;

struct cq_queue_s;

struct cq__class {
    enum cq__kind kind;
    const char *name;
    /* Last external release; may abort on misuse. NULL: nothing to check. */
    void (*xref_dispose)(struct cq__object *object);
    /* Last internal reference: schedule the finalizer and free. */
    void (*dispose)(struct cq__object *object);
    /* cq_suspend / cq_resume, NULL if the class cannot be suspended. */
    void (*suspend)(struct cq__object *object);
    void (*resume)(struct cq__object *object);
    /* The suspension count (an inactive object's own suspension included); with suspend. */
    uint32_t (*suspended)(const struct cq__object *object);
    /* cq_set_target_queue on an object that is not a queue (sources): `target` is checked, or
     * the default root queue. NULL for queues and for classes that have no target. */
    void (*set_target)(struct cq__object *object, struct cq_queue_s *target);
    /* The object's label for messages (cq__describe), NULL if the class has none. */
    const char *(*label)(const struct cq__object *object);
};

struct cq__object {
    const struct cq__class *cls; /* written once at creation */
    _Atomic int32_t xref;        /* see above */
    _Atomic int32_t ref;         /* see above */
    void *context;               /* owner: the application (cq_set_context) */
    cq_function_t finalizer;     /* owner: the application (cq_set_finalizer_f) */
    _Atomic uint32_t inactive;   /* 1 until activated (new sources, inactive queues) */
};

/*
 * The classes the runtime accepts: each class's file registers it at load time
 * (CQ__CLASS_REGISTER), one class per kind, so this layer names none of them.
 * cq__class_is_known compares a pointer with the registered addresses and never dereferences
 * it: a stray pointer is reported, not followed.
 */
#define CQ__CLASS_MAX 16 /* kinds */
CQ_INTERNAL void cq__class_register(const struct cq__class *cls);
CQ_INTERNAL bool cq__class_is_known(const struct cq__class *cls);

#define CQ__CLASS_REGISTER(cls)                                                                    \
    CQ_EARLY_INIT static void cq__class_register_##cls(void)                                       \
    {                                                                                              \
        cq__class_register(&cls);                                                                  \
    }

CQ_INTERNAL void cq__object_init(struct cq__object *object, const struct cq__class *cls);
CQ_INTERNAL void cq__object_init_immortal(struct cq__object *object, const struct cq__class *cls);

/* Checks that `object` is a live CQueueCore object of `kind` (0: any); aborts naming `call`. */
CQ_INTERNAL struct cq__object *cq__object_check(const void *object, enum cq__kind kind,
                                                const char *call);

/* Whether `p`, a pointer the application handed to a call, is an object of class `cls`. The
 * header is read through its own type: a pointer to another kind of object, read as a queue or
 * a group (structs aligned to 128 bytes), was a misaligned member access (UBSan stopped the
 * misuse test's wrong-kind case wherever the other object happened not to be so aligned).
 * Every object begins with its header. */
CQ_INLINE bool cq__object_is(const void *p, const struct cq__class *cls)
{
    return p != NULL && ((const struct cq__object *)p)->cls == cls;
}

CQ_INLINE bool cq__object_is_immortal(const struct cq__object *o)
{
    return cq__load(&o->xref, relaxed) == CQ__IMMORTAL;
}

/* Internal references (no-ops on immortal objects). */
CQ_INLINE void cq__ref_retain(struct cq__object *o)
{
    if (!cq__object_is_immortal(o)) {
        cq__add(&o->ref, 1, relaxed);
    }
}

CQ_INTERNAL void cq__ref_release_slow(struct cq__object *o);

CQ_INLINE void cq__ref_release(struct cq__object *o)
{
    if (!cq__object_is_immortal(o)) {
        /* acq_rel: our writes to the object happen-before dispose on whichever thread drops
         * the last reference (an RMW rather than a fence, so ThreadSanitizer sees it too); pairs
         * with the other reference drops' acq_rel sub (the last one acquires them all) */
        if (cq__sub(&o->ref, 1, acq_rel) == 1) {
            cq__ref_release_slow(o);
        }
    }
}

#endif /* CQ_OBJECT_INTERNAL_H */
