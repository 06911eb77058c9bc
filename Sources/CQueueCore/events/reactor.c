/*
 * The reactor: one thread ("cq-reactor") on one epoll instance.
 *
 *   eventfd   wake-ups, coalesced behind an atomic flag: a waker writes only when it sets the
 *             flag, the reactor clears it before it looks at its commands.
 *   timers    monotonic deadlines are epoll_pwait2's nanosecond timeout (one system call per
 *             wait); wall-clock deadlines use a timerfd on CLOCK_REALTIME with
 *             TFD_TIMER_CANCEL_ON_SET (a clock change wakes us), absolute, re-armed only when the
 *             earliest deadline changes. Without epoll_pwait2 (Linux < 5.11) a monotonic timerfd
 *             does the same job (timer.c keeps the sources' deadlines; after.c those of
 *             cq_after_f, whose monotonic windows a task on a worker fires: the reactor only
 *             starts that task and watches it).
 *   signalfd  the signals of SIGNAL sources. The runtime's threads block them; a counting
 *             handler is installed (an ignored signal is discarded before signalfd could see
 *             it), so signals delivered to application threads are counted too: alone if the
 *             disposition was SIG_DFL or SIG_IGN, in front of the application's handler
 *             otherwise, which still runs.
 *   inotify   VNODE sources; one watch per inode, shared by the sources on it.
 *   pidfds    PROC sources (exit).
 *   other fds READ/WRITE sources, edge-triggered; after each handler the source re-checks
 *             readiness with poll(), which keeps level-triggered behaviour without re-arming.
 * epoll's data carries (generation << 32 | slot) into a slot table, so an event that was already
 * collected for a descriptor that has since been unregistered is recognised and dropped.
 *
 * Sources talk to the reactor with commands (flags on the source, the source pushed on an MPSC
 * list when the flags go from none to some). The reactor alone touches registrations; it makes
 * no wake-ups while nothing is due: epoll_wait has no timeout.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "events/reactor_command_internal.h"
#include "events/reactor_internal.h"
#include "events/reactor_loop_internal.h"
#include "events/source_internal.h"
#include "platform/diag_internal.h"
#include "platform/fork_internal.h"
#include "scheduler/pool_internal.h"
#include "scheduler/task_internal.h"

struct cq__reactor_state cq__reactor = {
    .epfd = -1, .wakefd = -1, .tfd = {-1, -1}, .sigfd = -1, .inofd = -1};

static _Atomic bool started;

/* ---- waking ------------------------------------------------------------------------------ */

void cq__reactor_wake(void)
{
    /* seq_cst: our command (or signal count) is published before the flag is read; pairs with
     * the reactor clearing the flag before it reads its commands */
    if (cq__xchg(&R.wake_flag, 1, seq_cst) == 0) {
        uint64_t one = 1;
        ssize_t r = write(R.wakefd, &one, sizeof one); /* async-signal-safe */
        (void)r;
    }
}

void cq__reactor_command(struct cq_source_s *s, uint32_t cmds)
{
    /* pairs with the reactor's acq_rel exchange of cmds in run_commands */
    if (cq__or(&s->cmds, cmds, acq_rel) == 0) {
        cq__ref_retain(&s->obj); /* while on the command list */
        cq__mpsc_push(&R.cmd_tail, &R.cmd_head, &s->cmd_item, &s->cmd_item);
    }
    cq__reactor_wake();
}

/* ---- slots ----------------------------------------------------------------------------- */

uint32_t cq__reactor_slot_alloc(enum slot_kind kind, void *ptr)
{
    if (R.free_slot == UINT32_MAX) {
        uint32_t n = R.nslots ? R.nslots * 2 : 64;
        struct slot *s = realloc(R.slots, n * sizeof *s);
        if (s == NULL) {
            cq__crash("out of memory registering a source");
        }
        for (uint32_t i = R.nslots; i < n; i++) {
            s[i] = (struct slot){
                .gen = 1, .kind = SLOT_FREE, .next_free = i + 1 < n ? i + 1 : UINT32_MAX};
        }
        R.slots = s;
        R.free_slot = R.nslots;
        R.nslots = n;
    }
    uint32_t i = R.free_slot;
    R.free_slot = R.slots[i].next_free;
    R.slots[i].kind = (uint8_t)kind;
    R.slots[i].ptr = ptr;
    return i;
}

void cq__reactor_slot_free(uint32_t i)
{
    R.slots[i].gen++; /* events already collected for it no longer match */
    R.slots[i].kind = SLOT_FREE;
    R.slots[i].ptr = NULL;
    R.slots[i].next_free = R.free_slot;
    R.free_slot = i;
}

uint64_t cq__reactor_slot_data(uint32_t i)
{
    return ((uint64_t)R.slots[i].gen << 32) | i;
}

int cq__reactor_epoll_add(int fd, uint32_t events, uint32_t slot)
{
    struct epoll_event ev = {.events = events, .data.u64 = cq__reactor_slot_data(slot)};
    return epoll_ctl(R.epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* ---- start-up ------------------------------------------------------------------------------ */

static void *reactor_main(void *arg);

/* Closes whatever a failed start-up opened, so that a later try starts clean. */
static void reactor_cleanup(void)
{
    int *fds[] = {&R.epfd, &R.wakefd, &R.tfd[0], &R.tfd[1], &R.inofd};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) {
        if (*fds[i] >= 0) {
            close(*fds[i]);
            *fds[i] = -1;
        }
    }
    free(R.slots);
    R.slots = NULL;
    R.nslots = 0;
}

static void reactor_start(void)
{
    R.error = 0;
    R.free_slot = UINT32_MAX;
    R.armed[0] = R.armed[1] = INT64_MAX;
    R.pwait2 = true;
    sigemptyset(&R.sigmask);
    R.epfd = epoll_create1(EPOLL_CLOEXEC);
    R.wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    R.tfd[0] = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    R.tfd[1] = timerfd_create(CLOCK_REALTIME, TFD_CLOEXEC | TFD_NONBLOCK);
    R.inofd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (R.epfd < 0 || R.wakefd < 0 || R.tfd[0] < 0 || R.tfd[1] < 0 || R.inofd < 0 ||
        cq__reactor_epoll_add(R.wakefd, EPOLLIN, cq__reactor_slot_alloc(SLOT_WAKE, NULL)) < 0 ||
        cq__reactor_epoll_add(R.tfd[0], EPOLLIN, cq__reactor_slot_alloc(SLOT_TIMER_MONO, NULL)) <
            0 ||
        cq__reactor_epoll_add(R.tfd[1], EPOLLIN, cq__reactor_slot_alloc(SLOT_TIMER_WALL, NULL)) <
            0 ||
        cq__reactor_epoll_add(R.inofd, EPOLLIN, cq__reactor_slot_alloc(SLOT_INOTIFY, NULL)) < 0) {
        R.error = errno ? errno : EMFILE;
        static atomic_bool reported;
        cq__report_once(&reported,
                        "cannot start the reactor (%s): sources cannot be created "
                        "and cq_after_f functions wait until it can start",
                        strerror(R.error));
        reactor_cleanup();
        return;
    }
    /* Wakes that came while no reactor ran (cq_after_f waits for one) set the flag and wrote
     * to no eventfd: clear it, or no later wake would write. acq_rel: what those wakers
     * published before their exchange is visible here, and so to the new thread, which runs its
     * commands and timers first thing. Pairs with the wakers' seq_cst exchange in cq__reactor_wake
     */
    cq__xchg(&R.wake_flag, 0, acq_rel);
    pthread_t thread;
    int err = cq__thread_start(&thread, reactor_main, NULL);
    if (err) {
        R.error = err;
        static atomic_bool reported;
        cq__report_once(&reported, "cannot start the reactor thread (%s)", strerror(err));
        reactor_cleanup();
    }
}

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

int cq__reactor_ensure_started(void)
{
    /* acquire: pairs with the release store below; the reactor's descriptors are set up */
    if (cq__likely(cq__load(&started, acquire))) {
        return 0;
    }
    cq__fork_handlers_install();
    pthread_mutex_lock(&start_lock);
    if (!cq__load(&started, relaxed)) {
        reactor_start(); /* on failure (descriptors exhausted, ...) the next call tries again */
        if (R.error == 0) {
            /* pairs with the acquire load of `started` at the top of this function */
            cq__store(&started, true, release);
        }
    }
    int err = R.error;
    pthread_mutex_unlock(&start_lock);
    return err;
}

void cq__reactor_fork_prepare(void)
{
    pthread_mutex_lock(&start_lock);
}

void cq__reactor_fork_parent(void)
{
    pthread_mutex_unlock(&start_lock);
}

/*
 * The child has no reactor thread, and the parent's descriptors are shared kernel objects the
 * parent's reactor still uses: close them and start over on the next use. The parent's
 * registrations are abandoned with its sources (fork.c). Signal dispositions the reactor
 * changed go back to what they were, so that an ignored signal stays ignored across an exec.
 */
void cq__reactor_fork_child(void)
{
    pthread_mutex_unlock(&start_lock);
    for (uint32_t i = 0; i < R.nslots; i++) {
        if (R.slots[i].kind == SLOT_PIDFD) {
            close(((struct cq_source_s *)R.slots[i].ptr)->fd); /* the reactor's, see do_register */
        }
    }
    for (int signo = 1; signo < _NSIG; signo++) {
        cq__reactor_signal_restore(signo);
    }
    if (R.sigfd >= 0) {
        close(R.sigfd);
    }
    reactor_cleanup(); /* epoll, eventfd, timerfds, inotify; the slot table */
    R.sigfd = -1;
    R.fds = NULL;
    R.nfds = 0;
    R.watches = NULL;
    R.nwatches = 0;
    memset(R.sig_sources, 0, sizeof R.sig_sources);
    memset(R.sig_handler_installed, 0, sizeof R.sig_handler_installed);
    cq__store(&R.wake_flag, 0, relaxed);
    cq__store(&R.cmd_tail, NULL, relaxed);
    cq__store(&R.cmd_head, NULL, relaxed);
    cq__reactor_signal_counts_reset();
    cq__store(&started, false, relaxed);
}

/* ---- registrations (reactor thread) ------------------------------------------------------- */

/* Grows a table of pointers indexed by a descriptor so that `index` fits; new entries NULL. */
void *cq__reactor_table_fit(void *table, int *len, int index, const char *what)
{
    if (index < *len) {
        return table;
    }
    int n = *len ? *len : 64;
    while (n <= index) {
        n *= 2;
    }
    void **t = realloc(table, (size_t)n * sizeof *t);
    if (t == NULL) {
        cq__crash("out of memory registering %s", what);
    }
    memset(t + *len, 0, (size_t)(n - *len) * sizeof *t);
    *len = n;
    return t;
}

static struct fdreg *fdreg_get(int fd)
{
    R.fds = cq__reactor_table_fit(R.fds, &R.nfds, fd, "a descriptor");
    if (R.fds[fd] == NULL) {
        struct fdreg *r = calloc(1, sizeof *r);
        if (r == NULL) {
            cq__crash("out of memory registering a descriptor");
        }
        r->fd = fd;
        r->slot = UINT32_MAX;
        R.fds[fd] = r;
    }
    return R.fds[fd];
}

void cq__reactor_list_add(struct cq_source_s **list, struct cq_source_s *s)
{
    s->next_on_key = *list;
    *list = s;
}

void cq__reactor_list_remove(struct cq_source_s **list, struct cq_source_s *s)
{
    for (struct cq_source_s **p = list; *p; p = &(*p)->next_on_key) {
        if (*p == s) {
            *p = s->next_on_key;
            s->next_on_key = NULL;
            return;
        }
    }
}

/* Updates epoll for a descriptor after its readers or writers changed. */
static void fdreg_update(struct fdreg *r)
{
    uint32_t want = EPOLLET | (r->readers ? EPOLLIN | EPOLLRDHUP : 0) | (r->writers ? EPOLLOUT : 0);
    if (!r->readers && !r->writers) {
        if (r->slot != UINT32_MAX) {
            epoll_ctl(R.epfd, EPOLL_CTL_DEL, r->fd, NULL); /* fails harmlessly if closed */
            cq__reactor_slot_free(r->slot);
        }
        R.fds[r->fd] = NULL;
        free(r);
        return;
    }
    if (r->slot == UINT32_MAX) {
        r->slot = cq__reactor_slot_alloc(SLOT_FD, r);
        if (cq__reactor_epoll_add(r->fd, want, r->slot) < 0) {
            /* EPERM: a regular file or a directory, which epoll does not poll: always ready
             * (each handler's readiness check fires the next one). Other errors: the descriptor
             * went away; the source simply never fires. */
            cq__reactor_slot_free(r->slot);
            r->slot = UINT32_MAX;
            r->events = 0;
            for (struct cq_source_s *s = r->readers; s; s = s->next_on_key) {
                cq__source_event(s, 0, errno == EPERM);
            }
            for (struct cq_source_s *s = r->writers; s; s = s->next_on_key) {
                cq__source_event(s, 0, errno == EPERM);
            }
            return;
        }
    } else if (want != r->events) {
        struct epoll_event ev = {.events = want, .data.u64 = cq__reactor_slot_data(r->slot)};
        if (epoll_ctl(R.epfd, EPOLL_CTL_MOD, r->fd, &ev) < 0 && errno == ENOENT) {
            /* The descriptor was closed under its sources (epoll dropped it) and the number
             * now names another file: register that one. */
            epoll_ctl(R.epfd, EPOLL_CTL_ADD, r->fd, &ev);
        }
    }
    r->events = want;
}

static void do_register(struct cq_source_s *s)
{
    s->registered = true;
    switch (s->type->kind) {
    case CQ_SOURCE_KIND_READ:
    case CQ_SOURCE_KIND_WRITE: {
        struct fdreg *r = fdreg_get((int)s->handle);
        cq__reactor_list_add(s->type->kind == CQ_SOURCE_KIND_READ ? &r->readers : &r->writers, s);
        r->events = 0; /* re-state the registration: it may be stale (see fdreg_update) */
        fdreg_update(r);
        break;
    }
    case CQ_SOURCE_KIND_PROC:
        s->slot = cq__reactor_slot_alloc(SLOT_PIDFD, s);
        if (cq__reactor_epoll_add(s->fd, EPOLLIN, s->slot) < 0) {
            cq__reactor_slot_free(s->slot);
            s->slot = UINT32_MAX;
        }
        break;
    case CQ_SOURCE_KIND_SIGNAL:
        cq__reactor_signal_register(s);
        break;
    case CQ_SOURCE_KIND_VNODE:
        cq__reactor_watch_register(s);
        break;
    case CQ_SOURCE_KIND_TIMER:
        cq__timer_apply(s);
        break;
    default:
        break;
    }
}

static void do_unregister(struct cq_source_s *s)
{
    s->registered = false;
    switch (s->type->kind) {
    case CQ_SOURCE_KIND_READ:
    case CQ_SOURCE_KIND_WRITE: {
        int fd = (int)s->handle;
        struct fdreg *r = fd < R.nfds ? R.fds[fd] : NULL;
        if (r) {
            cq__reactor_list_remove(
                s->type->kind == CQ_SOURCE_KIND_READ ? &r->readers : &r->writers, s);
            fdreg_update(r);
        }
        break;
    }
    case CQ_SOURCE_KIND_PROC:
        if (s->slot != UINT32_MAX) {
            epoll_ctl(R.epfd, EPOLL_CTL_DEL, s->fd, NULL);
            cq__reactor_slot_free(s->slot);
            s->slot = UINT32_MAX;
        }
        close(s->fd);
        s->fd = -1;
        break;
    case CQ_SOURCE_KIND_SIGNAL:
        cq__reactor_signal_unregister(s);
        break;
    case CQ_SOURCE_KIND_VNODE:
        cq__reactor_watch_unregister(s);
        break;
    case CQ_SOURCE_KIND_TIMER:
        cq__timer_remove(s);
        break;
    default:
        break;
    }
    cq__source_unregistered(s);
}

/* The most commands carried out before the due timers run: a program that registers sources
 * faster than the reactor handles them (a million one-shot timers created flat out) kept it in
 * here, and no timer fired for half a second while the heap grew to 750k timers (each one then
 * costlier to remove). The loop runs the timers, then goes on with the commands; it waits for
 * events only once they are done (an epoll pass between batches had a ready descriptor
 * reported again to every source registered on it so far: 100k READ sources on one pipe took
 * 19 s instead of 0.3 s). */
#define COMMANDS_PER_TURN 512

/* Carries out the sources' commands; true if some are left for the next turn. */
static bool run_commands(void)
{
    struct cq__item *it;
    for (int budget = COMMANDS_PER_TURN;; budget--) {
        if (budget == 0) {
            return true;
        }
        it = cq__mpsc_pop(&R.cmd_tail, &R.cmd_head);
        if (it == NULL) {
            return false;
        }
        struct cq_source_s *s =
            (struct cq_source_s *)((char *)it - offsetof(struct cq_source_s, cmd_item));
        /* acq_rel: pairs with the command's or; from here a new command pushes s again */
        uint32_t cmds = cq__xchg(&s->cmds, 0, acq_rel);
        if (cmds & CQ__CMD_UNREGISTER) {
            if (cmds & CQ__CMD_REGISTER) {
                cq__source_unregistered(s); /* never registered */
            } else {
                do_unregister(s);
            }
        } else {
            if (cmds & CQ__CMD_REGISTER) {
                do_register(s);
                cq__source_registered(s);
            }
            if (cmds & (CQ__CMD_TIMER | CQ__CMD_RESUMED)) {
                cq__timer_apply(s);
            }
        }
        cq__ref_release(&s->obj); /* the command list's reference */
    }
}

/* ---- events (reactor thread) ---------------------------------------------------------------- */

static void fd_event(struct fdreg *r, uint32_t ev)
{
    bool hup = ev & (EPOLLHUP | EPOLLERR | EPOLLRDHUP);
    if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) {
        for (struct cq_source_s *s = r->readers; s; s = s->next_on_key) {
            cq__source_event(s, 0, true);
        }
    }
    if (ev & EPOLLOUT || (hup && (ev & (EPOLLHUP | EPOLLERR)))) {
        for (struct cq_source_s *s = r->writers; s; s = s->next_on_key) {
            cq__source_event(s, 0, true);
        }
    }
}

static void arm(int c, int64_t next)
{
    if (next == R.armed[c]) {
        return;
    }
    R.armed[c] = next;
    struct itimerspec its = {{0, 0}, {0, 0}};
    if (next != INT64_MAX) {
        its.it_value.tv_sec = next / 1000000000;
        its.it_value.tv_nsec = next % 1000000000;
        if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) {
            its.it_value.tv_nsec = 1; /* 0 would disarm */
        }
    }
    int flags = TFD_TIMER_ABSTIME | (c == 1 ? TFD_TIMER_CANCEL_ON_SET : 0);
    timerfd_settime(R.tfd[c], flags, &its, NULL);
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static _Thread_local bool on_reactor_thread;

bool cq__reactor_is_current(void)
{
    return on_reactor_thread;
}

static void *reactor_main(void *arg)
{
    (void)arg;
    on_reactor_thread = true;
    pthread_setname_np(pthread_self(), "cq-reactor");
    cq__thread_set_slice(true);    /* it delivers the program's events (worker.c) */
    prctl(PR_SET_TIMERSLACK, 1UL); /* timerfd expiries on time, not 50 us late */
    struct epoll_event events[64];
    for (;;) {
        bool more = run_commands();
        cq__reactor_signals_counted();
        int64_t next[2];
        cq__timers_run(&next[0], &next[1]);
        if (more) {
            continue; /* the commands left, before any wait for events (see run_commands) */
        }
        arm(1, next[1]);
        /* The tasks left in our cache (we allocate them when we fire windows, and never free
         * any) come from whichever arenas the last refill held: before we sleep, they go to
         * the depot, where the trimmer sees them, or they would keep those arenas mapped. A
         * no-op when the cache is empty, as it is on most turns. */
        cq__task_cache_flush();
        int n;
        if (R.pwait2) {
            /* The monotonic deadline is epoll_pwait2's own timeout: one system call per wait,
             * where re-arming a timerfd would add a second. */
            struct timespec timeout, *tp = NULL;
            if (next[0] != INT64_MAX) {
                int64_t left = next[0] - mono_ns();
                if (left < 0) {
                    left = 0;
                }
                timeout.tv_sec = left / 1000000000;
                timeout.tv_nsec = left % 1000000000;
                tp = &timeout;
            }
            n = epoll_pwait2(R.epfd, events, 64, tp, NULL);
            if (n < 0 && errno == ENOSYS) {
                R.pwait2 = false; /* an old kernel: the timerfd does it */
                continue;
            }
        } else {
            arm(0, next[0]);
            n = epoll_wait(R.epfd, events, 64, -1);
        }
        for (int i = 0; i < n; i++) {
            uint32_t idx = (uint32_t)events[i].data.u64;
            uint32_t gen = (uint32_t)(events[i].data.u64 >> 32);
            if (idx >= R.nslots || R.slots[idx].gen != gen) {
                continue; /* stale: unregistered after epoll_wait collected it */
            }
            struct slot *sl = &R.slots[idx];
            switch (sl->kind) {
            case SLOT_WAKE: {
                uint64_t v;
                ssize_t r = read(R.wakefd, &v, sizeof v);
                (void)r;
                /* seq_cst: pairs with the wakers' exchange; commands published before a waker
                 * found the flag set are seen by the next run_commands */
                cq__store(&R.wake_flag, 0, seq_cst);
                break;
            }
            case SLOT_TIMER_MONO:
            case SLOT_TIMER_WALL:
                /* Expired (or, for the wall clock, the clock was set). No read: re-arming (or
                 * disarming) it below resets its expiry count, and saves a system call. */
                R.armed[sl->kind == SLOT_TIMER_MONO ? 0 : 1] = INT64_MIN;
                break;
            case SLOT_SIGNAL:
                cq__reactor_read_signalfd();
                break;
            case SLOT_INOTIFY:
                cq__reactor_read_inotify();
                break;
            case SLOT_FD:
                fd_event(sl->ptr, events[i].events);
                break;
            case SLOT_PIDFD: {
                struct cq_source_s *s = sl->ptr;
                if (s->mask & CQ_PROC_EXIT) {
                    cq__source_event(s, CQ_PROC_EXIT, false);
                }
                epoll_ctl(R.epfd, EPOLL_CTL_DEL, s->fd, NULL); /* it exits once */
                break;
            }
            default:
                break;
            }
        }
    }
    return NULL;
}

CQ__FORK_REGISTER(reactor, CQ__FORK_RANK_REACTOR, cq__reactor_fork_prepare, cq__reactor_fork_parent,
                  cq__reactor_fork_child)
