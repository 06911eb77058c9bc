/*
 * CQ_DUMP_SIGNAL: a child process with CQ_DUMP_SIGNAL=SIGUSR2 in its environment writes the
 * runtime's dump to stderr when the signal arrives. This program uses queues only, no source and
 * no introspection call: linked with the static library, the object that reads the variable was
 * once left out by the linker (nothing referenced it), and the signal killed the child instead
 * (the CMake target and the pkg-config entry of the static library now pull it in).
 *
 * Also: which values the variable takes, at the limits (glibc keeps signals 32 and 33 for
 * itself: SIGRTMIN and SIGRTMAX are read at run time), and a forked child's watch (one, not one
 * more per fork).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cqueuecore/introspect.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/wait.h>

#include "cq_test.h"

#define CHILD_ALARM_S 60

/* ThreadSanitizer refuses new threads in a child of a multi-threaded process unless told
 * otherwise (test_fork.c); read only by TSan builds. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "die_after_fork=0";
}

static void signal_sema(void *ctx)
{
    cq_semaphore_signal(ctx);
}

/* The child: CQ_DUMP_SIGNAL=SIGUSR2 in its environment; makes a queue, says ready, waits. */
static __attribute__((noreturn)) void dump_child(void)
{
    cq_queue_t q = cq_queue_create("intro.hung-service", CQ_QUEUE_SERIAL);
    cq_semaphore_t s = cq_semaphore_create(0);
    cq_async_f(q, s, signal_sema); /* starts the pool, and so the watch */
    cq_semaphore_wait(s, CQ_TIME_FOREVER);
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        pause();
    }
}

/* The child for a hang of queues used as locks only: two plain threads each hold one serial
 * queue (a cq_sync_f) and sync onto the other's. Nothing starts the pool, and the watch started
 * with the pool: the signal did nothing (the disposition stays ignored until the watch). The
 * watch starts with the first queue now. */
static cq_queue_t lock_a, lock_b;
static pthread_barrier_t both_inside;

static void inner(void *ctx)
{
    (void)ctx;
}

static void outer(void *ctx)
{
    pthread_barrier_wait(&both_inside);
    cq_sync_f(ctx, NULL, inner); /* the other thread's queue: waits for ever */
}

static void *lock_thread(void *first)
{
    cq_sync_f(first, first == lock_a ? lock_b : lock_a, outer);
    return NULL;
}

static __attribute__((noreturn)) void lock_child(void)
{
    lock_a = cq_queue_create("intro.lock-a", CQ_QUEUE_SERIAL);
    lock_b = cq_queue_create("intro.lock-b", CQ_QUEUE_SERIAL);
    pthread_barrier_init(&both_inside, NULL, 3);
    pthread_t a, b;
    REQUIRE(pthread_create(&a, NULL, lock_thread, lock_a) == 0);
    REQUIRE(pthread_create(&b, NULL, lock_thread, lock_b) == 0);
    pthread_barrier_wait(&both_inside);
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        pause();
    }
}

/* Like dump_child, but exits once the pool has started (for values the runtime refuses). */
static __attribute__((noreturn)) void quiet_child(void)
{
    cq_queue_t q = cq_queue_create("intro.quiet", CQ_QUEUE_SERIAL);
    cq_semaphore_t s = cq_semaphore_create(0);
    cq_async_f(q, s, signal_sema);
    cq_semaphore_wait(s, CQ_TIME_FOREVER);
    exit(0);
}

/* The child for a dump into a stderr that nobody reads: it fills its stderr pipe, then waits
 * until a source of its own has heard the signal twice (it hears each one after the reactor
 * handled the dump: the first dump's thread is stuck on the full pipe when the second comes),
 * then makes a queue and waits for a timer of 10 ms, and says so. The reactor wrote the dump
 * itself, holding the queue registry's lock: the process stopped until a reader came; later,
 * the second signal's one-line notice ("a dump is still being written") blocked the reactor
 * the same way. */
static cq_source_t stalled_source;
static atomic_ulong stalled_signals;

static void stalled_heard(void *ctx)
{
    atomic_fetch_add(&stalled_signals, cq_source_get_data(stalled_source));
    cq_semaphore_signal(ctx);
}

static cq_semaphore_t registered_sema;

static void stalled_registered(void *ctx)
{
    (void)ctx;
    cq_semaphore_signal(registered_sema);
}

static __attribute__((noreturn)) void stalled_child(void)
{
    int fl = fcntl(2, F_GETFL);
    fcntl(2, F_SETFL, fl | O_NONBLOCK);
    char block[4096];
    memset(block, 'x', sizeof block);
    while (write(2, block, sizeof block) > 0) {
    }
    while (write(2, block, 1) > 0) { /* to the last byte */
    }
    fcntl(2, F_SETFL, fl);
    cq_queue_t q = cq_queue_create("intro.stalled", CQ_QUEUE_SERIAL);
    cq_semaphore_t heard = cq_semaphore_create(0), registered = cq_semaphore_create(0);
    cq_source_t s = cq_source_create(CQ_SOURCE_TYPE_SIGNAL, SIGUSR2, 0, q);
    stalled_source = s;
    cq_set_context(s, heard);
    cq_source_set_event_handler_f(s, stalled_heard);
    cq_source_set_registration_handler_f(s, stalled_registered);
    registered_sema = registered;
    cq_resume(s);
    cq_semaphore_wait(registered, CQ_TIME_FOREVER); /* the signal is watched from here */
    printf("ready\n");
    fflush(stdout);
    while (atomic_load(&stalled_signals) < 2) {
        cq_semaphore_wait(heard, CQ_TIME_FOREVER);
    }
    cq_queue_t q2 = cq_queue_create("intro.after-the-dump", CQ_QUEUE_SERIAL);
    cq_semaphore_t fired = cq_semaphore_create(0);
    cq_after_f(cq_time(CQ_TIME_NOW, 10 * 1000000ll), q2, fired, signal_sema);
    cq_semaphore_wait(fired, CQ_TIME_FOREVER);
    printf("alive\n");
    fflush(stdout);
    for (;;) {
        pause();
    }
}

struct child {
    pid_t pid;
    int out, err; /* its stdout and stderr */
};

/* Starts this program again as `mode` with CQ_DUMP_SIGNAL=value. */
static struct child spawn(const char *value, const char *mode)
{
    int out[2], err[2];
    REQUIRE(pipe(out) == 0 && pipe(err) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        dup2(out[1], 1);
        dup2(err[1], 2);
        close(out[0]);
        close(err[0]);
        setenv("CQ_DUMP_SIGNAL", value, 1);
        execl("/proc/self/exe", "test_dump_signal", mode, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    return (struct child){pid, out[0], err[0]};
}

/* Reads `fd` to its end (or until `buf` is full) into `buf`, as a string. */
static void read_all(int fd, char *buf, size_t size)
{
    size_t len = 0;
    ssize_t n;
    while (len + 1 < size && (n = read(fd, buf + len, size - 1 - len)) > 0) {
        len += (size_t)n;
    }
    buf[len] = '\0';
}

/* Kills (if still there) and reaps the child; returns its wait status. */
static int finish(struct child c)
{
    kill(c.pid, SIGKILL);
    int status = 0;
    waitpid(c.pid, &status, 0);
    close(c.out);
    close(c.err);
    return status;
}

/* CQ_DUMP_SIGNAL=value: signal `signo` makes the child of `mode` dump, naming `label` (no
 * message before it). */
static void expect_dump_of(const char *value, int signo, const char *mode, const char *label)
{
    struct child c = spawn(value, mode);
    char buf[65536];
    size_t len = 0;
    ssize_t n = read(c.out, buf, sizeof buf - 1); /* "ready" */
    CHECK(n > 0);
    fcntl(c.err, F_SETFL, O_NONBLOCK);
    uint64_t deadline = cq_test_now_ns() + (uint64_t)CQ_TEST_PATIENCE_NS;
    bool found = false, exited = false;
    while (!found && !exited && cq_test_now_ns() < deadline) {
        kill(c.pid, signo);
        struct pollfd p = {c.err, POLLIN, 0};
        poll(&p, 1, 200);
        while ((n = read(c.err, buf + len, sizeof buf - 1 - len)) > 0) {
            len += (size_t)n;
        }
        buf[len] = '\0';
        found = strstr(buf, label) != NULL && strstr(buf, "---- end ----");
        exited = waitpid(c.pid, NULL, WNOHANG) == c.pid; /* killed by the signal */
        if (len > sizeof buf / 2) {
            len = 0;
        }
    }
    if (!found || strstr(buf, "CQueueCore:") != NULL) {
        fprintf(stderr, "CQ_DUMP_SIGNAL=%s: expected a dump on signal %d, %s; stderr: %.300s\n",
                value, signo, exited ? "the child died" : "none came", buf);
        test_failures++;
    }
    if (!exited) {
        finish(c);
    } else {
        close(c.out);
        close(c.err);
    }
}

static void expect_dump(const char *value, int signo)
{
    expect_dump_of(value, signo, "--dump-child", "intro.hung-service");
}

/* CQ_DUMP_SIGNAL=value: the runtime says `message` on one line and watches no signal. */
static void expect_refused(const char *value, const char *message)
{
    struct child c = spawn(value, "--quiet-child");
    char buf[4096];
    read_all(c.err, buf, sizeof buf);
    int status = finish(c);
    char line[256];
    snprintf(line, sizeof line, "CQueueCore: CQ_DUMP_SIGNAL=%s: %s", value, message);
    const char *at = strstr(buf, line);
    bool one_line = at && strchr(at, '\n') && strstr(at, "; no dump on a signal\n") &&
                    strstr(at, "; no dump on a signal\n") < strchr(at, '\n') + 1;
    if (!one_line || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "CQ_DUMP_SIGNAL=%s: expected \"%s ...; no dump on a signal\"; stderr: %s\n",
                value, message, buf);
        test_failures++;
    }
}

static const char *fmt(char *buf, size_t size, const char *f, int n)
{
    snprintf(buf, size, f, n);
    return buf;
}

#define NOT_A_SIGNAL "not a signal name or number"
#define CANNOT_WATCH "cannot watch that signal ("

/* What CQ_DUMP_SIGNAL takes, at the limits of each form. */
static void test_dump_signal_values(void)
{
    char v[64];
    int span = SIGRTMAX - SIGRTMIN;
    fprintf(stderr, "   SIGRTMIN %d, SIGRTMAX %d\n", SIGRTMIN, SIGRTMAX);
    /* numbers: the standard signals, then SIGRTMIN..SIGRTMAX as the C library has them */
    expect_dump("1", SIGHUP);
    expect_dump(fmt(v, sizeof v, "%d", SIGPWR), SIGPWR); /* the last standard one it takes */
    /* fault signals: watched, the faulting instruction ran again for ever (a NULL dereference
     * never ended the process, 8,000 dumps a second) */
    expect_refused(fmt(v, sizeof v, "%d", SIGSYS), CANNOT_WATCH "a fault signal");
    expect_refused("SEGV", CANNOT_WATCH "a fault signal");
    expect_refused("SIGBUS", CANNOT_WATCH "a fault signal");
    expect_refused("fpe", CANNOT_WATCH "a fault signal");
    expect_refused("ILL", CANNOT_WATCH "a fault signal");
    expect_refused("TRAP", CANNOT_WATCH "a fault signal");
    for (int n = SIGSYS + 1; n < SIGRTMIN; n++) {        /* glibc's own (32, 33) */
        expect_refused(fmt(v, sizeof v, "%d", n), CANNOT_WATCH "the C library keeps it");
    }
    expect_dump(fmt(v, sizeof v, "%d", SIGRTMIN), SIGRTMIN);
    expect_dump(fmt(v, sizeof v, "%d", SIGRTMAX), SIGRTMAX);
    expect_refused(fmt(v, sizeof v, "%d", SIGRTMAX + 1), CANNOT_WATCH "above SIGRTMAX");
    expect_refused("99999999999", CANNOT_WATCH "above SIGRTMAX");
    expect_refused("0", NOT_A_SIGNAL);
    expect_refused("-1", NOT_A_SIGNAL);
    expect_refused("+12", NOT_A_SIGNAL);
    expect_refused("12x", NOT_A_SIGNAL);
    expect_refused("9", CANNOT_WATCH "SIGKILL and SIGSTOP");
    /* names, with or without SIG, in any case */
    expect_dump("SIGUSR2", SIGUSR2);
    expect_dump("usr1", SIGUSR1);
    expect_dump("SigPwr", SIGPWR);
    expect_refused("KILL", CANNOT_WATCH "SIGKILL and SIGSTOP");
    expect_refused("SIGSTOP", CANNOT_WATCH "SIGKILL and SIGSTOP");
    expect_refused("USR3", NOT_A_SIGNAL);
    expect_refused("SIG", NOT_A_SIGNAL);
    /* RTMIN+n and RTMAX-n, n from 0 to SIGRTMAX - SIGRTMIN */
    expect_dump("RTMIN", SIGRTMIN);
    expect_dump("SIGRTMIN+0", SIGRTMIN);
    expect_dump("SIGRTMIN+3", SIGRTMIN + 3);
    expect_dump(fmt(v, sizeof v, "RTMIN+%d", span), SIGRTMAX);
    expect_dump("SIGRTMAX", SIGRTMAX);
    expect_dump("rtmax", SIGRTMAX);
    expect_dump("RTMAX-1", SIGRTMAX - 1);
    expect_dump(fmt(v, sizeof v, "sigrtmax-%d", span), SIGRTMIN);
    expect_refused(fmt(v, sizeof v, "RTMIN+%d", span + 1), NOT_A_SIGNAL);
    expect_refused(fmt(v, sizeof v, "RTMAX-%d", span + 1), NOT_A_SIGNAL);
    expect_refused("RTMIN-2", NOT_A_SIGNAL);
    expect_refused("RTMAX+1", NOT_A_SIGNAL);
    expect_refused("RTMIN+xyz", NOT_A_SIGNAL);
    expect_refused("RTMIN+3x", NOT_A_SIGNAL);
    expect_refused("RTMIN+", NOT_A_SIGNAL);
    expect_refused("RTMIN+-1", NOT_A_SIGNAL);
    expect_refused("RTMIN+ 3", NOT_A_SIGNAL);
    expect_refused("RTMINX", NOT_A_SIGNAL);
}

/* ---- fork: the child watches the signal once ------------------------------------------------ */

struct watch_count {
    int signo;
    int watches, registered;
};

static void count_watch(void *ctx, const struct cq_introspect_source *s)
{
    struct watch_count *w = ctx;
    if (strcmp(s->type, "signal") == 0 && s->handle == (uintptr_t)w->signo) {
        w->watches++;
        w->registered += s->registered;
    }
}

/* Starts the pool (and so the watch), waits until the reactor watches the signal; returns how
 * many sources on the list watch it. */
static int watches_once_started(void)
{
    cq_queue_t q = cq_queue_create("intro.fork", CQ_QUEUE_SERIAL);
    cq_semaphore_t s = cq_semaphore_create(0);
    cq_async_f(q, s, signal_sema);
    WAIT_SEMA(s);
    cq_release(s);
    cq_release(q);
    static const struct cq_introspect_visitor v = {.source = count_watch};
    struct watch_count w;
    uint64_t deadline = cq_test_now_ns() + (uint64_t)CQ_TEST_PATIENCE_NS;
    do {
        w = (struct watch_count){SIGUSR2, 0, 0};
        cq_introspect(&v, &w);
    } while (w.registered == 0 && cq_test_now_ns() < deadline && usleep(1000) == 0);
    return w.watches;
}

/* Signals itself once with stderr on a pipe; returns how many dumps came, and in how many of
 * them the signal's watch is listed once. */
static void dumps_on_one_signal(int *dumps, int *listed_once)
{
    int p[2];
    REQUIRE(pipe(p) == 0);
    int saved = dup(2);
    dup2(p[1], 2);
    close(p[1]);
    kill(getpid(), SIGUSR2);
    char buf[65536];
    size_t len = 0;
    buf[0] = '\0';
    uint64_t deadline = cq_test_now_ns() + (uint64_t)CQ_TEST_PATIENCE_NS;
    while (strstr(buf, "---- end ----") == NULL && cq_test_now_ns() < deadline) {
        struct pollfd pf = {p[0], POLLIN, 0};
        if (poll(&pf, 1, 200) > 0) {
            ssize_t n = read(p[0], buf + len, sizeof buf - 1 - len);
            len += n > 0 ? (size_t)n : 0;
        }
        buf[len] = '\0';
    }
    cq_test_observe_window(); /* a second dump for the same signal would come now */
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    ssize_t n;
    while ((n = read(p[0], buf + len, sizeof buf - 1 - len)) > 0) {
        len += (size_t)n;
    }
    buf[len] = '\0';
    dup2(saved, 2);
    close(saved);
    close(p[0]);
    char line[64];
    snprintf(line, sizeof line, "signal  handle %-6d", SIGUSR2);
    *dumps = *listed_once = 0;
    for (const char *d = strstr(buf, "---- SwiftQueues runtime"); d;
         d = strstr(d + 1, "---- SwiftQueues runtime")) {
        (*dumps)++;
        const char *end = strstr(d, "---- end ----");
        const char *first = strstr(d, line);
        const char *second = first ? strstr(first + 1, line) : NULL;
        *listed_once += end && first && first < end && (second == NULL || second > end);
    }
    if (*dumps != 1 || *listed_once != 1) {
        fprintf(stderr, "pid %d: %d dump(s), %d listing the watch once:\n%s", (int)getpid(), *dumps,
                *listed_once, buf);
    }
}

/* A process of the fork chain: checks its own watch, then forks `forks_left` more times down. */
static int fork_chain(int forks_left)
{
    int watches = watches_once_started();
    if (watches != 1) {
        fprintf(stderr, "pid %d: %d watches of the dump's signal, expected 1\n", (int)getpid(),
                watches);
        return 1;
    }
    int dumps, listed_once;
    dumps_on_one_signal(&dumps, &listed_once);
    if (dumps != 1 || listed_once != 1) {
        return 1;
    }
    if (forks_left == 0) {
        return 0;
    }
    pid_t pid = fork();
    if (pid < 0) {
        return 2;
    }
    if (pid == 0) {
        alarm(CHILD_ALARM_S);
        _exit(fork_chain(forks_left - 1));
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
        return 3;
    }
    return WEXITSTATUS(status);
}

/* Run with CQ_DUMP_SIGNAL=SIGUSR2: this process, its child and its grandchild each list one
 * watch of the signal and write one dump (listing it once) per signal. */
static __attribute__((noreturn)) void fork_child(void)
{
    alarm(CHILD_ALARM_S);
    exit(fork_chain(2));
}

static void test_dump_signal_fork(void)
{
#if defined(__SANITIZE_THREAD__)
    /* Under ThreadSanitizer the one signal each process of the chain sends itself never comes
     * back as a dump, and the chain waits for its alarm; the tests above, which signal until a
     * dump comes, pass there. */
    fprintf(stderr, "   skipped under ThreadSanitizer\n");
#else
    struct child c = spawn("SIGUSR2", "--fork-child");
    char buf[65536];
    read_all(c.err, buf, sizeof buf);
    int status = 0;
    REQUIRE(waitpid(c.pid, &status, 0) == c.pid);
    close(c.out);
    close(c.err);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "fork chain failed (status %#x): %s\n", (unsigned)status, buf);
        test_failures++;
    }
#endif
}

static void test_dump_signal(void)
{
    /* the watch is registered by the reactor shortly after the pool starts: expect_dump
     * signals until the dump shows up (a signal before that is counted by the watch's
     * handler, or lost) */
    expect_dump("SIGUSR2", SIGUSR2);
}

/* Dumps into a stderr that nobody reads leave the process working: queues are made and
 * timers fire (the child says "alive" on stdout; the old runtime stopped until a reader
 * came, and later at a second signal while the first dump waited). Found by user-side probes.
 * The signal goes again every 50 ms until the child answers: the child needs two, and under
 * ThreadSanitizer a signal that lands on a thread asleep in a raw system call waits there for
 * good (its handler is deferred), so one signal may never count. */
static void test_dump_into_stalled_stderr(void)
{
    struct child c = spawn("SIGUSR2", "--stalled-child");
    char buf[256];
    ssize_t n = read(c.out, buf, sizeof buf - 1); /* "ready" */
    REQUIRE(n > 0);
    buf[n] = '\0';
    CHECK(strstr(buf, "ready") != NULL);
    uint64_t give_up = cq_test_now_ns() + (uint64_t)CQ_TEST_PATIENCE_NS;
    int ready = 0;
    while (ready == 0 && cq_test_now_ns() < give_up) {
        kill(c.pid, SIGUSR2);
        struct pollfd p = {c.out, POLLIN, 0};
        ready = poll(&p, 1, 50);
    }
    n = ready > 0 ? read(c.out, buf, sizeof buf - 1) : -1;
    buf[n > 0 ? n : 0] = '\0';
    CHECK(strstr(buf, "alive") != NULL);
    finish(c);
}

static void test_dump_signal_without_pool(void)
{
    expect_dump_of("SIGUSR2", SIGUSR2, "--lock-child", "intro.lock-b");
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--dump-child") == 0) {
        dump_child();
    }
    if (argc > 1 && strcmp(argv[1], "--quiet-child") == 0) {
        quiet_child();
    }
    if (argc > 1 && strcmp(argv[1], "--fork-child") == 0) {
        fork_child();
    }
    if (argc > 1 && strcmp(argv[1], "--lock-child") == 0) {
        lock_child();
    }
    if (argc > 1 && strcmp(argv[1], "--stalled-child") == 0) {
        stalled_child();
    }
    RUN(test_dump_signal);
    RUN(test_dump_signal_without_pool);
    RUN(test_dump_into_stalled_stderr);
    RUN(test_dump_signal_values);
    RUN(test_dump_signal_fork);
    TEST_MAIN_END();
}
