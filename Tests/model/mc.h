/*
 * A small systematic interleaving checker (stateless model checking) for C code built with
 * -DCQ_MODEL_CHECK: every cq__* atomic operation calls cq__model_yield() first, which makes it a
 * scheduling point. Simulated threads are coroutines on one OS thread; each execution of a
 * scenario runs them from the start under one schedule, and the checker enumerates schedules
 * depth-first, replaying the prefix it shares with the previous one.
 *
 * Exploration modes:
 *   MC_DPOR   every sequentially consistent interleaving up to the commutation of independent
 *             operations: dynamic partial-order reduction (Source-DPOR with sleep sets, after
 *             Abdulla, Aronis, Jonsson and Sagonas, POPL 2014). Exhaustive: at least one
 *             execution of every Mazurkiewicz trace, hence every final state and every
 *             assertion reachable under SC.
 *   MC_NAIVE  every interleaving, no reduction (optionally with a preemption bound): the
 *             reference the reduced search is cross-checked against on small scenarios.
 *
 * Two operations are dependent when they touch the same address and one of them writes (a CAS
 * always counts as a write); fences are independent of everything (they change nothing under
 * SC). All shared memory of the code under test must go through the cq__* macros: a plain
 * shared access would be invisible to the scheduler.
 */
#ifndef MC_H
#define MC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MC_MAX_THREADS 4

enum mc_mode { MC_DPOR, MC_NAIVE };

struct mc_scenario {
    const char *name;
    const char *about;
    int nthreads;
    const char *thread_names[MC_MAX_THREADS];
    void (*threads[MC_MAX_THREADS])(void);
    void (*setup)(void);                   /* resets all state before each execution */
    void (*check)(void);                   /* after a complete execution; calls mc_fail */
    uint64_t (*outcome)(void);             /* a hash of the observable result, or NULL */
    const char *(*name_of)(const volatile void *addr, char *buf, unsigned size); /* or NULL */
};

struct mc_options {
    enum mc_mode mode;
    int preemption_bound; /* MC_NAIVE only; < 0: none */
    bool verbose;
};

struct mc_stats {
    uint64_t executions;    /* complete executions checked */
    uint64_t pruned;        /* executions abandoned as redundant (sleep-set blocked) */
    uint64_t steps;         /* scheduling steps executed, replays included */
    uint64_t outcomes;      /* distinct outcome hashes */
    uint64_t outcome_digest; /* order-independent digest of the set of outcomes */
    uint64_t traces;        /* distinct Mazurkiewicz traces (happens-before classes) executed */
    uint64_t trace_digest;  /* order-independent digest of the set of traces */
    unsigned max_depth;     /* longest execution, in steps */
    double seconds;
};

/* Explores the scenario; on a violation prints it with the schedule and exits with status 1. */
void mc_explore(const struct mc_scenario *sc, const struct mc_options *opt, struct mc_stats *st);

/* The trace hashes of the last exploration, sorted (malloc'd; the caller frees them). */
uint64_t *mc_last_traces(size_t *count);

/* Reports a violation (from a simulated thread or from check()) and exits with status 1. */
__attribute__((format(printf, 1, 2), noreturn)) void mc_fail(const char *fmt, ...);

/* Index of the simulated thread running (-1 outside a simulated thread). */
int mc_current_thread(void);

#define MC_CHECK(cond, ...)                                                                     \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            mc_fail(__VA_ARGS__);                                                               \
        }                                                                                       \
    } while (0)

#endif /* MC_H */
