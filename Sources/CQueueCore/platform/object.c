/*
 * Reference counting, context and finalizer shared by all objects; suspend/resume dispatch.
 */
#include "platform/object_internal.h"

#include <stdio.h>
#include <string.h>

#include "platform/diag_internal.h"

void cq__object_init(struct cq__object *o, const struct cq__class *cls)
{
    o->cls = cls;
    atomic_init(&o->xref, 1);
    atomic_init(&o->ref, 1); /* held collectively by the external references */
    o->context = NULL;
    o->finalizer = NULL;
    atomic_init(&o->inactive, 0);
}

void cq__object_init_immortal(struct cq__object *o, const struct cq__class *cls)
{
    cq__object_init(o, cls);
    atomic_init(&o->xref, CQ__IMMORTAL);
}

/* Indexed by kind; written by constructors before main, read-only afterwards. */
static const struct cq__class *classes[CQ__CLASS_MAX];

void cq__class_register(const struct cq__class *cls)
{
    if (cls->kind <= 0 || cls->kind >= CQ__CLASS_MAX || classes[cls->kind] != NULL) {
        cq__crash("internal error: class %s registered with kind %d twice or out of range",
                  cls->name, (int)cls->kind);
    }
    classes[cls->kind] = cls;
}

bool cq__class_is_known(const struct cq__class *cls)
{
    /* Compared by address, never dereferenced: a stray pointer is reported, not followed. */
    for (int k = 1; k < CQ__CLASS_MAX; k++) {
        if (classes[k] == cls) {
            return cls != NULL;
        }
    }
    return false;
}

struct cq__object *cq__object_check(const void *object, enum cq__kind kind, const char *call)
{
    const struct cq__object *o = object;
    if (cq__unlikely(o == NULL)) {
        cq__crash("%s: NULL object", call);
    }
    if (cq__unlikely(!cq__class_is_known(o->cls))) {
        cq__crash("%s: %p is not a CQueueCore object (or was already freed)", call, object);
    }
    if (cq__unlikely(kind != 0 && o->cls->kind != kind)) {
        const char *name = classes[kind] ? classes[kind]->name : "?";
        cq__crash("%s: %s is not %s %s", call, CQ_DESCRIBE(o),
                  strchr("AEIOUaeiou", name[0]) ? "an" : "a", name);
    }
    return (struct cq__object *)o;
}

void cq_retain(void *object)
{
    struct cq__object *o = cq__object_check(object, 0, "cq_retain");
    if (cq__object_is_immortal(o)) {
        return;
    }
    int32_t old = cq__add(&o->xref, 1, relaxed);
    if (cq__unlikely(old <= 0)) {
        cq__crash("cq_retain: %s was already released (resurrection of a dead object)",
                  CQ_DESCRIBE(o));
    }
}

void cq_release(void *object)
{
    struct cq__object *o = cq__object_check(object, 0, "cq_release");
    if (cq__object_is_immortal(o)) {
        return;
    }
    /* acq_rel: everything done through any reference happens-before the last release; pairs with
     * the other xref drops (the last one acquires them all) */
    int32_t old = cq__sub(&o->xref, 1, acq_rel);
    if (cq__likely(old > 1)) {
        return;
    }
    if (cq__unlikely(old <= 0)) {
        cq__crash("cq_release: over-release of %s (released more often than retained)",
                  CQ_DESCRIBE(o));
    }
    if (o->cls->xref_dispose) {
        o->cls->xref_dispose(o);
    }
    cq__ref_release(o);
}

void cq__ref_release_slow(struct cq__object *o)
{
    o->cls->dispose(o);
}

void cq_set_context(void *object, void *context)
{
    struct cq__object *o = cq__object_check(object, 0, "cq_set_context");
    if (!cq__object_is_immortal(o)) {
        o->context = context;
    }
}

void *cq_get_context(void *object)
{
    struct cq__object *o = cq__object_check(object, 0, "cq_get_context");
    return o->context;
}

void cq_set_finalizer_f(void *object, cq_function_t finalizer)
{
    struct cq__object *o = cq__object_check(object, 0, "cq_set_finalizer_f");
    if (!cq__object_is_immortal(o)) {
        o->finalizer = finalizer;
    }
}

void cq_suspend(void *object)
{
    struct cq__object *o = cq__object_check(object, 0, "cq_suspend");
    if (cq__unlikely(o->cls->suspend == NULL)) {
        cq__crash("cq_suspend: %s cannot be suspended", CQ_DESCRIBE(o));
    }
    o->cls->suspend(o);
}

void cq_resume(void *object)
{
    struct cq__object *o = cq__object_check(object, 0, "cq_resume");
    if (cq__unlikely(o->cls->resume == NULL)) {
        cq__crash("cq_resume: %s cannot be resumed", CQ_DESCRIBE(o));
    }
    if (cq__unlikely(cq__load(&o->inactive, relaxed)) && o->cls->suspended(o) <= 1) {
        /* Inactive and not otherwise suspended. As in libdispatch: a source is activated (the
         * API's old way), a queue is misuse. Suspended besides, the object is only resumed
         * and stays inactive until cq_activate. */
        if (o->cls->kind != CQ__KIND_SOURCE) {
            cq__crash("cq_resume: %s is inactive and not suspended: activate it with "
                      "cq_activate (dispatch_activate)",
                      CQ_DESCRIBE(o));
        }
        cq_activate(object);
        return;
    }
    o->cls->resume(o);
}

void cq_activate(void *object)
{
    struct cq__object *o = cq__object_check(object, 0, "cq_activate");
    /* Only the call that clears the flag resumes: activating twice, or from two threads at
     * once, resumes once. */
    if (cq__load(&o->inactive, relaxed) && cq__xchg(&o->inactive, 0, relaxed)) {
        o->cls->resume(o);
    }
}
