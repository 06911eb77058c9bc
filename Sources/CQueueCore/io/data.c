/*
 * Data objects (cqueuecore/data.h): leaves that hold one buffer each, and composites that list
 * (leaf, from, length) records. A composite never lists another composite: building one from
 * composites copies their records (retaining each leaf), so every object is at most two levels
 * deep and a region is found by a binary search over one array.
 *
 * References: data objects count only external references (xref). A composite holds one on
 * each leaf it lists, so a leaf handed back by cq_data_copy_region or cq_data_apply is a live
 * object the caller may retain. When a leaf's last reference goes its destructor runs; when a
 * composite's goes it releases its leaves.
 */
#include "io/data_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "platform/diag_internal.h"
#include "platform/object_internal.h"

/* What a leaf does with its buffer when it is disposed. */
enum data_destructor {
    DATA_INLINE,  /* the bytes follow the object (same allocation): nothing */
    DATA_NONE,    /* the caller's: nothing */
    DATA_FREE,    /* free(bytes) */
    DATA_MUNMAP,  /* munmap(bytes, size) */
    DATA_CALL,    /* function(context) submitted to queue */
    DATA_RECYCLE, /* function(bytes) called at once, on the releasing thread (internal) */
};

struct data_record {
    struct cq_data_s *leaf; /* a leaf, retained by the composite */
    size_t from;            /* the first byte in the leaf */
    size_t length;          /* > 0 */
    size_t start;           /* where the record starts in the composite */
};

/* Every field is written at creation, before the object is shared, and only read afterwards
 * (cq__data_set_size writes size while the object is still its creator's alone). */
struct cq_data_s {
    struct cq__object obj;
    size_t size;
    uint32_t count;       /* records of a composite; 0 for a leaf (and for empty data) */
    uint32_t destructor;  /* leaf: enum data_destructor */
    const uint8_t *bytes; /* leaf: its buffer */
    /* leaf with DATA_CALL: where and what to run */
    cq_queue_t queue;
    void *context;
    cq_function_t function;
    /* composite: `count` records; inline leaf: its bytes */
    struct data_record records[];
};

static void data_dispose(struct cq__object *o);

static const struct cq__class cq__data_class = {
    .kind = CQ__KIND_DATA,
    .name = "data object",
    .dispose = data_dispose,
};
CQ__CLASS_REGISTER(cq__data_class)

struct cq_data_s cq_data_empty_s = {
    .obj = {.cls = &cq__data_class, .xref = CQ__IMMORTAL, .ref = 1},
    .destructor = DATA_NONE,
};

cq_data_t cq_data_get_empty(void)
{
    return &cq_data_empty_s;
}

/* The markers behind CQ_DATA_DESTRUCTOR_*: compared by address, never meant to run. Their
 * bodies differ, so no linker folds two of them into one address. */
void cq__data_destructor_free(void *buffer)
{
    cq__crash("CQ_DATA_DESTRUCTOR_FREE (%p): a marker for cq_data_create, not a function to call",
              buffer);
}

void cq__data_destructor_munmap(void *buffer)
{
    cq__crash("CQ_DATA_DESTRUCTOR_MUNMAP (%p): a marker for cq_data_create, not a function to "
              "call",
              buffer);
}

void cq__data_destructor_none(void *buffer)
{
    cq__crash("CQ_DATA_DESTRUCTOR_NONE (%p): a marker for cq_data_create, not a function to call",
              buffer);
}

/* ---- checks and references ------------------------------------------------------------------- */

static inline struct cq_data_s *data_check(cq_data_t d, const char *call)
{
    if (cq__unlikely(!cq__object_is(d, &cq__data_class))) {
        d = (struct cq_data_s *)cq__object_check(d, CQ__KIND_DATA, call); /* aborts */
    }
    return d;
}

static inline bool data_is_leaf(const struct cq_data_s *d)
{
    return d->count == 0;
}

/* One more reference to a live object the caller holds (or that a composite it holds lists). */
static inline struct cq_data_s *data_retain(struct cq_data_s *d)
{
    if (!cq__object_is_immortal(&d->obj)) {
        cq__add(&d->obj.xref, 1, relaxed);
    }
    return d;
}

/* cq_release for a data object the library holds (a composite's leaf): the same checks and
 * orderings, without the generic object checks. Data objects never take internal references
 * (ref stays 1), so the last external one disposes at once. */
static inline void data_release(struct cq_data_s *d)
{
    if (cq__object_is_immortal(&d->obj)) {
        return;
    }
    /* acq_rel: everything done through any reference happens-before the dispose; pairs with
     * the other xref drops here and in cq_release (the last one acquires them all) */
    int32_t old = cq__sub(&d->obj.xref, 1, acq_rel);
    if (cq__likely(old > 1)) {
        return;
    }
    if (cq__unlikely(old <= 0)) {
        cq__crash("cq_release: over-release of %s (released more often than retained)",
                  CQ_DESCRIBE(d));
    }
    data_dispose(&d->obj);
}

/* The default global queue: where a destructor with no queue runs. */
static cq_queue_t data_default_queue(void)
{
    return cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0);
}

/* ---- allocation ---------------------------------------------------------------------------- */

static struct cq_data_s *data_alloc(size_t tail)
{
    if (cq__unlikely(tail > SIZE_MAX - sizeof(struct cq_data_s))) {
        errno = ENOMEM;
        return NULL;
    }
    struct cq_data_s *d = malloc(sizeof *d + tail);
    if (cq__unlikely(d == NULL)) {
        errno = ENOMEM;
        return NULL;
    }
    cq__object_init(&d->obj, &cq__data_class);
    d->size = 0;
    d->count = 0;
    d->destructor = DATA_NONE;
    d->bytes = NULL;
    d->queue = NULL;
    d->context = NULL;
    d->function = NULL;
    return d;
}

/* A composite with room for n records (n >= 1); the caller fills them and sets count/size. */
static struct cq_data_s *composite_alloc(size_t n)
{
    if (cq__unlikely(n > UINT32_MAX)) {
        cq__crash("cq_data: a data object of more than %u regions", UINT32_MAX);
    }
    struct cq_data_s *d = data_alloc(n * sizeof(struct data_record));
    if (cq__unlikely(d == NULL)) {
        cq__crash("cq_data: out of memory for a data object of %zu regions", n);
    }
    return d;
}

static struct cq_data_s *inline_alloc(size_t size)
{
    struct cq_data_s *d = data_alloc(size);
    if (d != NULL) {
        d->size = size;
        d->destructor = DATA_INLINE;
        d->bytes = (const uint8_t *)d->records;
    }
    return d;
}

/* A one-region object over `bytes` (not copied) that `kind` disposes of; NULL without memory. */
static struct cq_data_s *leaf_new(const void *bytes, size_t size, enum data_destructor kind)
{
    struct cq_data_s *d = data_alloc(0);
    if (cq__unlikely(d == NULL)) {
        return NULL;
    }
    d->size = size;
    d->destructor = kind;
    d->bytes = bytes;
    return d;
}

/* Hands a buffer that will not be kept to its destructor now (size 0, or a NULL buffer). */
static void data_destroy_now(const void *buffer, size_t size, cq_queue_t queue, void *context,
                             cq_function_t function, enum data_destructor kind)
{
    switch (kind) {
    case DATA_FREE:
        free((void *)buffer);
        break;
    case DATA_MUNMAP:
        if (buffer != NULL && size != 0) {
            munmap((void *)buffer, size);
        }
        break;
    case DATA_CALL:
        cq_async_f(queue ? queue : data_default_queue(), context, function);
        break;
    default:
        break;
    }
}

static cq_data_t data_create(const void *buffer, size_t size, cq_queue_t queue, void *context,
                             cq_function_t function, enum data_destructor kind, const char *call)
{
    if (queue != NULL) {
        (void)cq__object_check(queue, CQ__KIND_QUEUE, call);
    }
    if (buffer == NULL || size == 0) {
        data_destroy_now(buffer, size, queue, context, function, kind);
        return &cq_data_empty_s;
    }
    if (kind == DATA_INLINE) {
        struct cq_data_s *d = inline_alloc(size);
        if (d != NULL) {
            memcpy(d->records, buffer, size);
        }
        return d;
    }
    struct cq_data_s *d = leaf_new(buffer, size, kind);
    if (cq__unlikely(d == NULL)) {
        return NULL;
    }
    if (kind == DATA_CALL) {
        if (queue != NULL) {
            cq_retain(queue);
        }
        d->queue = queue;
        d->context = context;
        d->function = function;
    }
    return d;
}

cq_data_t cq_data_create_f(const void *buffer, size_t size, cq_queue_t queue,
                           cq_function_t destructor)
{
    enum data_destructor kind;
    if (destructor == NULL) {
        kind = DATA_INLINE;
    } else if (destructor == cq__data_destructor_free) {
        kind = DATA_FREE;
    } else if (destructor == cq__data_destructor_munmap) {
        kind = DATA_MUNMAP;
    } else if (destructor == cq__data_destructor_none) {
        kind = DATA_NONE;
    } else {
        kind = DATA_CALL;
    }
    return data_create(buffer, size, queue, (void *)buffer, destructor, kind, "cq_data_create_f");
}

cq_data_t cq_data_create_ctx_f(const void *buffer, size_t size, cq_queue_t queue, void *context,
                               cq_function_t destructor)
{
    if (cq__unlikely(destructor == NULL || destructor == cq__data_destructor_free ||
                     destructor == cq__data_destructor_munmap ||
                     destructor == cq__data_destructor_none)) {
        cq__crash("cq_data_create_ctx_f: the destructor must be a function (NULL and the "
                  "CQ_DATA_DESTRUCTOR_* constants go to cq_data_create_f)");
    }
    return data_create(buffer, size, queue, context, destructor, DATA_CALL, "cq_data_create_ctx_f");
}

static void data_dispose(struct cq__object *o)
{
    struct cq_data_s *d = (struct cq_data_s *)o;
    cq_function_t fin = o->finalizer;
    void *ctx = o->context;
    if (!data_is_leaf(d)) {
        for (uint32_t i = 0; i < d->count; i++) {
            data_release(d->records[i].leaf);
        }
    } else {
        switch ((enum data_destructor)d->destructor) {
        case DATA_FREE:
            free((void *)d->bytes);
            break;
        case DATA_MUNMAP:
            munmap((void *)d->bytes, d->size);
            break;
        case DATA_CALL:
            cq_async_f(d->queue ? d->queue : data_default_queue(), d->context, d->function);
            if (d->queue != NULL) {
                cq_release(d->queue);
            }
            break;
        case DATA_RECYCLE:
            d->function((void *)d->bytes);
            break;
        case DATA_INLINE:
        case DATA_NONE:
            break;
        }
    }
    o->cls = NULL;
    free(d);
    if (fin && ctx) { /* as libdispatch: no context, no finalizer */
        cq_async_f(data_default_queue(), ctx, fin);
    }
}

/* ---- internal constructors (io/data_internal.h) ------------------------------------------ */

cq_data_t cq__data_create_owned(void *buf, size_t size)
{
    if (size == 0) {
        free(buf);
        return &cq_data_empty_s;
    }
    return leaf_new(buf, size, DATA_FREE);
}

cq_data_t cq__data_create_recycled(void *buf, size_t size, cq_function_t recycle)
{
    struct cq_data_s *d = leaf_new(buf, size, DATA_RECYCLE);
    if (cq__likely(d != NULL)) {
        d->function = recycle;
    }
    return d;
}

cq_data_t cq__data_alloc(size_t capacity, void **bytes_out)
{
    if (capacity == 0) {
        *bytes_out = NULL;
        return &cq_data_empty_s;
    }
    struct cq_data_s *d = inline_alloc(capacity);
    *bytes_out = d ? (void *)d->records : NULL;
    return d;
}

cq_data_t cq__data_set_size(cq_data_t data, size_t size)
{
    struct cq_data_s *d = data_check(data, "cq__data_set_size");
    if (d == &cq_data_empty_s && size == 0) {
        return d;
    }
    if (cq__unlikely(!data_is_leaf(d) || d->destructor != DATA_INLINE || size > d->size)) {
        cq__crash("cq__data_set_size: %zu bytes for %s of %zu (only an unshared object from "
                  "cq__data_alloc can shrink)",
                  size, CQ_DESCRIBE(d), d->size);
    }
    if (size == 0) {
        data_release(d);
        return &cq_data_empty_s;
    }
    size_t old = d->size;
    d->size = size;
    if (size < old / 2) { /* give back most of a buffer a short read left unused */
        struct cq_data_s *smaller = realloc(d, sizeof *d + size);
        if (smaller != NULL) {
            d = smaller;
            d->bytes = (const uint8_t *)d->records;
        }
    }
    return d;
}

/* ---- records --------------------------------------------------------------------------------- */

/* The index of the record holding byte `location` (< d->size) of a composite. */
static size_t record_find(const struct cq_data_s *d, size_t location)
{
    size_t lo = 0, hi = d->count; /* records[lo].start <= location < records[hi].start */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->records[mid].start <= location) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* Appends (leaf, from, length) to composite d, merging it into the last record when it
 * continues it in the same leaf; retains the leaf for a new record. */
static void record_push(struct cq_data_s *d, struct cq_data_s *leaf, size_t from, size_t length)
{
    if (d->count > 0) {
        struct data_record *last = &d->records[d->count - 1];
        if (last->leaf == leaf && last->from + last->length == from) {
            last->length += length;
            d->size += length;
            return;
        }
    }
    d->records[d->count++] = (struct data_record){
        .leaf = data_retain(leaf), .from = from, .length = length, .start = d->size};
    d->size += length;
}

/* Appends the bytes [from, from + length) of src (leaf or composite) to composite d. */
static void records_push_range(struct cq_data_s *d, struct cq_data_s *src, size_t from,
                               size_t length)
{
    if (data_is_leaf(src)) {
        record_push(d, src, from, length);
        return;
    }
    size_t i = record_find(src, from);
    while (length > 0) {
        const struct data_record *r = &src->records[i++];
        size_t skip = from - r->start;
        size_t take = r->length - skip;
        if (take > length) {
            take = length;
        }
        record_push(d, r->leaf, r->from + skip, take);
        from += take;
        length -= take;
    }
}

/* A finished composite: one record that covers a whole leaf is that leaf. */
static struct cq_data_s *composite_finish(struct cq_data_s *d)
{
    if (d->count == 1) {
        const struct data_record *r = &d->records[0];
        if (r->from == 0 && r->length == r->leaf->size) {
            struct cq_data_s *leaf = r->leaf; /* keeps the reference the record held */
            d->obj.cls = NULL;
            free(d);
            return leaf;
        }
    }
    return d;
}

/* ---- size, concat, subrange -------------------------------------------------------------- */

size_t cq_data_get_size(cq_data_t data)
{
    return data_check(data, "cq_data_get_size")->size;
}

static inline size_t data_region_count(const struct cq_data_s *d)
{
    return data_is_leaf(d) ? (d->size != 0) : d->count;
}

cq_data_t cq_data_create_concat(cq_data_t data1, cq_data_t data2)
{
    struct cq_data_s *a = data_check(data1, "cq_data_create_concat");
    struct cq_data_s *b = data_check(data2, "cq_data_create_concat");
    if (a->size == 0) {
        return data_retain(b);
    }
    if (b->size == 0) {
        return data_retain(a);
    }
    if (cq__unlikely(a->size > SIZE_MAX - b->size)) {
        cq__crash("cq_data_create_concat: the size overflows (%zu + %zu)", a->size, b->size);
    }
    struct cq_data_s *d = composite_alloc(data_region_count(a) + data_region_count(b));
    records_push_range(d, a, 0, a->size);
    records_push_range(d, b, 0, b->size);
    return composite_finish(d);
}

cq_data_t cq_data_create_subrange(cq_data_t data, size_t offset, size_t length)
{
    struct cq_data_s *d = data_check(data, "cq_data_create_subrange");
    if (offset >= d->size || length == 0) {
        return &cq_data_empty_s;
    }
    if (length > d->size - offset) {
        length = d->size - offset;
    }
    if (length == d->size) {
        return data_retain(d);
    }
    size_t n = 1;
    if (!data_is_leaf(d)) {
        n = record_find(d, offset + length - 1) - record_find(d, offset) + 1;
    }
    struct cq_data_s *s = composite_alloc(n);
    records_push_range(s, d, offset, length);
    return composite_finish(s);
}

/* ---- apply, regions ------------------------------------------------------------------------- */

bool cq_data_apply_f(cq_data_t data, void *context, cq_data_applier_function_t applier)
{
    struct cq_data_s *d = data_check(data, "cq_data_apply_f");
    if (cq__unlikely(applier == NULL)) {
        cq__crash("cq_data_apply_f: NULL applier");
    }
    if (d->size == 0) {
        return true;
    }
    if (data_is_leaf(d)) {
        return applier(context, d, 0, d->bytes, d->size);
    }
    for (uint32_t i = 0; i < d->count; i++) {
        const struct data_record *r = &d->records[i];
        if (!applier(context, r->leaf, r->start, r->leaf->bytes + r->from, r->length)) {
            return false;
        }
    }
    return true;
}

cq_data_t cq_data_copy_region(cq_data_t data, size_t location, size_t *offset_out)
{
    struct cq_data_s *d = data_check(data, "cq_data_copy_region");
    if (cq__unlikely(offset_out == NULL)) {
        cq__crash("cq_data_copy_region: NULL offset_out");
    }
    if (location >= d->size) {
        *offset_out = d->size;
        return &cq_data_empty_s;
    }
    if (data_is_leaf(d)) {
        *offset_out = 0;
        return data_retain(d);
    }
    const struct data_record *r = &d->records[record_find(d, location)];
    *offset_out = r->start;
    if (r->from == 0 && r->length == r->leaf->size) {
        return data_retain(r->leaf);
    }
    struct cq_data_s *s = composite_alloc(1);
    record_push(s, r->leaf, r->from, r->length);
    return s;
}

cq_data_t cq_data_create_map(cq_data_t data, const void **buffer_out, size_t *size_out)
{
    struct cq_data_s *d = data_check(data, "cq_data_create_map");
    const void *buffer = NULL;
    struct cq_data_s *result;
    if (d->size == 0) {
        result = &cq_data_empty_s;
    } else if (data_is_leaf(d)) {
        result = data_retain(d);
        buffer = d->bytes;
    } else if (d->count == 1) {
        result = data_retain(d);
        buffer = d->records[0].leaf->bytes + d->records[0].from;
    } else {
        result = inline_alloc(d->size);
        if (cq__unlikely(result == NULL)) {
            return NULL;
        }
        uint8_t *to = (uint8_t *)result->records;
        for (uint32_t i = 0; i < d->count; i++) {
            const struct data_record *r = &d->records[i];
            memcpy(to + r->start, r->leaf->bytes + r->from, r->length);
        }
        buffer = to;
    }
    if (buffer_out != NULL) {
        *buffer_out = buffer;
    }
    if (size_out != NULL) {
        *size_out = d->size;
    }
    return result;
}

size_t cq_data_get_region_count(cq_data_t data)
{
    return data_region_count(data_check(data, "cq_data_get_region_count"));
}

const void *cq_data_get_region(cq_data_t data, size_t index, size_t *size_out, size_t *offset_out)
{
    struct cq_data_s *d = data_check(data, "cq_data_get_region");
    size_t count = data_region_count(d);
    if (cq__unlikely(index >= count)) {
        cq__crash("cq_data_get_region: region %zu of %s, which has %zu", index, CQ_DESCRIBE(d),
                  count);
    }
    const void *bytes;
    size_t size, offset;
    if (data_is_leaf(d)) {
        bytes = d->bytes;
        size = d->size;
        offset = 0;
    } else {
        const struct data_record *r = &d->records[index];
        bytes = r->leaf->bytes + r->from;
        size = r->length;
        offset = r->start;
    }
    if (size_out != NULL) {
        *size_out = size;
    }
    if (offset_out != NULL) {
        *offset_out = offset;
    }
    return bytes;
}

size_t cq_data_region_index(cq_data_t data, size_t location)
{
    struct cq_data_s *d = data_check(data, "cq_data_region_index");
    if (location >= d->size) {
        return data_region_count(d);
    }
    return data_is_leaf(d) ? 0 : record_find(d, location);
}

size_t cq_data_copy_bytes(cq_data_t data, size_t offset, void *destination, size_t length)
{
    struct cq_data_s *d = data_check(data, "cq_data_copy_bytes");
    if (offset >= d->size || length == 0) {
        return 0;
    }
    if (length > d->size - offset) {
        length = d->size - offset;
    }
    if (cq__unlikely(destination == NULL)) {
        cq__crash("cq_data_copy_bytes: NULL destination for %zu bytes", length);
    }
    if (data_is_leaf(d)) {
        memcpy(destination, d->bytes + offset, length);
        return length;
    }
    uint8_t *to = destination;
    size_t left = length;
    for (size_t i = record_find(d, offset); left > 0; i++) {
        const struct data_record *r = &d->records[i];
        size_t skip = offset - r->start;
        size_t take = r->length - skip < left ? r->length - skip : left;
        memcpy(to, r->leaf->bytes + r->from + skip, take);
        to += take;
        offset += take;
        left -= take;
    }
    return length;
}

size_t cq__data_iov(cq_data_t data, size_t offset, struct iovec *iov, size_t max)
{
    struct cq_data_s *d = data_check(data, "cq__data_iov");
    if (offset >= d->size || max == 0) {
        return 0;
    }
    if (data_is_leaf(d)) {
        iov[0] =
            (struct iovec){.iov_base = (void *)(d->bytes + offset), .iov_len = d->size - offset};
        return 1;
    }
    size_t n = 0;
    for (size_t i = record_find(d, offset); i < d->count && n < max; i++) {
        const struct data_record *r = &d->records[i];
        size_t skip = offset > r->start ? offset - r->start : 0;
        iov[n++] = (struct iovec){.iov_base = (void *)(r->leaf->bytes + r->from + skip),
                                  .iov_len = r->length - skip};
    }
    return n;
}
