/*
 * cq-bench — the interface between the harness (cq_bench.c) and the two runtimes under test.
 *
 * Every workload is written once, in workloads.inc, against a small set of RT_* macros. That file
 * is compiled twice: rt_cq.c maps the macros to CQueueCore's cq_* calls, rt_dispatch.c to
 * libdispatch's dispatch_*_f calls. Both copies are direct calls (no function-pointer table inside
 * the measured loops), so the comparison is between the runtimes, not between call styles.
 */
#ifndef CQ_BENCH_H
#define CQ_BENCH_H

#include <stddef.h>
#include <stdint.h>

/* The result of one measured run of one workload. */
struct bench_run {
    double ns;        /* wall-clock nanoseconds of the measured part */
    int ok;           /* 1 when the workload's result verified */
    long long value;  /* a computed value worth printing (fib), else 0 */
    char msg[200];    /* what did not verify, when !ok */
};

/* A workload: n and m are its sizes (m is unused by most). Always fills *r. */
typedef void (*bench_fn)(size_t n, size_t m, struct bench_run *r);

enum bench_id {
    B_GLOBAL_ASYNC,      /* group_async of n empty tasks onto the default global queue, wait */
    B_SERIAL_ASYNC,      /* n async onto one serial queue, then a sync */
    B_SYNC,              /* n uncontended syncs onto a serial queue */
    B_PINGPONG,          /* n hops between two serial queues */
    B_QUEUES,            /* n serial queues x m tasks each, group wait */
    B_SEM,               /* n semaphore signal+wait pairs on one thread */
    B_SEM_PINGPONG,      /* n semaphore round trips between two pthreads */
    B_GROUP_ENTER_LEAVE, /* n group enter+leave pairs on one thread */
    B_APPLY,             /* apply of n iterations, each writes its own byte */
    B_FIB,               /* fork-join fib(n), cutoff m, group wait inside tasks */
    B_AFTER,             /* n after-timers spread over 200 ms; m: 0 p50 lateness, 1 p99, 2 CPU */
    B_IDLE,              /* wake-ups of the runtime's threads while the process idles n seconds */
    B_COUNT
};

struct bench_runtime {
    const char *name;
    bench_fn fn[B_COUNT];
};

extern const struct bench_runtime bench_rt_cq;
extern const struct bench_runtime bench_rt_dispatch;

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);

/* fib(n) by plain recursion: the sequential leaves of the fork-join fib workload. One copy,
 * called by both runtimes' workloads and timed alone by the harness. */
long long bench_fib_leaf(int n);

/* fib(n) computed iteratively, for checking (fib(0) = 0, fib(1) = 1). */
long long bench_fib_reference(int n);

#endif /* CQ_BENCH_H */
