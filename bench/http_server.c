/*
 * http_server — a minimal HTTP/1.1 keep-alive server built only on READ sources, for the
 * socket-server benchmark (bench/http_bench.py drives it with wrk; see bench/README.md).
 *
 *   accept   a READ source on the listening socket, on its own serial queue; its handler
 *            accepts every pending connection
 *   per connection  one serial queue and one READ source on it; the handler reads what has
 *            arrived, answers every complete request in it with a fixed 2-byte body ("ok")
 *            and writes the answers in one write; at end of file or an error it cancels the
 *            source, whose cancel handler closes the descriptor
 *
 * Written once against libdispatch's C names (the _f function-pointer forms) and compiled
 * twice: against the toolchain's <dispatch/dispatch.h> (the libdispatch server), and with
 * -DHTTP_SERVER_CQ against cq_dispatch.h, which maps the same names onto CQueueCore.
 *
 * Besides the client's view (wrk's latency), the server measures its own reaction time: the
 * *wait* of a request, from the kernel's receive timestamp of its data (SO_TIMESTAMPNS) to the
 * start of the handler that reads it: the reactor's wake-up, the hand-off to a thread, and the
 * time the handler spent queued behind other work. It is the part of the latency that belongs
 * to the runtime, and it does not depend on how promptly the client's threads ran.
 *
 * Usage: http_server [--port N]  (default 0: the kernel picks a free port)
 * It listens on 127.0.0.1, prints "port N" on stdout once it accepts connections, and runs
 * until SIGTERM or SIGINT; then it prints "served R bad B connections C" on stdout and exits
 * with status 0. On SIGUSR1 it prints "wait n N p50 A p99 B p999 C max D" (microseconds, the
 * requests read since the previous SIGUSR1) and starts counting afresh. A request it cannot
 * parse gets "400 Bad Request", is counted in B, and its connection is closed.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifdef HTTP_SERVER_CQ
#include <cq_dispatch.h>
#else
/* libdispatch's headers test __has_feature / __has_extension, which GCC (before 14) lacks;
 * without blocks or Objective-C every such test should read "no" (as in rt_dispatch.c). */
#ifndef __has_feature
#define __has_feature(x) 0
#endif
#ifndef __has_extension
#define __has_extension(x) 0
#endif
#include <dispatch/dispatch.h>
#endif

#define IN_SIZE 8192
#define OUT_SIZE 16384

static const char RESPONSE[] = "HTTP/1.1 200 OK\r\n"
                               "Content-Type: text/plain\r\n"
                               "Content-Length: 2\r\n"
                               "\r\n"
                               "ok";
static const char BAD_REQUEST[] = "HTTP/1.1 400 Bad Request\r\n"
                                  "Content-Length: 0\r\n"
                                  "Connection: close\r\n"
                                  "\r\n";

static atomic_ulong served, bad, connections;

/* Waits (see above) in a log-linear histogram: 8 buckets per power of two of nanoseconds, so
 * a percentile is read to within 9 %. Shared by every handler: a relaxed add per read. */
#define WAIT_SUB 8
#define WAIT_BUCKETS (64 * WAIT_SUB)
static atomic_ulong wait_hist[WAIT_BUCKETS];
static atomic_ulong wait_max;

static unsigned wait_bucket(uint64_t ns)
{
    if (ns < WAIT_SUB) {
        return (unsigned)ns;
    }
    unsigned log = 63u - (unsigned)__builtin_clzll(ns); /* >= 3 */
    return log * WAIT_SUB + (unsigned)((ns >> (log - 3)) & (WAIT_SUB - 1));
}

/* The smallest value of bucket b (the inverse of wait_bucket). */
static uint64_t wait_bucket_floor(unsigned b)
{
    if (b < 3 * WAIT_SUB) { /* buckets 8-23 are never used: 8 ns and up start at 24 */
        return b < WAIT_SUB ? b : WAIT_SUB;
    }
    if (b >= WAIT_BUCKETS) {
        return UINT64_MAX;
    }
    unsigned log = b / WAIT_SUB;
    return ((uint64_t)(WAIT_SUB + b % WAIT_SUB)) << (log - 3);
}

static void wait_record(const struct timespec *rx)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now); /* the clock of SO_TIMESTAMPNS */
    int64_t ns = (int64_t)(now.tv_sec - rx->tv_sec) * 1000000000 + (now.tv_nsec - rx->tv_nsec);
    uint64_t w = ns > 0 ? (uint64_t)ns : 0;
    atomic_fetch_add_explicit(&wait_hist[wait_bucket(w)], 1, memory_order_relaxed);
    unsigned long m = atomic_load_explicit(&wait_max, memory_order_relaxed);
    while (w > m && !atomic_compare_exchange_weak_explicit(&wait_max, &m, w, memory_order_relaxed,
                                                           memory_order_relaxed)) {
    }
}

/* Prints the waits since the last call and starts afresh (main thread, on SIGUSR1). */
static void wait_report(void)
{
    unsigned long counts[WAIT_BUCKETS], n = 0;
    for (unsigned b = 0; b < WAIT_BUCKETS; b++) {
        counts[b] = atomic_exchange_explicit(&wait_hist[b], 0, memory_order_relaxed);
        n += counts[b];
    }
    unsigned long max = atomic_exchange_explicit(&wait_max, 0, memory_order_relaxed);
    double pct[3] = {0.50, 0.99, 0.999}, val[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        unsigned long rank = (unsigned long)(pct[i] * (double)n), seen = 0;
        for (unsigned b = 0; b < WAIT_BUCKETS && n > 0; b++) {
            seen += counts[b];
            if (seen > rank) {
                /* the middle of the bucket */
                val[i] = (double)(wait_bucket_floor(b) + wait_bucket_floor(b + 1)) / 2e3;
                break;
            }
        }
    }
    printf("wait n %lu p50 %.1f p99 %.1f p999 %.1f max %.1f\n", n, val[0], val[1], val[2],
           (double)max / 1e3);
    fflush(stdout);
}

/* One connection: written only by its source's handlers, which run one at a time on its
 * serial queue. */
struct conn {
    int fd;
    dispatch_source_t source;
    size_t have; /* bytes of an incomplete request kept in `in` */
    char in[IN_SIZE];
};

static void die(const char *what)
{
    fprintf(stderr, "http_server: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* Writes all of buf; waits for room if the socket's buffer is full. false on an error. */
static bool write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
        } else if (n < 0 && errno == EAGAIN) {
            struct pollfd p = {fd, POLLOUT, 0};
            if (poll(&p, 1, 10000) <= 0) {
                return false;
            }
        } else if (!(n < 0 && errno == EINTR)) {
            return false;
        }
    }
    return true;
}

/* Answers every complete request in c->in; keeps an incomplete one. false: close it. */
static bool answer(struct conn *c)
{
    char out[OUT_SIZE];
    size_t olen = 0, pos = 0;
    unsigned long n = 0;
    bool keep = true;
    for (;;) {
        char *end = memmem(c->in + pos, c->have - pos, "\r\n\r\n", 4);
        if (end == NULL) {
            break;
        }
        size_t req_len = (size_t)(end + 4 - (c->in + pos));
        if (req_len < 14 || memcmp(c->in + pos, "GET ", 4) != 0 ||
            memmem(c->in + pos, req_len, " HTTP/1.", 8) == NULL) {
            memcpy(out + olen, BAD_REQUEST, sizeof BAD_REQUEST - 1);
            olen += sizeof BAD_REQUEST - 1;
            atomic_fetch_add_explicit(&bad, 1, memory_order_relaxed);
            keep = false;
            pos = c->have;
            break;
        }
        if (olen + sizeof RESPONSE - 1 > sizeof out) {
            if (!write_all(c->fd, out, olen)) {
                return false;
            }
            olen = 0;
        }
        memcpy(out + olen, RESPONSE, sizeof RESPONSE - 1);
        olen += sizeof RESPONSE - 1;
        pos += req_len;
        n++;
    }
    if (pos > 0) {
        memmove(c->in, c->in + pos, c->have - pos);
        c->have -= pos;
    }
    if (keep && c->have == sizeof c->in) { /* a request larger than the buffer */
        memcpy(out + olen, BAD_REQUEST, sizeof BAD_REQUEST - 1);
        olen += sizeof BAD_REQUEST - 1;
        atomic_fetch_add_explicit(&bad, 1, memory_order_relaxed);
        keep = false;
    }
    atomic_fetch_add_explicit(&served, n, memory_order_relaxed);
    return write_all(c->fd, out, olen) && keep;
}

/* The connection's READ source fired: read what is there (one read; a level-triggered source
 * fires again while more is readable). */
static void on_readable(void *ctx)
{
    struct conn *c = ctx;
    struct iovec iov = {c->in + c->have, sizeof c->in - c->have};
    union {
        char buf[CMSG_SPACE(sizeof(struct timespec))];
        struct cmsghdr align;
    } control;
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = control.buf,
                         .msg_controllen = sizeof control.buf};
    ssize_t n = recvmsg(c->fd, &msg, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return;
    }
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); n > 0 && cm; cm = CMSG_NXTHDR(&msg, cm)) {
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec rx;
            memcpy(&rx, CMSG_DATA(cm), sizeof rx);
            wait_record(&rx);
        }
    }
    if (n <= 0) { /* end of file or an error (ECONNRESET) */
        dispatch_source_cancel(c->source);
        return;
    }
    c->have += (size_t)n;
    if (!answer(c)) {
        dispatch_source_cancel(c->source);
    }
}

static void on_conn_cancel(void *ctx)
{
    struct conn *c = ctx;
    close(c->fd);
    dispatch_release(c->source);
    free(c);
}

static void start_conn(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one); /* for the waits */
    struct conn *c = malloc(sizeof *c);
    if (c == NULL) {
        close(fd);
        return;
    }
    c->fd = fd;
    c->have = 0;
    dispatch_queue_t q = dispatch_queue_create("http.conn", DISPATCH_QUEUE_SERIAL);
    c->source = dispatch_source_create(DISPATCH_SOURCE_TYPE_READ, (uintptr_t)fd, 0, q);
    dispatch_release(q); /* the source keeps its target queue */
    if (c->source == NULL) {
        close(fd);
        free(c);
        return;
    }
    dispatch_set_context(c->source, c);
    dispatch_source_set_event_handler_f(c->source, on_readable);
    dispatch_source_set_cancel_handler_f(c->source, on_conn_cancel);
    dispatch_resume(c->source);
    atomic_fetch_add_explicit(&connections, 1, memory_order_relaxed);
}

/* The listening socket is readable: accept every pending connection. */
/* The last accept found no descriptor left (only the accept queue's handler touches it). */
static bool out_of_fds;

static void on_acceptable(void *ctx)
{
    int lfd = (int)(intptr_t)ctx;
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            out_of_fds = false;
            start_conn(fd);
        } else if (errno == EINTR || errno == ECONNABORTED) {
            continue;
        } else if (errno == EMFILE || errno == ENFILE) {
            /* No descriptor left: the source is level-triggered and fired again at once (full
             * speed, a line each time: megabytes of stderr a second). It says so once and
             * waits 10 ms before the source fires again, the clients waiting in the backlog.
             * Not a suspend and a dispatch_after: libdispatch needs a new descriptor for its
             * first timer, and its after never came. */
            if (!out_of_fds) {
                fprintf(stderr, "http_server: accept: %s (retrying every 10 ms)\n",
                        strerror(errno));
                out_of_fds = true;
            }
            struct timespec pause = {0, 10000000};
            nanosleep(&pause, NULL);
            return;
        } else {
            if (errno != EAGAIN) {
                fprintf(stderr, "http_server: accept: %s\n", strerror(errno));
            }
            return;
        }
    }
}

int main(int argc, char **argv)
{
    int port = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
            port = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--port N]\n", argv[0]);
            return 2;
        }
    }
    /* Before any runtime thread exists, so that every thread inherits the mask and the
     * signals wait for sigwait below. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client that goes away makes write fail with EPIPE */

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (lfd < 0) {
        die("socket");
    }
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_port = htons((uint16_t)port),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        die("bind");
    }
    if (listen(lfd, 1024) < 0) {
        die("listen");
    }
    socklen_t alen = sizeof addr;
    if (getsockname(lfd, (struct sockaddr *)&addr, &alen) < 0) {
        die("getsockname");
    }

    dispatch_queue_t aq = dispatch_queue_create("http.accept", DISPATCH_QUEUE_SERIAL);
    dispatch_source_t accept_source =
        dispatch_source_create(DISPATCH_SOURCE_TYPE_READ, (uintptr_t)lfd, 0, aq);
    if (accept_source == NULL) {
        die("dispatch_source_create");
    }
    dispatch_set_context(accept_source, (void *)(intptr_t)lfd);
    dispatch_source_set_event_handler_f(accept_source, on_acceptable);
    dispatch_resume(accept_source);

    printf("port %d\n", ntohs(addr.sin_port));
    fflush(stdout);

    int sig = 0;
    while (sigwait(&sigs, &sig) != 0 || sig == SIGUSR1) {
        if (sig == SIGUSR1) {
            wait_report();
            sig = 0;
        }
    }
    printf("served %lu bad %lu connections %lu\n", atomic_load(&served), atomic_load(&bad),
           atomic_load(&connections));
    fflush(stdout);
    _exit(0); /* connections may still be open: nothing to tear down */
}
