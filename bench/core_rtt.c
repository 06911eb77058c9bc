/*
 * cq-core-rtt: prints, in ns, how long a cache line takes to go from one CPU to another and
 * back (core_round_trip_median_ns: see
 * Benchmarks/Sources/CoreRoundTrip/include/core_round_trip.h). http_bench.py runs it before
 * every wrk run: on a virtual machine the host moves the vCPUs between cores that share a
 * cache and cores that do not, and the servers' figures follow.
 *
 * Exit status 0, or 1 (printing "-") if the process may use fewer than two CPUs.
 */
#include <stdio.h>

#include "core_round_trip.h"

int main(void)
{
    double ns = core_round_trip_median_ns();
    if (ns < 0) {
        puts("-");
        return 1;
    }
    printf("%.0f\n", ns);
    return 0;
}
