/*
 * Sources through libdispatch's names: custom data (ADD, OR, REPLACE), registration and cancel
 * handlers, the last release of an active source, READ and WRITE on a pipe, a READ event whose
 * bytes went while it waited, the end of file reported once, an eventfd's data, SIGNAL, target
 * queues, and — CQueueCore only, libdispatch on Linux has neither — PROC and VNODE.
 */
#include "compat_test.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

struct src {
    dispatch_source_t source;
    long sum; /* ADD: sum of data; OR: OR of data; REPLACE: last data */
    long calls;
    long want;       /* signal `done` once sum reaches (ADD) / equals (OR) this */
    long registered; /* registration handler runs */
    long reg_before_event;
    long cancelled;
    long cancel_data; /* dispatch_source_get_data in the cancel handler */
    long events_after_cancel;
    long premature; /* PROC: an exit reported before the child was let go */
    const char *expect_label;
    long label_ok;
    dispatch_semaphore_t done, cancel_done;
    dispatch_semaphore_t registered_sema; /* signalled by the registration handler */
    char bytes[64];                       /* READ: what was read */
    long nbytes;
};

static void src_init(struct src *s, dispatch_source_type_t type, uintptr_t handle, uintptr_t mask,
                     dispatch_queue_t q)
{
    memset(s, 0, sizeof *s);
    s->done = dispatch_semaphore_create(0);
    s->cancel_done = dispatch_semaphore_create(0);
    s->registered_sema = dispatch_semaphore_create(0);
    s->source = dispatch_source_create(type, handle, mask, q);
    REQUIRE(s->source != NULL);
    dispatch_set_context(s->source, s);
}

static void on_registration(void *context)
{
    struct src *s = (struct src *)context;
    compat_add(&s->registered, 1);
    dispatch_semaphore_signal(s->registered_sema);
}

static void on_cancel(void *context)
{
    struct src *s = (struct src *)context;
    s->cancelled++;
    s->cancel_data = (long)dispatch_source_get_data(s->source);
    dispatch_semaphore_signal(s->cancel_done);
}

static void src_cancel_and_release(struct src *s)
{
    dispatch_source_cancel(s->source);
    dispatch_source_cancel(s->source); /* idempotent */
    WAIT_SEMA(s->cancel_done);
    CHECK_EQ(s->cancelled, 1);
    CHECK_EQ(s->events_after_cancel, 0);
    /* The data reads 0 from the cancel handler on, whatever the last event carried (ours kept
     * the last event's). */
    CHECK_EQ(s->cancel_data, 0);
    CHECK_EQ(dispatch_source_get_data(s->source), 0);
    CHECK(dispatch_source_testcancel(s->source) != 0);
    dispatch_release(s->source);
    dispatch_release(s->done);
    dispatch_release(s->cancel_done);
    dispatch_release(s->registered_sema);
}

/* ---- custom data ---------------------------------------------------------------------------- */

static void on_add(void *context)
{
    struct src *s = (struct src *)context;
    if (s->cancelled) {
        s->events_after_cancel++;
    }
    if (compat_load(&s->registered) > 0 && s->calls == 0) {
        s->reg_before_event = 1;
    }
    s->calls++;
    s->sum += (long)dispatch_source_get_data(s->source);
    if (s->sum == s->want) {
        dispatch_semaphore_signal(s->done);
    }
}

static void merge_one(void *context, size_t i)
{
    (void)i;
    dispatch_source_merge_data((dispatch_source_t)context, 1);
}

static void test_data_add(void)
{
    struct src s;
    long i, calls_before;
    src_init(&s, DISPATCH_SOURCE_TYPE_DATA_ADD, 0, 0, compat_global());
    dispatch_source_set_registration_handler_f(s.source, on_registration);
    dispatch_source_set_event_handler_f(s.source, on_add);
    dispatch_source_set_cancel_handler_f(s.source, on_cancel);
    CHECK_EQ(dispatch_source_get_handle(s.source), 0);
    CHECK_EQ(dispatch_source_get_mask(s.source), 0);
    s.want = 5050;
    for (i = 1; i <= 100; i++) {
        dispatch_source_merge_data(s.source, (uintptr_t)i); /* inactive: coalesced */
    }
    /* Nothing runs before the activation. No event can show that, so this is a bounded
     * window; a handler that ran before the activation at any time is also caught below, by
     * the registration handler (run at the activation) coming after it. */
    CHECK(dispatch_semaphore_wait(s.done, compat_short()) != 0);
    CHECK_EQ(compat_load(&s.registered), 0);
    dispatch_activate(s.source);
    WAIT_SEMA(s.done);
    CHECK_EQ(s.sum, 5050);
    CHECK_EQ(s.calls, 1); /* merged while inactive: one batch */
    CHECK_EQ(compat_load(&s.registered), 1);
    CHECK_EQ(s.reg_before_event, 1);

    /* merges from many threads at once */
    s.want = 5050 + 1000;
    dispatch_apply_f(1000, compat_global(), s.source, merge_one);
    WAIT_SEMA(s.done);
    CHECK_EQ(s.sum, 6050);
    CHECK(s.calls >= 2);

    /* suspended: merges coalesce, then run (in one call: a call while suspended would split
     * them; the bounded window gives such a call the time to show) */
    dispatch_suspend(s.source);
    s.want = 6050 + 30;
    calls_before = s.calls;
    for (i = 0; i < 3; i++) {
        dispatch_source_merge_data(s.source, 10);
    }
    CHECK(dispatch_semaphore_wait(s.done, compat_short()) != 0);
    dispatch_resume(s.source);
    WAIT_SEMA(s.done);
    CHECK_EQ(s.sum, 6080);
    CHECK_EQ(s.calls, calls_before + 1);
    src_cancel_and_release(&s);
    CHECK_EQ(compat_load(&s.registered), 1);
}

static void on_or(void *context)
{
    struct src *s = (struct src *)context;
    s->calls++;
    s->sum |= (long)dispatch_source_get_data(s->source);
    if (s->sum == s->want) {
        dispatch_semaphore_signal(s->done);
    }
}

static void on_replace(void *context)
{
    struct src *s = (struct src *)context;
    s->calls++;
    s->sum = (long)dispatch_source_get_data(s->source);
    dispatch_semaphore_signal(s->done);
}

static void test_data_or_replace(void)
{
    struct src s;
    src_init(&s, DISPATCH_SOURCE_TYPE_DATA_OR, 0, 0, NULL);
    dispatch_source_set_event_handler_f(s.source, on_or);
    dispatch_source_set_cancel_handler_f(s.source, on_cancel);
    s.want = 0xf;
    dispatch_source_merge_data(s.source, 1);
    dispatch_source_merge_data(s.source, 2);
    dispatch_source_merge_data(s.source, 4);
    dispatch_source_merge_data(s.source, 8);
    dispatch_source_merge_data(s.source, 2);
    dispatch_resume(s.source);
    WAIT_SEMA(s.done);
    CHECK_EQ(s.sum, 0xf);
    CHECK_EQ(s.calls, 1);
    src_cancel_and_release(&s);

    src_init(&s, DISPATCH_SOURCE_TYPE_DATA_REPLACE, 0, 0, NULL);
    dispatch_source_set_event_handler_f(s.source, on_replace);
    dispatch_source_set_cancel_handler_f(s.source, on_cancel);
    dispatch_source_merge_data(s.source, 5);
    dispatch_source_merge_data(s.source, 7);
    dispatch_resume(s.source);
    WAIT_SEMA(s.done);
    CHECK_EQ(s.sum, 7); /* the last value */
    CHECK_EQ(s.calls, 1);
    src_cancel_and_release(&s);
}

/* Outside the event handler, the data is that of the last call (as in libdispatch; ours read 0):
 * code that reads a replace source's last value from elsewhere sees it, until the source is
 * cancelled (src_cancel_and_release checks the 0 then). */
static void test_data_outside_handler(void)
{
    struct src s;
    dispatch_queue_t q = dispatch_queue_create("compat.src.data", NULL);
    src_init(&s, DISPATCH_SOURCE_TYPE_DATA_REPLACE, 0, 0, q);
    CHECK_EQ(dispatch_source_get_data(s.source), 0); /* before the first call */
    dispatch_source_set_event_handler_f(s.source, on_replace);
    dispatch_source_set_cancel_handler_f(s.source, on_cancel);
    dispatch_source_merge_data(s.source, 9);
    dispatch_resume(s.source);
    WAIT_SEMA(s.done);
    dispatch_sync_f(q, NULL, compat_noop); /* the handler has returned */
    CHECK_EQ(dispatch_source_get_data(s.source), 9);
    src_cancel_and_release(&s);
    dispatch_release(q);
}

/* ---- target queues -------------------------------------------------------------------------- */

static char target_key;

static void on_targeted(void *context)
{
    struct src *s = (struct src *)context;
    s->label_ok =
        dispatch_get_specific(&target_key) == (void *)&target_key &&
        strcmp(dispatch_queue_get_label(DISPATCH_CURRENT_QUEUE_LABEL), s->expect_label) == 0;
    dispatch_semaphore_signal(s->done);
}

static void test_target_queue(void)
{
    struct src s;
    dispatch_queue_t first = dispatch_queue_create("compat.source.first", NULL);
    dispatch_queue_t second = dispatch_queue_create("compat.source.second", NULL);
    dispatch_queue_set_specific(second, &target_key, &target_key, NULL);
    src_init(&s, DISPATCH_SOURCE_TYPE_DATA_ADD, 0, 0, first);
    dispatch_source_set_event_handler_f(s.source, on_targeted);
    dispatch_source_set_cancel_handler_f(s.source, on_cancel);
    dispatch_set_target_queue(s.source, second);
    s.expect_label = "compat.source.second";
    dispatch_resume(s.source);
    dispatch_source_merge_data(s.source, 1);
    WAIT_SEMA(s.done);
    CHECK_EQ(s.label_ok, 1);
    src_cancel_and_release(&s);
    dispatch_release(first);
    dispatch_release(second);
}

/* A registration handler set on a source that is already registered runs (libdispatch's
 * source.h: "invoked immediately"), once; so does one set after that. */
static void test_late_registration_handler(void)
{
    struct src s;
    src_init(&s, DISPATCH_SOURCE_TYPE_DATA_ADD, 0, 0, compat_global());
    dispatch_source_set_event_handler_f(s.source, on_add);
    dispatch_source_set_cancel_handler_f(s.source, on_cancel);
    s.want = 1;
    dispatch_resume(s.source);
    dispatch_source_merge_data(s.source, 1);
    WAIT_SEMA(s.done); /* an event ran: the source is registered */
    CHECK_EQ(compat_load(&s.registered), 0);

    dispatch_source_set_registration_handler_f(s.source, on_registration);
    WAIT_SEMA(s.registered_sema);
    CHECK_EQ(compat_load(&s.registered), 1);
    dispatch_source_set_registration_handler_f(s.source, on_registration);
    WAIT_SEMA(s.registered_sema);
    CHECK_EQ(compat_load(&s.registered), 2);

    /* each ran once: more events run no registration handler */
    s.want = 3;
    dispatch_source_merge_data(s.source, 2);
    WAIT_SEMA(s.done);
    CHECK(dispatch_semaphore_wait(s.registered_sema, compat_short()) != 0);
    CHECK_EQ(compat_load(&s.registered), 2);
    src_cancel_and_release(&s);
}

/* ---- READ and WRITE on a pipe --------------------------------------------------------------- */

static void on_readable(void *context)
{
    struct src *s = (struct src *)context;
    int fd = (int)dispatch_source_get_handle(s->source);
    long available = (long)dispatch_source_get_data(s->source);
    ssize_t n;
    s->calls++;
    if (available < 1) {
        available = 1;
    }
    if (available > (long)sizeof s->bytes - s->nbytes) {
        available = (long)sizeof s->bytes - s->nbytes;
    }
    n = read(fd, s->bytes + s->nbytes, (size_t)available);
    if (n > 0) {
        s->nbytes += n;
    }
    if (s->nbytes >= s->want) {
        dispatch_semaphore_signal(s->done);
    }
}

static void on_read_cancel(void *context)
{
    struct src *s = (struct src *)context;
    close((int)dispatch_source_get_handle(s->source)); /* closed in the cancel handler */
    on_cancel(context);
}

/* A writable pipe stays writable: the handler runs again and again until the cancel. Only the
 * first call records anything. */
static void on_writable(void *context)
{
    struct src *s = (struct src *)context;
    if (compat_add(&s->calls, 1) == 1) {
        s->sum = (long)dispatch_source_get_data(s->source);
        dispatch_semaphore_signal(s->done);
    }
}

static void test_pipe(void)
{
    struct src r, w;
    int fds[2];
    REQUIRE(pipe(fds) == 0);

    src_init(&r, DISPATCH_SOURCE_TYPE_READ, (uintptr_t)fds[0], 0, NULL);
    CHECK_EQ(dispatch_source_get_handle(r.source), fds[0]);
    dispatch_source_set_event_handler_f(r.source, on_readable);
    dispatch_source_set_cancel_handler_f(r.source, on_read_cancel);
    r.want = 11;
    dispatch_resume(r.source);
    REQUIRE(write(fds[1], "hello", 5) == 5);
    REQUIRE(write(fds[1], " world", 6) == 6);
    WAIT_SEMA(r.done);
    CHECK_EQ(r.nbytes, 11);
    CHECK(memcmp(r.bytes, "hello world", 11) == 0);
    src_cancel_and_release(&r);
    close(fds[1]);

    REQUIRE(pipe(fds) == 0);
    src_init(&w, DISPATCH_SOURCE_TYPE_WRITE, (uintptr_t)fds[1], 0, compat_global());
    dispatch_source_set_event_handler_f(w.source, on_writable);
    dispatch_source_set_cancel_handler_f(w.source, on_cancel);
    dispatch_resume(w.source);
    WAIT_SEMA(w.done);
    CHECK(w.sum > 0); /* room to write */
    src_cancel_and_release(&w);
    close(fds[0]);
    close(fds[1]);
}

/* A READ source on a listening socket: a pending connection is reported as data 1, as
 * libdispatch does (0 would read as end of file). */
static void on_listen_readable(void *context)
{
    struct src *s = (struct src *)context;
    int fd;
    if (compat_add(&s->calls, 1) != 1) {
        return;
    }
    s->sum = (long)dispatch_source_get_data(s->source);
    fd = accept((int)dispatch_source_get_handle(s->source), NULL, NULL);
    s->nbytes = fd >= 0;
    if (fd >= 0) {
        close(fd);
    }
    dispatch_semaphore_signal(s->done);
}

static void test_listening_socket(void)
{
    struct src s;
    struct sockaddr_in addr;
    socklen_t len = sizeof addr;
    int listener = socket(AF_INET, SOCK_STREAM, 0), client;
    REQUIRE(listener >= 0);
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(listener, (struct sockaddr *)&addr, sizeof addr) == 0);
    REQUIRE(listen(listener, 4) == 0);
    REQUIRE(getsockname(listener, (struct sockaddr *)&addr, &len) == 0);

    src_init(&s, DISPATCH_SOURCE_TYPE_READ, (uintptr_t)listener, 0, compat_global());
    dispatch_source_set_event_handler_f(s.source, on_listen_readable);
    dispatch_source_set_cancel_handler_f(s.source, on_cancel);
    dispatch_resume(s.source);
    client = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(client >= 0);
    REQUIRE(connect(client, (struct sockaddr *)&addr, sizeof addr) == 0);
    WAIT_SEMA(s.done);
    CHECK_EQ(s.sum, 1);
    CHECK_EQ(s.nbytes, 1); /* accepted */
    src_cancel_and_release(&s);
    close(client);
    close(listener);
}

/* ---- SIGNAL --------------------------------------------------------------------------------- */

static void on_signal(void *context)
{
    struct src *s = (struct src *)context;
    s->sum += (long)dispatch_source_get_data(s->source);
    s->calls++;
    if (s->sum >= s->want) {
        dispatch_semaphore_signal(s->done);
    }
}

static void test_signal(void)
{
    struct src s;
    src_init(&s, DISPATCH_SOURCE_TYPE_SIGNAL, SIGUSR1, 0, NULL);
    CHECK_EQ(dispatch_source_get_handle(s.source), SIGUSR1);
    dispatch_source_set_event_handler_f(s.source, on_signal);
    dispatch_source_set_cancel_handler_f(s.source, on_cancel);
    dispatch_source_set_registration_handler_f(s.source, on_registration);
    s.want = 1;
    dispatch_resume(s.source);
    /* a signal sent before the source is registered may be missed: wait for the registration
     * (an event), then one signal must arrive */
    WAIT_SEMA(s.registered_sema);
    REQUIRE(kill(getpid(), SIGUSR1) == 0);
    WAIT_SEMA(s.done);
    CHECK_EQ(s.sum, 1);
    src_cancel_and_release(&s);
}

#ifdef CQ_DISPATCH_COMPAT
/* ---- PROC (CQueueCore only) ----------------------------------------------------------------- */

static long proc_gate_opened; /* set just before the child is let go */

static void on_proc(void *context)
{
    struct src *s = (struct src *)context;
    s->sum |= (long)dispatch_source_get_data(s->source);
    if (s->sum & (long)DISPATCH_PROC_EXIT) {
        if (!compat_load(&proc_gate_opened)) {
            s->premature = 1;
        }
        dispatch_semaphore_signal(s->done);
    }
}

static void test_proc(void)
{
    struct src s;
    int gate[2], status = 0;
    char c;
    pid_t pid;
    REQUIRE(pipe(gate) == 0);
    pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(gate[1]);
        while (read(gate[0], &c, 1) < 0 && errno == EINTR) {
        }
        _exit(7);
    }
    close(gate[0]);
    src_init(&s, DISPATCH_SOURCE_TYPE_PROC, (uintptr_t)pid, DISPATCH_PROC_EXIT, NULL);
    CHECK_EQ(dispatch_source_get_mask(s.source), DISPATCH_PROC_EXIT);
    dispatch_source_set_event_handler_f(s.source, on_proc);
    dispatch_source_set_cancel_handler_f(s.source, on_cancel);
    dispatch_resume(s.source);
    /* No exit while the child still runs: a bounded window here, and whenever the handler
     * sees an exit it checks that the child had been let go by then. */
    CHECK(dispatch_semaphore_wait(s.done, compat_short()) != 0);
    compat_store(&proc_gate_opened, 1);
    close(gate[1]); /* let it exit */
    WAIT_SEMA(s.done);
    CHECK_EQ(s.premature, 0);
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 7);
    src_cancel_and_release(&s);
}

/* ---- VNODE (CQueueCore only) ---------------------------------------------------------------- */

/* `want` is the set of events the test waits for now (0: none); the handler clears it when they
 * have all been seen, so each phase signals once. */
static void on_vnode(void *context)
{
    struct src *s = (struct src *)context;
    long want;
    s->sum |= (long)dispatch_source_get_data(s->source);
    want = compat_load(&s->want);
    if (want != 0 && (s->sum & want) == want) {
        compat_store(&s->want, 0);
        dispatch_semaphore_signal(s->done);
    }
}

static void test_vnode(void)
{
    struct src s;
    char path[] = "/tmp/compat_vnode_XXXXXX";
    int fd = mkstemp(path), writer;
    REQUIRE(fd >= 0);
    src_init(&s, DISPATCH_SOURCE_TYPE_VNODE, (uintptr_t)fd,
             DISPATCH_VNODE_WRITE | DISPATCH_VNODE_EXTEND | DISPATCH_VNODE_DELETE, NULL);
    dispatch_source_set_event_handler_f(s.source, on_vnode);
    dispatch_source_set_cancel_handler_f(s.source, on_read_cancel);
    dispatch_source_set_registration_handler_f(s.source, on_registration);
    dispatch_resume(s.source);
    /* events are only seen once the watch is registered: wait for that first */
    WAIT_SEMA(s.registered_sema);
    compat_store(&s.want, (long)(DISPATCH_VNODE_WRITE | DISPATCH_VNODE_EXTEND));
    writer = open(path, O_WRONLY | O_APPEND);
    REQUIRE(writer >= 0);
    REQUIRE(write(writer, "data", 4) == 4);
    close(writer);
    WAIT_SEMA(s.done);
    compat_store(&s.want, (long)DISPATCH_VNODE_DELETE);
    REQUIRE(unlink(path) == 0);
    WAIT_SEMA(s.done);
    src_cancel_and_release(&s);
}
#endif /* CQ_DISPATCH_COMPAT */

/* The last reference to an active source that was not cancelled stops it: the source is
 * disposed (its finalizer runs) and its cancel handler does not run. The source kept itself
 * alive (and firing, for ever) while registered. */
struct released_source {
    dispatch_semaphore_t finalized;
    long cancelled;
    long events;
};

static void released_event(void *ctx)
{
    compat_add(&((struct released_source *)ctx)->events, 1);
}

static void released_cancel(void *ctx)
{
    compat_add(&((struct released_source *)ctx)->cancelled, 1);
}

static void released_finalizer(void *ctx)
{
    dispatch_semaphore_signal(((struct released_source *)ctx)->finalized);
}

static void test_release_active(void)
{
    struct released_source r = {dispatch_semaphore_create(0), 0, 0};
    dispatch_queue_t q = dispatch_queue_create("compat.released", DISPATCH_QUEUE_SERIAL);
    dispatch_source_t timer = dispatch_source_create(DISPATCH_SOURCE_TYPE_TIMER, 0, 0, q);
    REQUIRE(timer != NULL);
    dispatch_set_context(timer, &r);
    dispatch_set_finalizer_f(timer, released_finalizer);
    dispatch_source_set_event_handler_f(timer, released_event);
    dispatch_source_set_cancel_handler_f(timer, released_cancel);
    dispatch_source_set_timer(timer, DISPATCH_TIME_NOW, 1000000, 0);
    dispatch_resume(timer);
    dispatch_release(timer);
    WAIT_SEMA(r.finalized);
    /* after the finalizer: no handler can be running or start any more */
    long events = compat_load(&r.events);
    dispatch_sync_f(q, NULL, compat_noop);
    CHECK_EQ(compat_load(&r.events), events);
    CHECK_EQ(compat_load(&r.cancelled), 0);
    dispatch_release(q);
    dispatch_release(r.finalized);
}

/* A READ event whose bytes were read elsewhere while it waited (here: the handler suspended the
 * source without reading, and the program read them) is dropped on resume: its data would be
 * 0, which reads as end of file. The next event reports the next bytes. */
struct stale_read {
    dispatch_source_t source;
    dispatch_semaphore_t fired;
    long calls;
    long data[2];
    dispatch_semaphore_t cancelled;
};

static void stale_read_cancel(void *ctx)
{
    dispatch_semaphore_signal(((struct stale_read *)ctx)->cancelled);
}

static void stale_read_event(void *ctx)
{
    struct stale_read *r = (struct stale_read *)ctx;
    long n = compat_add(&r->calls, 1) - 1; /* this call's index */
    if (n < 2) {
        r->data[n] = (long)dispatch_source_get_data(r->source);
    }
    dispatch_suspend(r->source);
    dispatch_semaphore_signal(r->fired);
}

static void test_read_readiness_gone(void)
{
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    dispatch_queue_t q = dispatch_queue_create("compat.stale", DISPATCH_QUEUE_SERIAL);
    struct stale_read r = {
        NULL, dispatch_semaphore_create(0), 0, {-1, -1}, dispatch_semaphore_create(0)};
    r.source = dispatch_source_create(DISPATCH_SOURCE_TYPE_READ, (uintptr_t)sv[0], 0, q);
    REQUIRE(r.source != NULL);
    dispatch_set_context(r.source, &r);
    dispatch_source_set_event_handler_f(r.source, stale_read_event);
    dispatch_source_set_cancel_handler_f(r.source, stale_read_cancel);
    dispatch_resume(r.source);
    REQUIRE(write(sv[1], "0123456789", 10) == 10);
    WAIT_SEMA(r.fired);
    char buf[16];
    REQUIRE(read(sv[0], buf, sizeof buf) == 10);
    dispatch_resume(r.source);
    /* no event for the bytes that are gone (it came at once on resume: data 0) */
    CHECK(dispatch_semaphore_wait(r.fired, compat_short()) != 0);
    REQUIRE(write(sv[1], "abc", 3) == 3);
    WAIT_SEMA(r.fired);
    CHECK_EQ(r.data[0], 10);
    CHECK_EQ(r.data[1], 3);
    dispatch_source_cancel(r.source);
    dispatch_resume(r.source);
    WAIT_SEMA(r.cancelled); /* the descriptor is the program's again: close it */
    dispatch_release(r.source);
    dispatch_release(r.cancelled);
    close(sv[0]);
    close(sv[1]);
    dispatch_release(r.fired);
    dispatch_release(q);
}

/* A READ source whose peer has closed, on a handler that reads what there is and does not
 * cancel: told of the end of file (data 0) once, not again while the descriptor stays at its end
 * (libdispatch tells the end at once, with the bytes still unread; CQueueCore first tells the
 * bytes, then the end). And a descriptor whose pending size the kernel does not tell (an
 * eventfd): data 1 on each event, not the 0 of an end of file. */
struct eof_read {
    dispatch_source_t source;
    dispatch_semaphore_t fired, cancelled;
    long calls, zeros, total;
};

static void eof_read_cancel(void *ctx)
{
    dispatch_semaphore_signal(((struct eof_read *)ctx)->cancelled);
}

static void eof_read_event(void *ctx)
{
    struct eof_read *r = (struct eof_read *)ctx;
    long data = (long)dispatch_source_get_data(r->source);
    char buf[64];
    while (read((int)dispatch_source_get_handle(r->source), buf, sizeof buf) > 0) {
    }
    compat_add(&r->total, data);
    compat_add(&r->zeros, data == 0);
    compat_add(&r->calls, 1);
    dispatch_semaphore_signal(r->fired);
}

static void test_read_end_of_file(void)
{
    dispatch_queue_t q = dispatch_queue_create("compat.eof", DISPATCH_QUEUE_SERIAL);
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    REQUIRE(write(fds[1], "abc", 3) == 3);
    close(fds[1]);
    int efd = eventfd(0, EFD_NONBLOCK);
    REQUIRE(efd >= 0);
    struct eof_read pipe_r = {
        NULL, dispatch_semaphore_create(0), dispatch_semaphore_create(0), 0, 0, 0};
    struct eof_read event_r = {
        NULL, dispatch_semaphore_create(0), dispatch_semaphore_create(0), 0, 0, 0};
    struct eof_read *rs[2] = {&pipe_r, &event_r};
    int fd[2] = {fds[0], efd};
    for (int i = 0; i < 2; i++) {
        rs[i]->source = dispatch_source_create(DISPATCH_SOURCE_TYPE_READ, (uintptr_t)fd[i], 0, q);
        REQUIRE(rs[i]->source != NULL);
        dispatch_set_context(rs[i]->source, rs[i]);
        dispatch_source_set_event_handler_f(rs[i]->source, eof_read_event);
        dispatch_source_set_cancel_handler_f(rs[i]->source, eof_read_cancel);
        dispatch_resume(rs[i]->source);
    }
    while (__atomic_load_n(&pipe_r.zeros, __ATOMIC_SEQ_CST) == 0) {
        WAIT_SEMA(pipe_r.fired);
    }
    for (int i = 1; i <= 3; i++) {
        uint64_t one = 1;
        REQUIRE(write(efd, &one, sizeof one) == sizeof one);
        while (__atomic_load_n(&event_r.calls, __ATOMIC_SEQ_CST) < i) {
            WAIT_SEMA(event_r.fired);
        }
    }
    /* room for calls that must not come */
    while (dispatch_semaphore_wait(pipe_r.fired, compat_short()) == 0) {
    }
    CHECK(__atomic_load_n(&pipe_r.calls, __ATOMIC_SEQ_CST) <= 2);
    CHECK_EQ(__atomic_load_n(&pipe_r.zeros, __ATOMIC_SEQ_CST), 1);
    CHECK_EQ(__atomic_load_n(&event_r.total, __ATOMIC_SEQ_CST), 3);
    CHECK_EQ(__atomic_load_n(&event_r.zeros, __ATOMIC_SEQ_CST), 0);
    for (int i = 0; i < 2; i++) {
        dispatch_source_cancel(rs[i]->source);
        WAIT_SEMA(rs[i]->cancelled); /* the descriptor is the program's again: close it */
        dispatch_release(rs[i]->source);
        dispatch_release(rs[i]->fired);
        dispatch_release(rs[i]->cancelled);
        close(fd[i]);
    }
    dispatch_release(q);
}

/* A WRITE source on a socket whose peer has gone, whose handler writes and ignores EPIPE
 * (leaving the clean-up to the read side): the hang-up is told once, as libdispatch does. The
 * level-triggered re-fire kept a socket that polls writable for ever (POLLOUT | POLLHUP) firing:
 * ~470,000 calls a second, a whole CPU, until the program cancelled. */
struct hup_write {
    int fd;
    long calls;
    long failed;
    dispatch_semaphore_t fired;
    dispatch_semaphore_t cancelled;
};

/* The descriptor may be closed only once the source is cancelled (its cancel handler has run),
 * as libdispatch documents: closed before that, the reactor's removal of it raced with the
 * close (ThreadSanitizer). */
static void hup_cancelled(void *ctx)
{
    dispatch_semaphore_signal(((struct hup_write *)ctx)->cancelled);
}

static void hup_write_event(void *ctx)
{
    struct hup_write *w = (struct hup_write *)ctx;
    if (write(w->fd, "ping\n", 5) < 0) {
        compat_add(&w->failed, 1);
    }
    compat_add(&w->calls, 1);
    dispatch_semaphore_signal(w->fired);
}

static void signal_semaphore(void *ctx)
{
    dispatch_semaphore_signal((dispatch_semaphore_t)ctx);
}

static void test_write_after_hang_up(void)
{
    signal(SIGPIPE, SIG_IGN);
    int sp[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0);
    fcntl(sp[0], F_SETFL, O_NONBLOCK);
    close(sp[1]); /* the client has gone before the server writes */
    dispatch_queue_t q = dispatch_queue_create("compat.hup", DISPATCH_QUEUE_SERIAL);
    struct hup_write w = {sp[0], 0, 0, dispatch_semaphore_create(0), dispatch_semaphore_create(0)};
    dispatch_source_t s =
        dispatch_source_create(DISPATCH_SOURCE_TYPE_WRITE, (uintptr_t)sp[0], 0, q);
    REQUIRE(s != NULL);
    dispatch_set_context(s, &w);
    dispatch_source_set_event_handler_f(s, hup_write_event);
    dispatch_source_set_cancel_handler_f(s, hup_cancelled);
    dispatch_resume(s);
    WAIT_SEMA(w.fired);
    /* Each marker runs behind whatever the source queued before it: a source that fires again
     * by itself runs its handler between them (then at least once a round) */
    dispatch_semaphore_t marked = dispatch_semaphore_create(0);
    for (int i = 0; i < 20; i++) {
        dispatch_async_f(q, marked, signal_semaphore);
        WAIT_SEMA(marked);
    }
    while (__atomic_load_n(&w.calls, __ATOMIC_SEQ_CST) < 100 &&
           dispatch_semaphore_wait(w.fired, compat_short()) == 0) {
    }
    dispatch_release(marked);
    long calls = __atomic_load_n(&w.calls, __ATOMIC_SEQ_CST);
    fprintf(stderr, "   write source after the hang-up: %ld call(s), %ld failed write(s)\n", calls,
            __atomic_load_n(&w.failed, __ATOMIC_SEQ_CST));
    CHECK(calls >= 1 && calls <= 3);
    CHECK_EQ(__atomic_load_n(&w.failed, __ATOMIC_SEQ_CST), calls);
    dispatch_source_cancel(s);
    WAIT_SEMA(w.cancelled);
    close(sp[0]);
    dispatch_release(s);
    dispatch_release(w.fired);
    dispatch_release(w.cancelled);
    dispatch_release(q);
}

int main(void)
{
    sigset_t usr1;
    /* SIGNAL sources read signals through signalfd: block it in every thread (threads created
     * from now on inherit the mask). */
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    REQUIRE(pthread_sigmask(SIG_BLOCK, &usr1, NULL) == 0);

    RUN(test_data_add);
    RUN(test_data_or_replace);
    RUN(test_data_outside_handler);
    RUN(test_target_queue);
    RUN(test_late_registration_handler);
    RUN(test_release_active);
    RUN(test_pipe);
    RUN(test_read_readiness_gone);
    RUN(test_read_end_of_file);
    RUN(test_write_after_hang_up);
    RUN(test_listening_socket);
    RUN(test_signal);
#ifdef CQ_DISPATCH_COMPAT
    RUN(test_proc);
    RUN(test_vnode);
#endif
    TEST_MAIN_END();
}
