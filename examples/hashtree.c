/*
 * hashtree — hash every regular file under a directory tree, in parallel, with CQueueCore.
 *
 *   usage: cq-hashtree [--quiet] [DIRECTORY]        (DIRECTORY defaults to ".")
 *
 * The program is written the way a GCD user would write it:
 *
 *   - Traversal is a task per directory on the default global queue. A directory task reads its
 *     entries with readdir and submits one task per subdirectory (another traversal task) and one
 *     per regular file (a hashing task). Nothing recurses on a thread's stack, and the main thread
 *     does no work at all: it submits the root and then parks in cq_main().
 *   - Every task is submitted through one cq_group_t, so the group is empty exactly when the whole
 *     tree has been walked, hashed and aggregated. cq_group_notify_f then schedules the summary
 *     onto the main queue, which prints it and exits.
 *   - Results are sent, as small messages, to a serial queue that owns all the totals. Only that
 *     queue touches them, so the aggregation needs no lock and no atomics.
 *   - A counting semaphore bounds the descriptors open at once (files and directories alike), so
 *     a huge or very wide tree cannot exhaust the process's descriptor table.
 *
 * Symbolic links are never followed (except the DIRECTORY argument itself, as `find -H` does):
 * they, and devices, FIFOs and sockets, are counted as skipped. Entries that cannot be opened or
 * read are counted as errors (the first few are reported on stderr) and the walk goes on; so are
 * entries whose path below DIRECTORY is longer than PATH_MAX (ENAMETOOLONG: every open is made
 * relative to DIRECTORY). The exit status is 0 whenever the walk completed, 1 if the directory
 * argument cannot be opened, 2 on a usage error.
 *
 * The digest. Each file's contents are hashed with XXH64 (Yann Collet's xxHash, 64-bit variant;
 * implemented below from the algorithm's specification). The file's entry is then
 * XXH64(relative path, seed = content hash), which binds the contents to the name. The tree's
 * digest is the sum, modulo 2^64, of the entries of all regular files hashed: a sum does not
 * depend on the order in which files finish, so the digest is the same on every run, and it does
 * not depend on how the directory argument is spelled ("/usr/include" or "/usr/include/").
 * Directories, skipped entries and errors do not enter the digest.
 */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cqueuecore.h>

/* ---- XXH64 ------------------------------------------------------------------------------------ */

/*
 * A streaming XXH64: four 64-bit accumulators each take one 8-byte lane of every 32-byte stripe
 * (multiply, rotate, multiply); the tail and the total length are folded in at the end, followed
 * by a final avalanche. Reads are little-endian whatever the host, so digests are portable.
 */

#define XXH_P1 UINT64_C(0x9E3779B185EBCA87)
#define XXH_P2 UINT64_C(0xC2B2AE3D27D4EB4F)
#define XXH_P3 UINT64_C(0x165667B19E3779F9)
#define XXH_P4 UINT64_C(0x85EBCA77C2B2AE63)
#define XXH_P5 UINT64_C(0x27D4EB2F165667C5)

struct xxh64_state {
    uint64_t acc[4];
    uint64_t total;        /* bytes fed so far */
    uint64_t seed;
    unsigned char buf[32]; /* a partial stripe carried between updates */
    size_t buffered;
};

static inline uint64_t rotl64(uint64_t x, unsigned r)
{
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t read_le64(const unsigned char *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
           (uint64_t)p[7] << 56;
}

static inline uint64_t read_le32(const unsigned char *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
}

static inline uint64_t xxh64_round(uint64_t acc, uint64_t lane)
{
    acc += lane * XXH_P2;
    acc = rotl64(acc, 31);
    return acc * XXH_P1;
}

static inline uint64_t xxh64_merge(uint64_t h, uint64_t acc)
{
    h ^= xxh64_round(0, acc);
    return h * XXH_P1 + XXH_P4;
}

static void xxh64_init(struct xxh64_state *s, uint64_t seed)
{
    s->acc[0] = seed + XXH_P1 + XXH_P2;
    s->acc[1] = seed + XXH_P2;
    s->acc[2] = seed;
    s->acc[3] = seed - XXH_P1;
    s->total = 0;
    s->seed = seed;
    s->buffered = 0;
}

static inline void xxh64_stripe(uint64_t acc[4], const unsigned char *p)
{
    acc[0] = xxh64_round(acc[0], read_le64(p));
    acc[1] = xxh64_round(acc[1], read_le64(p + 8));
    acc[2] = xxh64_round(acc[2], read_le64(p + 16));
    acc[3] = xxh64_round(acc[3], read_le64(p + 24));
}

static void xxh64_update(struct xxh64_state *s, const void *data, size_t len)
{
    const unsigned char *p = data;
    s->total += len;
    if (s->buffered > 0) { /* complete the carried stripe first */
        size_t take = sizeof s->buf - s->buffered;
        if (take > len) {
            take = len;
        }
        memcpy(s->buf + s->buffered, p, take);
        s->buffered += take;
        p += take;
        len -= take;
        if (s->buffered < sizeof s->buf) {
            return;
        }
        xxh64_stripe(s->acc, s->buf);
        s->buffered = 0;
    }
    uint64_t acc[4] = {s->acc[0], s->acc[1], s->acc[2], s->acc[3]};
    for (; len >= 32; p += 32, len -= 32) {
        xxh64_stripe(acc, p);
    }
    memcpy(s->acc, acc, sizeof acc);
    memcpy(s->buf, p, len);
    s->buffered = len;
}

static uint64_t xxh64_digest(const struct xxh64_state *s)
{
    uint64_t h;
    if (s->total >= 32) {
        h = rotl64(s->acc[0], 1) + rotl64(s->acc[1], 7) + rotl64(s->acc[2], 12) +
            rotl64(s->acc[3], 18);
        for (int i = 0; i < 4; i++) {
            h = xxh64_merge(h, s->acc[i]);
        }
    } else {
        h = s->seed + XXH_P5;
    }
    h += s->total;

    const unsigned char *p = s->buf;
    size_t len = s->buffered;
    for (; len >= 8; p += 8, len -= 8) {
        h ^= xxh64_round(0, read_le64(p));
        h = rotl64(h, 27) * XXH_P1 + XXH_P4;
    }
    if (len >= 4) {
        h ^= read_le32(p) * XXH_P1;
        h = rotl64(h, 23) * XXH_P2 + XXH_P3;
        p += 4;
        len -= 4;
    }
    for (; len > 0; p++, len--) {
        h ^= *p * XXH_P5;
        h = rotl64(h, 11) * XXH_P1;
    }

    h ^= h >> 33;
    h *= XXH_P2;
    h ^= h >> 29;
    h *= XXH_P3;
    h ^= h >> 32;
    return h;
}

static uint64_t xxh64(const void *data, size_t len, uint64_t seed)
{
    struct xxh64_state s;
    xxh64_init(&s, seed);
    xxh64_update(&s, data, len);
    return xxh64_digest(&s);
}

/* ---- shared state ----------------------------------------------------------------------------- */

#define MAX_OPEN_FILES 64         /* descriptors open at once, files and directories together */
#define READ_CHUNK (128 * 1024)   /* bytes per read(2) */
#define ERRORS_SHOWN 10           /* errors reported one by one on stderr; the rest are counted */

/* The totals. Owned by the `results` serial queue: only tasks on that queue read or write them. */
struct totals {
    uint64_t directories;
    uint64_t files;
    uint64_t bytes;
    uint64_t errors;
    uint64_t skipped;
    uint64_t digest;       /* sum of the per-file entries, modulo 2^64 */
    uint64_t largest_size;
    char *largest_path;    /* relative path of the largest file; NULL while there is none */
};

/* Set up by main() before the first task is submitted, read-only afterwards (except `totals`). */
static struct {
    const char *root;         /* the directory argument, as given, for messages */
    int root_fd;              /* every open is relative to it: paths stay short and relative */
    bool quiet;
    cq_queue_t work;          /* the default global queue: traversal and hashing */
    cq_queue_t results;       /* serial: owns `totals` */
    cq_group_t group;         /* every task of the run */
    cq_semaphore_t open_fds;  /* MAX_OPEN_FILES descriptors */
    cq_time_t start;
    struct totals totals;
} ht;

/* One message to the results queue. */
enum result_kind { RESULT_DIRECTORY, RESULT_FILE, RESULT_SKIPPED, RESULT_ERROR };

struct result {
    enum result_kind kind;
    int error;         /* RESULT_ERROR: the errno value */
    uint64_t size;     /* RESULT_FILE: bytes read */
    uint64_t hash;     /* RESULT_FILE: XXH64 of the contents */
    char *path;        /* relative path ("" is the root); owned by the message */
};

static void *xmalloc(size_t size)
{
    void *p = malloc(size);
    if (p == NULL) {
        fprintf(stderr, "hashtree: out of memory\n");
        exit(1);
    }
    return p;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

/* "dir" + "name" -> "dir/name"; the root is "" so its children are just "name". */
static char *path_join(const char *dir, const char *name)
{
    size_t dl = strlen(dir), nl = strlen(name);
    char *p = xmalloc(dl + nl + 2);
    if (dl == 0) {
        memcpy(p, name, nl + 1);
    } else {
        memcpy(p, dir, dl);
        p[dl] = '/';
        memcpy(p + dl + 1, name, nl + 1);
    }
    return p;
}

/* Prints the root and a relative path as one path, without doubling a trailing '/'. */
static void print_path(FILE *out, const char *rel)
{
    size_t rl = strlen(ht.root);
    if (rel[0] == '\0') {
        fputs(ht.root, out);
    } else if (rl > 0 && ht.root[rl - 1] == '/') {
        fprintf(out, "%s%s", ht.root, rel);
    } else {
        fprintf(out, "%s/%s", ht.root, rel);
    }
}

/* ---- aggregation: runs on the serial `results` queue ------------------------------------------ */

static void aggregate(void *context)
{
    struct result *r = context;
    struct totals *t = &ht.totals;
    switch (r->kind) {
    case RESULT_DIRECTORY:
        t->directories++;
        break;
    case RESULT_SKIPPED:
        t->skipped++;
        break;
    case RESULT_ERROR:
        /* Serial, so even the non-reentrant strerror and the message order are safe here. */
        if (++t->errors <= ERRORS_SHOWN) {
            fputs("hashtree: ", stderr);
            print_path(stderr, r->path);
            fprintf(stderr, ": %s\n", strerror(r->error));
        }
        break;
    case RESULT_FILE:
        t->files++;
        t->bytes += r->size;
        t->digest += xxh64(r->path, strlen(r->path), r->hash);
        /* Ties go to the smaller path, so the result does not depend on completion order. */
        if (t->largest_path == NULL || r->size > t->largest_size ||
            (r->size == t->largest_size && strcmp(r->path, t->largest_path) < 0)) {
            free(t->largest_path);
            t->largest_path = r->path; /* keep it: take the message's string */
            t->largest_size = r->size;
            r->path = NULL;
        }
        break;
    }
    free(r->path);
    free(r);
}

/* Sends a result to the aggregator. The message is part of the group, so the group cannot
 * become empty while results are still in flight. Takes ownership of `path`. */
static void post(enum result_kind kind, char *path, int error, uint64_t size, uint64_t hash)
{
    struct result *r = xmalloc(sizeof *r);
    *r = (struct result){.kind = kind, .error = error, .size = size, .hash = hash, .path = path};
    cq_group_async_f(ht.group, ht.results, r, aggregate);
}

/* ---- hashing: one task per regular file, on the global queue ---------------------------------- */

static void hash_file(void *context)
{
    char *path = context;

    cq_semaphore_wait(ht.open_fds, CQ_TIME_FOREVER);
    /* O_NOFOLLOW: if the entry was replaced by a symlink since readdir, refuse it (ELOOP).
     * O_NONBLOCK: if it was replaced by a FIFO, do not hang in open; fstat then skips it. */
    int fd = openat(ht.root_fd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        int error = errno;
        cq_semaphore_signal(ht.open_fds);
        post(RESULT_ERROR, path, error, 0, 0);
        return;
    }

    struct stat st;
    int error = fstat(fd, &st) != 0 ? errno : 0;
    if (error != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        cq_semaphore_signal(ht.open_fds);
        post(error != 0 ? RESULT_ERROR : RESULT_SKIPPED, path, error, 0, 0);
        return;
    }

    unsigned char *buf = xmalloc(READ_CHUNK);
    struct xxh64_state state;
    xxh64_init(&state, 0);
    uint64_t size = 0;
    for (;;) {
        ssize_t n = read(fd, buf, READ_CHUNK);
        if (n > 0) {
            xxh64_update(&state, buf, (size_t)n);
            size += (uint64_t)n;
        } else if (n == 0) {
            break;
        } else if (errno != EINTR) {
            error = errno;
            break;
        }
    }
    close(fd);
    cq_semaphore_signal(ht.open_fds);
    free(buf);

    if (error != 0) {
        post(RESULT_ERROR, path, error, 0, 0);
    } else {
        post(RESULT_FILE, path, 0, size, xxh64_digest(&state));
    }
}

/* ---- traversal: one task per directory, on the global queue ----------------------------------- */

static void walk_directory(void *context);

/* The type of an entry, from readdir's d_type when the file system provides it, else lstat. */
static int entry_type(DIR *dir, const struct dirent *entry)
{
    switch (entry->d_type) {
    case DT_DIR:
        return 'd';
    case DT_REG:
        return 'f';
    case DT_UNKNOWN:
        break;
    default:
        return 'o'; /* symlink, device, FIFO, socket */
    }
    struct stat st;
    if (fstatat(dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        return -errno;
    }
    return S_ISDIR(st.st_mode) ? 'd' : S_ISREG(st.st_mode) ? 'f' : 'o';
}

static void walk_directory(void *context)
{
    char *path = context;

    cq_semaphore_wait(ht.open_fds, CQ_TIME_FOREVER);
    int fd = openat(ht.root_fd, path[0] ? path : ".",
                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (dir == NULL) {
        int error = errno;
        if (fd >= 0) {
            close(fd);
        }
        cq_semaphore_signal(ht.open_fds);
        post(RESULT_ERROR, path, error, 0, 0);
        return;
    }

    for (;;) {
        errno = 0;
        struct dirent *entry = readdir(dir);
        if (entry == NULL) {
            int error = errno;
            if (error != 0) {
                post(RESULT_ERROR, xstrdup(path), error, 0, 0);
            }
            break;
        }
        const char *name = entry->d_name;
        if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) {
            continue;
        }
        int type = entry_type(dir, entry);
        char *child = path_join(path, name);
        if (type == 'd') {
            cq_group_async_f(ht.group, ht.work, child, walk_directory);
        } else if (type == 'f') {
            cq_group_async_f(ht.group, ht.work, child, hash_file);
        } else if (type < 0) {
            post(RESULT_ERROR, child, -type, 0, 0);
        } else {
            post(RESULT_SKIPPED, child, 0, 0, 0);
        }
    }
    closedir(dir);
    cq_semaphore_signal(ht.open_fds);
    post(RESULT_DIRECTORY, path, 0, 0, 0);
}

/* ---- the summary: runs on the main queue once the group is empty ------------------------------ */

/* "114839647<suffix> (109.5 MiB)" */
static void print_bytes(uint64_t bytes, const char *suffix)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    printf("%" PRIu64 "%s", bytes, suffix);
    if (bytes >= 1024) {
        double v = (double)bytes / 1024.0;
        unsigned u = 0;
        while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
            v /= 1024.0;
            u++;
        }
        printf(" (%.1f %s)", v, units[u]);
    }
}

static void finish(void *context)
{
    (void)context;
    /* The group became empty after the last aggregate() returned, and the notify has acquire
     * ordering with every task of the group: reading the totals here, on the main thread, is
     * safe even though they belong to the results queue, which is idle now. */
    double seconds = (double)(cq_time(CQ_TIME_NOW, 0) - ht.start) / (double)CQ_NSEC_PER_SEC;
    const struct totals *t = &ht.totals;

    if (ht.quiet) {
        printf("digest       %016" PRIx64 "\n", t->digest);
    } else {
        struct cq_runtime_info info;
        cq_runtime_get_info(&info);
        double secs = seconds > 0 ? seconds : 1e-9;

        printf("tree         %s\n", ht.root);
        printf("directories  %" PRIu64 "\n", t->directories);
        printf("files        %" PRIu64 "\n", t->files);
        printf("bytes        ");
        print_bytes(t->bytes, "");
        printf("\n");
        printf("errors       %" PRIu64 "\n", t->errors);
        printf("skipped      %" PRIu64 " (symlinks, devices, FIFOs, sockets)\n", t->skipped);
        printf("largest      ");
        if (t->largest_path != NULL) {
            print_path(stdout, t->largest_path);
            printf(", ");
            print_bytes(t->largest_size, " bytes");
            printf("\n");
        } else {
            printf("-\n");
        }
        printf("digest       %016" PRIx64 "\n", t->digest);
        printf("elapsed      %.3f s\n", seconds);
        printf("throughput   %.1f MB/s, %.0f files/s\n", (double)t->bytes / 1e6 / secs,
               (double)t->files / secs);
        printf("runtime      %" PRIu32 " workers, %" PRIu32 " threads peak, %" PRIu64
               " hand-offs to spare threads, %" PRIu64 " monitor spawns\n",
               info.workers, info.threads_peak, info.handoffs, info.monitor_spawns);
    }
    if (t->errors > ERRORS_SHOWN) {
        fprintf(stderr, "hashtree: %" PRIu64 " more errors not shown\n", t->errors - ERRORS_SHOWN);
    }

    /* Tidy up: every enter has its leave and every semaphore wait its signal by now. */
    free(ht.totals.largest_path);
    cq_release(ht.results);
    cq_release(ht.group);
    cq_release(ht.open_fds);
    close(ht.root_fd);
    exit(fflush(stdout) == 0 ? 0 : 1);
}

/* ---- main ------------------------------------------------------------------------------------- */

static void usage(FILE *out)
{
    fprintf(out, "usage: cq-hashtree [--quiet] [DIRECTORY]\n"
                 "Hashes every regular file under DIRECTORY (default \".\") in parallel and prints\n"
                 "a summary; --quiet prints only the digest line.\n");
}

int main(int argc, char **argv)
{
    const char *root = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) {
            ht.quiet = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--") == 0 && i + 2 == argc && root == NULL) {
            root = argv[++i];
        } else if (argv[i][0] == '-' || root != NULL) {
            usage(stderr);
            return 2;
        } else {
            root = argv[i];
        }
    }
    ht.root = root != NULL ? root : ".";

    ht.root_fd = open(ht.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (ht.root_fd < 0) {
        fprintf(stderr, "hashtree: %s: %s\n", ht.root, strerror(errno));
        return 1;
    }

    ht.work = cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0);
    ht.results = cq_queue_create("hashtree.results", CQ_QUEUE_SERIAL);
    ht.group = cq_group_create();
    ht.open_fds = cq_semaphore_create(MAX_OPEN_FILES - 1); /* the root's descriptor is one */
    if (ht.work == NULL || ht.results == NULL || ht.group == NULL || ht.open_fds == NULL) {
        fprintf(stderr, "hashtree: cannot create the queues: %s\n", strerror(errno));
        return 1;
    }

    ht.start = cq_time(CQ_TIME_NOW, 0);
    char *top = xmalloc(1);
    top[0] = '\0'; /* the root, relative to itself */
    cq_group_async_f(ht.group, ht.work, top, walk_directory);
    /* Register the notify only after the first task: on an empty group it would fire at once. */
    cq_group_notify_f(ht.group, cq_get_main_queue(), NULL, finish);
    cq_main(); /* runs finish() on this thread, which exits */
}
