/*
 * Per-thread state: the TLS block, main-thread detection, and the thread-exit hook that gives
 * the thread's free tasks back to the depot and unregisters it from RCU.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "inject_internal.h"
#include "task_internal.h"
#include "thread_internal.h"

__thread struct cq__tls cq__tls __attribute__((tls_model("initial-exec")));

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void on_thread_exit(void *arg)
{
    (void)arg;
    cq__inject_thread_exit();
    cq__task_cache_flush();
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
