/*
 * cq-bench — CQueueCore against the Swift toolchain's libdispatch, in one process.
 *
 *   usage: cq-bench [--quick] [--reps N] [--fib-limit SEC] [--watchdog SEC] [--verbose]
 *                   [--runtime ours|libdispatch|both] [--list] [NAME...]
 *
 * Runs every workload (or the NAMEd ones) on both runtimes, alternating run by run, and prints the
 * median time per unit for each, the ratio libdispatch/ours and the target from ARCHITECTURE.md §6.
 * Every run verifies its result; a run that does not verify is printed as FAILED and makes the exit
 * status 1. A run that takes longer than the watchdog (default 60 s) ends the process with status 3
 * and names the workload, since a hang is exactly what a benchmark must not hide.
 *
 * The libdispatch fork-join fib runs in a child process (this program re-executed with --child,
 * see child.c), killed after --fib-limit seconds (default 60): libdispatch's workers block in
 * group_wait and its pool grows by about one thread per second, so fib(20) takes tens of seconds
 * and fib(30) never finishes. A fresh process also keeps the parent's threads out of its way.
 * Workloads whose figure belongs to the whole process (idle's wake-ups, cpu_threads' threads,
 * burst_mem's resident memory) run every measurement in a fresh child process too (BF_CHILD).
 *
 * The one-thread fast paths (sync, sem, group_enter_leave, once) are also reported against the
 * floor, two uncontended atomic RMWs on one cache line, measured just before and after each of
 * their runs (goal: at most 1.25x the floor, ARCHITECTURE.md §6).
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cqueuecore.h>

#include "bench.h"
#include "core_round_trip.h"

uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

long long bench_fib_reference(int n)
{
    long long a = 0, b = 1;
    for (int i = 0; i < n; i++) {
        long long next = a + b;
        a = b;
        b = next;
    }
    return a;
}

/* The fib workload's leaves (both runtimes call this one copy), also timed alone for reference. */
long long bench_fib_leaf(int n)
{
    return n < 2 ? n : bench_fib_leaf(n - 1) + bench_fib_leaf(n - 2);
}

/* Tasks the fork-join fib(n) creates: the root, and two children for every task above the cutoff. */
static long long fib_task_count(int n, int cutoff)
{
    return 1 + (n > cutoff ? fib_task_count(n - 1, cutoff) + fib_task_count(n - 2, cutoff) : 0);
}

/* ---- the workload table ------------------------------------------------------------------------ */

enum {
    BF_NM = 1 << 0,       /* units of work = n*m (else n) */
    BF_TOTAL = 1 << 1,    /* the run's figure is a total or a percentile, not divided by n */
    BF_VS_FLOOR = 1 << 2, /* a one-thread fast path: also reported against the floor */
    BF_CHILD = 1 << 3,    /* every run in a fresh child process (bench_run_child_of); no warm-up */
    BF_PER_CPU = 1 << 4,  /* n is per CPU of the affinity mask */
    BF_INTEGER = 1 << 5,  /* print the figures without decimals */
};

struct bench_def {
    enum bench_id id;
    const char *name;  /* command-line name (and summary row) */
    const char *title; /* what it measures */
    const char *unit;  /* printed unit of the figure */
    double divisor;    /* nanoseconds (or the run's figure) per printed unit */
    size_t n_full, m_full, n_quick, m_quick;
    const char *n_name, *m_name; /* what n and m count, for the heading (NULL: plain "n =") */
    unsigned flags;        /* BF_* */
    int reps;              /* measured runs per runtime if not --reps (0: --reps) */
    double target;         /* ARCHITECTURE.md §6 target in the printed unit; NAN: none */
    const char *reference; /* ARCHITECTURE.md §6 libdispatch figure */
    /* A second row from the same runs (struct bench_run.ns2, BF_TOTAL), when name2 != NULL. */
    const char *name2, *unit2;
    double divisor2, target2;
    const char *reference2;
};

/* cpu_threads' target is 2 x CPUs + 4 (ARCHITECTURE.md §6), worked out when it is printed. */
#define TARGET_2CPUS_PLUS_4 (-1.0)

static const struct bench_def benches[] = {
    {.id = B_FLOOR, .name = "floor", .unit = "ns/2 RMWs", .divisor = 1,
     .title = "two uncontended atomic RMWs (fetch_add, fetch_sub) on one cache line, no runtime",
     .n_full = 10000000, .n_quick = 500000, .target = NAN, .reference = "9.7 ns (2026-11-23)"},
    {.id = B_GLOBAL_ASYNC, .name = "global_async", .unit = "ns/task", .divisor = 1,
     .title = "empty tasks onto the default global queue via group_async, then group_wait",
     .n_full = 1000000, .n_quick = 50000, .target = 60, .reference = "185 ns/task"},
    {.id = B_SERIAL_ASYNC, .name = "serial_async", .unit = "ns/task", .divisor = 1,
     .title = "async onto one serial queue, then one sync", .n_full = 1000000, .n_quick = 50000,
     .target = 40, .reference = "149 ns/task"},
    {.id = B_SYNC, .name = "sync", .unit = "ns/call", .divisor = 1,
     .title = "uncontended sync onto a serial queue", .n_full = 10000000, .n_quick = 500000,
     .flags = BF_VS_FLOOR, .target = 12, .reference = "17 ns"},
    {.id = B_PINGPONG, .name = "pingpong", .unit = "ns/hop", .divisor = 1,
     .title = "ping-pong between two serial queues (each hop asyncs the next onto the other queue)",
     .n_full = 200000, .n_quick = 20000, .target = 150, .reference = "454 ns/hop"},
    {.id = B_QUEUES, .name = "queues", .unit = "ns/task", .divisor = 1, .n_name = "queues",
     .m_name = "tasks each",
     .title = "serial queues x tasks each, round-robin from the main thread, group_wait",
     .n_full = 10000, .m_full = 100, .n_quick = 1000, .m_quick = 20, .flags = BF_NM,
     .target = 150, .reference = "543 ns/task"},
    {.id = B_SEM, .name = "sem", .unit = "ns/pair", .divisor = 1,
     .title = "semaphore signal+wait on one thread", .n_full = 10000000, .n_quick = 500000,
     .flags = BF_VS_FLOOR, .target = 12, .reference = "12.3 ns"},
    {.id = B_SEM_PINGPONG, .name = "sem_pingpong", .unit = "us/round trip", .divisor = 1000,
     .title = "semaphore ping-pong between two pthreads (two semaphores), placed by the scheduler",
     .n_full = 10000, .n_quick = 1000, .target = 2, .reference = "57.6 us/round trip"},
    {.id = B_SEM_PINGPONG, .name = "sem_pingpong_same", .unit = "us/round trip", .divisor = 1000,
     .title = "as sem_pingpong, both threads pinned to one CPU", .n_full = 2000, .m_full = 1,
     .n_quick = 200, .m_quick = 1, .target = 2, .reference = "- (variant)"},
    {.id = B_SEM_PINGPONG, .name = "sem_pingpong_split", .unit = "us/round trip",
     .divisor = 1000, .title = "as sem_pingpong, threads pinned to two different CPUs",
     .n_full = 2000, .m_full = 2, .n_quick = 200, .m_quick = 2, .target = 2,
     .reference = "- (variant)"},
    {.id = B_GROUP_ENTER_LEAVE, .name = "group_enter_leave", .unit = "ns/pair", .divisor = 1,
     .title = "group enter+leave on one thread", .n_full = 10000000, .n_quick = 500000,
     .flags = BF_VS_FLOOR, .target = 12, .reference = "24 ns"},
    {.id = B_ONCE, .name = "once", .unit = "ns/call", .divisor = 1,
     .title = "once_f on a predicate that is already done (the fast path)", .n_full = 10000000,
     .n_quick = 500000, .flags = BF_VS_FLOOR, .target = NAN, .reference = "-"},
    {.id = B_SPECIFIC, .name = "get_specific", .unit = "ns/lookup", .divisor = 1,
     .title = "get_specific from tasks of two serial queues, found on their shared target "
              "(2 threads at once; per lookup per thread)",
     .n_full = 4000000, .n_quick = 200000, .target = NAN, .reference = "-"},
    {.id = B_APPLY, .name = "apply", .unit = "ns/iteration", .divisor = 1,
     .title = "apply onto the default global queue, each iteration writes its own byte",
     .n_full = 10000000, .n_quick = 1000000, .target = 3, .reference = "19 ns/iteration"},
    {.id = B_FIB, .name = "fib", .unit = "ms", .divisor = 1e6,
     .title = "fork-join fib, group_wait inside tasks", .n_full = 30, .m_full = 12, .n_quick = 25,
     .m_quick = 12, .flags = BF_TOTAL, .target = 50,
     .reference = "deadlock at fib(30); fib(20): 35 s"},
    {.id = B_AFTER, .name = "after_p50", .unit = "us", .divisor = 1000,
     .title = "20k after-timers over 200 ms onto the global queue: median lateness",
     .n_full = 20000, .n_quick = 2000, .flags = BF_TOTAL, .target = 60, .reference = "-"},
    {.id = B_AFTER, .name = "after_p99", .unit = "us", .divisor = 1000,
     .title = "20k after-timers over 200 ms onto the global queue: p99 lateness",
     .n_full = 20000, .m_full = 1, .n_quick = 2000, .m_quick = 1, .flags = BF_TOTAL,
     .target = 60, .reference = "114 us"},
    {.id = B_AFTER, .name = "after_cpu", .unit = "s", .divisor = 1e9,
     .title = "20k after-timers over 200 ms onto the global queue: process CPU time",
     .n_full = 20000, .m_full = 2, .n_quick = 2000, .m_quick = 2, .flags = BF_TOTAL,
     .target = 0.1, .reference = "0.28 s"},
    {.id = B_IDLE, .name = "idle", .unit = "wake-ups", .divisor = 1,
     .title = "wake-ups of the runtime's threads while a warmed-up process idles (child)",
     .n_full = 10, .n_quick = 2, .flags = BF_TOTAL | BF_INTEGER | BF_CHILD, .reps = 1,
     .target = 0,
     .reference = ">= 10 over 10 s"},
    {.id = B_CPU_THREADS, .name = "cpu_threads", .unit = "threads", .divisor = 1,
     .title = "CPU-bound tasks on the default global queue, group wait: threads the runtime "
              "started, at the peak (fresh child process per run)",
     .n_full = 8, .m_full = 50, .n_quick = 2, .m_quick = 10, .n_name = "tasks",
     .m_name = "ms of CPU each",
     .flags = BF_TOTAL | BF_CHILD | BF_PER_CPU | BF_INTEGER, .target = TARGET_2CPUS_PLUS_4,
     .reference = "4 threads (200 tasks)", .name2 = "cpu_threads_wall", .unit2 = "ms",
     .divisor2 = 1e6, .target2 = NAN, .reference2 = "-"},
    {.id = B_CROWD_THREADS, .name = "crowd_threads", .unit = "threads", .divisor = 1,
     .title = "tasks on the default global queue that each take a semaphore of 1 around a "
              "sleep, group wait: threads the runtime started, at the peak (fresh child process "
              "per run)",
     .n_full = 300, .m_full = 500, .n_quick = 60, .m_quick = 500, .n_name = "tasks",
     .m_name = "us held each", .flags = BF_TOTAL | BF_CHILD | BF_INTEGER, .target = NAN,
     .reference = "5-6 threads (2026-12-07)", .name2 = "crowd_threads_wall", .unit2 = "ms",
     .divisor2 = 1e6, .target2 = NAN, .reference2 = "-"},
    {.id = B_PRIORITY, .name = "priority_p50", .unit = "us", .divisor = 1000,
     .title = "1 high-priority task per ms while background tasks of 2 ms CPU saturate the pool: "
              "start latency (fresh child process per run: the median is over processes)",
     .n_full = 200, .m_full = 2000, .n_quick = 20, .m_quick = 100, .n_name = "high tasks",
     .m_name = "background tasks", .flags = BF_TOTAL | BF_CHILD,
     .target = NAN, .reference = "-", .name2 = "priority_p99", .unit2 = "us", .divisor2 = 1000,
     .target2 = 100, .reference2 = "9-32 us"},
    {.id = B_OUTSIDE, .name = "outside_p50", .unit = "us", .divisor = 1000,
     .title = "1 task per 10 ms from the main thread onto the default global queue while tasks "
              "that each queue the next (1 ms CPU) keep every worker busy: start latency (fresh "
              "child process per run)",
     .n_full = 100, .m_full = 8, .n_quick = 10, .m_quick = 4, .n_name = "outside tasks",
     .m_name = "streams", .flags = BF_TOTAL | BF_CHILD, .target = NAN, .reference = "-",
     .name2 = "outside_p99", .unit2 = "us", .divisor2 = 1000, .target2 = NAN,
     .reference2 = "-"},
    {.id = B_SERIAL_BUSY, .name = "serial_busy_p50", .unit = "us", .divisor = 1000,
     .title = "1 request per 5 ms from the main thread to a serial queue while tasks spinning "
              "on the default global queue (m per CPU) hold every CPU: start latency (fresh "
              "child process per run)",
     .n_full = 100, .m_full = 2, .n_quick = 10, .m_quick = 2, .n_name = "requests",
     .m_name = "spinning tasks per CPU", .flags = BF_TOTAL | BF_CHILD, .target = NAN,
     .reference = "-", .name2 = "serial_busy_p99", .unit2 = "us", .divisor2 = 1000,
     .target2 = NAN, .reference2 = "-"},
    {.id = B_SYNC_BUSY, .name = "sync_busy", .unit = "ns/sync", .divisor = 1,
     .title = "apply iterations taking turns at one serial queue through sync while two other "
              "processes spin on the CPUs",
     .n_full = 50000, .m_full = 4, .n_quick = 5000, .m_quick = 4, .n_name = "syncs each",
     .m_name = "apply iterations", .flags = BF_NM, .target = NAN, .reference = "-"},
    {.id = B_BURST_TASKS, .name = "burst_mem", .unit = "MB", .divisor = 1e6,
     .title = "tasks queued at once behind a blocker on a serial queue: RSS growth left after "
              "they ran and the process idled (fresh child process)",
     .n_full = 1000000, .m_full = 1000, .n_quick = 20000, .m_quick = 200, .n_name = "tasks",
     .m_name = "ms idle", .flags = BF_TOTAL | BF_CHILD, .reps = 1, .target = NAN,
     .reference = "-"},
    {.id = B_BURST_TIMERS, .name = "burst_mem_timers", .unit = "MB", .divisor = 1e6,
     .title = "after_f timers 0-200 ms out onto the global queue: RSS growth left after they "
              "fired and the process idled (fresh child process)",
     .n_full = 1000000, .m_full = 1000, .n_quick = 20000, .m_quick = 200, .n_name = "timers",
     .m_name = "ms idle", .flags = BF_TOTAL | BF_CHILD, .reps = 1, .target = NAN,
     .reference = "-"},
    {.id = B_DATA_CONCAT, .name = "data_concat", .unit = "ns/op", .divisor = 1,
     .title = "data_create_concat of two data objects of m regions each, then release",
     .n_full = 2000000, .m_full = 4, .n_quick = 100000, .m_quick = 4, .m_name = "regions each",
     .target = NAN, .reference = "-"},
    {.id = B_DATA_SUBRANGE, .name = "data_subrange", .unit = "ns/op", .divisor = 1,
     .title = "data_create_subrange across one region boundary of an object of m regions, "
              "then release",
     .n_full = 2000000, .m_full = 16, .n_quick = 100000, .m_quick = 16, .m_name = "regions",
     .target = NAN, .reference = "-"},
    {.id = B_DATA_APPLY, .name = "data_apply", .unit = "ns/op", .divisor = 1,
     .title = "data_apply over a data object of m regions (the applier adds the sizes)",
     .n_full = 2000000, .m_full = 16, .n_quick = 100000, .m_quick = 16, .m_name = "regions",
     .target = NAN, .reference = "-"},
    {.id = B_IO_FILE_READ, .name = "io_file_warm", .unit = "ms/GiB", .divisor = 1e6,
     .title = "a file read to EOF through a stream channel in 1 MiB pieces, warm page cache "
              "(the note: a read(2) loop on it, alternated with the channel 5 times per run)",
     .n_full = 1024, .m_full = 0, .n_quick = 32, .m_quick = 0, .n_name = "MiB",
     .flags = BF_TOTAL, .target = NAN, .reference = "-", .name2 = "io_file_warm_cpu",
     .unit2 = "ms CPU/GiB", .divisor2 = 1e6, .target2 = NAN, .reference2 = "-"},
    {.id = B_IO_FILE_READ, .name = "io_file_cold", .unit = "ms/GiB", .divisor = 1e6,
     .title = "as io_file_warm, the file dropped from the page cache first (posix_fadvise)",
     .n_full = 1024, .m_full = 1, .n_quick = 32, .m_quick = 1, .n_name = "MiB",
     .flags = BF_TOTAL, .reps = 3, .target = NAN, .reference = "-", .name2 = "io_file_cold_cpu",
     .unit2 = "ms CPU/GiB", .divisor2 = 1e6, .target2 = NAN, .reference2 = "-"},
    {.id = B_IO_PIPE, .name = "io_pipe", .unit = "ms/GiB", .divisor = 1e6,
     .title = "a pipe (1 MiB writes by a plain thread) read to EOF through a stream channel",
     .n_full = 1024, .n_quick = 128, .n_name = "MiB", .flags = BF_TOTAL, .target = NAN,
     .reference = "-"},
    {.id = B_IO_SMALL_FILES, .name = "io_small_files", .unit = "us/file", .divisor = 1000,
     .title = "files of 4 KiB read at once, one path channel each", .n_full = 10000,
     .n_quick = 1000, .n_name = "files", .flags = BF_TOTAL, .target = NAN, .reference = "-"},
};
#define NBENCH (sizeof benches / sizeof benches[0])

/* The goal for a one-thread fast path, as a multiple of the floor (ARCHITECTURE.md §6). */
#define FLOOR_GOAL 1.25

/* ---- options ----------------------------------------------------------------------------------- */

static struct {
    bool quick;
    bool verbose;
    int reps;
    double fib_limit; /* seconds for the libdispatch fib child */
    unsigned watchdog; /* seconds per measured run */
    int fib_compare_n; /* n for the libdispatch fib and our matching run */
    unsigned runtimes; /* bit 0: ours, bit 1: libdispatch */
    const char *json;  /* --json FILE: the summary, machine-readable, written at the end */
} opt = {.reps = 5, .fib_limit = 60, .watchdog = 60, .fib_compare_n = 20, .runtimes = 3};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: cq-bench [--quick] [--reps N] [--fib-limit SEC] [--watchdog SEC] [--verbose]\n"
            "                [--list] [--json FILE] [NAME...]\n"
            "  --quick          small sizes, 3 repetitions, libdispatch fib(15) with a 5 s limit\n"
            "                   (a smoke test)\n"
            "  --reps N         measured repetitions per runtime (default 5; the median is shown)\n"
            "  --fib-limit SEC  wall-clock limit for libdispatch's fib(20) child (default 60)\n"
            "  --watchdog SEC   abort with status 3 if one run takes longer (default 60)\n"
            "  --verbose        print every repetition\n"
            "  --runtime R      ours, libdispatch or both (default both)\n"
            "  --list           list the workloads\n"
            "  --json FILE      also write the summary rows to FILE as JSON (for\n"
            "                   scripts/bench_report.py)\n"
            "  NAME...          run only these workloads (default: all)\n");
}

/* ---- watchdog ---------------------------------------------------------------------------------- */

static char watchdog_message[256];
static size_t watchdog_length;

static void watchdog_fired(int sig)
{
    (void)sig;
    ssize_t ignored = write(STDERR_FILENO, watchdog_message, watchdog_length);
    (void)ignored;
    _exit(3);
}

static void watchdog_arm(const char *bench, const char *runtime, size_t n, size_t m)
{
    fflush(stdout);
    int len = snprintf(watchdog_message, sizeof watchdog_message,
                       "\ncq-bench: WATCHDOG: %s (%s, n=%zu m=%zu) did not finish within %u s: "
                       "hang?\n",
                       bench, runtime, n, m, opt.watchdog);
    watchdog_length = len < 0 ? 0 : ((size_t)len < sizeof watchdog_message ? (size_t)len
                                                                           : sizeof watchdog_message - 1);
    alarm(opt.watchdog);
}

static void watchdog_disarm(void)
{
    alarm(0);
}

/* ---- measuring --------------------------------------------------------------------------------- */

static int cpu_count(void)
{
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

static double target_of(const struct bench_def *b)
{
    return b->target == TARGET_2CPUS_PLUS_4 ? 2.0 * cpu_count() + 4 : b->target;
}

/* One run: in this process under the watchdog, or (BF_CHILD) in a fresh child process that is
 * killed after the watchdog's time. */
static void measure(const struct bench_def *b, int k, size_t n, size_t m, struct bench_run *r)
{
    const struct bench_runtime *rt = k == 0 ? &bench_rt_cq : &bench_rt_dispatch;
    if (!(b->flags & BF_CHILD)) {
        watchdog_arm(b->name, rt->name, n, m);
        rt->fn[b->id](n, m, r);
        watchdog_disarm();
        return;
    }
    struct bench_child_result child;
    bench_run_child_of(b->id, k == 0 ? "ours" : "libdispatch", n, m, opt.watchdog, &child);
    if (child.status == BENCH_CHILD_DONE) {
        *r = child.run;
        return;
    }
    memset(r, 0, sizeof *r);
    r->ns = r->ns2 = NAN;
    if (child.status == BENCH_CHILD_KILLED)
        snprintf(r->msg, sizeof r->msg, "child did not finish within %u s (killed): hang?",
                 opt.watchdog);
    else
        snprintf(r->msg, sizeof r->msg, "%s", child.detail);
}

static void settle(void)
{
    /* Let the other runtime's threads finish spinning and park before the next run. */
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct stats {
    bool skipped;            /* runtime not selected with --runtime */
    double median, min, max; /* in the printed unit per unit of work */
    double median2, min2, max2; /* the second figure (bench_def.name2), in unit2 */
    double x_floor, x_floor_min; /* BF_VS_FLOOR: median and least of the runs' own ratios */
    int failures;
    char first_failure[200];
    char note[200]; /* the last verified run's note */
    long long value;
};

static void stats_of(double *samples, int count, double *median, double *min, double *max)
{
    qsort(samples, (size_t)count, sizeof *samples, compare_double);
    *min = samples[0];
    *max = samples[count - 1];
    *median = count % 2 ? samples[count / 2] : (samples[count / 2 - 1] + samples[count / 2]) / 2;
}

static void note_failure(struct stats *s, const struct bench_run *r)
{
    if (!r->ok && s->failures++ == 0)
        snprintf(s->first_failure, sizeof s->first_failure, "%s", r->msg);
}

/* The floor row's definition (its sizes), for the runs made alongside the fast paths. */
static const struct bench_def *floor_def(void)
{
    for (size_t i = 0; i < NBENCH; i++)
        if (benches[i].id == B_FLOOR)
            return &benches[i];
    abort();
}

/* One floor run (no runtime involved: the cq copy of the loop), in ns per pair of RMWs. */
static double measure_floor(int *failures)
{
    const struct bench_def *f = floor_def();
    size_t n = opt.quick ? f->n_quick : f->n_full;
    struct bench_run r;
    measure(f, 0, n, 0, &r);
    *failures += !r.ok;
    return r.ns / (double)n;
}

/*
 * Runs one workload on both runtimes: one unmeasured warm-up run each (a tenth of the size, also
 * verified; none for BF_CHILD, whose every run is a fresh process), then the measured runs,
 * alternating which runtime goes first. For BF_VS_FLOOR workloads every run is bracketed by two
 * floor runs, and the run's ratio is its time over their mean: the host's noise (a busy sibling
 * thread or a neighbour slowing this vCPU for a while) then weighs on both sides of the ratio,
 * where a floor measured once per repetition missed a slow spell that covered the run and not
 * the floor (sync/floor 1.17 in quiet runs, 1.49 in one full run). Each runtime's x_floor /
 * x_floor_min get the median and least of its runs' ratios, *floor / *floor_min the median and
 * least of the bracketing floors (else NAN). Every repetition first measures the core round
 * trip (core_round_trip.h); *rtt gets its median (NAN if it cannot be measured).
 */
static void measure_pair(const struct bench_def *b, size_t n, size_t m, struct stats *ours,
                         struct stats *theirs, double *floor, double *floor_min,
                         int *floor_failures, double *rtt)
{
    struct stats *st[2] = {ours, theirs};
    int reps = b->reps ? b->reps : opt.reps;
    double *samples[2], *samples2[2], *ratios[2];
    double *floors = calloc((size_t)reps * 4, sizeof(double));
    int nfloors = 0;
    double *rtts = calloc((size_t)reps, sizeof(double));
    double units = b->flags & BF_NM ? (double)n * (double)m : (double)n;
    if (b->flags & BF_TOTAL)
        units = 1; /* totals and percentiles, not per-unit figures */
    for (int k = 0; k < 2; k++) {
        memset(st[k], 0, sizeof *st[k]);
        st[k]->skipped = !(opt.runtimes & (1u << k));
        samples[k] = calloc((size_t)reps, sizeof(double));
        samples2[k] = calloc((size_t)reps, sizeof(double));
        ratios[k] = calloc((size_t)reps, sizeof(double));
    }
    bool vs_floor = b->flags & BF_VS_FLOOR;
    *floor_failures = 0;

    size_t warm_n = n / 10 ? n / 10 : 1;
    for (int k = 0; k < 2 && !(b->flags & BF_CHILD); k++) {
        if (st[k]->skipped)
            continue;
        struct bench_run r;
        measure(b, k, warm_n, m, &r);
        note_failure(st[k], &r);
        settle();
    }
    for (int rep = 0; rep < reps; rep++) {
        double ns = core_round_trip_median_ns();
        rtts[rep] = ns > 0 ? ns : NAN;
        for (int j = 0; j < 2; j++) {
            int k = (rep + j) % 2;
            if (st[k]->skipped)
                continue;
            struct bench_run r;
            double floor_before = vs_floor ? measure_floor(floor_failures) : NAN;
            measure(b, k, n, m, &r);
            if (vs_floor) {
                double floor_after = measure_floor(floor_failures);
                floors[nfloors++] = floor_before;
                floors[nfloors++] = floor_after;
                ratios[k][rep] = r.ns / units / b->divisor / ((floor_before + floor_after) / 2);
            }
            note_failure(st[k], &r);
            if (r.ok && r.msg[0] != '\0')
                snprintf(st[k]->note, sizeof st[k]->note, "%s", r.msg);
            st[k]->value = r.value;
            samples[k][rep] = r.ns / units / b->divisor;
            samples2[k][rep] = b->name2 ? r.ns2 / b->divisor2 : NAN;
            if (opt.verbose)
                printf("     rep %d %-12s %12.3f %s  %s%s\n", rep + 1,
                       k == 0 ? "ours" : "libdispatch", samples[k][rep], b->unit,
                       r.ok ? "" : "FAILED: ", r.msg);
            settle();
        }
    }
    for (int k = 0; k < 2; k++) {
        if (st[k]->skipped) {
            st[k]->median = st[k]->min = st[k]->max = NAN;
            st[k]->median2 = st[k]->min2 = st[k]->max2 = NAN;
        } else {
            stats_of(samples[k], reps, &st[k]->median, &st[k]->min, &st[k]->max);
            stats_of(samples2[k], reps, &st[k]->median2, &st[k]->min2, &st[k]->max2);
        }
        double unused;
        st[k]->x_floor = st[k]->x_floor_min = NAN;
        if (vs_floor && !st[k]->skipped)
            stats_of(ratios[k], reps, &st[k]->x_floor, &st[k]->x_floor_min, &unused);
        free(samples[k]);
        free(samples2[k]);
        free(ratios[k]);
    }
    double unused;
    *floor = *floor_min = NAN;
    if (vs_floor && nfloors > 0)
        stats_of(floors, nfloors, floor, floor_min, &unused);
    free(floors);
    printf("   core round trip before each repetition:");
    for (int rep = 0; rep < reps; rep++)
        printf(" %.0f", rtts[rep]);
    printf(" ns\n");
    double rtt_min, rtt_max;
    stats_of(rtts, reps, rtt, &rtt_min, &rtt_max);
    free(rtts);
}

/* Measures only our runtime (used for our fib runs). */
static void measure_ours(const struct bench_def *b, size_t n, size_t m, struct stats *s)
{
    double *samples = calloc((size_t)opt.reps, sizeof(double));
    memset(s, 0, sizeof *s);
    struct bench_run r;
    measure(b, 0, n, m, &r); /* warm-up */
    note_failure(s, &r);
    for (int rep = 0; rep < opt.reps; rep++) {
        measure(b, 0, n, m, &r);
        note_failure(s, &r);
        s->value = r.value;
        samples[rep] = r.ns / b->divisor;
        if (opt.verbose)
            printf("     rep %d ours fib(%zu) %10.3f ms%s%s\n", rep + 1, n, samples[rep],
                   r.ok ? "" : "  FAILED: ", r.ok ? "" : r.msg);
    }
    stats_of(samples, opt.reps, &s->median, &s->min, &s->max);
    free(samples);
}

/* ---- reporting --------------------------------------------------------------------------------- */

struct summary_row {
    const char *name;
    const char *unit;
    char ours[24], theirs[40], ratio[24], target[24];
    const char *met;
    const char *reference;
    bool failed;
    /* The same figures as numbers, for --json (NAN: none); target_v NAN when there is none. */
    double ours_v, theirs_v, ratio_v, target_v;
    double rtt_v; /* the median core round trip before the repetitions, ns (NAN: not measured) */
    char note[48]; /* for --json: why theirs has no figure ("did not finish in 60 s") */
};

static struct summary_row summary[3 * NBENCH];
static int summary_rows;
static double row_rtt = NAN; /* the core round trip of the rows add_row adds next */
static int total_failures;

static const char *met_word(double value, double target)
{
    if (isnan(value) || isnan(target))
        return "-";
    return value <= target ? "yes" : "NO";
}

/* libdispatch/ours for lower-is-better figures: "-" unless both are positive numbers. */
static void ratio_text(char *out, size_t size, double ours, double theirs)
{
    if (ours > 0 && theirs > 0 && isfinite(ours) && isfinite(theirs)) {
        double r = theirs / ours; /* two significant digits at least: 0.00029x, not 0.00x */
        int decimals = r >= 0.1 ? 2 : 1 - (int)floor(log10(r));
        snprintf(out, size, "%.*fx", decimals, r);
    }
    else
        snprintf(out, size, "-");
}

static void target_text(char *out, size_t size, double target)
{
    if (isnan(target))
        snprintf(out, size, "-");
    else
        snprintf(out, size, "<= %g", target);
}

static void print_stats_line(const char *who, const struct stats *s, double median, double min,
                             double max, const char *unit, int decimals)
{
    if (s->skipped) {
        printf("   %-12s (not run: --runtime)\n", who);
        return;
    }
    printf("   %-12s %10.*f %-14s (min %.*f, max %.*f)  %s%s\n", who, decimals, median, unit,
           decimals, min, decimals, max, s->failures ? "FAILED: " : "verified",
           s->failures ? s->first_failure : "");
}

static void add_row(const char *name, const char *unit, const struct stats *ours,
                    const struct stats *theirs, double ours_value, double theirs_value,
                    int decimals, double target, const char *reference)
{
    struct summary_row *row = &summary[summary_rows++];
    row->name = name;
    row->unit = unit;
    snprintf(row->ours, sizeof row->ours, "%.*f", decimals, ours_value);
    snprintf(row->theirs, sizeof row->theirs, "%.*f", decimals, theirs_value);
    if (ours->skipped || isnan(ours_value))
        snprintf(row->ours, sizeof row->ours, "-");
    if (theirs->skipped || isnan(theirs_value))
        snprintf(row->theirs, sizeof row->theirs, "-");
    ratio_text(row->ratio, sizeof row->ratio, ours_value, theirs_value);
    target_text(row->target, sizeof row->target, target);
    row->ours_v = ours->skipped ? NAN : ours_value;
    row->theirs_v = theirs->skipped ? NAN : theirs_value;
    row->ratio_v = row->ours_v > 0 && row->theirs_v > 0 ? row->theirs_v / row->ours_v : NAN;
    row->target_v = target;
    row->rtt_v = row_rtt;
    row->note[0] = '\0';
    row->met = met_word(ours_value, target);
    row->reference = reference;
    row->failed = ours->failures || theirs->failures;
}

static void run_regular(const struct bench_def *b)
{
    size_t n = opt.quick ? b->n_quick : b->n_full;
    size_t m = opt.quick ? b->m_quick : b->m_full;
    if (b->flags & BF_PER_CPU)
        n *= (size_t)cpu_count();
    if (b->n_name && b->m_name)
        printf("\n== %s: %zu %s, %zu %s (%s)\n", b->name, n, b->n_name, m, b->m_name, b->title);
    else if (b->n_name)
        printf("\n== %s: %zu %s (%s)\n", b->name, n, b->n_name, b->title);
    else
        printf("\n== %s: n = %zu (%s)\n", b->name, n, b->title);

    struct stats ours, theirs;
    double floor, floor_min;
    int floor_failures;
    measure_pair(b, n, m, &ours, &theirs, &floor, &floor_min, &floor_failures, &row_rtt);
    int decimals = b->flags & BF_INTEGER ? 0 : 2;
    double target = target_of(b);
    print_stats_line("ours", &ours, ours.median, ours.min, ours.max, b->unit, decimals);
    print_stats_line("libdispatch", &theirs, theirs.median, theirs.min, theirs.max, b->unit,
                     decimals);
    char ratio[24], target_str[24];
    ratio_text(ratio, sizeof ratio, ours.median, theirs.median);
    target_text(target_str, sizeof target_str, target);
    printf("   libdispatch/ours = %s    target %s %s: %s    (ARCHITECTURE.md: libdispatch %s)\n",
           ratio, target_str, b->unit, met_word(ours.median, target), b->reference);
    add_row(b->name, b->unit, &ours, &theirs, ours.median, theirs.median, decimals, target,
            b->reference);

    if (b->name2) {
        printf("   %s:\n", b->name2);
        print_stats_line("ours", &ours, ours.median2, ours.min2, ours.max2, b->unit2, decimals);
        print_stats_line("libdispatch", &theirs, theirs.median2, theirs.min2, theirs.max2,
                         b->unit2, decimals);
        ratio_text(ratio, sizeof ratio, ours.median2, theirs.median2);
        target_text(target_str, sizeof target_str, b->target2);
        printf("   libdispatch/ours = %s    target %s %s: %s    (ARCHITECTURE.md: libdispatch "
               "%s)\n",
               ratio, target_str, b->unit2, met_word(ours.median2, b->target2), b->reference2);
        add_row(b->name2, b->unit2, &ours, &theirs, ours.median2, theirs.median2, decimals,
                b->target2, b->reference2);
    }
    for (int k = 0; k < 2; k++) {
        const struct stats *s = k == 0 ? &ours : &theirs;
        if (s->note[0] != '\0')
            printf("   %-12s %s\n", k == 0 ? "ours:" : "libdispatch:", s->note);
    }
    if (b->flags & BF_VS_FLOOR) {
        static char names[NBENCH][40];
        char *name = names[b - benches];
        snprintf(name, sizeof names[0], "%s/floor", b->name);
        double ours_x = ours.x_floor, theirs_x = theirs.x_floor;
        printf("   floor (two RMWs, measured just before and after every run) %.2f ns (min %.2f): "
               "ours %.2fx, libdispatch %.2fx (medians of the runs' own ratios; least %.2fx, "
               "%.2fx)    goal <= %.2fx: %s\n",
               floor, floor_min, ours_x, theirs_x, ours.x_floor_min, theirs.x_floor_min,
               FLOOR_GOAL, met_word(ours_x, FLOOR_GOAL));
        add_row(name, "x floor", &ours, &theirs, ours_x, theirs_x, 2, FLOOR_GOAL, "-");
        total_failures += floor_failures;
    }
    total_failures += ours.failures + theirs.failures;
}

static void print_fib_line(int n, const struct stats *s)
{
    char label[32];
    snprintf(label, sizeof label, "ours fib(%d)", n);
    printf("   %-20s %10.2f ms  (min %.2f, max %.2f)  = %lld  %s%s\n", label, s->median, s->min,
           s->max, s->value, s->failures ? "FAILED: " : "verified",
           s->failures ? s->first_failure : "");
}

static void run_fib(const struct bench_def *b)
{
    int n = (int)(opt.quick ? b->n_quick : b->n_full);
    int cutoff = (int)(opt.quick ? b->m_quick : b->m_full);
    int cn = opt.fib_compare_n;
    bool run_ours = opt.runtimes & 1u, run_theirs = opt.runtimes & 2u;
    printf("\n== fib: fork-join fib(n), cutoff %d (%s)\n", cutoff, b->title);

    struct stats big = {.skipped = true, .median = NAN}, small = {.skipped = true, .median = NAN};
    if (run_ours) {
        double best_seq = INFINITY;
        for (int rep = 0; rep < opt.reps; rep++) {
            uint64_t t0 = bench_now_ns();
            volatile long long v = bench_fib_leaf(n);
            double ms = (double)(bench_now_ns() - t0) / 1e6;
            (void)v;
            if (ms < best_seq)
                best_seq = ms;
        }
        long long tasks = fib_task_count(n, cutoff);
        measure_ours(b, (size_t)n, (size_t)cutoff, &big);
        print_fib_line(n, &big);
        struct cq_runtime_info info;
        cq_runtime_get_info(&info);
        printf("   (reference: plain sequential fib(%d) on one thread, no runtime: %.2f ms (best of "
               "%d); fork-join creates %lld tasks, so ours spends ~%.0f ns x worker per task "
               "beyond the sequential work with %u workers)\n",
               n, best_seq, opt.reps, tasks,
               (big.median * info.workers - best_seq) * 1e6 / (double)tasks, info.workers);
        measure_ours(b, (size_t)cn, (size_t)cutoff, &small);
        print_fib_line(cn, &small);
        total_failures += big.failures + small.failures;
    }

    char theirs[40] = "-", ratio[24] = "-", theirs_note[48] = "";
    double theirs_ms = NAN;
    bool child_failed = false;
    if (run_theirs) {
        printf("   libdispatch fib(%d): one run in a child process, limit %g s ...\n", cn,
               opt.fib_limit);
        struct bench_child_result child;
        bench_run_child_of(B_FIB, "libdispatch", (size_t)cn, (size_t)cutoff, opt.fib_limit,
                           &child);
        char label[32];
        snprintf(label, sizeof label, "libdispatch fib(%d)", cn);
        switch (child.status) {
        case BENCH_CHILD_DONE:
            printf("   %-20s %10.2f ms  = %lld  %s%s\n", label, child.run.ns / 1e6,
                   child.run.value, child.run.ok ? "verified" : "FAILED: ",
                   child.run.ok ? "" : child.run.msg);
            snprintf(theirs, sizeof theirs, "%.2f", child.run.ns / 1e6);
            theirs_ms = child.run.ok ? child.run.ns / 1e6 : NAN;
            if (run_ours)
                snprintf(ratio, sizeof ratio, "%.0fx", child.run.ns / 1e6 / small.median);
            child_failed = !child.run.ok;
            break;
        case BENCH_CHILD_KILLED:
            printf("   %-20s did not finish within %g s (killed)\n", label, opt.fib_limit);
            snprintf(theirs, sizeof theirs, "DNF in %g s", opt.fib_limit);
            snprintf(theirs_note, sizeof theirs_note, "did not finish in %g s", opt.fib_limit);
            if (run_ours)
                snprintf(ratio, sizeof ratio, "> %.0fx", opt.fib_limit * 1e3 / small.median);
            break;
        case BENCH_CHILD_BROKEN:
            printf("   %-20s FAILED: %s\n", label, child.detail);
            snprintf(theirs, sizeof theirs, "FAILED");
            snprintf(theirs_note, sizeof theirs_note, "failed");
            child_failed = true;
            break;
        }
        total_failures += child_failed;
    }
    printf("   libdispatch/ours on fib(%d) = %s    target fib(30) <= %g ms: %s    "
           "(ARCHITECTURE.md: libdispatch %s)\n",
           cn, ratio, b->target, n == 30 ? met_word(big.median, b->target) : "n/a (--quick)",
           b->reference);

    struct summary_row *row = &summary[summary_rows++];
    static char name_big[32], name_small[32];
    snprintf(name_big, sizeof name_big, "fib(%d)", n);
    row->name = name_big;
    row->unit = "ms";
    if (run_ours)
        snprintf(row->ours, sizeof row->ours, "%.2f", big.median);
    else
        snprintf(row->ours, sizeof row->ours, "-");
    snprintf(row->theirs, sizeof row->theirs, "not run");
    snprintf(row->ratio, sizeof row->ratio, "-");
    snprintf(row->target, sizeof row->target, "<= %g", b->target);
    row->met = n == 30 ? met_word(big.median, b->target) : "n/a";
    row->reference = "deadlock";
    row->failed = big.failures != 0;
    row->ours_v = run_ours ? big.median : NAN;
    row->theirs_v = row->ratio_v = NAN;
    row->target_v = n == 30 ? b->target : NAN;
    row->rtt_v = NAN;
    snprintf(row->note, sizeof row->note, "libdispatch not run (deadlocks at fib(30))");

    row = &summary[summary_rows++];
    snprintf(name_small, sizeof name_small, "fib(%d)", cn);
    row->name = name_small;
    row->unit = "ms";
    if (run_ours)
        snprintf(row->ours, sizeof row->ours, "%.2f", small.median);
    else
        snprintf(row->ours, sizeof row->ours, "-");
    snprintf(row->theirs, sizeof row->theirs, "%s", theirs);
    snprintf(row->ratio, sizeof row->ratio, "%s", ratio);
    snprintf(row->target, sizeof row->target, "-");
    row->met = "-";
    row->reference = cn == 20 ? "35 s" : "-";
    row->failed = small.failures != 0 || child_failed;
    row->ours_v = run_ours ? small.median : NAN;
    row->theirs_v = theirs_ms;
    row->ratio_v = row->ours_v > 0 && theirs_ms > 0 ? theirs_ms / row->ours_v : NAN;
    row->target_v = NAN;
    row->rtt_v = NAN;
    snprintf(row->note, sizeof row->note, "%s", theirs_note);
}

static void print_summary(void)
{
    printf("\n== summary (median of %d, one run for idle and burst_mem*; ratio = libdispatch/ours, "
           "every figure lower-is-better, so a ratio above 1 is better for us; NAME/floor = the "
           "row above over two uncontended atomic RMWs measured around each run, the median of the runs' "
           "ratios)\n",
           opt.reps);
    printf("%-23s %-14s %10s %14s %9s %8s %4s %7s  %s\n", "workload", "unit", "ours",
           "libdispatch", "ratio", "target", "met", "rtt ns", "ARCHITECTURE.md libdispatch");
    for (int i = 0; i < summary_rows; i++) {
        const struct summary_row *row = &summary[i];
        char rtt[16] = "-";
        if (!isnan(row->rtt_v))
            snprintf(rtt, sizeof rtt, "%.0f", row->rtt_v);
        printf("%-23s %-14s %10s %14s %9s %8s %4s %7s  %s%s\n", row->name, row->unit, row->ours,
               row->theirs, row->ratio, row->target, row->met, rtt, row->reference,
               row->failed ? "   VERIFICATION FAILED" : "");
    }
}

static struct {
    char model[128];
    char kernel[160];
    long online;
    int affinity;
} machine;

static void print_machine(void)
{
    struct utsname u;
    uname(&u);
    char model[128] = "?";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "model name", 10) == 0) {
                char *colon = strchr(line, ':');
                if (colon) {
                    snprintf(model, sizeof model, "%s", colon + 2);
                    model[strcspn(model, "\n")] = '\0';
                }
                break;
            }
        fclose(f);
    }
    cpu_set_t set;
    int affinity = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    printf("cq-bench: CQueueCore vs the Swift toolchain's libdispatch, one process\n");
    printf("machine:  %s, kernel %s %s, nproc %ld online, %d in affinity mask\n", model, u.sysname,
           u.release, sysconf(_SC_NPROCESSORS_ONLN), affinity);
    snprintf(machine.model, sizeof machine.model, "%s", model);
    snprintf(machine.kernel, sizeof machine.kernel, "%s %s", u.sysname, u.release);
    machine.online = sysconf(_SC_NPROCESSORS_ONLN);
    machine.affinity = affinity;
    printf("ours:     workers %u, run queues %u, threads %u, thread limit %u\n", info.workers,
           info.procs, info.threads, info.thread_limit);
    printf("method:   %s sizes; per workload one unmeasured warm-up run per runtime, then %d "
           "measured runs per runtime alternating ours/libdispatch; the MEDIAN is reported "
           "(min, max in brackets)\n",
           opt.quick ? "--quick" : "full", opt.reps);
}

static void print_runtime_after(void)
{
    struct cq_runtime_info info;
    cq_runtime_get_info(&info);
    printf("\nours after the run: threads %u (peak %u), run queues %u, hand-offs %" PRIu64
           ", monitor spawns %" PRIu64 ", thread limit reached %u times\n",
           info.threads, info.threads_peak, info.procs, info.handoffs, info.monitor_spawns,
           info.limit_reached);
}

/* ---- --json ---------------------------------------------------------------------------------- */

static void json_string(FILE *f, const char *text)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c < 0x20)
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f);
    }
    fputc('"', f);
}

static void json_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

/* The summary rows as JSON: every figure is lower-is-better, ratio = libdispatch/ours (above 1 is
 * better for us), null where a side has no figure. Returns false if FILE cannot be written. */
static bool write_json(const char *path, double wall_s)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "cq-bench: cannot write %s: %s\n", path, strerror(errno));
        return false;
    }
    fprintf(f, "{\n  \"tool\": \"cq-bench\",\n  \"table\": \"C core vs libdispatch\",\n");
    fprintf(f, "  \"ours\": \"CQueueCore\",\n  \"theirs\": \"libdispatch\",\n");
    fprintf(f, "  \"quick\": %s,\n  \"reps\": %d,\n  \"wall_s\": %.1f,\n",
            opt.quick ? "true" : "false", opt.reps, wall_s);
    fprintf(f, "  \"verified\": %s,\n", total_failures ? "false" : "true");
    fprintf(f, "  \"machine\": {\"cpu\": ");
    json_string(f, machine.model);
    fprintf(f, ", \"kernel\": ");
    json_string(f, machine.kernel);
    fprintf(f, ", \"cpus_online\": %ld, \"cpus\": %d},\n  \"rows\": [\n", machine.online,
            machine.affinity);
    for (int i = 0; i < summary_rows; i++) {
        const struct summary_row *row = &summary[i];
        fprintf(f, "    {\"name\": ");
        json_string(f, row->name);
        fprintf(f, ", \"unit\": ");
        json_string(f, row->unit);
        fprintf(f, ", \"ours\": ");
        json_number(f, row->ours_v);
        fprintf(f, ", \"theirs\": ");
        json_number(f, row->theirs_v);
        fprintf(f, ", \"ratio\": ");
        json_number(f, row->ratio_v);
        fprintf(f, ", \"better\": \"lower\", \"target\": ");
        json_number(f, row->target_v);
        fprintf(f, ", \"core_rtt_ns\": ");
        json_number(f, row->rtt_v);
        fprintf(f, ", \"failed\": %s", row->failed ? "true" : "false");
        if (row->note[0] != '\0') {
            fprintf(f, ", \"note\": ");
            json_string(f, row->note);
        }
        fprintf(f, "}%s\n", i + 1 < summary_rows ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    return fclose(f) == 0;
}

/* ---- main -------------------------------------------------------------------------------------- */

static const struct bench_def *find_bench(const char *name)
{
    for (size_t i = 0; i < NBENCH; i++)
        if (strcmp(benches[i].name, name) == 0 ||
            (benches[i].name2 != NULL && strcmp(benches[i].name2, name) == 0))
            return &benches[i]; /* a second row's name selects the workload that makes it */
    return NULL;
}

static double parse_number(const char *flag, const char *text)
{
    char *end;
    double v = text ? strtod(text, &end) : 0;
    if (text == NULL || *end != '\0' || !(v > 0)) {
        fprintf(stderr, "cq-bench: %s needs a positive number\n", flag);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--child") == 0)
        return bench_child_main(argc, argv);

    bool selected[NBENCH] = {false};
    bool any_selected = false;
    bool reps_given = false, limit_given = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--quick") == 0) {
            opt.quick = true;
        } else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
            opt.verbose = true;
        } else if (strcmp(a, "--reps") == 0) {
            opt.reps = (int)parse_number(a, i + 1 < argc ? argv[++i] : NULL);
            reps_given = true;
        } else if (strcmp(a, "--fib-limit") == 0) {
            opt.fib_limit = parse_number(a, i + 1 < argc ? argv[++i] : NULL);
            limit_given = true;
        } else if (strcmp(a, "--watchdog") == 0) {
            opt.watchdog = (unsigned)parse_number(a, i + 1 < argc ? argv[++i] : NULL);
        } else if (strcmp(a, "--json") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "cq-bench: --json needs a file name\n");
                return 2;
            }
            opt.json = argv[++i];
        } else if (strcmp(a, "--list") == 0) {
            for (size_t k = 0; k < NBENCH; k++) {
                printf("%-18s %s\n", benches[k].name, benches[k].title);
                if (benches[k].name2)
                    printf("%-18s (the same runs, in %s)\n", benches[k].name2, benches[k].unit2);
            }
            return 0;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--runtime") == 0) {
            const char *which = i + 1 < argc ? argv[++i] : "";
            if (strcmp(which, "ours") == 0)
                opt.runtimes = 1;
            else if (strcmp(which, "libdispatch") == 0)
                opt.runtimes = 2;
            else if (strcmp(which, "both") == 0)
                opt.runtimes = 3;
            else {
                fprintf(stderr, "cq-bench: --runtime takes ours, libdispatch or both\n");
                return 2;
            }
        } else if (a[0] == '-') {
            fprintf(stderr, "cq-bench: unknown option %s\n", a);
            usage(stderr);
            return 2;
        } else {
            const struct bench_def *b = find_bench(a);
            if (b == NULL) {
                fprintf(stderr, "cq-bench: no workload named %s (try --list)\n", a);
                return 2;
            }
            selected[b - benches] = true;
            any_selected = true;
        }
    }
    if (opt.quick) {
        if (!reps_given)
            opt.reps = 3;
        if (!limit_given)
            opt.fib_limit = 5;
        opt.fib_compare_n = 15;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = watchdog_fired;
    sigaction(SIGALRM, &sa, NULL);
    setvbuf(stdout, NULL, _IOLBF, 0);

    uint64_t t0 = bench_now_ns();
    print_machine();
    for (size_t i = 0; i < NBENCH; i++) {
        if (any_selected && !selected[i])
            continue;
        if (benches[i].id == B_FIB)
            run_fib(&benches[i]);
        else
            run_regular(&benches[i]);
    }
    print_summary();
    print_runtime_after();
    double wall_s = (double)(bench_now_ns() - t0) / 1e9;
    printf("total wall time %.1f s; %s\n", wall_s,
           total_failures ? "SOME RUNS FAILED VERIFICATION" : "all runs verified");
    if (opt.json != NULL && !write_json(opt.json, wall_s))
        return 2;
    return total_failures ? 1 : 0;
}
