/*
 * The reactor's entry points for source.c and timer.c (see reactor.c).
 */
#ifndef CQ_REACTOR_INTERNAL_H
#define CQ_REACTOR_INTERNAL_H

#include "platform/atomic_internal.h"
#include "platform/fork_internal.h"

/* Whether the calling thread is the reactor thread. */
CQ_INTERNAL bool cq__reactor_is_current(void);

/* Starts the reactor thread once; returns 0, or the errno that stopped it. */
CQ_INTERNAL int cq__reactor_ensure_started(void);

/* Adds an inotify watch for the file open as `fd` (VNODE mask); returns the watch descriptor,
 * or -1 with errno set. Any thread. */
CQ_INTERNAL int cq__vnode_watch(int fd, uintptr_t mask);

/* fork(): reactor.c registers these (platform/fork_internal.h). */
CQ__FORK_HOOKS(reactor)

#endif /* CQ_REACTOR_INTERNAL_H */
