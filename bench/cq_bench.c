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
 * The libdispatch fork-join fib runs in a child process (this program re-executed with
 * --child-fib), killed after --fib-limit seconds (default 60): libdispatch's workers block in
 * group_wait and its pool grows by about one thread per second, so fib(20) takes tens of seconds
 * and fib(30) never finishes. A fresh process also keeps the parent's threads out of its way.
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

#ifndef CQ_BENCH_DISPATCH_LIBDIR
#define CQ_BENCH_DISPATCH_LIBDIR "?"
#endif

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

struct bench_def {
    enum bench_id id;
    const char *name;  /* command-line name */
    const char *title; /* what it measures */
    const char *unit;  /* printed unit of the per-unit figure */
    double divisor;    /* nanoseconds per printed unit */
    size_t n_full, m_full, n_quick, m_quick;
    bool units_n_times_m; /* units of work = n*m (else n) */
    double target;        /* ARCHITECTURE.md §6 target, in the printed unit */
    const char *reference; /* ARCHITECTURE.md §6 libdispatch figure */
};

static const struct bench_def benches[] = {
    {B_GLOBAL_ASYNC, "global_async",
     "empty tasks onto the default global queue via group_async, then group_wait", "ns/task", 1,
     1000000, 0, 50000, 0, false, 60, "185 ns/task"},
    {B_SERIAL_ASYNC, "serial_async", "async onto one serial queue, then one sync", "ns/task", 1,
     1000000, 0, 50000, 0, false, 40, "149 ns/task"},
    {B_SYNC, "sync", "uncontended sync onto a serial queue", "ns/call", 1, 10000000, 0, 500000, 0,
     false, 12, "17 ns"},
    {B_PINGPONG, "pingpong",
     "ping-pong between two serial queues (each hop asyncs the next onto the other queue)",
     "ns/hop", 1, 200000, 0, 20000, 0, false, 150, "454 ns/hop"},
    {B_QUEUES, "queues", "serial queues x tasks each, round-robin from the main thread, group_wait",
     "ns/task", 1, 10000, 100, 1000, 20, true, 150, "543 ns/task"},
    {B_SEM, "sem", "semaphore signal+wait on one thread", "ns/pair", 1, 10000000, 0, 500000, 0,
     false, 12, "12.3 ns"},
    {B_SEM_PINGPONG, "sem_pingpong",
     "semaphore ping-pong between two pthreads (two semaphores), placed by the scheduler",
     "us/round trip", 1000, 10000, 0, 1000, 0, false, 2, "57.6 us/round trip"},
    {B_SEM_PINGPONG, "sem_pingpong_same", "as sem_pingpong, both threads pinned to one CPU",
     "us/round trip", 1000, 2000, 1, 200, 1, false, 2, "- (variant)"},
    {B_SEM_PINGPONG, "sem_pingpong_split", "as sem_pingpong, threads pinned to two different CPUs",
     "us/round trip", 1000, 2000, 2, 200, 2, false, 2, "- (variant)"},
    {B_GROUP_ENTER_LEAVE, "group_enter_leave", "group enter+leave on one thread", "ns/pair", 1,
     10000000, 0, 500000, 0, false, 12, "24 ns"},
    {B_APPLY, "apply", "apply onto the default global queue, each iteration writes its own byte",
     "ns/iteration", 1, 10000000, 0, 1000000, 0, false, 3, "19 ns/iteration"},
    {B_FIB, "fib", "fork-join fib, group_wait inside tasks", "ms", 1e6, 30, 12, 25, 12, false, 50,
     "deadlock at fib(30); fib(20): 35 s"},
    {B_AFTER, "after_p50", "20k after-timers over 200 ms onto the global queue: median lateness",
     "us", 1000, 20000, 0, 2000, 0, false, 60, "-"},
    {B_AFTER, "after_p99", "20k after-timers over 200 ms onto the global queue: p99 lateness",
     "us", 1000, 20000, 1, 2000, 1, false, 60, "114 us"},
    {B_AFTER, "after_cpu", "20k after-timers over 200 ms onto the global queue: process CPU time",
     "s", 1e9, 20000, 2, 2000, 2, false, 0.1, "0.28 s"},
    {B_IDLE, "idle", "wake-ups of the runtime's threads while a warmed-up process idles (child)",
     "wake-ups", 1, 10, 0, 2, 0, false, 0, ">= 10 over 10 s"},
};
#define NBENCH (sizeof benches / sizeof benches[0])

/* ---- options ----------------------------------------------------------------------------------- */

static struct {
    bool quick;
    bool verbose;
    int reps;
    double fib_limit; /* seconds for the libdispatch fib child */
    unsigned watchdog; /* seconds per measured run */
    int fib_compare_n; /* n for the libdispatch fib and our matching run */
    unsigned runtimes; /* bit 0: ours, bit 1: libdispatch */
} opt = {.reps = 5, .fib_limit = 60, .watchdog = 60, .fib_compare_n = 20, .runtimes = 3};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: cq-bench [--quick] [--reps N] [--fib-limit SEC] [--watchdog SEC] [--verbose]\n"
            "                [--list] [NAME...]\n"
            "  --quick          small sizes, 3 repetitions, libdispatch fib(15) with a 5 s limit\n"
            "                   (a smoke test)\n"
            "  --reps N         measured repetitions per runtime (default 5; the median is shown)\n"
            "  --fib-limit SEC  wall-clock limit for libdispatch's fib(20) child (default 60)\n"
            "  --watchdog SEC   abort with status 3 if one run takes longer (default 60)\n"
            "  --verbose        print every repetition\n"
            "  --runtime R      ours, libdispatch or both (default both)\n"
            "  --list           list the workloads\n"
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

static void measure(const struct bench_def *b, const struct bench_runtime *rt, size_t n, size_t m,
                    struct bench_run *r)
{
    watchdog_arm(b->name, rt->name, n, m);
    rt->fn[b->id](n, m, r);
    watchdog_disarm();
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
    int failures;
    char first_failure[200];
    long long value;
};

static void stats_of(double *samples, int count, struct stats *s)
{
    qsort(samples, (size_t)count, sizeof *samples, compare_double);
    s->min = samples[0];
    s->max = samples[count - 1];
    s->median = count % 2 ? samples[count / 2] : (samples[count / 2 - 1] + samples[count / 2]) / 2;
}

static void note_failure(struct stats *s, const struct bench_run *r)
{
    if (!r->ok && s->failures++ == 0)
        snprintf(s->first_failure, sizeof s->first_failure, "%s", r->msg);
}

/*
 * Runs one workload on both runtimes: one unmeasured warm-up run each (a tenth of the size, also
 * verified), then opt.reps measured runs each, alternating which runtime goes first.
 */
static void measure_pair(const struct bench_def *b, size_t n, size_t m, struct stats *ours,
                         struct stats *theirs)
{
    const struct bench_runtime *rts[2] = {&bench_rt_cq, &bench_rt_dispatch};
    struct stats *st[2] = {ours, theirs};
    double *samples[2];
    double units = b->units_n_times_m ? (double)n * (double)m : (double)n;
    if (b->id == B_FIB || b->id == B_AFTER)
        units = 1; /* totals and percentiles, not per-unit figures */
    for (int k = 0; k < 2; k++) {
        memset(st[k], 0, sizeof *st[k]);
        st[k]->skipped = !(opt.runtimes & (1u << k));
        samples[k] = calloc((size_t)opt.reps, sizeof(double));
    }

    size_t warm_n = b->id == B_FIB ? (n > 20 ? 20 : n) : (n / 10 ? n / 10 : 1);
    for (int k = 0; k < 2; k++) {
        if (st[k]->skipped)
            continue;
        struct bench_run r;
        measure(b, rts[k], warm_n, m, &r);
        note_failure(st[k], &r);
        settle();
    }
    for (int rep = 0; rep < opt.reps; rep++) {
        for (int j = 0; j < 2; j++) {
            int k = (rep + j) % 2;
            if (st[k]->skipped)
                continue;
            struct bench_run r;
            measure(b, rts[k], n, m, &r);
            note_failure(st[k], &r);
            st[k]->value = r.value;
            samples[k][rep] = r.ns / units / b->divisor;
            if (opt.verbose)
                printf("     rep %d %-12s %12.3f %s%s%s\n", rep + 1, rts[k]->name, samples[k][rep],
                       b->unit, r.ok ? "" : "  FAILED: ", r.ok ? "" : r.msg);
            settle();
        }
    }
    for (int k = 0; k < 2; k++) {
        if (st[k]->skipped)
            st[k]->median = st[k]->min = st[k]->max = NAN;
        else
            stats_of(samples[k], opt.reps, st[k]);
        free(samples[k]);
    }
}

/* Measures only our runtime (used for our fib runs). */
static void measure_ours(const struct bench_def *b, size_t n, size_t m, struct stats *s)
{
    double *samples = calloc((size_t)opt.reps, sizeof(double));
    memset(s, 0, sizeof *s);
    struct bench_run r;
    measure(b, &bench_rt_cq, n, m, &r); /* warm-up */
    note_failure(s, &r);
    for (int rep = 0; rep < opt.reps; rep++) {
        measure(b, &bench_rt_cq, n, m, &r);
        note_failure(s, &r);
        s->value = r.value;
        samples[rep] = r.ns / b->divisor;
        if (opt.verbose)
            printf("     rep %d ours fib(%zu) %10.3f ms%s%s\n", rep + 1, n, samples[rep],
                   r.ok ? "" : "  FAILED: ", r.ok ? "" : r.msg);
    }
    stats_of(samples, opt.reps, s);
    free(samples);
}

/* ---- the libdispatch fib child ----------------------------------------------------------------- */

static int child_fib_main(int n, int cutoff)
{
    struct bench_run r;
    bench_rt_dispatch.fn[B_FIB]((size_t)n, (size_t)cutoff, &r);
    printf("%d %.0f %lld %s\n", r.ok, r.ns, r.value, r.msg);
    fflush(stdout);
    return r.ok ? 0 : 1;
}

struct child_result {
    enum { CHILD_DONE, CHILD_KILLED, CHILD_BROKEN } status;
    struct bench_run run;
    double waited_s;
    char detail[160];
};

static void run_child(char **argv, double limit_s, struct child_result *out);

static void run_dispatch_fib_child(int n, int cutoff, double limit_s, struct child_result *out)
{
    char n_arg[16], cutoff_arg[16];
    snprintf(n_arg, sizeof n_arg, "%d", n);
    snprintf(cutoff_arg, sizeof cutoff_arg, "%d", cutoff);
    char *argv[] = {(char *)"cq-bench", (char *)"--child-fib", n_arg, cutoff_arg, NULL};
    run_child(argv, limit_s, out);
}

/* A child for an idle-process measurement: a fresh process per runtime, so neither runtime's
 * threads are in the other's count. */
static int child_idle_main(const char *which, int seconds)
{
    const struct bench_runtime *rt = strcmp(which, "ours") == 0 ? &bench_rt_cq : &bench_rt_dispatch;
    struct bench_run r;
    rt->fn[B_IDLE]((size_t)seconds, 0, &r);
    printf("%d %.0f %lld %s\n", r.ok, r.ns, r.value, r.msg);
    fflush(stdout);
    return r.ok ? 0 : 1;
}

/* Runs `argv` (this program again) in a child with a time limit; parses its one result line. */
static void run_child(char **argv, double limit_s, struct child_result *out)
{
    memset(out, 0, sizeof *out);

    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        out->status = CHILD_BROKEN;
        snprintf(out->detail, sizeof out->detail, "pipe: %s", strerror(errno));
        return;
    }
    fflush(stdout);
    fflush(stderr);
    uint64_t t0 = bench_now_ns();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        out->status = CHILD_BROKEN;
        snprintf(out->detail, sizeof out->detail, "fork: %s", strerror(errno));
        return;
    }

    char buf[512];
    size_t used = 0;
    bool eof = false, timed_out = false;
    uint64_t deadline = t0 + (uint64_t)(limit_s * 1e9);
    while (!eof) {
        uint64_t now = bench_now_ns();
        if (now >= deadline) {
            timed_out = true;
            break;
        }
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        int wait_ms = (int)((deadline - now) / 1000000u) + 1;
        int ready = poll(&p, 1, wait_ms);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            continue; /* the deadline check above decides */
        ssize_t got = read(fds[0], buf + used, sizeof buf - 1 - used);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0 || used + (size_t)got >= sizeof buf - 1)
            eof = true;
        if (got > 0)
            used += (size_t)got;
    }
    buf[used] = '\0';
    close(fds[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    out->waited_s = (double)(bench_now_ns() - t0) / 1e9;

    if (timed_out) {
        out->status = CHILD_KILLED;
        return;
    }
    int ok = 0;
    double ns = 0;
    long long value = 0;
    int consumed = 0;
    if (sscanf(buf, "%d %lf %lld %n", &ok, &ns, &value, &consumed) >= 3) {
        out->status = CHILD_DONE;
        out->run.ok = ok;
        out->run.ns = ns;
        out->run.value = value;
        snprintf(out->run.msg, sizeof out->run.msg, "%s", buf + consumed);
        out->run.msg[strcspn(out->run.msg, "\n")] = '\0';
    } else {
        out->status = CHILD_BROKEN;
        if (WIFSIGNALED(status))
            snprintf(out->detail, sizeof out->detail, "child died of signal %d",
                     WTERMSIG(status));
        else
            snprintf(out->detail, sizeof out->detail, "child exited %d without a result",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
}

/* ---- reporting --------------------------------------------------------------------------------- */

struct summary_row {
    const char *name;
    const char *unit;
    char ours[24], theirs[40], ratio[24], target[24];
    const char *met;
    const char *reference;
    bool failed;
};

static struct summary_row summary[NBENCH + 2];
static int summary_rows;
static int total_failures;

static const char *met_word(double value, double target)
{
    if (isnan(value))
        return "-";
    return value <= target ? "yes" : "NO";
}

static void print_stats_line(const char *who, const struct stats *s, const char *unit)
{
    if (s->skipped) {
        printf("   %-12s (not run: --runtime)\n", who);
        return;
    }
    printf("   %-12s %10.2f %-14s (min %.2f, max %.2f)  %s%s\n", who, s->median, unit, s->min,
           s->max, s->failures ? "FAILED: " : "verified", s->failures ? s->first_failure : "");
}

static void run_regular(const struct bench_def *b)
{
    size_t n = opt.quick ? b->n_quick : b->n_full;
    size_t m = opt.quick ? b->m_quick : b->m_full;
    if (b->units_n_times_m)
        printf("\n== %s: %zu %s x %zu (%s)\n", b->name, n, "queues", m, b->title);
    else
        printf("\n== %s: n = %zu (%s)\n", b->name, n, b->title);

    struct stats ours, theirs;
    measure_pair(b, n, m, &ours, &theirs);
    print_stats_line("ours", &ours, b->unit);
    print_stats_line("libdispatch", &theirs, b->unit);
    double ratio = theirs.median / ours.median;
    char ratio_text[24];
    if (isnan(ratio))
        snprintf(ratio_text, sizeof ratio_text, "-");
    else
        snprintf(ratio_text, sizeof ratio_text, "%.2fx", ratio);
    printf("   libdispatch/ours = %s    target <= %g %s: %s    (ARCHITECTURE.md: libdispatch "
           "%s)\n",
           ratio_text, b->target, b->unit, met_word(ours.median, b->target), b->reference);

    struct summary_row *row = &summary[summary_rows++];
    row->name = b->name;
    row->unit = b->unit;
    snprintf(row->ours, sizeof row->ours, "%.2f", ours.median);
    snprintf(row->theirs, sizeof row->theirs, "%.2f", theirs.median);
    if (ours.skipped)
        snprintf(row->ours, sizeof row->ours, "-");
    if (theirs.skipped)
        snprintf(row->theirs, sizeof row->theirs, "-");
    snprintf(row->ratio, sizeof row->ratio, "%s", ratio_text);
    snprintf(row->target, sizeof row->target, "<= %g", b->target);
    row->met = met_word(ours.median, b->target);
    row->reference = b->reference;
    row->failed = ours.failures || theirs.failures;
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

/* The idle measurement: one child process per runtime, each idling n seconds. */
static void run_idle(const struct bench_def *b)
{
    int seconds = (int)(opt.quick ? b->n_quick : b->n_full);
    printf("\n== %s: %d s (%s)\n", b->name, seconds, b->title);
    char sec_arg[16];
    snprintf(sec_arg, sizeof sec_arg, "%d", seconds);
    struct child_result res[2];
    const char *names[2] = {"ours", "libdispatch"};
    for (int k = 0; k < 2; k++) {
        if (!(opt.runtimes & (1 << k))) {
            res[k].status = CHILD_BROKEN;
            snprintf(res[k].detail, sizeof res[k].detail, "not run: --runtime");
            continue;
        }
        char *argv[] = {(char *)"cq-bench", (char *)"--child-idle", (char *)names[k], sec_arg,
                        NULL};
        run_child(argv, seconds + 30.0, &res[k]);
        if (res[k].status == CHILD_DONE)
            printf("   %-12s %10.0f %-14s %s%s\n", names[k], res[k].run.ns, b->unit,
                   res[k].run.ok ? "verified" : "FAILED: ", res[k].run.ok ? "" : res[k].run.msg);
        else
            printf("   %-12s %s\n", names[k],
                   res[k].status == CHILD_KILLED ? "did not finish" : res[k].detail);
        if (res[k].status != CHILD_DONE || !res[k].run.ok)
            total_failures += res[k].status == CHILD_DONE || k == 0;
    }
    struct summary_row *row = &summary[summary_rows++];
    row->name = b->name;
    row->unit = b->unit;
    snprintf(row->ours, sizeof row->ours, "%.0f", res[0].status == CHILD_DONE ? res[0].run.ns : NAN);
    snprintf(row->theirs, sizeof row->theirs, "%.0f",
             res[1].status == CHILD_DONE ? res[1].run.ns : NAN);
    snprintf(row->ratio, sizeof row->ratio, "-");
    snprintf(row->target, sizeof row->target, "<= %g", b->target);
    row->met = res[0].status == CHILD_DONE ? met_word(res[0].run.ns, b->target) : "-";
    row->reference = b->reference;
    row->failed = false;
    printf("   target %g %s over %d s: %s    (ARCHITECTURE.md: libdispatch %s)\n", b->target,
           b->unit, seconds, row->met, b->reference);
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

    char theirs[40] = "-", ratio[24] = "-";
    bool child_failed = false;
    if (run_theirs) {
        printf("   libdispatch fib(%d): one run in a child process, limit %g s ...\n", cn,
               opt.fib_limit);
        struct child_result child;
        run_dispatch_fib_child(cn, cutoff, opt.fib_limit, &child);
        char label[32];
        snprintf(label, sizeof label, "libdispatch fib(%d)", cn);
        switch (child.status) {
        case CHILD_DONE:
            printf("   %-20s %10.2f ms  = %lld  %s%s\n", label, child.run.ns / 1e6,
                   child.run.value, child.run.ok ? "verified" : "FAILED: ",
                   child.run.ok ? "" : child.run.msg);
            snprintf(theirs, sizeof theirs, "%.2f", child.run.ns / 1e6);
            if (run_ours)
                snprintf(ratio, sizeof ratio, "%.0fx", child.run.ns / 1e6 / small.median);
            child_failed = !child.run.ok;
            break;
        case CHILD_KILLED:
            printf("   %-20s did not finish within %g s (killed)\n", label, opt.fib_limit);
            snprintf(theirs, sizeof theirs, "DNF in %g s", opt.fib_limit);
            if (run_ours)
                snprintf(ratio, sizeof ratio, "> %.0fx", opt.fib_limit * 1e3 / small.median);
            break;
        case CHILD_BROKEN:
            printf("   %-20s FAILED: %s\n", label, child.detail);
            snprintf(theirs, sizeof theirs, "FAILED");
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
}

static void print_summary(void)
{
    printf("\n== summary (median of %d; ratio = libdispatch/ours, higher is better for us)\n",
           opt.reps);
    printf("%-18s %-14s %10s %14s %9s %8s %4s  %s\n", "workload", "unit", "ours", "libdispatch",
           "ratio", "target", "met", "ARCHITECTURE.md libdispatch");
    for (int i = 0; i < summary_rows; i++) {
        const struct summary_row *row = &summary[i];
        printf("%-18s %-14s %10s %14s %9s %8s %4s  %s%s\n", row->name, row->unit, row->ours,
               row->theirs, row->ratio, row->target, row->met, row->reference,
               row->failed ? "   VERIFICATION FAILED" : "");
    }
}

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
    printf("cq-bench: CQueueCore vs libdispatch (%s), one process\n", CQ_BENCH_DISPATCH_LIBDIR);
    printf("machine:  %s, kernel %s %s, nproc %ld online, %d in affinity mask\n", model, u.sysname,
           u.release, sysconf(_SC_NPROCESSORS_ONLN), affinity);
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

/* ---- main -------------------------------------------------------------------------------------- */

static const struct bench_def *find_bench(const char *name)
{
    for (size_t i = 0; i < NBENCH; i++)
        if (strcmp(benches[i].name, name) == 0)
            return &benches[i];
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
    if (argc == 4 && strcmp(argv[1], "--child-fib") == 0)
        return child_fib_main(atoi(argv[2]), atoi(argv[3]));
    if (argc == 4 && strcmp(argv[1], "--child-idle") == 0)
        return child_idle_main(argv[2], atoi(argv[3]));

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
        } else if (strcmp(a, "--list") == 0) {
            for (size_t k = 0; k < NBENCH; k++)
                printf("%-18s %s\n", benches[k].name, benches[k].title);
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
        else if (benches[i].id == B_IDLE)
            run_idle(&benches[i]);
        else
            run_regular(&benches[i]);
    }
    print_summary();
    print_runtime_after();
    printf("total wall time %.1f s; %s\n", (double)(bench_now_ns() - t0) / 1e9,
           total_failures ? "SOME RUNS FAILED VERIFICATION" : "all runs verified");
    return total_failures ? 1 : 0;
}
