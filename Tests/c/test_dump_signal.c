/*
 * CQ_DUMP_SIGNAL: a child process with CQ_DUMP_SIGNAL=SIGUSR2 in its environment writes the
 * runtime's dump to stderr when the signal arrives. This program uses queues only, no source and
 * no introspection call: linked with the static library, the object that reads the variable was
 * once left out by the linker (nothing referenced it), and the signal killed the child instead
 * (the CMake target and the pkg-config entry of the static library now pull it in).
 */
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>

#include "cq_test.h"

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

static void test_dump_signal(void)
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
        setenv("CQ_DUMP_SIGNAL", "SIGUSR2", 1);
        execl("/proc/self/exe", "test_dump_signal", "--dump-child", (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    char buf[65536];
    size_t len = 0;
    ssize_t n = read(out[0], buf, sizeof buf - 1); /* "ready" */
    CHECK(n > 0);
    /* the watch is registered by the reactor shortly after the pool starts: signal until the
     * dump shows up (a signal before that is counted by the watch's handler, or lost) */
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    uint64_t deadline = cq_test_now_ns() + (uint64_t)CQ_TEST_PATIENCE_NS;
    bool found = false;
    while (!found && cq_test_now_ns() < deadline) {
        kill(pid, SIGUSR2);
        struct pollfd p = {err[0], POLLIN, 0};
        poll(&p, 1, 200);
        while ((n = read(err[0], buf + len, sizeof buf - 1 - len)) > 0) {
            len += (size_t)n;
        }
        buf[len] = '\0';
        found = strstr(buf, "intro.hung-service") != NULL && strstr(buf, "---- end ----");
        if (len > sizeof buf / 2) {
            len = 0;
        }
    }
    CHECK(found);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    close(out[0]);
    close(err[0]);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--dump-child") == 0) {
        dump_child();
    }
    RUN(test_dump_signal);
    TEST_MAIN_END();
}
