/*
 * The idle/park protocol (docs/design.md §4; Sources/CQueueCore/pool.c), checked exhaustively
 * by spin: two procs, each with its worker thread, and an outside producer that submits two
 * items; a worker running an item may submit one more (a task's child: ring push, fence,
 * notify). Where the work is (rings, inject queues, LIFO slots) is abstracted to one count:
 * publishing is `work++` (the seq_cst store, CAS or exchange of a push), taking is `work--`.
 * Each C atomic operation is one atomic Promela step, interleaved with sequential consistency
 * (the seq_cst fences pair up with the model's SC interleavings: see docs/model-checking.md).
 * Comments name the C function of each step.
 *
 * Checked: no lost wake-up — whenever everything has quiesced (the producer is done and no
 * thread can move: all workers sleep on their futex word), no work is left; and the idle word
 * then agrees with the idle list (unparked == procs not idle, searching == 0). Spin's
 * end-state check rejects a thread stuck anywhere but its futex sleep.
 * Not modelled: spare threads and procs without a thread (cq__pool_block_begin/end),
 * extra procs and the monitor (a monitor kick is a no-op here), the backlog announcement
 * (a worker that keeps work in its ring runs it itself), the adaptive spin (a search is one
 * look: more looks at an unchanged state add nothing).
 *
 * check:
 *
 * Seeded bugs (spin_check.sh builds each of these and requires spin to find a violation):
 * mutant: BUG_NO_PARK_RECHECK: park() sleeps without re-checking for work after its fence
 * mutant: BUG_NOTIFY_BEFORE_PUBLISH: the producer reads the idle word before publishing
 * mutant: BUG_NOTIFY_IGNORES_PARKED: unpark_thread does not store NOTIFIED before waking
 */

#define NPROCS 2
#define EMPTY 0
#define PARKED 1
#define NOTIFIED 2

byte work;                  /* published, not yet taken */
byte to_submit = 2;         /* the producer's items */
byte children = 1;          /* items that running tasks may still submit */
byte nsearching;            /* idle word: searching */
byte unparked = NPROCS;     /* idle word: unparked (nprocs is the constant NPROCS) */
bool lock;                  /* pool.lock */
bool idle[NPROCS];          /* p->idle, under the lock */
bool in_list[NPROCS];       /* p is on pool.idle_parked, under the lock */
bool wake_searching[NPROCS];/* t->wake_searching, written under the lock by the notifier */
bool searching[NPROCS];     /* t->searching (owner-private; global for the final check) */
byte park[NPROCS];          /* t->park: the futex word */
bool producer_done;

inline lock_acquire() { atomic { !lock -> lock = true } }
inline lock_release() { lock = false }

/* unpark_thread: exchange to NOTIFIED (release); futex_wake if the thread was PARKED (the
 * sleeper below blocks on park != PARKED, so the exchange itself is the wake-up). */
inline unpark_thread(q)
{
#ifdef BUG_NOTIFY_IGNORES_PARKED
    atomic { if :: park[q] != PARKED -> park[q] = NOTIFIED :: else fi }
#else
    park[q] = NOTIFIED
#endif
}

/* notify(): one seq_cst load of the idle word, then notify_slow() under the lock. */
inline notify()
{
    atomic { s_search = nsearching; s_unparked = unparked }
    if
    :: s_search == 0 && s_unparked < NPROCS ->
        /* notify_slow */
        lock_acquire();
        if
        :: nsearching != 0 || unparked >= NPROCS -> lock_release()
        :: else ->
            /* pop pool.idle_parked: any idle proc (the list's order is not relied upon) */
            if
            :: in_list[0] -> q = 0
            :: in_list[1] -> q = 1
            :: else -> q = NPROCS
            fi;
            if
            :: q < NPROCS ->
                in_list[q] = false;
                idle[q] = false;
                atomic { unparked++; nsearching++ }  /* add, seq_cst */
                wake_searching[q] = true;
                lock_release();
                unpark_thread(q)
            :: else -> lock_release()                 /* (idle_free: not modelled) */
            fi
        fi
    :: else                                           /* somebody searches, or a monitor kick */
    fi
}

/* A task run by a worker may submit a child: ring push (tail store), seq_cst fence, notify. */
inline run_item()
{
    if
    :: atomic { children > 0 -> children--; work++ }
        notify()
    :: true
    fi
}

proctype worker(byte p)
{
    byte s, q, s_search, s_unparked;
    bool got, ok, mine;
loop:
    /* next_local: own LIFO slot, ring, inject queues */
    atomic { if :: work > 0 -> work--; got = true :: else -> got = false fi }
    if
    :: !got ->
        /* search(): become a searcher if fewer than half the procs search (idle_try_searching,
         * a CAS loop), then look (steal_work) */
        if
        :: !searching[p] ->
            atomic {
                if :: 2 * nsearching < NPROCS -> nsearching++; searching[p] = true :: else fi
            }
        :: else
        fi;
        atomic { if :: work > 0 -> work--; got = true :: else -> got = false fi }
    :: else
    fi;
    if
    :: got ->
        if
        :: searching[p] ->                            /* stop_searching */
            atomic { searching[p] = false; nsearching-- }
        :: else
        fi;
        run_item();
        goto loop
    :: else
    fi;
    /* park(t, p) */
    lock_acquire();
    idle[p] = true;
    in_list[p] = true;
    atomic {                                          /* sub, seq_cst */
        unparked--;
        if :: searching[p] -> nsearching--; searching[p] = false :: else fi
    }
    lock_release();
    /* seq_cst fence, then cq__pool_work_waiting() */
#ifndef BUG_NO_PARK_RECHECK
    if
    :: work > 0 ->
        lock_acquire();
        mine = idle[p] && in_list[p];
        if
        :: mine ->
            in_list[p] = false;
            idle[p] = false;
            atomic { unparked++; nsearching++ }
            searching[p] = true
        :: else
        fi;
        lock_release();
        if
        :: mine -> goto loop
        :: else                                       /* a notifier claimed us: its wake-up */
        fi
    :: else
    fi;
#endif
    /* park_thread(t) */
    do
    :: atomic {
        s = park[p];                                  /* load, acquire */
        if
        :: s == NOTIFIED -> park[p] = EMPTY; break    /* (only our next park writes it again) */
        :: else
        fi
       }
        if
        :: s == EMPTY ->                              /* CAS EMPTY -> PARKED, or look again */
            atomic { if :: park[p] == EMPTY -> park[p] = PARKED; ok = true :: else -> ok = false fi }
        :: else -> ok = true
        fi;
        if
        :: ok ->
end:        atomic { park[p] != PARKED -> skip }      /* futex_wait(&t->park, PARKED) */
        :: else
        fi
    od;
    searching[p] = wake_searching[p];
    wake_searching[p] = false;
    goto loop
}

/* A thread outside the pool submitting items: cq__inject_push (its seq_cst CAS publishes),
 * then notify(). */
proctype producer()
{
    byte q, s_search, s_unparked;
    do
    :: to_submit > 0 ->
#ifdef BUG_NOTIFY_BEFORE_PUBLISH
        notify();
        atomic { to_submit--; work++ }
#else
        atomic { to_submit--; work++ }
        notify()
#endif
    :: else -> break
    od;
    producer_done = true
}

init
{
    atomic {
        run worker(0);
        run worker(1);
        run producer()
    }
    producer_done;
    timeout ->
    /* quiescent: every worker sleeps */
    assert(work == 0);
    assert(unparked == 0 && nsearching == 0 && idle[0] && idle[1]);
    assert(!searching[0] && !searching[1])
}
