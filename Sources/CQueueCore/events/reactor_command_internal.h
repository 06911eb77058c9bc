/*
 * The reactor's command set: what other threads ask the reactor thread to do with a source.
 * A sender ORs command flags into the source's `cmds` word and, if the word was empty, pushes
 * the source on the reactor's MPSC command list (taking a reference), then wakes the reactor;
 * the reactor takes each source's flags with one exchange and carries them out in
 * `run_commands` (reactor.c): UNREGISTER wins over everything, REGISTER comes before TIMER /
 * RESUMED. Timers are armed by the reactor alone: timer.c only recomputes a TIMER source's
 * schedule when told (CQ__CMD_TIMER / RESUMED) and reports the next deadline per clock from
 * cq__timers_run; the reactor sets its timerfd / epoll_pwait2 timeout from that.
 */
#ifndef CQ_REACTOR_COMMAND_INTERNAL_H
#define CQ_REACTOR_COMMAND_INTERNAL_H

#include <stdint.h>

#include "platform/atomic_internal.h"

struct cq_source_s;

enum {
    CQ__CMD_REGISTER = 1u << 0,   /* add the source's descriptor / signal / watch / timer */
    CQ__CMD_UNREGISTER = 1u << 1, /* remove it (after a cancel); the source is then released */
    CQ__CMD_TIMER = 1u << 2,      /* the schedule changed */
    CQ__CMD_RESUMED = 1u << 3,    /* a suspended timer may run again */
};

/* Sends `cmds` (flags above) for `s`. Any thread; never blocks. */
CQ_INTERNAL void cq__reactor_command(struct cq_source_s *s, uint32_t cmds);

/* Wakes the reactor thread (at most one write to its eventfd until it runs). Any thread,
 * async-signal-safe. */
CQ_INTERNAL void cq__reactor_wake(void);

#endif /* CQ_REACTOR_COMMAND_INTERNAL_H */
