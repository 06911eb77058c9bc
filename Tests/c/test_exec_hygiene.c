/*
 * Descriptor hygiene: a program exec'd while queues, timers and sources of every kind are live
 * inherits none of the runtime's descriptors (epoll, eventfd, timerfds, signalfd, inotify,
 * pidfds), whether it is exec'd from the main thread or from inside a task; and a child exec'd
 * from a task does not inherit the pool threads' blocked signals.
 *
 * The exec'd program is this test again with --report: it prints every descriptor it has
 * beyond stdin, stdout and stderr (with what it points to), then its blocked-signal mask.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>

#include "cq_test.h"

extern char **environ;

static int report(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL) {
        return 2;
    }
    int self = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] == '.' || fd <= 2 || fd == self) {
            continue;
        }
        char path[64], target[256] = "";
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(path, target, sizeof target - 1);
        target[n > 0 ? n : 0] = '\0';
        printf("fd %d -> %s\n", fd, target);
    }
    closedir(d);
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    while (status && fgets(line, sizeof line, status)) {
        if (strncmp(line, "SigBlk:", 7) == 0) {
            printf("%s", line);
        }
    }
    if (status) {
        fclose(status);
    }
    return 0;
}

/* Runs `argv[0] --report` with fork + exec (or posix_spawn) and returns what it printed. */
static void run_report(bool spawn, char *out, size_t size)
{
    int p[2];
    REQUIRE(pipe2(p, O_CLOEXEC) == 0);
    char *args[] = {"/proc/self/exe", "--report", NULL};
    pid_t pid;
    if (spawn) {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
        REQUIRE(posix_spawn(&pid, "/proc/self/exe", &fa, NULL, args, environ) == 0);
        posix_spawn_file_actions_destroy(&fa);
    } else {
        pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            dup2(p[1], STDOUT_FILENO);
            execv("/proc/self/exe", args);
            _exit(127);
        }
    }
    close(p[1]);
    size_t len = 0;
    ssize_t r;
    while (len < size - 1 && (r = read(p[0], out + len, size - 1 - len)) > 0) {
        len += (size_t)r;
    }
    out[len] = '\0';
    close(p[0]);
    int status;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The report lists no descriptor; `mask_clear`: and no blocked signal. */
static void check_report(const char *what, const char *out, bool mask_clear)
{
    bool fds = strstr(out, "fd ") != NULL;
    const char *blk = strstr(out, "SigBlk:");
    bool clear = blk && strspn(blk + 7, " \t0") == strcspn(blk + 7, "\n");
    if (fds || (mask_clear && !clear)) {
        fprintf(stderr, "%s: the exec'd program inherited:\n%s", what, out);
        test_failures++;
    } else {
        fprintf(stderr, "   %s: nothing inherited\n", what);
    }
}

/* ---- live runtime state ----------------------------------------------------------------------- */

static void noop(void *ctx)
{
    (void)ctx;
}

static void signal_sema(void *ctx)
{
    cq_semaphore_signal(ctx);
}

struct live {
    cq_source_t sources[6];
    int n;
    int pipe_fds[2];
    pid_t sleeper;
    char dir[64];
    int file;
};

static cq_source_t live_source(struct live *l, cq_source_type_t type, uintptr_t handle,
                               uintptr_t mask, cq_semaphore_t registered)
{
    cq_source_t s = cq_source_create(type, handle, mask, NULL);
    REQUIRE(s != NULL);
    cq_set_context(s, registered);
    cq_source_set_event_handler_f(s, noop);
    cq_source_set_registration_handler_f(s, signal_sema);
    cq_resume(s);
    WAIT_SEMA(registered);
    l->sources[l->n++] = s;
    return s;
}

static void live_start(struct live *l)
{
    memset(l, 0, sizeof *l);
    cq_semaphore_t registered = cq_semaphore_create(0);
    REQUIRE(pipe2(l->pipe_fds, O_CLOEXEC) == 0);
    l->sleeper = fork();
    REQUIRE(l->sleeper >= 0);
    if (l->sleeper == 0) {
        pause();
        _exit(0);
    }
    strcpy(l->dir, "/tmp/cq-hygiene-XXXXXX");
    REQUIRE(mkdtemp(l->dir) != NULL);
    char path[96];
    snprintf(path, sizeof path, "%s/f", l->dir);
    l->file = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    REQUIRE(l->file >= 0);

    cq_source_t t = live_source(l, CQ_SOURCE_TYPE_TIMER, 0, 0, registered);
    cq_source_set_timer(t, cq_time(CQ_TIME_NOW, 3600ll * 1000000000ll), CQ_TIME_FOREVER, 0);
    cq_source_t w = cq_source_create(CQ_SOURCE_TYPE_TIMER, 0, 0, NULL); /* wall clock */
    cq_source_set_timer(w, cq_walltime(NULL, 3600ll * 1000000000ll), CQ_TIME_FOREVER, 0);
    cq_source_set_event_handler_f(w, noop);
    cq_resume(w);
    l->sources[l->n++] = w;
    live_source(l, CQ_SOURCE_TYPE_SIGNAL, SIGUSR2, 0, registered);
    live_source(l, CQ_SOURCE_TYPE_READ, (uintptr_t)l->pipe_fds[0], 0, registered);
    live_source(l, CQ_SOURCE_TYPE_PROC, (uintptr_t)l->sleeper, CQ_PROC_EXIT, registered);
    live_source(l, CQ_SOURCE_TYPE_VNODE, (uintptr_t)l->file, CQ_VNODE_WRITE, registered);
    cq_after_f(cq_time(CQ_TIME_NOW, 3600ll * 1000000000ll), cq_get_global_queue(0, 0), NULL,
               noop);
    cq_release(registered);
}

static void live_stop(struct live *l)
{
    for (int i = 0; i < l->n; i++) {
        cq_source_cancel(l->sources[i]);
        cq_release(l->sources[i]);
    }
    kill(l->sleeper, SIGKILL);
    waitpid(l->sleeper, NULL, 0);
    char path[96];
    snprintf(path, sizeof path, "%s/f", l->dir);
    unlink(path);
    rmdir(l->dir);
    /* The pipe and the file stay open until the process ends: the cancel handlers (none set)
     * may still be pending, and the descriptors are ours (O_CLOEXEC) anyway. */
}

/* ---- tests ------------------------------------------------------------------------------------ */

static char task_out[4096];
static bool task_spawn;

static void exec_from_task(void *ctx)
{
    run_report(task_spawn, task_out, sizeof task_out);
    cq_semaphore_signal(ctx);
}

static void test_exec_with_live_runtime(void)
{
    struct live l;
    live_start(&l);
    char out[4096];

    run_report(false, out, sizeof out);
    check_report("fork+exec from the main thread", out, false);
    run_report(true, out, sizeof out);
    check_report("posix_spawn from the main thread", out, false);

    cq_queue_t q = cq_queue_create("exec-task", NULL);
    cq_semaphore_t done = cq_semaphore_create(0);
    task_spawn = false;
    cq_async_f(q, done, exec_from_task);
    WAIT_SEMA(done);
    check_report("fork+exec from a task", task_out, true);
    task_spawn = true;
    cq_async_f(q, done, exec_from_task);
    WAIT_SEMA(done);
    /* posix_spawn runs no fork handlers: the signal mask of the calling pool thread is the
     * caller's to set (POSIX_SPAWN_SETSIGMASK); only the descriptors are checked. */
    check_report("posix_spawn from a task", task_out, false);
    cq_release(done);
    cq_release(q);
    live_stop(&l);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--report") == 0) {
        return report();
    }
    /* Descriptors this test inherited (from ctest, a shell) are not the runtime's: keep them
     * out of the exec'd program's report. */
    for (int fd = 3; fd < 1024; fd++) {
        int flags = fcntl(fd, F_GETFD);
        if (flags >= 0) {
            fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
        }
    }
    RUN(test_exec_with_live_runtime);
    TEST_MAIN_END();
}
