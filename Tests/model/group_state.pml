/*
 * The group state word and the group's lifetime (docs/design.md §7; Sources/CQueueCore/group.c,
 * group_internal.h), checked exhaustively by spin. The word's fields are separate variables;
 * each C atomic operation on the word is one atomic Promela step (a CAS loop is its successful
 * attempt: the failed ones change nothing). Interleavings are sequentially consistent (the
 * word's operations are one location's RMWs; see docs/model-checking.md for what that leaves).
 *
 * Threads: a task (its enter made by init, as cq_group_async_f does, its leave its only
 * step, holding no reference); NW waiters that wait and then release their own reference at
 * once (racing the emptying leave's wake-up); NN notifiers that enter, register a notify, and
 * leave; NF flappers that enter and leave twice (emptyings, and re-entries before the wake-up
 * of an earlier emptying is done); init, which releases the creating reference after starting
 * them (perhaps while the group is busy: ORPHAN).
 *
 * Checked:
 *   - no use after free: every step that touches the group asserts it is not freed (word,
 *     mutex, notify list, reference counts, the futex address), and dispose finds the mutex free;
 *   - no leak: when every thread has finished, the group is freed;
 *   - generations: a waiter that returns because the generation moved saw an emptying after
 *     its first look; a notify runs only after an emptying that followed its registration (so
 *     a notify registered while its registrant holds an enter never runs before that leave),
 *     and each runs exactly once;
 *   - no lost wake-up: a waiter never sleeps forever (spin's end-state check; the futex is
 *     modelled as a wake counter the sleeper compares).
 * Not modelled: timeouts (a timed-out waiter returns; nothing else changes), helping and
 * spinning (loads of the word), the overflow checks, several notifies from one notifier.
 *
 * check: -DNW=1 -DNN=1 -DNF=0
 * check: -DNW=1 -DNN=0 -DNF=1
 * check: -DNW=0 -DNN=1 -DNF=1
 * check: -DNW=2 -DNN=0 -DNF=1
 * check: -DNW=1 -DNN=2 -DNF=0
 *
 * Seeded bugs (spin_check.sh builds each of these and requires spin to find a violation):
 * mutant: BUG_ENTER_ADD -DNW=0 -DNN=1 -DNF=1: enter is a plain subtraction that borrows from the generation
 * mutant: BUG_NO_ORPHAN -DNW=0 -DNN=0 -DNF=1: the last release of a busy group does not keep it
 * mutant: BUG_NO_WAKE_REF -DNW=1 -DNN=0 -DNF=1: the wakers hold no reference
 * mutant: BUG_DROP_UNCOUNTED -DNW=2 -DNN=0 -DNF=1: the wakers' reference goes when the flags clear, uncounted
 * mutant: BUG_SPLICE_ALL -DNW=0 -DNN=2 -DNF=0: an emptying runs every listed notify, whatever its generation
 * mutant: BUG_WAKE_LAST -DNW=1 -DNN=0 -DNF=1: the futex wake comes after the waker's reference drop
 */

#ifndef NW
#define NW 1
#endif
#ifndef NN
#define NN 1
#endif
#ifndef NF
#define NF 0
#endif
#define MAXN 2 /* notify slots */

/* the state word */
byte cnt;           /* the count (kept negated in C) */
byte gen;           /* generation, bumped by the emptying leave's carry */
bool wtr, ntf, orph;/* WAITERS, NOTIFY, ORPHAN */
/* the object header */
byte xref = 1;
byte ref = 1;
bool freed;
/* under notify_lock */
bool lk;
byte flag_gen, wakes_due, wakes_done;
bool wake_ref;
byte nhead, ntail;        /* the notify list: slots nhead..ntail-1, in registration order */
byte ngen[MAXN];          /* each notify's generation */
byte nreg[MAXN];          /* ghost: emptyings before its registration */
byte nran[MAXN];          /* ghost: times it ran */
/* the futex on the generation: wake-ups so far */
byte fw;
/* ghost: emptyings so far */
byte empties;

#define ACCESS assert(!freed)

inline lock() { atomic { ACCESS; !lk -> lk = true } }
inline unlock() { atomic { ACCESS; lk = false } }

/* cq__ref_release: the last internal reference disposes (frees) the group. */
inline ref_release()
{
    atomic {
        ACCESS;
        ref--;
        if
        :: ref == 0 -> assert(!lk); freed = true
        :: else
        fi
    }
}

/* flags_set: under the lock, a CAS just set the first flag at generation sgen. */
inline flags_set()
{
    flag_gen = sgen;
#ifndef BUG_NO_WAKE_REF
    if
    :: !wake_ref -> wake_ref = true; atomic { ACCESS; ref++ }
    :: else
    fi
#endif
}

/* group_wake(g, old): og, owtr, ontf are the emptying leave's view of the word. */
inline group_wake()
{
#ifndef BUG_WAKE_LAST
    if
    :: owtr -> atomic { ACCESS; fw++ } /* futex_wake on the generation */
    :: else
    fi;
#endif
    lock();
    if
    :: ontf ->
        /* splice the notifies of generations up to og: they run (a notify function only
         * reads its context, so running it here or after unlock is the same to the model) */
        do
#ifdef BUG_SPLICE_ALL
        :: nhead != ntail ->
#else
        :: nhead != ntail && ngen[nhead] <= og ->
#endif
            assert(empties > nreg[nhead]); /* an emptying after its registration */
            nran[nhead]++;
            assert(nran[nhead] == 1);
            nhead++
        :: else -> break
        od
    :: else
    fi;
    /* clear NOTIFY if the list is empty, WAITERS if the group is still empty (one CAS) */
    atomic {
        ACCESS;
        closed = false;
        if
        :: (wtr || ntf) ->
            if
            :: nhead == ntail -> ntf = false
            :: else
            fi;
            if
            :: cnt == 0 -> wtr = false
            :: else
            fi;
            if
            :: !wtr && !ntf -> closed = true; cgen = gen
            :: else
            fi
        :: else
        fi
    }
    if
    :: closed -> wakes_due = wakes_due + cgen - flag_gen
    :: else
    fi;
    wakes_done++;
#ifdef BUG_DROP_UNCOUNTED
    atomic { ACCESS; drop = wake_ref && !wtr && !ntf }
#else
    atomic { ACCESS; drop = wake_ref && !wtr && !ntf && wakes_done == wakes_due }
#endif
    if
    :: drop -> wake_ref = false
    :: else
    fi;
    unlock();
#ifndef BUG_NO_WAKE_REF
    if
    :: drop -> ref_release()
    :: else
    fi;
#endif
#ifdef BUG_WAKE_LAST
    if
    :: owtr -> atomic { ACCESS; fw++ }
    :: else
    fi;
#endif
    skip
}

/* enter: the CAS that subtracts in the low half only */
inline enter()
{
    atomic {
        ACCESS;
#ifdef BUG_ENTER_ADD
        if
        :: cnt == 0 -> gen-- /* the borrow */
        :: else
        fi;
#endif
        cnt++
    }
}

/* leave: one atomic add; only the emptying one with a flag or ORPHAN does more */
inline leave()
{
    atomic {
        ACCESS;
        assert(cnt > 0);
        owtr = wtr; ontf = ntf; oorph = orph; og = gen;
        cnt--;
        if
        :: cnt == 0 -> gen++; empties++; emptied = true
        :: else -> emptied = false
        fi
    }
    if
    :: emptied ->
        if
        :: owtr || ontf -> group_wake()
        :: else
        fi;
        if
        :: oorph -> ref_release()
        :: else
        fi
    :: else
    fi
}

/* cq_release: the last external reference runs group_xref_dispose, then drops the internal
 * reference the external ones held. */
inline release()
{
    atomic { ACCESS; xref--; last = (xref == 0) }
    if
    :: last ->
#ifndef BUG_NO_ORPHAN
        atomic { ACCESS; c = cnt }
        if
        :: c != 0 ->
            atomic { ACCESS; ref++ };
            atomic {
                ACCESS;
                if
                :: cnt != 0 -> orph = true; kept = true
                :: else -> kept = false
                fi
            }
            if
            :: !kept -> ref_release()
            :: else
            fi
        :: else
        fi;
#endif
        ref_release()
    :: else
    fi
}

#define LOCALS \
    byte og, cgen, sgen, c; \
    bool owtr, ontf, oorph, emptied, closed, drop, last, kept

proctype task()
{
    LOCALS;
    leave()
}

proctype waiter()
{
    LOCALS;
    byte mygen, e0, w0;
    bool set, first, slept;
    atomic {
        ACCESS;
        if
        :: cnt == 0 -> goto done
        :: else -> mygen = gen; e0 = empties
        fi
    }
    do
    :: atomic {
           ACCESS;
           if
           :: cnt == 0 -> break
           :: gen != mygen -> assert(empties != e0); break
           :: else -> set = wtr
           fi
       }
       if
       :: !set ->
           /* set_waiters */
           lock();
           atomic {
               ACCESS;
               first = false;
               if
               :: cnt != 0 && gen == mygen ->
                   set = true;
                   if
                   :: !wtr -> wtr = true; first = !ntf; sgen = gen
                   :: else
                   fi
               :: else -> set = false
               fi
           }
           if
           :: first -> flags_set()
           :: else
           fi;
           unlock()
       :: else
       fi;
       if
       :: set ->
           /* futex_wait(generation, mygen) */
           atomic {
               ACCESS;
               slept = (gen == mygen);
               w0 = fw
           }
           if
           :: slept -> fw != w0
           :: else
           fi
       :: else
       fi
    od;
done:
    release()
}

proctype notifier()
{
    LOCALS;
    bool first, empty_now;
    byte slot;
    enter();
    /* cq_group_notify_f */
    lock();
    atomic {
        ACCESS;
        first = false;
        if
        :: cnt == 0 -> empty_now = true
        :: else ->
            empty_now = false; sgen = gen;
            if
            :: !ntf -> ntf = true; first = !wtr
            :: else
            fi
        fi
    }
    assert(!empty_now); /* we hold an enter */
    if
    :: first -> flags_set()
    :: else
    fi;
    slot = ntail;
    ngen[slot] = sgen;
    nreg[slot] = empties;
    ntail++;
    unlock();
    leave();
    release()
}

proctype flapper()
{
    LOCALS;
    enter();
    leave();
    enter();
    leave();
    release()
}

init
{
    LOCALS;
    byte i;
    atomic {
        xref = 1 + NW + NN + NF; /* the others' references, retained by init */
        enter();                 /* the task's, as cq_group_async_f does */
        run task();
        i = 0;
        do
        :: i < NW -> run waiter(); i++
        :: else -> break
        od;
        i = 0;
        do
        :: i < NN -> run notifier(); i++
        :: else -> break
        od;
        i = 0;
        do
        :: i < NF -> run flapper(); i++
        :: else -> break
        od
    }
    release();
    _nr_pr == 1; /* everyone else has finished */
    assert(freed);
    i = 0;
    do
    :: i < ntail -> assert(nran[i] == 1); i++
    :: else -> break
    od
}
