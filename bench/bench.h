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
    double ns;        /* wall-clock nanoseconds of the measured part (or the workload's figure) */
    double ns2;       /* a second figure from the same run, for workloads with two rows; else NaN */
    int ok;           /* 1 when the workload's result verified */
    long long value;  /* a computed value worth printing (fib), else 0 */
    char msg[200];    /* what did not verify when !ok; when ok, an optional note to print */
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
    B_FLOOR,             /* n pairs of uncontended atomic RMWs on one cache line (no runtime) */
    B_ONCE,              /* n once calls after the first (the fast path) */
    B_CPU_THREADS,       /* n tasks of m ms CPU each on the default global queue: threads added */
    B_CROWD_THREADS,     /* n tasks taking a semaphore of 1 around m us of sleep: threads added */
    B_PRIORITY,          /* n high tasks 1 ms apart over m background tasks: start latency */
    B_OUTSIDE,           /* n tasks 10 ms apart from the main thread over m requeueing streams */
    B_SERIAL_BUSY,       /* n requests 5 ms apart to a serial queue beside m spinning tasks */
    B_BURST_TASKS,       /* RSS left m ms after n tasks queued at once behind a blocker */
    B_BURST_TIMERS,      /* RSS left m ms after n after-timers 0-200 ms out */
    B_SPECIFIC,          /* n get_specific lookups through a target chain, 2 threads */
    B_DATA_CONCAT,       /* n concats of two data objects of m regions each */
    B_DATA_SUBRANGE,     /* n subranges across a region boundary of an object of m regions */
    B_DATA_APPLY,        /* n applies over a data object of m regions */
    B_IO_FILE_READ,      /* a file of n MiB read through a channel; m: 0 warm, 1 cold cache */
    B_IO_PIPE,           /* n MiB streamed through a pipe into a channel */
    B_IO_SMALL_FILES,    /* n files of 4 KiB, one path channel each, all at once */
    B_SYNC_BUSY,         /* m apply iterations x n syncs onto one serial queue, 2 CPU hogs */
    B_COUNT
};

struct bench_runtime {
    const char *name;
    bench_fn fn[B_COUNT];
};

extern const struct bench_runtime bench_rt_cq;
extern const struct bench_runtime bench_rt_dispatch;

/* ---- child processes (child.c) ---- */

struct bench_child_result {
    enum { BENCH_CHILD_DONE, BENCH_CHILD_KILLED, BENCH_CHILD_BROKEN } status;
    struct bench_run run; /* the child's result line, when DONE */
    double waited_s;      /* wall time from fork to exit (or kill) */
    char detail[160];     /* why, when BROKEN */
};

/* Runs argv (this program again, argv[0] is cosmetic) in a child, kills it after limit_s seconds,
 * and parses its result line ("ok ns ns2 value note"). */
void bench_run_child(char **argv, double limit_s, struct bench_child_result *out);

/* The same for `cq-bench --child ID RUNTIME N M`: workload id run once on runtime ("ours" or
 * "libdispatch") in a fresh process. */
void bench_run_child_of(int id, const char *runtime, size_t n, size_t m, double limit_s,
                        struct bench_child_result *out);

/* The child side: argv = {prog, "--child", ID, RUNTIME, N, M}; prints the result line. Returns
 * the exit status (0 verified, 1 not verified, 2 usage). */
int bench_child_main(int argc, char **argv);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);

/* fib(n) by plain recursion: the sequential leaves of the fork-join fib workload. One copy,
 * called by both runtimes' workloads and timed alone by the harness. */
long long bench_fib_leaf(int n);

/* fib(n) computed iteratively, for checking (fib(0) = 0, fib(1) = 1). */
long long bench_fib_reference(int n);

#endif /* CQ_BENCH_H */
