/*
 * Dispatch sources (Sources/CQueueCore/events/source.c, source_internal.h): the state word protocol
 * of the handler item against event merges, suspend/resume and cancel, and the REGISTER /
 * UNREGISTER handshake with the reactor (events/reactor.c: cq__reactor_command, run_commands,
 * do_register, do_unregister), checked exhaustively by spin. One source. Each C atomic
 * operation is one atomic Promela step, interleaved with sequential consistency (weak-memory
 * orderings are not modelled: see docs/model-checking.md). Comments name the C function of
 * each step and its file (source.c unless said otherwise; no line numbers, which go stale). A few neighbouring steps are folded
 * into one where no other thread can tell (each place says why): a reference taken just
 * before the item it belongs to is published, resume's CAS loop (its computation is local),
 * the handlers' calls, a reference released just after a step of the same thread.
 *
 * Two scenarios:
 *   default   a DATA_ADD source (NO_REACTOR: registration and unregistration are immediate).
 *             Two mergers (cq_source_merge_data: one merges twice, one once), the thread that
 *             does the first cq_resume, two pool workers that run the handler item when it
 *             comes off its (concurrent) target queue. Options: SUSPENDER (a thread that calls
 *             cq_suspend then cq_resume: its resume may be the first), CANCELLER
 *             (cq_source_cancel), READY_EVENT (the second merger's event is a readiness one,
 *             FIRED without data, as the reactor sends for READ/WRITE), ONE_WORKER, LATE_REG
 *             (a thread that sets a registration handler at any time: one set once the
 *             registration's turn has come is due at once, as in libdispatch).
 *   REACTOR   a TIMER source: the first cq_resume queues REGISTER, a canceller queues
 *             UNREGISTER, a reactor thread pops the source's command batches (the command word
 *             is OR-ed by senders and exchanged to 0 by the reactor: REGISTER|UNREGISTER
 *             together is the "never registered" path) and, while the source is registered,
 *             may fire the timer once (a count; NO_FIRE: never). Options: SUSPENDER (then a
 *             resume that is not the first sends RESUMED), ONE_WORKER, LATE_REG.
 * Every user thread holds an external reference of its own and drops it when done
 * (cq_release), as test_resume_cancel_race does; the internal count has the external
 * references' one, the reactor's, the command list's and the handler item's.
 *
 * Checked:
 *   - the handler item runs on one thread at a time, the SCHEDULED holder, and is never on its
 *     target twice; handlers run only there (never concurrently with themselves); the
 *     registration handler runs at most once and before any event handler (with LATE_REG: once
 *     more for a handler set after the registration, later); the cancel
 *     handler runs at most once and no handler runs after it; an invocation that begins after
 *     cq_suspend returned runs no handler while that suspension lasts (6f79381);
 *   - in every state (a separate process): if the handler item has something to do (wants_run
 *     on the current state word and pending) and is not SCHEDULED, some thread is between the
 *     change that gave it work (merge, readiness, resume, registration, unregistration,
 *     cancel, the holder's release of SCHEDULED) and the end of the source_wake that follows
 *     it (a ghost count, in_window): no event waits for another event that may never come;
 *   - references: never below zero, nobody touches the source after the last one is gone,
 *     the reactor drops only the reference the resume gave it; the reactor never registers a
 *     source it has unregistered or let go; REGISTER and UNREGISTER are sent at most once;
 *   - at quiescence (the users are done and nothing can move: spin's timeout): unless the
 *     source was canceled, every merged unit reached an event handler (ghost sums merged and
 *     delivered), pending is 0 and FIRED clear; a canceled source's cancel handler ran (once);
 *     UNREGISTER was sent iff REGISTER was; the reactor holds no registration; every
 *     reference is gone (the source was freed). Spin's end-state check rejects a thread stuck
 *     anywhere but a worker's or the reactor's idle point.
 * Not modelled: the handler records (set, replace, retire, free), target changes (RCU), the
 * reactor's MPSC command list (one source: its command item is on it or not) and wake-up flag
 * (the reactor runs whenever the list is non-empty), the READ/WRITE level-triggered re-fire and
 * readiness_data, timers' own schedule (cq__timer_apply is a no-op; a registered timer may fire
 * once, suspended or not), spurious cas_weak failures (a retry re-reads what an interleaving
 * gives anyway), the suspend count's overflow check and xref_dispose's misuse check.
 *
 * Configurations checked (spin_check.sh runs each; states stored, time on the 2-core machine;
 * memory with -DCOLLAPSE):
 *   default                                 561,032 states, 0.5 s
 *   READY_EVENT                           1,146,107 states, 1 s
 *   SUSPENDER ONE_WORKER                  5,231,934 states, 6 s, 420 MB
 *   CANCELLER ONE_WORKER                  7,968,401 states, 10 s, 560 MB
 *   REACTOR                               2,987,805 states, 3 s
 *   REACTOR SUSPENDER NO_FIRE ONE_WORKER  4,651,887 states, 5 s
 *   LATE_REG ONE_WORKER                   3,524,159 states, 4 s, 350 MB
 *   REACTOR LATE_REG NO_FIRE ONE_WORKER     961,959 states, 1 s
 * Larger ones exceed what CI can spend (30 s and 1 GB each); run once by hand, 0 errors:
 * SUSPENDER (two workers) 65 million states, 110 s, 3.6 GB; CANCELLER (two workers) 99 million,
 * 200 s, 5.2 GB; REACTOR SUSPENDER ONE_WORKER (with the fire) 30 million, 47 s, 1.5 GB;
 * REACTOR LATE_REG ONE_WORKER (with the fire) 7.5 million, 10 s, 530 MB.
 * check:
 * check: -DREADY_EVENT
 * check: -DSUSPENDER -DONE_WORKER
 * check: -DCANCELLER -DONE_WORKER
 * check: -DREACTOR
 * check: -DREACTOR -DSUSPENDER -DNO_FIRE -DONE_WORKER
 * check: -DLATE_REG -DONE_WORKER
 * check: -DREACTOR -DLATE_REG -DNO_FIRE -DONE_WORKER
 *
 * Seeded bugs (spin_check.sh builds each, in the configuration given, and requires spin to
 * find a violation): the two bugs fixed by commit 601d660, and the behaviour 6f79381 changed.
 * mutant: BUG_NO_PENDING_RECHECK: no second look at pending after the item cleared SCHEDULED
 * mutant: BUG_CANCEL_UNREGISTER_EARLY -DREACTOR: cancel queues UNREGISTER as soon as ACTIVATED
 * mutant: BUG_HANDLER_WHILE_SUSPENDED -DSUSPENDER -DONE_WORKER: handlers run while suspended
 * mutant: BUG_REG_CLEAR_APART -DLATE_REG -DONE_WORKER: REG_DONE and the clear in two steps
 * (NO_INVARIANT leaves the every-state check out, to see what the quiescence checks find alone.)
 */

/* the state word (source_internal.h); the suspend count is moved down to fit a short */
#define SCHEDULED       1
#define FIRED           2
#define CANCELED        4
#define CANCEL_DONE     8
#define ACTIVATED       16
#define UNREGISTERED    32
#define REGISTERED_NEW  64
#define NO_REACTOR      128
#define REG_QUEUED      256
#define REG_DONE        512
#define SUSP_ONE        1024
#define SUSP_MASK       (7 * SUSP_ONE)

/* reactor commands (source_internal.h) */
#define CMD_REGISTER    1
#define CMD_UNREGISTER  2
#define CMD_RESUMED     8

/* wants_run(s, st) (source.c), on a state word and a value of pending */
#define WANTS(st, pend) \
    (!((st) & (SCHEDULED | SUSP_MASK)) && ((st) & ACTIVATED) && \
     (((st) & CANCELED) -> (((st) & UNREGISTERED) && !((st) & CANCEL_DONE)) \
                         : (((st) & (FIRED | REGISTERED_NEW)) || (pend) != 0)))

#ifdef REACTOR
#define IS_DATA false           /* a timer: registered with the reactor */
#define IS_TIMER true
#ifdef NO_FIRE
#define NFIRES 0
#else
#define NFIRES 1                /* the timer may fire once while registered */
#endif
#ifndef CANCELLER
#define CANCELLER               /* else the reactor keeps the source forever */
#endif
#else
#define IS_DATA true            /* DATA_ADD */
#define IS_TIMER false
#define NFIRES 0
#endif

short state = SUSP_ONE;  /* s->state: created suspended (source.c) */
byte pending;            /* s->pending */
byte cmds;               /* s->cmds (reactor.c) */
bool cmd_on_list;        /* s->cmd_item is on the reactor's command list */
bool on_target;          /* s->item (the handler item) is on its target queue */
byte xref;               /* external references (set by init: one per user thread) */
byte ref = 1;            /* internal references: the external ones together hold one */
bool freed;              /* ref reached 0: source_dispose ran */
bool registered;         /* s->registered, reactor side */

/* ghosts */
byte merged, delivered;  /* units merged into pending / passed to event handlers */
byte item_running;       /* threads running the handler item while it holds SCHEDULED */
byte in_window;          /* threads between a change and the end of their source_wake */
bool stranded;           /* the invariant below failed */
bool user_suspended;     /* the suspender's cq_suspend returned, its resume's CAS is to come */
byte reg_ran, cancel_ran;
byte late_due;           /* registration handlers the late setter made due (LATE_REG) */
bool reactor_ref;        /* the reactor's reference was given (resume) and not yet dropped */
byte item_refs;          /* the handler item's references (a new one may be taken before the
                          * invocation that let go drops its own) */
byte list_ref;           /* the command list's reference */
bool let_go;             /* the reactor unregistered the source (or let it go unregistered) */
byte reg_sent, unreg_sent;
byte users_done;
byte fires = NFIRES;

/* ---- references (object_internal.h, object.c) ---- */

/* cq__ref_retain (object_internal.h): add, relaxed. Inside the step that takes it. */
inline take_ref()
{
    assert(!freed && ref > 0);
    ref++
}

/* cq__ref_release (object_internal.h): sub, acq_rel; the last one runs source_dispose, which
 * frees the source. Inside the step that drops it. */
inline drop_ref()
{
    assert(!freed && ref > 0);
    ref--;
    if :: ref == 0 -> freed = true :: else fi
}

/* cq_release by a user thread (object.c): the last external reference drops the internal
 * one the external ones hold (object.c). The thread is done. */
inline xref_release()
{
    d_step {
        assert(!freed && xref > 0 && ref > 0);
        users_done++;
        xref--;
        if
        :: xref == 0 -> drop_ref()
        :: else
        fi
    }
}

/* ---- scheduling ---- */

/* source_wake (source.c). The caller is counted in in_window since its change; the wake
 * ends it. Uses st, ok. */
inline source_wake()
{
    d_step { assert(!freed); st = state }           /* load state, seq_cst */
    do
    :: atomic {                                     /* wants_run: pending, relaxed */
        if
        :: !WANTS(st, pending) -> in_window--; st = 0; ok = false; break
        :: else
        fi
       }
       atomic {                                     /* CAS st -> st | SCHEDULED, acq_rel */
        if
        :: state == st -> state = st | SCHEDULED; in_window--; ok = true; break
        :: else -> st = state
        fi
       }
    od;
    if
    :: ok ->
        /* The handler item's reference (add, relaxed :325), then push_handler (:301, :326):
         * one step, as nobody can drop that reference before the item is on its target. */
        d_step {
            take_ref();
            item_refs++;
            assert(!on_target);
            on_target = true;
            st = 0; ok = false
        }
    :: else
    fi
}

/* cq__source_event(s, 1, false) (source.c) for a count: add to pending, seq_cst,
 * then source_wake. `left`: the caller's count of events still to send, decremented in
 * the same step. */
inline source_event(left)
{
    d_step { assert(!freed); pending++; merged++; in_window++; left-- }
    source_wake()
}

/* cq__source_event(s, 0, true) (source.c), readiness (e.g. reactor.c): or FIRED,
 * release, then source_wake. */
inline source_ready(left)
{
    d_step { assert(!freed); state = state | FIRED; in_window++; left-- }
    source_wake()
}

/* ---- the reactor's side (reactor.c) ---- */

/* cq__reactor_command (reactor.c); cq__reactor_wake is left out (the reactor below takes
 * the list whenever it is non-empty). Uses c. */
inline reactor_command(what)
{
    d_step {                                        /* or cmds, acq_rel (reactor.c) */
        assert(!freed);
        c = cmds;
        cmds = cmds | what;
        if
        :: what == CMD_REGISTER -> reg_sent++; assert(reg_sent == 1)
        :: what == CMD_UNREGISTER -> unreg_sent++; assert(unreg_sent == 1)
        :: else
        fi
    }
    if
    :: c == 0 ->
        /* the list's reference (add, relaxed: reactor.c), then cq__mpsc_push: one
         * step, as nobody can drop that reference before the item is on the list */
        d_step {
            take_ref();
            list_ref++;
            assert(!cmd_on_list);
            cmd_on_list = true;
            c = 0
        }
    :: else -> c = 0
    fi
}

/* cq__source_registered (source.c), by the reactor after do_register */
inline source_registered()
{
    d_step { assert(!freed); state = state | REGISTERED_NEW; in_window++ }  /* or, release */
    source_wake()                                                          /* */
}

/* cq__source_unregistered (source.c), by the reactor */
inline source_unregistered()
{
    d_step {                                        /* or, acq_rel */
        assert(!freed);
        state = state | UNREGISTERED;
        let_go = true;
        in_window++
    }
    source_wake();                                  /* */
    d_step {                                        /* the reactor's reference */
        assert(reactor_ref);                        /* ... which it was given */
        reactor_ref = false;
        drop_ref()
    }
}

/* The reactor thread: run_commands (reactor.c), and a timer fire while registered. */
proctype reactor()
{
    short st;
    byte c;
    bool ok;
end:
    do
    :: atomic { cmd_on_list -> cmd_on_list = false };   /* cq__mpsc_pop (reactor.c) */
        d_step { assert(!freed && list_ref > 0); c = cmds; cmds = 0 };  /* xchg, acq_rel */
        if
        :: (c & CMD_UNREGISTER) && (c & CMD_REGISTER) ->
            source_unregistered()                   /* never registered (reactor.c) */
        :: (c & CMD_UNREGISTER) && !(c & CMD_REGISTER) ->
            /* do_unregister (reactor.c): `registered` is the reactor's own */
            registered = false;
            source_unregistered()                   /* (reactor.c) */
        :: !(c & CMD_UNREGISTER) ->
            if
            :: (c & CMD_REGISTER) ->
                d_step {                            /* do_register (reactor.c) */
                    assert(!let_go && !registered);
                    registered = true
                }
                source_registered()                 /* (reactor.c) */
            :: else
            fi
            /* CMD_RESUMED: cq__timer_apply (reactor.c) has no event to give here */
        fi;
        d_step {                                    /* the list's reference (reactor.c) */
            assert(list_ref > 0);
            list_ref--;
            drop_ref();
            c = 0
        }
    :: registered && fires > 0 ->                   /* cq__timers_run: a fire (timer.c) */
        source_event(fires)
    od
}

/* ---- the handler item ---- */

/* The handler item's reference: release, acq_rel (source.c). When nothing is to be woken
 * it is folded into the load of pending before it: a release commutes with every step but
 * other reference operations, and done earlier it can only make their checks stricter. */
inline item_release()
{
    assert(item_refs > 0);
    item_refs--;
    drop_ref()
}

/* A handler runs: only the item's holder runs handlers (so they never run concurrently), none
 * after the cancel handler, and none in an invocation that began after cq_suspend returned
 * while that suspension lasts. The handler's code touches nothing of the protocol, so its
 * call is folded into the step before it. */
inline handler()
{
    assert(item_running == 1 && (state & SCHEDULED) && cancel_ran == 0);
    assert(!(began_suspended && user_suspended))
}

/* cq__source_invoke (source.c), by the worker that popped the item. Uses st, n, data, fired,
 * ok, pushed. */
inline source_invoke()
{
    if
#ifndef BUG_HANDLER_WHILE_SUSPENDED
    :: (st & SUSP_MASK) -> skip                     /* suspended since it was queued (:386-390) */
#endif
    :: else ->
        if
        :: (st & REGISTERED_NEW) ->
#ifdef BUG_REG_CLEAR_APART
            d_step { state = state | REG_DONE }     /* REG_DONE, then the clear apart */
#endif
            d_step {                                /* CAS -> (st | REG_DONE) & ~REGISTERED_NEW,
                                                     * seq_cst: one step; st is what it saw */
                st = state;
                state = (st | REG_DONE) & ~REGISTERED_NEW;
                if
                :: !(st & CANCELED) ->              /* the registration handler */
                    handler(); reg_ran++; assert(reg_ran <= 1 + late_due)
                :: else
                fi                                  /* (the records and their drop: not
                                                     * modelled) */
            }
        :: else
        fi;
        if
        :: !(st & CANCELED) ->
#ifdef READY_EVENT
            d_step {                                /* and ~FIRED, acquire */
                fired = (state & FIRED) != 0;
                state = state & ~FIRED
            }
#endif
            /* (without READY_EVENT nothing sets FIRED: the and at :400 changes nothing and
             * its result is false, so it is left out) */
            d_step {                                /* xchg pending 0, acquire */
                data = pending;
                pending = 0;
                if
                :: fired || data != 0 ->            /* the event handler */
                    handler(); assert(reg_ran >= 1); delivered = delivered + data
                :: else
                fi;
                data = 0; fired = false
            }
            /* the load at :411 only serves the READ/WRITE re-fire (not modelled) */
        :: else
        fi
    fi;
    /* Finish: run the cancel handler, go again, or let go. */
    d_step { st = state }                           /* load, acquire */
    do
    :: (st & CANCELED) && (st & UNREGISTERED) && !(st & (CANCEL_DONE | SUSP_MASK)) ->
        atomic {                                    /* CAS st -> st | CANCEL_DONE, acq_rel */
            if
            :: state == st ->
                state = st | CANCEL_DONE;
                handler(); cancel_ran++;            /* the cancel handler */
                ok = true
            :: else -> st = state
            fi
        }
        if
        :: ok -> d_step { st = state; ok = false }  /* load, acquire */
        :: else
        fi
    :: else ->
        atomic {                                /* wants_run(s, n): pending, relaxed (:435-436) */
            n = st & ~SCHEDULED;
            if
            :: WANTS(n, pending) ->
                assert(!on_target); on_target = true;   /* push_handler, still holding */
                item_running--; pushed = true; break
            :: else
            fi
        }
        atomic {                                    /* CAS st -> n, seq_cst */
            if
            :: state == st ->
                state = n;
                item_running--;
#ifndef BUG_NO_PENDING_RECHECK
                in_window++;                        /* it looks at pending again below */
#endif
                break
            :: else -> st = state
            fi
        }
    od;
    if
    :: !pushed ->
#ifndef BUG_NO_PENDING_RECHECK
        atomic {                                    /* load pending, seq_cst */
            if
            :: pending != 0 -> ok = true
            :: else -> in_window--; item_release()  /* nothing to wake: release */
            fi
        }
        if
        :: ok ->
            source_wake();                          /* */
            d_step { item_release() }               /* */
        :: else
        fi
#else
        d_step { item_release() }                   /* */
#endif
    :: else
    fi;
    d_step { st = 0; n = 0; ok = false; pushed = false; began_suspended = false }
}

/* A pool worker: pops the handler item off its target and runs it (queue.c). */
proctype worker()
{
    short st, n;
    byte data;
    bool ok, fired, pushed;
    bool began_suspended;   /* ghost: the invocation began after a cq_suspend returned */
end:
    do
    /* pop the item (queue.c), then cq__source_invoke's first load, acquire */
    :: d_step {
            on_target -> on_target = false;
            assert(item_running == 0 && item_refs > 0 && !freed);
            item_running++;
            st = state;
            began_suspended = user_suspended
        }
        source_invoke()
    od
}

/* ---- the user's side ---- */

/* source_resume (source.c); `mine`: by the suspender. Uses st, n, c, ok, first. */
inline source_resume(mine)
{
    /* load, relaxed, then the CAS loop (:469-486): its computation is local, so the
     * loop is one atomic read-modify-write (a failed CAS has no effect) */
    d_step {
        assert(!freed);
        st = state;
        assert(st & SUSP_MASK);                     /* resumed more than suspended */
        n = st - SUSP_ONE;
        if
        :: !(st & ACTIVATED) ->
            n = n | ACTIVATED;
            if
            :: (st & CANCELED) -> n = n | UNREGISTERED  /* canceled before it started */
            :: !(st & CANCELED) && IS_DATA -> n = n | NO_REACTOR | REGISTERED_NEW   /* */
            :: else
            fi
        :: else
        fi;
        state = n;                                  /* CAS st -> n, acq_rel */
        if :: mine -> user_suspended = false :: else fi;   /* the suspender's own suspension ends */
        in_window++;
        first = !(st & ACTIVATED);                  /* */
        st = 0
    }
    if
    :: first && !(n & (UNREGISTERED | NO_REACTOR)) ->
        d_step {                                    /* the reactor's reference, relaxed */
            assert(!reactor_ref);
            take_ref();
            reactor_ref = true
        }
        reactor_command(CMD_REGISTER);              /* */
#ifndef BUG_CANCEL_UNREGISTER_EARLY
        d_step {                                    /* or REG_QUEUED, acq_rel */
            assert(!freed);
            ok = (state & CANCELED) != 0;
            state = state | REG_QUEUED
        }
        if
        :: ok -> reactor_command(CMD_UNREGISTER)    /* */
        :: else
        fi
#endif
    :: !first && !(n & SUSP_MASK) && IS_TIMER ->
        reactor_command(CMD_RESUMED)                /* */
    :: else
    fi;
    d_step { n = 0; first = false; ok = false };
    source_wake()                                   /* */
}

/* The thread that created the source: cq_resume, cq_release. */
proctype resumer()
{
    short st, n;
    byte c;
    bool ok, first;
    source_resume(false);
    xref_release()
}

/* cq_source_merge_data(s, 1) `count` times, then cq_release. */
proctype merger(byte count; bool ready)
{
    short st;
    bool ok;
    do
    :: count > 0 && !ready -> source_event(count)
    :: count > 0 && ready -> source_ready(count)
    :: else -> break
    od;
    xref_release()
}

/* cq_suspend, cq_resume, cq_release. */
proctype suspender()
{
    short st, n;
    byte c;
    bool ok, first;
    d_step {                                        /* source_suspend: add, relaxed */
        assert(!freed);
        state = state + SUSP_ONE;
        user_suspended = true                       /* cq_suspend returns */
    }
    source_resume(true);
    xref_release()
}

/* cq_source_cancel (source.c), cq_release. */
proctype canceller()
{
    short st;
    byte c, act;
    bool ok;
    d_step {                                        /* or CANCELED, acq_rel */
        assert(!freed);
        if
        :: (state & CANCELED) -> act = 0            /* */
        :: !(state & CANCELED) && (state & NO_REACTOR) -> act = 1   /* */
#ifdef BUG_CANCEL_UNREGISTER_EARLY
        :: !(state & (CANCELED | NO_REACTOR)) && (state & ACTIVATED) -> act = 2  /* the old code */
#else
        :: !(state & (CANCELED | NO_REACTOR)) && (state & REG_QUEUED) -> act = 2 /* */
#endif
        :: else -> act = 0                          /* the first resume sends it, or lets go */
        fi;
        state = state | CANCELED
    }
    if
    :: act == 1 ->
        d_step { state = state | UNREGISTERED; in_window++; act = 0 };  /* or, acq_rel */
        source_wake()                               /* */
    :: act == 2 ->
        act = 0;
        reactor_command(CMD_UNREGISTER)             /* */
    :: else
    fi;
    xref_release()
}

/* LATE_REG: cq_source_set_registration_handler_f at any time (the record's seq_cst exchange is
 * not modelled), then cq__source_registration_handler_set (source.c): if the registration's
 * turn has come (REG_DONE) and the source is not canceled, the new handler is due (or
 * REGISTERED_NEW, release) and source_wake; then cq_release. */
proctype late_setter()
{
    short st;
    bool ok;
    d_step { assert(!freed); st = state }           /* load, seq_cst */
    if
    :: (st & REG_DONE) && !(st & CANCELED) ->
        d_step { state = state | REGISTERED_NEW; late_due++; in_window++ }
        source_wake()                               /* */
    :: else
    fi;
    d_step { st = 0 };
    xref_release()
}

/* The invariant, in every reachable state: something to do, not SCHEDULED, and nobody about
 * to schedule it is a stranded source. */
#ifndef NO_INVARIANT
active proctype invariant()
{
end:
    atomic { (WANTS(state, pending) && in_window == 0) -> stranded = true; assert(!stranded) }
}
#endif

#ifdef SUSPENDER
#define NSUSP 1
#else
#define NSUSP 0
#endif
#ifdef CANCELLER
#define NCANCEL 1
#else
#define NCANCEL 0
#endif
#ifdef LATE_REG
#define NLATE 1
#else
#define NLATE 0
#endif
#ifdef REACTOR
#define NUSERS (1 + NSUSP + NCANCEL + NLATE)
#else
#define NUSERS (3 + NSUSP + NCANCEL + NLATE)
#endif

init
{
    atomic {
        xref = NUSERS;
        run resumer();
#ifdef REACTOR
        run reactor();
#else
        run merger(2, false);
#ifdef READY_EVENT
        run merger(1, true);                        /* a readiness event instead */
#else
        run merger(1, false);
#endif
#endif
        run worker();
#ifndef ONE_WORKER
        run worker();
#endif
#ifdef SUSPENDER
        run suspender();
#endif
#ifdef CANCELLER
        run canceller();
#endif
#ifdef LATE_REG
        run late_setter();
#endif
    }
    (users_done == NUSERS);
    timeout ->
    /* quiescent: the users are done and nothing can move */
    assert(!on_target && item_running == 0 && in_window == 0);
    assert(!cmd_on_list && cmds == 0 && !registered);
    assert(reg_sent == unreg_sent);
    if
    :: (state & CANCELED) ->
        assert(cancel_ran == 1 && (state & CANCEL_DONE))
    :: else ->
        assert(pending == 0 && delivered == merged && !(state & FIRED) && cancel_ran == 0);
        assert(reg_ran == 1 + late_due)             /* each registration handler ran once */
    fi;
    assert(freed && ref == 0 && xref == 0 && item_refs == 0 && !reactor_ref && list_ref == 0)
}
