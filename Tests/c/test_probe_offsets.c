/*
 * scripts/cq-probes.py on a program linked at a fixed address (CMake builds this test with
 * -fno-pie -no-pie): a uprobe is placed by file offset, and the probe notes give virtual
 * addresses, which in such a program differ from the offsets by the load address (0x400000).
 * `cq-probes.py list` must give, for every probe, the file offset of its site (an SDT site is a
 * nop, in an executable mapping of the file) and of its semaphore (in a writable mapping, 0
 * while no tracer is attached). Checked against this process's own mappings of its file
 * (/proc/self/maps): no perf, no tracefs, no privileges. Skipped (with a message) without
 * <sys/sdt.h>, python3 or readelf, and off x86-64 (the script spells x86-64 registers).
 */
#define _GNU_SOURCE
#include <limits.h>

#include "cq_test.h"

#if defined(__has_include)
#if __has_include(<sys/sdt.h>)
#define HAVE_SDT 1
#endif
#endif

struct mapping {
    uintptr_t start, end, offset;
    char perms[5];
};

static struct mapping maps[64];
static int nmaps;

/* This program's own file mappings. */
static void read_maps(const char *exe)
{
    FILE *f = fopen("/proc/self/maps", "r");
    REQUIRE(f != NULL);
    char line[PATH_MAX + 128];
    while (fgets(line, sizeof line, f) && nmaps < (int)(sizeof maps / sizeof maps[0])) {
        struct mapping m;
        unsigned long start, end, offset;
        int path_at = 0;
        if (sscanf(line, "%lx-%lx %4s %lx %*s %*s %n", &start, &end, m.perms, &offset, &path_at) <
                4 ||
            path_at == 0) {
            continue;
        }
        char *path = line + path_at;
        path[strcspn(path, "\n")] = '\0';
        if (strcmp(path, exe) == 0) {
            m.start = start;
            m.end = end;
            m.offset = offset;
            maps[nmaps++] = m;
        }
    }
    fclose(f);
}

/* Where file offset `off` is in memory, in a mapping with permission `perm` ('x' or 'w'); 0 if
 * in none. */
static uintptr_t runtime_address(uintptr_t off, char perm)
{
    for (int i = 0; i < nmaps; i++) {
        struct mapping *m = &maps[i];
        if (strchr(m->perms, perm) && m->offset <= off && off < m->offset + (m->end - m->start)) {
            return m->start + (off - m->offset);
        }
    }
    return 0;
}

static void test_probe_offsets(void)
{
#if !defined(HAVE_SDT) || !defined(__x86_64__)
    fprintf(stderr, "   skipped: built without <sys/sdt.h>, or not x86-64\n");
#else
    char exe[PATH_MAX];
    REQUIRE(realpath("/proc/self/exe", exe) != NULL);
    read_maps(exe);
    REQUIRE(nmaps > 0);
    char cmd[2 * PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "python3 '%s' list '%s' 2>&1", CQ_PROBES_SCRIPT, exe);
    FILE *p = popen(cmd, "r");
    REQUIRE(p != NULL);
    char line[4096];
    int probes = 0, other = 0;
    while (fgets(line, sizeof line, p)) {
        char name[128];
        unsigned long loc, sem;
        const char *colon = strstr(line, exe);
        if (strncmp(line, "p:swiftqueues/", 14) != 0 || colon == NULL ||
            sscanf(line + 14, "%127s", name) != 1 ||
            sscanf(colon + strlen(exe), ":%lx(%lx)", &loc, &sem) != 2) {
            if (other++ < 5) {
                fprintf(stderr, "   cq-probes.py: %s", line);
            }
            continue;
        }
        probes++;
        uintptr_t site = runtime_address(loc, 'x');
        uintptr_t semaphore = runtime_address(sem, 'w');
        if (site == 0 || *(const unsigned char *)site != 0x90) {
            fprintf(stderr, "%s: offset %#lx is not a probe site (a nop in the text)\n", name, loc);
            test_failures++;
        }
        if (semaphore == 0 || *(const unsigned short *)semaphore != 0) {
            fprintf(stderr, "%s: offset %#lx is not a semaphore (0, in the writable data)\n", name,
                    sem);
            test_failures++;
        }
    }
    int status = pclose(p);
    if (probes == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        fprintf(stderr, "   skipped: python3 is not installed\n");
        return;
    }
    if (probes == 0 && other > 0 && system("readelf --version > /dev/null 2>&1") != 0) {
        fprintf(stderr, "   skipped: readelf is not installed\n");
        return;
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(probes >= 10); /* each probe, some at several sites */
    fprintf(stderr, "   %d probe sites checked in %s\n", probes, exe);
#endif
}

static void noop(void *ctx)
{
    (void)ctx;
}

int main(void)
{
    /* the probes are in the library's objects this program links: use a few */
    cq_queue_t q = cq_queue_create("offsets", CQ_QUEUE_SERIAL);
    cq_sync_f(q, NULL, noop);
    cq_async_f(q, NULL, noop);
    cq_sync_f(q, NULL, noop);
    cq_release(q);
    RUN(test_probe_offsets);
    TEST_MAIN_END();
}
