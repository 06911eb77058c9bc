/*
 * The monitor: looks after work waiting behind workers stuck in long tasks, band by band
 * (pool_internal.h).
 *
 * Tasks that block outside the runtime (a read, a sleep, a long spin) hold their worker, and
 * the pool cannot know. The monitor finds out. It is kicked by a producer that finds the pool
 * saturated (every proc busy, nobody searching) and by a worker that leaves a small backlog
 * unannounced (cq__pool_announce_backlog in find.c). While work is waiting it looks at each proc
 * every millisecond. A proc whose thread has been running the same task for 2 ticks and was seen
 * asleep in the kernel (state S or D: a read, a sleep, a lock) on 2 ticks in a row is
 * *blocked*: while work is waiting, it wakes an idle proc if there is one (which steals the
 * work), or else adds one extra proc (with a thread) per tick, up to the thread limit and to
 * BLOCKED_REPLACEMENTS per blocked proc (asleep in futex(), waiting for another thread, on a
 * doubling schedule instead: FUTEX_FIRST_NS). A proc
 * that has been running the same task for 10 ticks while runnable (computing, spinning, or
 * merely preempted) is *busy*: it only makes the monitor wake an idle proc, never add one, so
 * CPU-bound work never has more threads than CPUs. Tasks too short for either rule that each
 * sleep in the kernel (short reads, short sleeps) are caught by sampling instead (see
 * OFTEN_SAMPLE_TICKS). Extra procs retire as soon as they find no work. After 20 ticks without
 * waiting work the monitor sleeps on a futex: an idle process sees no wake-ups from it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "platform/diag_internal.h"
#include "platform/parker_internal.h"
#include "platform/thread_start_internal.h"
#include "platform/time_internal.h"
#include "scheduler/pool_internal.h"

#define TICK_NS 1000000L
#define STUCK_BLOCKED_TICKS 2u
#define STUCK_BUSY_TICKS 10u
#define QUIET_TICKS 20u
/* At the thread limit, with the tasks that hold the threads asleep in the kernel, the monitor
 * can do nothing until one returns (its worker then takes the waiting work itself). Reading
 * /proc for each of 250 threads every tick cost two thirds of a CPU there; so while the limit
 * keeps it from adding a thread, the tick doubles up to LIMITED_TICK_MAX_NS, and a thread
 * already seen asleep is looked at again only every LIMITED_RECHECK_TICKS ticks. */
#define LIMITED_TICK_MAX_NS 128000000L
#define LIMITED_RECHECK_TICKS 8u

static bool limited; /* the last tick could not add a thread for a blocked one (the limit) */

/* For blocked tasks the monitor grows a band to at most its base procs plus
 * BLOCKED_REPLACEMENTS per blocked task. A proc added for one that then blocks too is seen blocked
 * 2-3 ticks later and earns two more: tasks that all block still grow the band at a proc per tick
 * (with one per blocked task, only `base` added procs could wait to be seen at a time, which
 * halved that rate). One whose task waits in the runtime behind another wait instead (a kept
 * proc, below) is not blocked: it uses up a replacement, and the kept procs' own schedule adds
 * procs for it.
 * Adding a proc per tick for as long as one task slept made 200 tasks that sync onto a serial
 * queue behind 50 ms blocks that sleep grow to 204 threads in 0.5 s (libdispatch: 6), every
 * added thread waiting in the same line. */
#define BLOCKED_REPLACEMENTS 2u

/* Tasks that each sleep in the kernel for less than the two ticks above (a 300 us read, a 1 ms
 * sleep) are never one task seen twice: with only the rule above, 20,000 tasks that sleep
 * 300 us ran on the band's two threads, 1.5 times as long as on libdispatch's (which grew to
 * 3-4), and the CPUs idled. So while work waits and the band is saturated, the monitor samples
 * every OFTEN_SAMPLE_TICKS ticks whether each running proc's thread sleeps, its task changing
 * or not; a proc seen asleep at OFTEN_ASLEEP of its last OFTEN_SAMPLES samples is *often
 * asleep*, and the band grows by a proc per tick while it has fewer than base procs plus one
 * per often-asleep proc, and at most twice its base. Sleeps in futex() are not counted: threads
 * that take turns at a lock sleep often, and more of them do not help there (see
 * FUTEX_FIRST_NS). A /proc read costs a few microseconds: a sample every 4 ticks keeps it to
 * ~0.2 % of a CPU per proc while the band is saturated. */
#define OFTEN_SAMPLE_TICKS 4u
#define OFTEN_SAMPLES 4u
#define OFTEN_ASLEEP 3
static uint32_t often_tick;

/* A task asleep in futex() waits for another thread: a lock, a condition variable, a semaphore
 * of the program's. If that thread is a task waiting in the run queues (a condition that a later
 * task signals), a new thread is what lets it run; if it is another worker (tasks taking turns
 * at a mutex), a new thread only adds a contender: 50,000 tasks that each held a mutex for 20 us
 * made the pool grow to its thread limit of 255 in a quarter of a second (libdispatch: 4-5),
 * since the unlocking thread takes the mutex again for its next task before a waiter wakes, and
 * each added thread starves as long. So a proc blocked in futex() earns no replacement while
 * tasks of its band end, one at least within the current gap (whoever it waits for makes
 * progress: contention), and otherwise as the
 * kept procs do: the first after FUTEX_FIRST_NS, each next after twice the wait before it, up to
 * FUTEX_GAP_MAX_NS, until its band has had none for as long as the last gap (contention comes
 * and goes: starting over at every tick without one grew the pool again). Blocked in anything
 * else, at once. A mutex held for long (no task ends meanwhile) thus gets a thread per doubling
 * gap; tasks that wait on a condition for a task queued behind them get threads the same way
 * (8 of them: 0.27 s; libdispatch, which adds about a thread a second, 6 s). */
#define FUTEX_FIRST_NS 2000000ll
#define FUTEX_GAP_MAX_NS 1000000000ll
static int64_t futex_gap_ns[CQ__BAND_COUNT]; /* 0: the next one is the first */
static uint64_t futex_due_ns[CQ__BAND_COUNT];
static uint64_t futex_seen_ns[CQ__BAND_COUNT];      /* the last tick that saw one */
static uint64_t futex_completed_ns[CQ__BAND_COUNT]; /* the last tick after a task ended */

/* Whether a task of the band ended within the current gap (FUTEX_FIRST_NS at least): then
 * whoever a task asleep in futex() waits for is moving. */
static bool futex_progress(unsigned band, bool completed_now)
{
    uint64_t now = cq__now_ns();
    if (completed_now) {
        futex_completed_ns[band] = now;
        return true;
    }
    int64_t gap = futex_gap_ns[band] > FUTEX_FIRST_NS ? futex_gap_ns[band] : FUTEX_FIRST_NS;
    return now - futex_completed_ns[band] < (uint64_t)gap;
}

static bool futex_proc_due(unsigned band)
{
    uint64_t now = cq__now_ns();
    if (futex_gap_ns[band] == 0) {
        futex_gap_ns[band] = FUTEX_FIRST_NS;
        futex_due_ns[band] = now + (uint64_t)futex_gap_ns[band];
        return false;
    }
    if (now < futex_due_ns[band]) {
        return false;
    }
    futex_gap_ns[band] =
        futex_gap_ns[band] * 2 < FUTEX_GAP_MAX_NS ? futex_gap_ns[band] * 2 : FUTEX_GAP_MAX_NS;
    futex_due_ns[band] = now + (uint64_t)futex_gap_ns[band];
    return true;
}

/* A runtime wait queued behind another thread's wait for the same thing keeps its proc
 * (cq__event_wait_behind, block.c): tasks that take turns at a serial queue through sync
 * wait behind one another, and handing each waiter's CPU to a spare made one thread per
 * waiting task. Such waits end without new threads as long as the thing waited for moves on,
 * which needs none in the common case (the holder runs, or is compensated as any other wait).
 * Where it does need one (a serial queue whose next item is not a sync, say, with every proc
 * kept by waiters), the monitor adds a proc while work waits behind kept procs: the first after
 * KEPT_FIRST_NS, each next one after twice the wait before it, up to KEPT_GAP_MAX_NS, until a
 * tick finds no proc kept. Tasks that wait behind one another for a second thus get ~9 extra
 * threads, not one each; libdispatch, whose workqueue adds threads slowly, had 4-7. A tick that
 * finds a kept wait of the band ended puts the next proc off by a whole gap: the waits move on
 * without it. Tasks that take a semaphore of 1 around their work (semaphore.c) got a proc per
 * doubling gap all the same, 12-13 threads in 0.2 s (libdispatch 4-5). */
#define KEPT_FIRST_NS 2000000ll
#define KEPT_GAP_MAX_NS 1000000000ll
static int64_t kept_gap_ns; /* 0: no proc kept on the last tick */

/* Work waits, and every proc of a band has been kept by such waits for ALL_KEPT_TICKS ticks in
 * a row, with none of them ending meanwhile and no thread of the band running a task without a
 * proc (one back from a wait that found no idle proc): no task of the band runs, so nothing
 * moves the waits on but what waits
 * in the run queues (the drain of a queue that the holder of theirs waits for, say, queued
 * behind tasks that would wait too). Then a proc is added every tick, as for a blocked task,
 * until one runs. Syncs and barrier syncs onto a concurrent queue, and syncs onto a serial
 * queue on it, beside tasks queued on both, from 32-100 tasks: 7-20 s in 1-3 of 4 runs (the
 * holder of the serial queue waited for the concurrent queue's drain, queued behind tasks that
 * each became a kept waiter, one per doubling gap); now 0.02-0.2 s. */
#define ALL_KEPT_TICKS 2u
static uint32_t all_kept[CQ__BAND_COUNT];
static uint64_t kept_due_ns;

/* While such a stall lasts, each rescue adds twice the procs of the one before, up to
 * RESCUE_MAX, one tick after the procs it added were kept too (instead of ALL_KEPT_TICKS), and
 * it ends when a kept wait ends. Semaphore waits behind another waiter keep their procs too
 * (semaphore.c): 64 tasks that wait on a semaphore which a task queued after them signals
 * took 195 ms at a proc per two ticks; libdispatch, which adds about a thread a second, more
 * than a minute. */
#define RESCUE_MAX 16u
static uint32_t rescue[CQ__BAND_COUNT]; /* procs the band's last rescue added; 0: none going */

/* A band has work waiting and procs kept by waits behind other waits: whether to add a proc
 * for them now (see KEPT_FIRST_NS). */
static bool kept_proc_due(bool moved)
{
    uint64_t now = cq__now_ns();
    if (moved && kept_gap_ns != 0) {
        kept_due_ns = now + (uint64_t)kept_gap_ns;
        return false;
    }
    if (kept_gap_ns == 0) {
        kept_gap_ns = KEPT_FIRST_NS;
        kept_due_ns = now + (uint64_t)kept_gap_ns;
        return false;
    }
    if (now < kept_due_ns) {
        return false;
    }
    kept_gap_ns = kept_gap_ns * 2 < KEPT_GAP_MAX_NS ? kept_gap_ns * 2 : KEPT_GAP_MAX_NS;
    kept_due_ns = now + (uint64_t)kept_gap_ns;
    return true;
}

static _Atomic uint32_t active; /* futex: 0 asleep, 1 kicked / running */
static _Atomic bool missing;    /* its thread could not be started: kicks try again */

static void start_thread(void);

/* ---- starting threads for threads of a higher nice value (thread_start_internal.h) ---------
 * The monitor runs at the nice value of the thread that started the pool, and it is always
 * there: a background worker (nice 19) that must start a thread (the reactor for its first
 * timer, the I/O thread, a worker of another band) hands the start to it and waits, so that
 * the new thread runs at the pool's nice value, not 19. At most a tick's wait (1 ms) while the
 * monitor is awake; such starts happen a few times in a process's life. */
struct start_req {
    pthread_t *thread;
    void *(*fn)(void *);
    void *arg;
    int err;
    _Atomic uint32_t done; /* futex: 1 once err (and *thread) are written */
    struct start_req *next;
};

static pthread_mutex_t starts_lock = PTHREAD_MUTEX_INITIALIZER;
static struct start_req *starts;    /* under starts_lock */
static _Atomic bool thread_running; /* the monitor's thread exists (it may not have run yet:
                                       requests wait for it; test_thread_nice.c under load) */
static __thread bool on_monitor;    /* the calling thread is the monitor's */

static int start_delegate(pthread_t *thread, void *(*fn)(void *), void *arg)
{
    /* acquire: pairs with the release store at the top of monitor_main */
    if (on_monitor || !cq__load(&thread_running, acquire)) {
        return -1; /* start it yourself */
    }
    struct start_req req = {.thread = thread, .fn = fn, .arg = arg};
    pthread_mutex_lock(&starts_lock);
    req.next = starts;
    starts = &req;
    pthread_mutex_unlock(&starts_lock);
    /* The list's lock orders this kick after the monitor's last look at the list (see the
     * end of monitor_main's loop): it is either seen there or wakes the monitor. */
    cq__monitor_kick();
    /* acquire: pairs with the release store in run_starts (err and *thread are written) */
    while (cq__load(&req.done, acquire) == 0) {
        cq__futex_wait(&req.done, 0, NULL);
    }
    return req.err;
}

static bool starts_pending(void)
{
    pthread_mutex_lock(&starts_lock);
    bool pending = starts != NULL;
    pthread_mutex_unlock(&starts_lock);
    return pending;
}

static void run_starts(void)
{
    pthread_mutex_lock(&starts_lock);
    struct start_req *list = starts;
    starts = NULL;
    pthread_mutex_unlock(&starts_lock);
    while (list != NULL) {
        struct start_req *r = list;
        list = r->next; /* before the store: the requester may return and free r right after */
        r->err = cq__thread_start_here(r->thread, r->fn, r->arg);
        /* release: pairs with the requester's acquire load in start_delegate */
        cq__store(&r->done, 1, release);
        cq__futex_wake(&r->done, 1); /* by address only: r may be gone, a stray wake is harmless */
    }
}

void cq__monitor_kick(void)
{
    uint32_t zero = 0;
    if (cq__load(&active, relaxed) == 0 && cq__cas(&active, &zero, 1, relaxed)) {
        cq__futex_wake(&active, 1);
    }
    if (cq__unlikely(cq__load(&missing, relaxed)) && cq__xchg(&missing, false, relaxed)) {
        start_thread();
    }
}

/* In a forked child the monitor thread does not exist: the next pool start makes a new one. */
void cq__monitor_fork_child(void)
{
    cq__store(&active, 0, relaxed);
    cq__store(&missing, false, relaxed);
    cq__store(&thread_running, false, relaxed);
    starts = NULL; /* only the forking thread exists: nobody waits for these */
    pthread_mutex_init(&starts_lock, NULL);
}

/* Where thread `tid` of this process is, from /proc: running or waiting for a CPU (R: busy, not
 * blocked, it gets the longer threshold), asleep in the kernel (S or D), or asleep in futex():
 * a lock, a condition variable or a semaphore of the program's, which another thread ends. */
enum thread_place { THREAD_RUNS, THREAD_SLEEPS, THREAD_IN_FUTEX };

static ssize_t read_task_file(pid_t tid, const char *file, char *buf, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/%s", (int)tid, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n >= 0) {
        buf[n] = '\0';
    }
    return n;
}

static enum thread_place thread_place(pid_t tid)
{
    char buf[256];
    if (read_task_file(tid, "stat", buf, sizeof buf) <= 0) {
        return THREAD_RUNS;
    }
    const char *paren = strrchr(buf, ')'); /* the name may contain spaces and parentheses */
    if (!paren || paren[1] != ' ' || (paren[2] != 'S' && paren[2] != 'D')) {
        return THREAD_RUNS;
    }
    /* The system call it sleeps in: the number first (a thread of our own process may read
     * it without ptrace rights). */
    if (paren[2] == 'S' && read_task_file(tid, "syscall", buf, sizeof buf) > 0 &&
        strtol(buf, NULL, 10) == SYS_futex) {
        return THREAD_IN_FUTEX;
    }
    return THREAD_SLEEPS;
}

bool cq__monitor_thread_sleeps(pid_t tid)
{
    return thread_place(tid) != THREAD_RUNS;
}

/* Looks at the procs of one band whose work waits; returns how many are blocked. Sets
 * *could_not_add if it needed a thread that it could not add, and adds the procs kept by
 * waits behind other waits to *kept. */
static uint32_t tick_band(unsigned band, bool *could_not_add, uint32_t *kept)
{
    bool busy = false;
    uint32_t blocked = 0, kept_here = 0, live = 0, often = 0, in_futex = 0;
    bool completed = false; /* a task of the band ended since the last tick */
    bool sample = often_tick % OFTEN_SAMPLE_TICKS == 0 && cq__pool_band_saturated(band);
    bool kept_moved = false; /* a kept wait of the band ended since the last tick */
    uint32_t n = cq__pool_proc_count();
    for (uint32_t i = 0; i < n; i++) {
        struct cq__proc *p = cq__pool_proc_at(i);
        if (p->band != band) {
            continue;
        }
        /* Read for a retired proc too: one reused after a while (an extra proc, for a rescue)
         * looked as if a kept wait had just ended, from its waits before it retired, and
         * every such rescue stopped the doubling of RESCUE_MAX (a proc per 3 ticks). */
        uint32_t kept_ended = cq__load(&p->kept_ended, relaxed);
        bool kept_ended_now = kept_ended != p->mon_kept_ended;
        p->mon_kept_ended = kept_ended;
        if (cq__load(&p->retired, relaxed)) {
            continue;
        }
        live++;
        kept_moved |= kept_ended_now;
        uint32_t started = cq__load(&p->started, relaxed);
        /* A task ended since the last tick: the proc ran one then and has started another. */
        bool running = cq__load(&p->running, relaxed) && !cq__load(&p->kept, relaxed);
        completed |= running && p->mon_running && started != p->mon_started;
        p->mon_running = running;
        if (cq__load(&p->kept, relaxed)) {
            kept_here++; /* asleep by design: see KEPT_FIRST_NS */
            p->mon_started = started;
            p->mon_ticks = 0;
            p->mon_asleep = 0;
            p->mon_often = 0;
            continue;
        }
        if (!cq__load(&p->running, relaxed)) {
            p->mon_started = started;
            p->mon_ticks = 0;
            p->mon_asleep = 0;
            p->mon_often = 0;
            continue;
        }
        if (started != p->mon_started) {
            p->mon_started = started;
            p->mon_ticks = 0;
            p->mon_asleep = 0;
            if (sample) {
                /* see OFTEN_SAMPLE_TICKS: threads that take turns at a lock are not counted */
                bool asleep = thread_place(cq__load(&p->tid, relaxed)) == THREAD_SLEEPS;
                p->mon_often = ((p->mon_often << 1) | asleep) & ((1u << OFTEN_SAMPLES) - 1);
            }
            often += __builtin_popcount(p->mon_often) >= OFTEN_ASLEEP;
            continue;
        }
        p->mon_ticks++;
        if (p->mon_ticks >= CQ__OC_LIFO_TICKS && band != CQ__BAND_BACKGROUND) {
            cq__overcommit_take_lifo(p); /* a serial queue's drain behind a long task */
        }
        if (limited && p->mon_asleep >= 2 && p->mon_ticks % LIMITED_RECHECK_TICKS != 0) {
            blocked++; /* seen asleep, same task: see LIMITED_RECHECK_TICKS */
            in_futex += p->mon_futex;
            continue;
        }
        if (p->mon_ticks >= STUCK_BLOCKED_TICKS) {
            /* Two sightings in a row: a task that computes and touches a cold page now and
             * then is not blocked. */
            enum thread_place place = thread_place(cq__load(&p->tid, relaxed));
            p->mon_asleep = place != THREAD_RUNS ? p->mon_asleep + 1 : 0;
            p->mon_futex = place == THREAD_IN_FUTEX;
            if (p->mon_asleep >= 2) {
                blocked++;
                in_futex += p->mon_futex;
                continue;
            }
        }
        if (p->mon_ticks >= STUCK_BUSY_TICKS) {
            busy = true;
        }
    }
    if (in_futex != 0) {
        futex_seen_ns[band] = cq__now_ns();
    } else if (futex_gap_ns[band] != 0 &&
               cq__now_ns() - futex_seen_ns[band] >= (uint64_t)futex_gap_ns[band]) {
        futex_gap_ns[band] = 0; /* see FUTEX_FIRST_NS: the next starts over */
    }
    *kept += kept_here;
    /* see ALL_KEPT_TICKS: counted on consecutive ticks of this band with work waiting */
    bool all = kept_here != 0 && kept_here == live && !kept_moved &&
               cq__load(&cq__pool.band[band].procless, relaxed) == 0;
    all_kept[band] = all ? all_kept[band] + 1 : 0;
    if (kept_moved || kept_here == 0) {
        rescue[band] = 0; /* see RESCUE_MAX: the stall is over */
    }
    uint32_t base = cq__pool.band[band].base, sleeping = blocked - in_futex;
    if (sleeping && live < base + BLOCKED_REPLACEMENTS * sleeping &&
        cq__pool_band_saturated(band)) {
        /* Work waits and a CPU is idle because its task sleeps in the kernel: replace it (see
         * BLOCKED_REPLACEMENTS), at once for a read or a sleep. Tasks waiting in futex() do not
         * count here: a task asleep while it holds the lock they wait for earned a thread for
         * each of them (400 tasks holding one mutex through a 5 ms sleep: 257 threads). */
        *could_not_add |= !cq__pool_add_extra_proc(band);
    } else if (in_futex && live < base + BLOCKED_REPLACEMENTS * blocked &&
               cq__pool_band_saturated(band) && !futex_progress(band, completed) &&
               futex_proc_due(band)) {
        /* on a doubling schedule for a wait for another thread (see FUTEX_FIRST_NS) */
        *could_not_add |= !cq__pool_add_extra_proc(band);
    } else if (often && live < cq__pool.band[band].base + often &&
               live < 2 * cq__pool.band[band].base && cq__pool_band_saturated(band)) {
        /* see OFTEN_SAMPLE_TICKS */
        *could_not_add |= !cq__pool_add_extra_proc(band);
    } else if (kept_here && cq__pool_band_saturated(band)) {
        if (all_kept[band] >= (rescue[band] ? 1u : ALL_KEPT_TICKS)) {
            /* see RESCUE_MAX */
            uint32_t add = rescue[band] == 0               ? 1
                           : rescue[band] * 2 < RESCUE_MAX ? rescue[band] * 2
                                                           : RESCUE_MAX;
            rescue[band] = add;
            all_kept[band] = 0;
            while (add-- != 0) {
                if (!cq__pool_add_extra_proc(band)) {
                    *could_not_add = true;
                    break;
                }
            }
        } else if (kept_proc_due(kept_moved)) {
            *could_not_add |= !cq__pool_add_extra_proc(band);
        }
    } else if (blocked || busy || kept_here) {
        /* Work waits behind a long task: an idle worker can take it (stealing from the busy
         * one's ring). A busy task keeps its CPU to itself: more threads than CPUs would only
         * make the computing tasks take turns. */
        if (!cq__pool_notify_band(band) && band == CQ__BAND_NORMAL &&
            cq__load(&cq__pool.high_hint, relaxed)) {
            cq__pool_notify_band(CQ__BAND_EXPRESS); /* high work behind busy workers */
        }
    }
    return blocked;
}

/*
 * Work from outside the pool waits in the inject queues, which a worker whose own ring keeps
 * filling looks at only every CQ__INJECT_INTERVAL items: 61 ms for tasks of 1 ms. Eight such
 * tasks that each queue the next one on 2 CPUs left work submitted from the main thread
 * waiting 40-44 ms at the median and 214-253 ms at worst (libdispatch, one shared queue: 7-10
 * and 12 ms; cq-bench outside_p50 gave 3.6 s, libdispatch 3.6 ms). So a tick that finds an
 * inject queue with items bumps P.inject_turn, and every worker takes the inject queues' turn
 * at its next item: such work waits about a millisecond (0.86 ms at the median; it went behind
 * the ring's items, 4.9 ms, until it ran first where the ring holds only the worker's own
 * pushes, see find.c, inject_take_levels).
 * (Bumping only for items seen at two ticks in a row made no difference.)
 */
static void inject_turns(void)
{
    for (unsigned i = 0; i < CQ__INJECT_COUNT; i++) {
        if (cq__inject_maybe_work(&cq__pool.inject[i])) {
            cq__add(&cq__pool.inject_turn, 1, relaxed);
            return;
        }
    }
}

/* One tick: returns true while work is waiting. */
static bool tick(void)
{
    bool waiting = false, could_not_add = false;
    uint32_t blocked = 0, kept = 0;
    often_tick++;
    for (unsigned band = 0; band < CQ__BAND_COUNT; band++) {
        if (cq__pool_band_work_waiting(band)) {
            waiting = true;
            blocked += tick_band(band, &could_not_add, &kept);
        } else {
            all_kept[band] = 0; /* see ALL_KEPT_TICKS: ticks in a row with work waiting */
            rescue[band] = 0;
        }
    }
    if (kept == 0) {
        kept_gap_ns = 0; /* the next proc kept starts over at KEPT_FIRST_NS */
    }
    limited = could_not_add;
    cq__pool_set_blocked_in_tasks(blocked);
    if (waiting) {
        inject_turns();
        cq__overcommit_tick();
    }
    return waiting;
}

static void *monitor_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "cq-monitor");
    on_monitor = true;
    /* release: pairs with start_delegate's acquire load */
    cq__store(&thread_running, true, release);
    for (;;) {
        /* pairs with nothing that publishes data: the kick only wakes the monitor, which reads the
         * pool's counters itself (see cq__monitor_kick) */
        while (cq__load(&active, acquire) == 0) {
            cq__futex_wait(&active, 0, NULL);
        }
        run_starts();
        long tick_ns = TICK_NS;
        for (uint32_t quiet = 0; quiet < QUIET_TICKS;) {
            struct timespec d = {0, tick_ns};
            nanosleep(&d, NULL);
            run_starts();
            quiet = tick() ? 0 : quiet + 1;
            /* see LIMITED_TICK_MAX_NS */
            tick_ns = !limited                            ? TICK_NS
                      : tick_ns < LIMITED_TICK_MAX_NS / 2 ? tick_ns * 2
                                                          : LIMITED_TICK_MAX_NS;
        }
        limited = false;
        /* pairs with the seq_cst work re-check below against producers' publish-then-kick (see
         * cq__monitor_kick) */
        cq__store(&active, 0, seq_cst);
        /* A kick between our last tick and the store above would be lost: look once more (a
         * start request's kick is ordered by the list's lock instead). */
        if (cq__pool_work_waiting() || starts_pending()) {
            cq__store(&active, 1, relaxed);
        }
    }
    return NULL;
}

static void start_thread(void)
{
    pthread_t thread;
    if (cq__thread_start(&thread, monitor_main, NULL) != 0) {
        static atomic_bool reported;
        cq__report_once(&reported, "cannot start the monitor thread: stuck workers are not "
                                   "compensated until it can start");
        cq__store(&missing, true, relaxed); /* the next kick tries again */
        return;
    }
    /* From here on a start request waits for the monitor even before its thread first runs
     * (the request's kick is seen when it does): starting the thread itself instead, a
     * background worker gave it its own nice value, 19 (the reactor, on a loaded machine).
     * release: pairs with start_delegate's acquire load */
    cq__store(&thread_running, true, release);
}

void cq__monitor_start(void)
{
    /* The nice value of the thread that starts the pool, the monitor's own (it inherits it):
     * the one every runtime thread but the background workers runs at. */
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0); /* Linux: the calling thread's */
    cq__thread_start_set_delegate(errno == 0 ? nice : 0, start_delegate);
    start_thread();
}
