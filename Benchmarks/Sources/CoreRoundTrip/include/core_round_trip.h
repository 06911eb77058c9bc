#ifndef CORE_ROUND_TRIP_H
#define CORE_ROUND_TRIP_H

/*
 * How long one cache line takes to go from one CPU to another and back: two threads, pinned
 * to the first two CPUs the process may use, bounce a counter `rounds` times, each spinning
 * until the other has written. Returns nanoseconds per round trip, or a negative number if
 * the process may use fewer than two CPUs or a thread cannot be started or pinned.
 *
 * Why the benchmarks measure it: on a virtual machine the host may place the two vCPUs on
 * cores that share a cache (a round trip of ~70 ns here) or on cores that do not (~200-400 ns),
 * and it changes that placement from one second to the next. Workloads whose threads hand
 * memory to each other (adding operations that pool threads run) take about twice as long in
 * the second case, on every runtime alike; the figure shows which case a repetition ran in.
 */
double core_round_trip_ns(long rounds);

/* What the benchmarks record: the median of five core_round_trip_ns(2000) probes (a few ms in
 * all), or a negative number as above. */
double core_round_trip_median_ns(void);

#endif
