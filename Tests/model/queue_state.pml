/*
 * The serial queue's state word protocol (docs/design.md §6; Sources/CQueueCore/queue.c,
 * item_internal.h), checked exhaustively by spin: two pushers (one pushes two items, one
 * pushes one, then calls cq_sync_f), two pool workers that drain the queue when its embedded
 * item comes off the target, and a thread that suspends and resumes the queue once. Each C atomic operation is one atomic Promela step;
 * spin interleaves them with sequential consistency (weak-memory orderings are not modelled:
 * see docs/model-checking.md). Comments name the C function of each step.
 *
 * Checked:
 *   - serial exclusion: nobody runs an item (or a sync's function) while someone else does,
 *     and at most one thread holds LOCK; a sync's function runs after its thread's earlier
 *     async (FIFO per submitter);
 *   - nothing runs twice; the embedded queue item is never on its target twice;
 *   - the design's invariant, in every state: a non-empty list implies LOCK, ENQUEUED or DIRTY
 *     unless a pusher that found the list empty is still in its wake-up;
 *   - no item is stranded: once everybody is done and the system is quiescent, every item has
 *     run, the list is empty and the state word is 0 (spin's end-state check also rejects any
 *     thread stuck outside its idle point).
 * Not modelled: concurrent queues (WIDTH, BARRIER_WAIT), barriers, sync waiters handed the
 * queue by a drainer, targets other than the pool, retargeting, references.
 *
 * Configurations checked (spin_check.sh runs each): every thread with one item per pusher
 * (3.4 million states); and a second item for the first pusher (pushed onto a non-empty list,
 * so the budget runs out with items left) without the suspender and the sync: with them, that
 * one exceeds 34 million states.
 * check:
 * check: -DWITH_THIRD_ITEM -DNO_SUSPENDER -DNO_SYNCER
 *
 * Seeded bugs (spin_check.sh builds each, in the configuration given, and requires spin to
 * find a violation):
 * mutant: BUG_UNLOCK_IGNORES_LIST -DNO_SYNCER: unlock looks only at DIRTY, not at the list
 * mutant: BUG_WAKEUP_IGNORES_LOCK -DNO_SUSPENDER: a wake-up finding LOCK leaves no DIRTY note
 * mutant: BUG_RESUME_NO_ENQUEUE -DNO_SYNCER: resume to 0 leaves a DIRTY queue idle
 * mutant: BUG_SYNC_IGNORES_LIST -DNO_SUSPENDER: the sync fast path ignores a non-empty list
 */

#define LOCK      1
#define ENQUEUED  2
#define DIRTY     4
#define SUSP_ONE  16
#define SUSP_MASK 240
#define NITEMS    3   /* item ids 1..NITEMS; 0 is NULL */
#define BUDGET    2   /* CQ__DRAIN_BUDGET, lowered so that the budget runs out */

byte state;              /* q->state */
byte tail, head;         /* q->tail, q->head: the MPSC list */
byte next[NITEMS + 1];   /* item->next */
byte on_target;          /* the queue's embedded item sits on its target (0 or 1) */
byte ran[NITEMS + 1];    /* ghost: times each item ran */
byte running;            /* ghost: threads running an item or a sync function of the queue */
byte holders;            /* ghost: threads holding LOCK */
byte in_window;          /* ghost: pushers that found the list empty, wake-up not finished */
byte pushers_done;
bool suspender_done;

/* cq__queue_enqueue_on_target: the embedded item is pushed on the target (a pool worker pops
 * it and calls cq__queue_drain). */
inline enqueue_on_target()
{
    d_step { assert(on_target == 0); on_target = 1 }
}

/* cq__queue_list_empty: two relaxed loads, head then tail. */
inline list_empty(result)
{
    if
    :: head == 0 ->
        if
        :: tail == 0 -> result = true
        :: else -> result = false
        fi
    :: else -> result = false
    fi
}

/* cq__mpsc_push(&q->tail, &q->head, it, it) */
inline mpsc_push(it, was_empty)
{
    atomic {                                        /* exchange tail, seq_cst */
        next[it] = 0;                               /* (last->next: private until here) */
        prev = tail;
        tail = it;
        if
        :: prev == 0 -> in_window++
        :: else
        fi
    }
    if
    :: prev != 0 -> atomic { next[prev] = it; was_empty = false }  /* link store, release */
    :: else -> atomic { head = it; was_empty = true }              /* head store, release */
    fi
}

/* cq__mpsc_pop (with cq__mpsc_peek and cq__mpsc_wait_link): the consumer is the LOCK holder. */
inline mpsc_pop(it)
{
    h = head;                                       /* load head, acquire */
    if
    :: h == 0 ->
        if
        :: tail != 0 -> atomic { head != 0 -> h = head }   /* wait_link: a pusher links */
        :: else
        fi
    :: else
    fi;
    if
    :: h == 0 -> it = 0
    :: else ->
        nx = next[h];                               /* load h->next, acquire */
        if
        :: nx == 0 ->
            head = 0;                               /* store head, relaxed */
            atomic {                                /* CAS tail h -> NULL, release */
                if
                :: tail == h -> tail = 0; ok = true
                :: else -> ok = false
                fi
            }
            if
            :: ok -> it = h
            :: else ->
                atomic { next[h] != 0 -> nx = next[h] };   /* wait_link on h->next */
                head = nx; it = h
            fi
        :: else -> head = nx; it = h                /* store head, relaxed */
        fi
    fi
}

/* cq__queue_wakeup: the push found the list empty. */
inline wakeup()
{
    s = state;                                      /* load, relaxed */
    done = false;
    do
    :: (s & LOCK) ->
#ifdef BUG_WAKEUP_IGNORES_LOCK
        done = true; break
#else
        atomic {                                    /* CAS, acq_rel */
            if
            :: (s & DIRTY) -> done = true; break    /* the holder looks again anyway */
            :: else -> n = s | DIRTY
            fi;
            if :: state == s -> state = n; break :: else -> s = state fi
        }
#endif
    :: !(s & LOCK) && (s & ENQUEUED) -> done = true; break  /* a drain is due */
    :: !(s & LOCK) && !(s & ENQUEUED) && (s & SUSP_MASK) ->
        atomic {
            if
            :: (s & DIRTY) -> done = true; break
            :: else -> n = s | DIRTY
            fi;
            if :: state == s -> state = n; break :: else -> s = state fi
        }
    :: !(s & LOCK) && !(s & ENQUEUED) && !(s & SUSP_MASK) ->
        atomic {
            n = s | ENQUEUED;
            if :: state == s -> state = n; break :: else -> s = state fi
        }
    od;
    if
    :: !done && (n & ENQUEUED) -> enqueue_on_target()
    :: else
    fi
}

/* cq__queue_unlock(q, drain_ref): clears LOCK and DIRTY; re-enqueues if items remain. */
inline unlock()
{
    s = state;
    do
    :: true ->
#ifdef BUG_UNLOCK_IGNORES_LIST
        lempty = true;
#else
        list_empty(lempty);
#endif
        atomic {                                    /* CAS, acq_rel */
            n = s & ~(LOCK | DIRTY);
            if
            :: (s & DIRTY) || !lempty ->
                if
                :: (s & SUSP_MASK) -> n = n | DIRTY
                :: else -> n = n | ENQUEUED
                fi
            :: else
            fi;
            if :: state == s -> state = n; holders--; break :: else -> s = state fi
        }
    od;
    if
    :: (n & ENQUEUED) -> enqueue_on_target()
    :: else
    fi
}

/* drain_finish(q, may_continue): fin = true when the queue was unlocked. */
inline drain_finish(may_continue, fin)
{
    fin = true;
    if
    :: may_continue ->
        s = state;
        do
        :: (s & SUSP_MASK) -> break
        :: !(s & SUSP_MASK) && !(s & DIRTY) ->
            list_empty(lempty);
            if
            :: lempty -> break
            :: else -> fin = false; break           /* items: go on draining */
            fi
        :: !(s & SUSP_MASK) && (s & DIRTY) ->
            atomic {                                /* CAS clearing DIRTY, acquire */
                if :: state == s -> state = s & ~DIRTY; fin = false; break
                   :: else -> s = state
                fi
            }
        od
    :: else
    fi;
    if
    :: fin -> unlock()
    :: else
    fi
}

/* A pool worker: takes the queue's item off the target and runs cq__queue_drain. */
proctype worker()
{
    byte s, n, it, h, nx, prev, budget;
    bool ok, lempty, fin, done, locked;
end:
    do
    :: atomic { on_target == 1 -> on_target = 0 };
        /* cq__queue_drain: drain start */
        s = state;
        locked = false;
        do
        :: !(s & ENQUEUED) -> break                 /* spurious */
        :: (s & ENQUEUED) && (s & SUSP_MASK) ->
            atomic {                                /* suspended: resume enqueues it */
                n = (s & ~ENQUEUED) | DIRTY;
                if :: state == s -> state = n; break :: else -> s = state fi
            }
        :: (s & ENQUEUED) && !(s & SUSP_MASK) ->
            atomic {                                /* CAS, acquire */
                n = (s & ~(ENQUEUED | DIRTY)) | LOCK;
                if :: state == s -> state = n; holders++; locked = true; break
                   :: else -> s = state
                fi
            }
        od;
        if
        :: locked ->
            /* serial_drain */
            budget = BUDGET;
            do
            :: true ->
                mpsc_pop(it);
                if
                :: it == 0 ->
                    drain_finish(budget != 0, fin);
                    if :: fin -> break :: else fi
                :: else ->
                    d_step {                        /* cq__item_invoke */
                        assert(holders == 1 && running == 0 && ran[it] == 0);
                        running++; ran[it]++
                    }
                    running--;
                    if :: budget > 0 -> budget-- :: else fi;
                    if
                    :: budget == 0 || (state & SUSP_MASK) -> drain_finish(false, fin); break
                    :: else
                    fi
                fi
            od
        :: else
        fi
    od
}

/* cq_sync_f's fast path, by a pusher after its own async (item `mine`): cq__queue_try_lock
 * (the list must be empty too), the function, then cq__queue_try_unlock or
 * cq__queue_unlock(q, false). A busy queue makes cq_sync_f queue a waiter (not modelled). */
inline sync_fast_path(mine)
{
    ok = false;
#ifdef BUG_SYNC_IGNORES_LIST
    atomic { if :: state == 0 -> state = LOCK; holders++; ok = true :: else fi }
#else
    if
    :: tail == 0 ->                                 /* cq__mpsc_empty, relaxed */
        atomic {                                    /* CAS 0 -> LOCK, acquire */
            if :: state == 0 -> state = LOCK; holders++; ok = true :: else fi
        }
    :: else
    fi;
#endif
    if
    :: ok ->
        /* exclusive, and after our own earlier async (FIFO per submitter) */
        d_step { assert(holders == 1 && running == 0 && ran[mine] == 1); running++ }
        running--;
        atomic {                                    /* try_unlock: CAS LOCK -> 0, release */
            if :: state == LOCK -> state = 0; holders--; ok = false :: else fi
        }
        if
        :: ok -> unlock()
        :: else
        fi
    :: else
    fi
}

/* cq_async_f from one thread: cq__queue_push onto a serial queue; then maybe a cq_sync_f. */
proctype pusher(byte first; byte count; bool then_sync)
{
    byte it, prev, s, n;
    bool was_empty, done, ok, lempty;
    it = first;
    do
    :: it < first + count ->
        mpsc_push(it, was_empty);
        if
        :: was_empty -> wakeup(); in_window--
        :: else
        fi;
        it++
    :: else -> break
    od;
    if
    :: then_sync -> sync_fast_path(first + count - 1)
    :: else
    fi;
    pushers_done++
}

/* queue_suspend, then queue_resume. */
proctype suspender()
{
    byte s, n;
    atomic { state = state + SUSP_ONE };            /* add, relaxed */
    s = state;
    do
    :: atomic {                                     /* CAS, acq_rel */
        n = s - SUSP_ONE;
#ifndef BUG_RESUME_NO_ENQUEUE
        if
        :: !(n & SUSP_MASK) && (n & DIRTY) && !(n & (LOCK | ENQUEUED)) ->
            n = (n & ~DIRTY) | ENQUEUED
        :: else
        fi;
#endif
        if :: state == s -> state = n; break :: else -> s = state fi
       }
    od;
    if
    :: (n & ENQUEUED) && !(s & ENQUEUED) -> enqueue_on_target()
    :: else
    fi;
    suspender_done = true
}

/* The design's invariant, in every reachable state. */
active proctype invariant()
{
end:
    atomic {
        !(tail == 0 || (state & (LOCK | ENQUEUED | DIRTY)) || in_window > 0) ->
        assert(false)
    }
}

/* Configurations (spin -D...): the default has both pushers with one item each, the second
 * one's sync, and the suspender; WITH_THIRD_ITEM gives the first pusher a second item (one
 * pushed onto a non-empty list); NO_SUSPENDER leaves the suspender out, NO_SYNCER the sync. */
#ifdef NO_SUSPENDER
#define SUSPENDER_DONE true
#else
#define SUSPENDER_DONE suspender_done
#endif
#ifdef NO_SYNCER
#define THEN_SYNC false
#else
#define THEN_SYNC true
#endif
#ifdef WITH_THIRD_ITEM
#define FIRST_COUNT 2
#else
#define FIRST_COUNT 1
#endif

init
{
    atomic {
        run worker();
        run worker();
        run pusher(3 - FIRST_COUNT, FIRST_COUNT, false);
        run pusher(3, 1, THEN_SYNC);
#ifndef NO_SUSPENDER
        run suspender();
#endif
    }
    /* quiescent: everybody done and nothing else can move */
    (pushers_done == 2 && SUSPENDER_DONE);
    timeout ->
    assert((FIRST_COUNT == 1 || ran[1] == 1) && ran[2] == 1 && ran[3] == 1);
    assert(tail == 0 && head == 0 && state == 0 && on_target == 0 && holders == 0)
}
