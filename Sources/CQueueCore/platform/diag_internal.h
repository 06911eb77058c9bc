/*
 * Diagnostics: misuse is reported with a message naming the call and the object, then the
 * process aborts. Conditions the runtime survives (a limit reached) are reported once.
 */
#ifndef CQ_DIAG_INTERNAL_H
#define CQ_DIAG_INTERNAL_H

#include <stdatomic.h>

#include "platform/atomic_internal.h"

/* Prints "CQueueCore: <message>" to stderr and aborts. */
CQ_INTERNAL __attribute__((noreturn, cold, format(printf, 1, 2))) void cq__crash(const char *fmt,
                                                                                 ...);

/* Prints "CQueueCore: <message>" once per flag; returns true the first time. */
CQ_INTERNAL __attribute__((cold, format(printf, 2, 3))) bool cq__report_once(atomic_bool *flag,
                                                                             const char *fmt, ...);

/* Prints "CQueueCore: <message>" (recoverable bad input, e.g. a negative semaphore value). */
CQ_INTERNAL __attribute__((cold, format(printf, 1, 2))) void cq__report(const char *fmt, ...);

/* `label` with its control characters escaped (\n, \t, \xHH), so that a message or a dump
 * line stays one line; cut to fit `size`. Returns `out`. */
CQ_INTERNAL const char *cq__escape_label(const char *label, char *out, unsigned long size);

/* Describes an object for messages: `queue "label" (0x...)`, `semaphore (0x...)`. */
CQ_INTERNAL const char *cq__describe(const void *object, char *buf, unsigned long size);

#define CQ_DESCRIBE(obj) cq__describe((obj), (char[160]){0}, 160)

#endif /* CQ_DIAG_INTERNAL_H */
