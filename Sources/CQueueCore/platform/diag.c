/*
 * Error reporting.
 */
#include "platform/diag_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "platform/object_internal.h"

static void vreport(const char *fmt, va_list ap)
{
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "CQueueCore: ");
    n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    if (n > (int)sizeof buf - 2) {
        n = (int)sizeof buf - 2;
    }
    buf[n++] = '\n';
    /* One write: messages from several threads do not interleave. */
    ssize_t ignored = write(STDERR_FILENO, buf, (size_t)n);
    (void)ignored;
}

void cq__crash(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
    abort();
}

void cq__report(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
}

bool cq__report_once(atomic_bool *flag, const char *fmt, ...)
{
    if (atomic_exchange_explicit(flag, true, memory_order_relaxed)) {
        return false;
    }
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
    return true;
}

const char *cq__escape_label(const char *label, char *out, unsigned long size)
{
    size_t n = 0;
    for (const unsigned char *c = (const unsigned char *)label; *c && n + 5 < size; c++) {
        if (*c == '\n' || *c == '\t') {
            out[n++] = '\\';
            out[n++] = *c == '\n' ? 'n' : 't';
        } else if (*c < 0x20 || *c == 0x7f) {
            n += (size_t)snprintf(out + n, size - n, "\\x%02x", *c);
        } else {
            out[n++] = (char)*c;
        }
    }
    out[n] = '\0';
    return out;
}

const char *cq__describe(const void *object, char *buf, unsigned long size)
{
    const struct cq__object *o = object;
    if (o == NULL) {
        snprintf(buf, size, "NULL");
    } else if (!cq__class_is_known(o->cls)) {
        snprintf(buf, size, "object %p", object);
    } else if (o->cls->label) { /* a queue: its label */
        char label[128];
        snprintf(buf, size, "%s \"%s\" (%p)", o->cls->name,
                 cq__escape_label(o->cls->label(o), label, sizeof label), object);
    } else {
        snprintf(buf, size, "%s %p", o->cls->name, object);
    }
    return buf;
}
