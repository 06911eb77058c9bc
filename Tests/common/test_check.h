/*
 * The checks every C test program shares (Tests/c, Tests/compat, Tests/guide): CHECK, CHECK_EQ,
 * REQUIRE, RUN, TEST_MAIN_END, and running a function in a forked child with its stderr
 * captured (for misuse that must abort with a message).
 *
 * Written in the common subset of C99 and C++ (the compatibility tests compile it in both), with
 * no runtime calls: the harnesses on top add their waits (cq_test.h on cq_*, compat_test.h on
 * libdispatch's names).
 */
#ifndef TEST_CHECK_H
#define TEST_CHECK_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* Failed checks so far in this program (a child of test_fork_capture counts its own). */
static int test_failures;

#define CHECK(cond)                                                                             \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);            \
            test_failures++;                                                                    \
        }                                                                                       \
    } while (0)

#define CHECK_EQ(a, b)                                                                          \
    do {                                                                                        \
        long long test_a_ = (long long)(a), test_b_ = (long long)(b);                           \
        if (test_a_ != test_b_) {                                                               \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n", __FILE__,       \
                    __LINE__, #a, test_a_, #b, test_b_);                                        \
            test_failures++;                                                                    \
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

#define RUN(test)                                                                               \
    do {                                                                                        \
        int test_before_ = test_failures;                                                       \
        fprintf(stderr, "-- %s\n", #test);                                                      \
        test();                                                                                 \
        if (test_failures != test_before_) {                                                    \
            fprintf(stderr, "   FAILED %s\n", #test);                                           \
        }                                                                                       \
    } while (0)

/* The verdict at the end of a program, printed; returns its exit status: 0 if every check
 * passed, 1 otherwise. */
static inline int test_verdict(void)
{
    if (test_failures) {
        fprintf(stderr, "%d check(s) failed\n", test_failures);
        return 1;
    }
    fprintf(stderr, "all passed\n");
    return 0;
}

/* The end of main. */
#define TEST_MAIN_END() return test_verdict()

/* The same for a program whose main thread has gone (it ended with pthread_exit and its last
 * checks run in a task): exits the process. */
#define TEST_EXIT_END() exit(test_verdict())

/*
 * Runs fn(arg) in a forked child whose stderr goes into out (NUL-terminated, truncated to
 * out_size - 1 bytes); returns the child's wait status. A child that returns from fn exits with
 * 0 if its own checks passed, 1 otherwise. Call it before the parent has started a runtime's
 * threads (fork copies only the calling thread; the child starts its own).
 */
static inline int test_fork_capture(void (*fn)(void *), void *arg, char *out, size_t out_size)
{
    int pipefd[2];
    REQUIRE(pipe(pipefd) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        dup2(pipefd[1], STDERR_FILENO);
        close(pipefd[0]);
        test_failures = 0;
        fn(arg);
        _exit(test_failures ? 1 : 0);
    }
    close(pipefd[1]);
    size_t len = 0;
    ssize_t r;
    while (len + 1 < out_size && (r = read(pipefd[0], out + len, out_size - 1 - len)) > 0) {
        len += (size_t)r;
    }
    out[len] = '\0';
    close(pipefd[0]);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    return status;
}

/*
 * Runs fn(arg) in a forked child that must abort (SIGABRT) with a message containing `expected`
 * on stderr; a check fails otherwise. Same rule as test_fork_capture about threads.
 */
static inline void expect_abort(const char *name, void (*fn)(void *), void *arg,
                                const char *expected)
{
    char out[4096];
    int status = test_fork_capture(fn, arg, out, sizeof out);
    bool aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
    if (!aborted || strstr(out, expected) == NULL) {
        fprintf(stderr, "%s: expected an abort with \"%s\"; got %s, stderr: %s\n", name, expected,
                aborted ? "an abort" : "no abort", out);
        test_failures++;
    } else {
        fprintf(stderr, "   %s: %s", name, out);
    }
}

#endif /* TEST_CHECK_H */
