/*
 * cq-core-rtt: prints, in ns, how long a cache line takes to go from one CPU to another and
 * back (the median of five probes of 2,000 rounds; see
 * Benchmarks/Sources/CoreRoundTrip/include/core_round_trip.h). http_bench.py runs it before
 * every wrk run: on a virtual machine the host moves the vCPUs between cores that share a
 * cache and cores that do not, and the servers' figures follow.
 *
 * Exit status 0, or 1 (printing "-") if the process may use fewer than two CPUs.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core_round_trip.h"

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    double probes[5];
    for (int i = 0; i < 5; i++) {
        probes[i] = core_round_trip_ns(2000);
        if (probes[i] < 0) {
            puts("-");
            return 1;
        }
    }
    qsort(probes, 5, sizeof probes[0], by_value);
    printf("%.0f\n", probes[2]);
    return 0;
}
