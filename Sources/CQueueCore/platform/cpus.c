/*
 * How many CPUs this process may use: the affinity mask, capped by the cgroup CPU quota
 * (v2 cpu.max along the cgroup path, or v1 cfs_quota_us), overridable with CQ_WORKERS.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platform/cpus_internal.h"
#include "platform/diag_internal.h"

uint32_t cq__env_u32(const char *name, uint32_t dflt)
{
    const char *v = getenv(name);
    if (v == NULL || *v == '\0') {
        return dflt; /* unset, or set to nothing (`CQ_WORKERS= prog`): the default */
    }
    char *end;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    /* digits only: strtoul would also take leading blanks and a sign */
    if (*end != '\0' || n == 0 || errno == ERANGE || v[0] < '0' || v[0] > '9' || n > UINT32_MAX) {
        cq__report("ignoring %s=%s (expected a positive number)", name, v);
        return dflt;
    }
    return (uint32_t)n;
}

uint32_t cq__env_u32_clamped(const char *name, uint32_t dflt, uint32_t min, uint32_t max)
{
    uint32_t n = cq__env_u32(name, dflt);
    if (n < min || n > max) {
        uint32_t use = n < min ? min : max;
        cq__report("%s=%u is %s than %u, the %s the pool supports here: using %u", name, n,
                   n < min ? "less" : "more", use, n < min ? "least" : "most", use);
        return use;
    }
    return n;
}

/* CPUs from a cgroup v2 cpu.max ("max 100000" or "<quota> <period>"); 0 if unlimited. */
static uint32_t cgroup_v2_limit(const char *dir)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "/sys/fs/cgroup%s/cpu.max", dir);
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        return 0;
    }
    char quota[32] = {0};
    unsigned long period = 0;
    int n = fscanf(f, "%31s %lu", quota, &period);
    fclose(f);
    if (n != 2 || strcmp(quota, "max") == 0 || period == 0) {
        return 0;
    }
    unsigned long q = strtoul(quota, NULL, 10);
    return (uint32_t)((q + period - 1) / period);
}

static uint32_t cgroup_cpu_limit(void)
{
    uint32_t limit = 0;
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (f == NULL) {
        return 0;
    }
    char line[PATH_MAX];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "0::", 3) != 0) {
            continue;
        }
        char *dir = line + 3;
        dir[strcspn(dir, "\n")] = '\0';
        /* The effective quota is the smallest along the path to the root. */
        for (;;) {
            uint32_t l = cgroup_v2_limit(strcmp(dir, "/") == 0 ? "" : dir);
            if (l && (limit == 0 || l < limit)) {
                limit = l;
            }
            char *slash = strrchr(dir, '/');
            if (slash == NULL || slash == dir) {
                if (slash == dir && dir[1] != '\0') {
                    dir[1] = '\0';
                    continue;
                }
                break;
            }
            *slash = '\0';
        }
    }
    fclose(f);
    if (limit == 0) {
        /* cgroup v1 */
        FILE *q = fopen("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "re");
        FILE *p = fopen("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "re");
        long quota = -1, period = 0;
        if (q && p && fscanf(q, "%ld", &quota) == 1 && fscanf(p, "%ld", &period) == 1 &&
            quota > 0 && period > 0) {
            limit = (uint32_t)((quota + period - 1) / period);
        }
        if (q) {
            fclose(q);
        }
        if (p) {
            fclose(p);
        }
    }
    return limit;
}

uint32_t cq__usable_cpus(uint32_t max)
{
    uint32_t n;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        n = (uint32_t)CPU_COUNT(&set);
    } else {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c > 0 ? (uint32_t)c : 1;
    }
    uint32_t quota = cgroup_cpu_limit();
    if (quota && quota < n) {
        n = quota;
    }
    if (n < 1) {
        n = 1;
    }
    if (n > max) {
        n = max;
    }
    return cq__env_u32_clamped("CQ_WORKERS", n, 1, max);
}
