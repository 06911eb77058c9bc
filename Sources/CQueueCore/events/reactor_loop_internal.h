/*
 * The reactor thread's state and helpers, shared by reactor.c (start-up, slots, descriptor
 * registrations, commands, the loop), reactor_signal.c (SIGNAL sources) and reactor_vnode.c
 * (VNODE sources, inotify). Everything here belongs to the reactor thread unless marked.
 * Not for use outside events/reactor*.c.
 */
#ifndef CQ_REACTOR_LOOP_INTERNAL_H
#define CQ_REACTOR_LOOP_INTERNAL_H

#include <signal.h>
#include <stdint.h>

#include "events/source_internal.h"
#include "platform/atomic_internal.h"
#include "scheduler/item_internal.h"

enum slot_kind {
    SLOT_FREE = 0,
    SLOT_WAKE,
    SLOT_TIMER_MONO,
    SLOT_TIMER_WALL,
    SLOT_SIGNAL,
    SLOT_INOTIFY,
    SLOT_FD,
    SLOT_PIDFD
};

struct slot {
    uint32_t gen;
    uint8_t kind;
    void *ptr; /* SLOT_FD: struct fdreg; SLOT_PIDFD: the source */
    uint32_t next_free;
};

/* All sources on one descriptor (epoll accepts each descriptor once). */
struct fdreg {
    int fd;
    uint32_t slot;
    uint32_t events;
    struct cq_source_s *readers;
    struct cq_source_s *writers;
};

/* All sources on one inotify watch. */
struct watch {
    int wd;
    struct cq_source_s *sources;
};

struct cq__reactor_state {
    int epfd, wakefd, tfd[2], sigfd, inofd;
    _Atomic uint32_t wake_flag;
    int error; /* start-up failure (errno), 0 if running */
    /* commands */
    struct cq__item *_Atomic cmd_tail CQ_CACHE_ALIGNED;
    struct cq__item *_Atomic cmd_head;
    /* reactor thread only */
    struct slot *slots;
    uint32_t nslots, free_slot;
    struct fdreg **fds; /* indexed by descriptor */
    int nfds;
    struct watch **watches; /* indexed by watch descriptor */
    int nwatches;
    struct cq_source_s *sig_sources[_NSIG];
    struct sigaction sig_saved[_NSIG];
    bool sig_handler_installed[_NSIG];
    sigset_t sigmask;
    int64_t armed[2];
    bool pwait2; /* epoll_pwait2 works: the monotonic timerfd is not needed */
};
CQ_INTERNAL extern struct cq__reactor_state cq__reactor;
#define R cq__reactor

/* reactor.c: the slot table (epoll data = generation << 32 | slot), epoll registration, the
 * per-key source lists, descriptor-indexed tables. */
CQ_INTERNAL uint32_t cq__reactor_slot_alloc(enum slot_kind kind, void *ptr);
CQ_INTERNAL void cq__reactor_slot_free(uint32_t i);
CQ_INTERNAL uint64_t cq__reactor_slot_data(uint32_t i);
CQ_INTERNAL int cq__reactor_epoll_add(int fd, uint32_t events, uint32_t slot);
CQ_INTERNAL void *cq__reactor_table_fit(void *table, int *len, int index, const char *what);
CQ_INTERNAL void cq__reactor_list_add(struct cq_source_s **list, struct cq_source_s *s);
CQ_INTERNAL void cq__reactor_list_remove(struct cq_source_s **list, struct cq_source_s *s);

/* reactor_signal.c: SIGNAL sources on the signalfd; signals counted by the handler (for
 * signals delivered to threads that do not block them) are delivered by
 * cq__reactor_signals_counted, once per loop. */
CQ_INTERNAL void cq__reactor_signal_register(struct cq_source_s *s);
CQ_INTERNAL void cq__reactor_signal_unregister(struct cq_source_s *s);
CQ_INTERNAL void cq__reactor_read_signalfd(void);
CQ_INTERNAL void cq__reactor_signals_counted(void);
CQ_INTERNAL void cq__reactor_signal_counts_reset(void); /* fork child */
/* The disposition signal `signo` had before the runtime's handler, unless the application
 * has installed another since (last source gone; fork child). */
CQ_INTERNAL void cq__reactor_signal_restore(int signo);

/* reactor_vnode.c: VNODE sources, one inotify watch per inode shared by its sources. */
CQ_INTERNAL void cq__reactor_watch_register(struct cq_source_s *s);
CQ_INTERNAL void cq__reactor_watch_unregister(struct cq_source_s *s);
CQ_INTERNAL void cq__reactor_read_inotify(void);

#endif /* CQ_REACTOR_LOOP_INTERNAL_H */
