/*
 * CQueueCore — base definitions shared by every public header.
 *
 * Copyright the SwiftQueues authors. Licensed under the Apache License 2.0.
 */
#ifndef CQUEUECORE_BASE_H
#define CQUEUECORE_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define CQ_BEGIN_DECLS extern "C" {
#define CQ_END_DECLS }
#else
#define CQ_BEGIN_DECLS
#define CQ_END_DECLS
#endif

#if defined(__GNUC__) || defined(__clang__)
#define CQ_EXPORT extern __attribute__((visibility("default")))
#define CQ_NORETURN __attribute__((__noreturn__))
#define CQ_WARN_RESULT __attribute__((__warn_unused_result__))
#else
#define CQ_EXPORT extern
#define CQ_NORETURN
#define CQ_WARN_RESULT
#endif

CQ_BEGIN_DECLS

/* The function-pointer form of a unit of work: called with the context given at submission. */
typedef void (*cq_function_t)(void *context);

/* The function-pointer form of one iteration of cq_apply_f. */
typedef void (*cq_apply_function_t)(void *context, size_t iteration);

CQ_END_DECLS

#endif /* CQUEUECORE_BASE_H */
