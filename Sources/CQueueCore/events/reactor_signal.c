/*
 * SIGNAL sources: one signalfd for every watched signal, and a counting handler for signals
 * whose disposition was SIG_DFL or SIG_IGN (see reactor.c's header comment).
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

static void on_signal(int signo)
{
    int saved = errno;
    cq__add(&sig_count[signo], 1, relaxed);
    cq__reactor_wake();
    errno = saved;
}

void cq__reactor_signal_register(struct cq_source_s *s)
{
    int signo = (int)s->handle;
    bool first = R.sig_sources[signo] == NULL;
    cq__reactor_list_add(&R.sig_sources[signo], s);
    if (!first) {
        return;
    }
    sigaddset(&R.sigmask, signo);
    int fd = signalfd(R.sigfd, &R.sigmask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (fd >= 0 && R.sigfd < 0) {
        R.sigfd = fd;
        cq__reactor_epoll_add(fd, EPOLLIN, cq__reactor_slot_alloc(SLOT_SIGNAL, NULL));
    }
    struct sigaction old;
    sigaction(signo, NULL, &old);
    if (!(old.sa_flags & SA_SIGINFO) && (old.sa_handler == SIG_DFL || old.sa_handler == SIG_IGN)) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESTART;
        sigfillset(&sa.sa_mask);
        R.sig_saved[signo] = old;
        R.sig_handler_installed[signo] = sigaction(signo, &sa, NULL) == 0;
    }
}

void cq__reactor_signal_unregister(struct cq_source_s *s)
{
    int signo = (int)s->handle;
    cq__reactor_list_remove(&R.sig_sources[signo], s);
    if (R.sig_sources[signo]) {
        return;
    }
    sigdelset(&R.sigmask, signo);
    if (R.sigfd >= 0) {
        signalfd(R.sigfd, &R.sigmask, SFD_CLOEXEC | SFD_NONBLOCK);
    }
    if (R.sig_handler_installed[signo]) {
        sigaction(signo, &R.sig_saved[signo], NULL);
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
