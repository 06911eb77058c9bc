/*
 * A tiny harness for the C tests. Each test_*.c file is its own executable and its own ctest
 * (with a timeout), so a hang or crash names the file. Checks never depend on timing: waits
 * are on events (groups, semaphores) with generous timeouts that only fire when something is
 * genuinely lost.
 */
#ifndef CQ_TEST_H
#define CQ_TEST_H

#include <cqueuecore.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int cq_test_failures;

#define CHECK(cond)                                                                             \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);            \
            cq_test_failures++;                                                                 \
        }                                                                                       \
    } while (0)

#define CHECK_EQ(a, b)                                                                          \
    do {                                                                                        \
        long long _a = (long long)(a), _b = (long long)(b);                                     \
        if (_a != _b) {                                                                         \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n", __FILE__,       \
                    __LINE__, #a, _a, #b, _b);                                                  \
            cq_test_failures++;                                                                 \
        }                                                                                       \
    } while (0)

/* A fatal check: continuing would hang or crash. */
#define REQUIRE(cond)                                                                           \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond);          \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

/* Generous: only a lost task or wake-up makes a wait this long. */
#define CQ_TEST_PATIENCE_NS (60ll * 1000000000ll)

static inline cq_time_t cq_test_deadline(void)
{
    return cq_time(CQ_TIME_NOW, CQ_TEST_PATIENCE_NS);
}

/* Waits for a group; fails the test (fatally) if it never empties. */
#define WAIT_GROUP(g) REQUIRE(cq_group_wait((g), cq_test_deadline()) == 0)
#define WAIT_SEMA(s) REQUIRE(cq_semaphore_wait((s), cq_test_deadline()) == 0)

#define RUN(test)                                                                               \
    do {                                                                                        \
        int _before = cq_test_failures;                                                         \
        fprintf(stderr, "-- %s\n", #test);                                                      \
        test();                                                                                 \
        if (cq_test_failures != _before) {                                                      \
            fprintf(stderr, "   FAILED %s\n", #test);                                           \
        }                                                                                       \
    } while (0)

#define TEST_MAIN_END()                                                                         \
    do {                                                                                        \
        if (cq_test_failures) {                                                                 \
            fprintf(stderr, "%d check(s) failed\n", cq_test_failures);                          \
            return 1;                                                                           \
        }                                                                                       \
        fprintf(stderr, "all passed\n");                                                        \
        return 0;                                                                               \
    } while (0)

/*
 * Runs fn(arg) in a forked child that must abort with a message containing `expected` on
 * stderr. Call it before the parent has started the runtime (the child starts its own).
 */
static inline void expect_abort(const char *name, void (*fn)(void *), void *arg,
                                 const char *expected)
{
    int pipefd[2];
    REQUIRE(pipe(pipefd) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        dup2(pipefd[1], STDERR_FILENO);
        close(pipefd[0]);
        fn(arg);
        _exit(0); /* did not abort: the parent reports it */
    }
    close(pipefd[1]);
    char out[4096];
    size_t len = 0;
    ssize_t r;
    while ((r = read(pipefd[0], out + len, sizeof out - 1 - len)) > 0) {
        len += (size_t)r;
    }
    out[len] = '\0';
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    bool aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
    if (!aborted || strstr(out, expected) == NULL) {
        fprintf(stderr, "%s: expected an abort with \"%s\"; got %s, stderr: %s\n", name, expected,
                aborted ? "an abort" : "no abort", out);
        cq_test_failures++;
    } else {
        fprintf(stderr, "   %s: %s", name, out);
    }
}

static inline uint64_t cq_test_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif /* CQ_TEST_H */
