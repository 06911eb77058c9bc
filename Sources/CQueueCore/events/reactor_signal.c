/*
 * SIGNAL sources: one signalfd for every watched signal, and a counting handler (see
 * reactor.c's header comment): on its own for signals whose disposition was SIG_DFL or
 * SIG_IGN, in front of the application's handler otherwise.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "events/reactor_command_internal.h"
#include "events/reactor_internal.h"
#include "events/reactor_loop_internal.h"

static _Atomic uint32_t sig_count[_NSIG]; /* signals counted by the handler */

static void count_signal(int signo)
{
    cq__add(&sig_count[signo], 1, relaxed);
    cq__reactor_wake();
}

static void on_signal(int signo)
{
    int saved = errno;
    count_signal(signo);
    errno = saved;
}

/*
 * In front of an application's handler: counts the signal for the sources, then calls that
 * handler as the kernel would have. Left alone, the application's handler took the signals
 * delivered to the threads that do not block it (the main thread, usually) and the signalfd
 * the rest: `kill` of the process reached the source in 1 run of 3. libdispatch replaces the
 * application's handler for good; Darwin reports the signal to the source and runs the handler
 * too, which this does. Such a signal is not read from the signalfd: the reactor's read raced
 * the kernel's delivery to the thread it had chosen, and won 1 time in 3, when the handler
 * did not run. So the source sees the signals the handler sees. R.sig_saved[signo] is written
 * only while this is not installed.
 */
static void on_signal_chained(int signo, siginfo_t *info, void *ucontext)
{
    int saved = errno;
    count_signal(signo);
    const struct sigaction *app = &R.sig_saved[signo];
    errno = saved;
    if (app->sa_flags & SA_SIGINFO) {
        app->sa_sigaction(signo, info, ucontext);
    } else if (app->sa_handler != SIG_DFL && app->sa_handler != SIG_IGN) {
        app->sa_handler(signo);
    }
}

/* The signalfd reads the signals of R.sigmask from now on. */
static void signalfd_update(void)
{
    int fd = signalfd(R.sigfd, &R.sigmask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (fd >= 0 && R.sigfd < 0) {
        R.sigfd = fd;
        cq__reactor_epoll_add(fd, EPOLLIN, cq__reactor_slot_alloc(SLOT_SIGNAL, NULL));
    }
}

void cq__reactor_signal_register(struct cq_source_s *s)
{
    int signo = (int)s->handle;
    bool first = R.sig_sources[signo] == NULL;
    cq__reactor_list_add(&R.sig_sources[signo], s);
    if (!first) {
        return;
    }
    struct sigaction old;
    if (sigaction(signo, NULL, &old) != 0) {
        return;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    if (!(old.sa_flags & SA_SIGINFO) && (old.sa_handler == SIG_DFL || old.sa_handler == SIG_IGN)) {
        sigaddset(&R.sigmask, signo);
        signalfd_update();
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESTART;
        sigfillset(&sa.sa_mask);
    } else {
        /* The application's mask and flags (SA_RESTART, SA_ONSTACK, SA_NODEFER, a one-shot
         * SA_RESETHAND) stay in force. */
        sa.sa_sigaction = on_signal_chained;
        sa.sa_flags = old.sa_flags | SA_SIGINFO;
        sa.sa_mask = old.sa_mask;
    }
    R.sig_saved[signo] = old;
    R.sig_handler_installed[signo] = sigaction(signo, &sa, NULL) == 0;
}

void cq__reactor_signal_unregister(struct cq_source_s *s)
{
    int signo = (int)s->handle;
    cq__reactor_list_remove(&R.sig_sources[signo], s);
    if (R.sig_sources[signo]) {
        return;
    }
    if (sigismember(&R.sigmask, signo) == 1) {
        sigdelset(&R.sigmask, signo);
        if (R.sigfd >= 0) {
            signalfd(R.sigfd, &R.sigmask, SFD_CLOEXEC | SFD_NONBLOCK);
        }
    }
    cq__reactor_signal_restore(signo);
}

void cq__reactor_signal_restore(int signo)
{
    if (R.sig_handler_installed[signo]) {
        /* Unless the application installed a handler of its own since (or a one-shot
         * handler's first signal reset it): that one stays. */
        struct sigaction now;
        if (sigaction(signo, NULL, &now) == 0 &&
            ((now.sa_flags & SA_SIGINFO) ? now.sa_sigaction == on_signal_chained
                                         : now.sa_handler == on_signal)) {
            sigaction(signo, &R.sig_saved[signo], NULL);
        }
        R.sig_handler_installed[signo] = false;
    }
}

static void signals_delivered(int signo, uint32_t n)
{
    if (n == 0 || signo <= 0 || signo >= _NSIG) {
        return;
    }
    if (signo == cq__dump_signo) {
        cq__introspect_dump_signal(); /* here, on the reactor: workers may all be stuck */
    }
    for (struct cq_source_s *s = R.sig_sources[signo]; s; s = s->next_on_key) {
        cq__source_event(s, n, false);
    }
}

void cq__reactor_read_signalfd(void)
{
    struct signalfd_siginfo info[16];
    ssize_t n;
    while ((n = read(R.sigfd, info, sizeof info)) > 0) {
        for (size_t i = 0; i < (size_t)n / sizeof info[0]; i++) {
            signals_delivered((int)info[i].ssi_signo, 1);
        }
    }
}

void cq__reactor_signals_counted(void)
{
    for (int signo = 1; signo < _NSIG; signo++) {
        if (R.sig_sources[signo] && cq__load(&sig_count[signo], relaxed)) {
            signals_delivered(signo, cq__xchg(&sig_count[signo], 0, relaxed));
        }
    }
}

void cq__reactor_signal_counts_reset(void)
{
    for (int signo = 0; signo < _NSIG; signo++) {
        cq__store(&sig_count[signo], 0, relaxed);
    }
}
