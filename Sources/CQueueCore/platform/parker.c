/*
 * Futex, spin calibration, one-shot events.
 */
#include "platform/parker_internal.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

int cq__futex_wait(_Atomic uint32_t *word, uint32_t expected, const struct cq__deadline *d)
{
    long r;
    if (d == NULL || d->forever) {
        r = syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
    } else {
        /* FUTEX_WAIT_BITSET takes an absolute time on CLOCK_MONOTONIC, or on CLOCK_REALTIME
         * with FUTEX_CLOCK_REALTIME: a wall-clock deadline follows changes of the clock. */
        int op = FUTEX_WAIT_BITSET_PRIVATE;
        if (d->clock == CLOCK_REALTIME) {
            op |= FUTEX_CLOCK_REALTIME;
        }
        r = syscall(SYS_futex, (uint32_t *)word, op, expected, &d->at, NULL,
                    FUTEX_BITSET_MATCH_ANY);
    }
    if (r == -1 && errno == ETIMEDOUT) {
        return ETIMEDOUT;
    }
    return 0;
}

void cq__futex_wake(_Atomic uint32_t *word, int count)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

static _Atomic uint32_t relax_ps; /* picoseconds per cq__cpu_relax(), 0 until calibrated */

static uint32_t calibrate(void)
{
    /* Time a few thousand relax instructions; keep the fastest of three runs (the others may
     * have been preempted). */
    uint64_t best = UINT64_MAX;
    for (int run = 0; run < 3; run++) {
        uint64_t t0 = cq__now_ns();
        for (int i = 0; i < 2000; i++) {
            cq__cpu_relax();
        }
        uint64_t dt = cq__now_ns() - t0;
        if (dt < best) {
            best = dt;
        }
    }
    uint64_t ps = best * 1000 / 2000;
    if (ps < 100) {
        ps = 100; /* a relax never takes less than ~0.1 ns; keeps the division sane */
    }
    cq__store(&relax_ps, (uint32_t)ps, relaxed);
    return (uint32_t)ps;
}

uint32_t cq__spin_iterations(uint32_t ns)
{
    uint32_t ps = cq__load(&relax_ps, relaxed);
    if (cq__unlikely(ps == 0)) {
        ps = calibrate();
    }
    uint64_t n = (uint64_t)ns * 1000 / ps;
    return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

void cq__spin_init(struct cq__spin *sp, uint32_t ns)
{
    sp->pure = cq__spin_iterations(CQ__SPIN_PURE_NS) + 1; /* one pause between two checks */
    sp->deadline = cq__now_ns() + ns;
}

/*
 * Until when this thread's waits skip the yielding part of their spin (see cq__spin_next).
 * Thread-local: only the thread's own waits read and write it.
 */
static __thread uint64_t yield_costly_until;

bool cq__spin_next(struct cq__spin *sp)
{
    if (sp->pure) {
        sp->pure--;
        cq__cpu_relax();
        return true;
    }
    uint64_t now = cq__now_ns();
    if (now >= sp->deadline || now < yield_costly_until) {
        return false;
    }
    /*
     * A yield hands the CPU to a partner that shares it, which then answers at once. But when
     * other processes' threads wait for this CPU, the kernel runs one of them for its whole
     * slice (milliseconds) and this thread, still runnable, is not woken by the answer: a
     * thread asleep on a futex is, and runs at once. With two CPU hogs beside four threads
     * taking turns at a serial queue through sync, every hand-off lost a slice that way, and
     * 200,000 syncs took up to 5 s instead of 10 ms. So a yield that kept this thread off the
     * CPU for long ends the spin, and the thread's next waits go straight to sleep for a while.
     */
    sched_yield();
    uint64_t after = cq__now_ns();
    if (after - now > CQ__YIELD_LOST_NS) {
        yield_costly_until = after + CQ__YIELD_COSTLY_FOR_NS;
        return false;
    }
    return true;
}

static void (*sleep_begin)(struct cq__block *);
static void (*sleep_end)(struct cq__block *);

void cq__sleep_hooks_register(void (*begin)(struct cq__block *), void (*end)(struct cq__block *))
{
    sleep_begin = begin;
    sleep_end = end;
}

/* Waits until e is signalled, or until monotonic time `until_ns` (0: none) has passed; returns
 * whether it was signalled. */
static bool event_wait(struct cq__event *e, bool keep_proc, uint64_t until_ns)
{
    /* acquire: pairs with the release exchange in cq__event_signal */
    if (cq__load(&e->state, acquire) == CQ__EVENT_SIGNALLED) {
        return true;
    }
    struct cq__spin sp;
    cq__spin_init(&sp, CQ__SPIN_WAIT_NS);
    while (cq__spin_next(&sp)) {
        /* pairs with the release exchange in cq__event_signal */
        if (cq__load(&e->state, acquire) == CQ__EVENT_SIGNALLED) {
            return true;
        }
    }
    struct cq__block block = {.active = false, .keep_proc = keep_proc};
    bool signalled = true;
    if (sleep_begin) {
        sleep_begin(&block);
    }
    for (;;) {
        uint32_t s = CQ__EVENT_PENDING;
        /* pairs with the release exchange in cq__event_signal */
        if (!cq__cas(&e->state, &s, CQ__EVENT_SLEEPING, acquire)) {
            if (s == CQ__EVENT_SIGNALLED) {
                break;
            }
            if (s == CQ__EVENT_NUDGED) {
                /* What this waits for needs a worker now (cq__event_nudge): stop keeping the
                 * proc, hand it on as any wait does. A signal may have replaced the nudge. */
                (void)cq__cas(&e->state, &s, CQ__EVENT_PENDING, relaxed);
                if (block.keep_proc && sleep_begin) {
                    sleep_end(&block);
                    block.keep_proc = false;
                    sleep_begin(&block);
                }
                continue;
            }
        }
        if (until_ns == 0) {
            cq__futex_wait(&e->state, CQ__EVENT_SLEEPING, NULL);
        } else {
            struct cq__deadline d = {.forever = false, .clock = CLOCK_MONOTONIC};
            d.at.tv_sec = (time_t)(until_ns / 1000000000u);
            d.at.tv_nsec = (long)(until_ns % 1000000000u);
            cq__futex_wait(&e->state, CQ__EVENT_SLEEPING, &d);
            s = CQ__EVENT_SLEEPING;
            if (cq__now_ns() >= until_ns && cq__cas(&e->state, &s, CQ__EVENT_PENDING, relaxed)) {
                signalled = false; /* timed out; a signal after this finds PENDING */
                break;
            }
        }
        /* pairs with the release exchange in cq__event_signal */
        if (cq__load(&e->state, acquire) == CQ__EVENT_SIGNALLED) {
            break;
        }
    }
    /* acquire: the failed CAS above only read SIGNALLED with relaxed ordering; pairs with the
     * release exchange in cq__event_signal */
    (void)cq__load(&e->state, acquire);
    if (sleep_end) {
        sleep_end(&block);
    }
    return signalled;
}

void cq__event_wait(struct cq__event *e)
{
    (void)event_wait(e, false, 0);
}

void cq__event_wait_behind(struct cq__event *e)
{
    (void)event_wait(e, true, 0);
}

bool cq__event_wait_until(struct cq__event *e, bool behind, uint64_t until_ns)
{
    return event_wait(e, behind, until_ns);
}
