/*
 * Per-thread state: the TLS block, main-thread detection, and the thread-exit hook, which hands
 * the thread's inject chunks to the consumers and gives its free tasks back to the depot. (RCU
 * needs nothing here: liburcu-bp registers a thread on its first read-side section and
 * unregisters it when it exits, see rcu_internal.h.)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <signal.h>

#include "platform/fork_internal.h"
#include "scheduler/inject_internal.h"
#include "scheduler/task_internal.h"
#include "scheduler/thread_internal.h"

__thread struct cq__tls cq__tls __attribute__((tls_model("initial-exec")));

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void on_thread_exit(void *arg)
{
    (void)arg;
    cq__inject_thread_exit();
    cq__task_cache_flush();
    /* Armed again by the next use: the program's own thread-exit code (a key destructor of a
     * key made after ours, run later in the same pass) may use the runtime again, and it set
     * the key anew, so glibc runs this once more. It stayed armed, and each such thread left
     * its inject chunk and its cached tasks behind: ~9 KB per thread, for good. */
    cq__tls.exit_hook = 0;
}

static void make_exit_key(void)
{
    pthread_key_create(&exit_key, on_thread_exit);
}

void cq__thread_exit_hook(void)
{
    if (!cq__tls.exit_hook) {
        cq__tls.exit_hook = 1;
        pthread_once(&exit_key_once, make_exit_key);
        pthread_setspecific(exit_key, (void *)1); /* non-NULL: the destructor runs */
    }
}

bool cq__is_main_thread(void)
{
    if (cq__unlikely(cq__tls.main_thread == 0)) {
        cq__tls.main_thread = syscall(SYS_gettid) == getpid() ? 1 : 2;
    }
    return cq__tls.main_thread == 1;
}

/* ---- fork() ------------------------------------------------------------------------------ */

static bool forking_pool_thread; /* written and read by the forking thread only */

static void thread_fork_prepare(void)
{
    cq__is_main_thread(); /* learn it now: in the child, every thread's tid is the pid */
    forking_pool_thread = cq__tls.thread != NULL;
}

/* Last in the child (the main queue's hook above asks cq__is_main_thread first). */
static void thread_fork_child(void)
{
    cq__tls.main_thread = 0; /* tid == pid for the child's only thread */
    /* The forking thread may be a runtime thread, which blocks every asynchronous signal; a
     * child that execs must not inherit that mask. */
    if (forking_pool_thread) {
        sigset_t none;
        sigemptyset(&none);
        pthread_sigmask(SIG_SETMASK, &none, NULL);
    }
}
CQ__FORK_REGISTER(thread, CQ__FORK_RANK_THREAD, thread_fork_prepare, NULL, thread_fork_child)
