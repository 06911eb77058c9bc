/*
 * cq-bench — measurements in a child process: this program re-executed with
 *   --child ID RUNTIME N M
 * runs workload ID (an enum bench_id) once on RUNTIME ("ours" or "libdispatch") and prints one
 * result line, "ok ns ns2 value note-or-failure", which the parent parses. A fresh process per
 * measurement is used where the figure is the whole process's (threads, resident memory, context
 * switches) or where libdispatch must be killed when it does not finish (fib).
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

int bench_child_main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "cq-bench: --child ID RUNTIME N M\n");
        return 2;
    }
    int id = atoi(argv[2]);
    const struct bench_runtime *rt = strcmp(argv[3], "ours") == 0 ? &bench_rt_cq
                                     : strcmp(argv[3], "libdispatch") == 0 ? &bench_rt_dispatch
                                                                            : NULL;
    if (id < 0 || id >= B_COUNT || rt == NULL || rt->fn[id] == NULL) {
        fprintf(stderr, "cq-bench: --child: no workload %s on runtime %s\n", argv[2], argv[3]);
        return 2;
    }
    struct bench_run r;
    rt->fn[id](strtoul(argv[4], NULL, 10), strtoul(argv[5], NULL, 10), &r);
    r.msg[strcspn(r.msg, "\n")] = '\0';
    printf("%d %.17g %.17g %lld %s\n", r.ok, r.ns, r.ns2, r.value, r.msg);
    fflush(stdout);
    return r.ok ? 0 : 1;
}

void bench_run_child_of(int id, const char *runtime, size_t n, size_t m, double limit_s,
                        struct bench_child_result *out)
{
    char id_arg[16], n_arg[32], m_arg[32];
    snprintf(id_arg, sizeof id_arg, "%d", id);
    snprintf(n_arg, sizeof n_arg, "%zu", n);
    snprintf(m_arg, sizeof m_arg, "%zu", m);
    char *argv[] = {(char *)"cq-bench", (char *)"--child", id_arg, (char *)runtime, n_arg, m_arg,
                    NULL};
    bench_run_child(argv, limit_s, out);
}

/* Runs `argv` (this program again) in a child with a time limit; parses its one result line. */
void bench_run_child(char **argv, double limit_s, struct bench_child_result *out)
{
    memset(out, 0, sizeof *out);

    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        out->status = BENCH_CHILD_BROKEN;
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
        out->status = BENCH_CHILD_BROKEN;
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
        out->status = BENCH_CHILD_KILLED;
        return;
    }
    int ok = 0;
    double ns = 0, ns2 = 0;
    long long value = 0;
    int consumed = 0;
    if (sscanf(buf, "%d %lf %lf %lld %n", &ok, &ns, &ns2, &value, &consumed) >= 4) {
        out->status = BENCH_CHILD_DONE;
        out->run.ok = ok;
        out->run.ns = ns;
        out->run.ns2 = ns2;
        out->run.value = value;
        snprintf(out->run.msg, sizeof out->run.msg, "%s", buf + consumed);
        out->run.msg[strcspn(out->run.msg, "\n")] = '\0';
    } else {
        out->status = BENCH_CHILD_BROKEN;
        if (WIFSIGNALED(status))
            snprintf(out->detail, sizeof out->detail, "child died of signal %d",
                     WTERMSIG(status));
        else
            snprintf(out->detail, sizeof out->detail, "child exited %d without a result",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
}
