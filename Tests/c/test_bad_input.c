/*
 * Bad input that is answered with an error return rather than an abort: each case checks the
 * return value and errno. docs/misuse.md (table c) names these functions. Misuse that aborts,
 * the messages printed on stderr, and the errors that need a starved process (no descriptors,
 * no threads, no memory) are checked in test_misuse.c.
 */
#include <fcntl.h>
#include <limits.h>

#include "cq_test.h"

/* cq_source_create must return NULL with errno `err`. */
#define EXPECT_CREATE_FAILS(type, handle, mask, err)                                               \
    do {                                                                                           \
        errno = 0;                                                                                 \
        cq_source_t _s = cq_source_create((type), (uintptr_t)(handle), (uintptr_t)(mask), NULL);   \
        if (_s != NULL || errno != (err)) {                                                        \
            fprintf(stderr,                                                                        \
                    "%s:%d: cq_source_create(%s, %s, %s): got %p errno %d (%s), "                  \
                    "expected NULL errno %d (%s)\n",                                               \
                    __FILE__, __LINE__, #type, #handle, #mask, (void *)_s, errno, strerror(errno), \
                    (err), strerror(err));                                                         \
            test_failures++;                                                                       \
        }                                                                                          \
    } while (0)

/* cq_source_create must succeed (the control case next to the failing ones). */
static void expect_create_works(cq_source_type_t type, uintptr_t handle, uintptr_t mask)
{
    cq_source_t s = cq_source_create(type, handle, mask, NULL);
    CHECK(s != NULL);
    if (s) {
        cq_release(s); /* never resumed: may be released at once */
    }
}

static void test_queue_create_unknown_attr(void)
{
    static const int not_an_attr = 1;
    errno = 0;
    CHECK(cq_queue_create("bad-attr", (cq_queue_attr_t)(const void *)&not_an_attr) == NULL);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK(cq_queue_create(NULL, (cq_queue_attr_t)(uintptr_t)1) == NULL);
    CHECK_EQ(errno, EINVAL);
    /* the known attributes */
    cq_queue_t q = cq_queue_create("serial", CQ_QUEUE_SERIAL);
    CHECK(q != NULL);
    cq_release(q);
    q = cq_queue_create("concurrent", cq_queue_attr_concurrent());
    CHECK(q != NULL);
    cq_release(q);
}

static void test_global_queue_flags(void)
{
    const uintptr_t flags[] = {1, 2, UINTPTR_MAX};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        errno = 0;
        CHECK(cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, flags[i]) == NULL);
        CHECK_EQ(errno, EINVAL);
    }
    CHECK(cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0) != NULL);
}

static void test_semaphore_negative_value(void)
{
    /* Each also prints a line on stderr (checked in test_misuse.c, negative_semaphore). */
    const intptr_t values[] = {-1, INTPTR_MIN};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        errno = 0;
        CHECK(cq_semaphore_create(values[i]) == NULL);
        CHECK_EQ(errno, EINVAL);
    }
    cq_semaphore_t s = cq_semaphore_create(0);
    CHECK(s != NULL);
    cq_release(s);
}

static void test_source_type_unknown_kind(void)
{
    CHECK(cq_source_type((cq_source_kind_t)0) == NULL);
    CHECK(cq_source_type((cq_source_kind_t)(CQ_SOURCE_KIND_DATA_REPLACE + 1)) == NULL);
    CHECK(cq_source_type((cq_source_kind_t)-1) == NULL);
    CHECK(cq_source_type(CQ_SOURCE_KIND_DATA_REPLACE) == CQ_SOURCE_TYPE_DATA_REPLACE);
}

static void test_source_create_unknown_type(void)
{
    static const long not_a_type[4];
    EXPECT_CREATE_FAILS(NULL, 0, 0, EINVAL);
    EXPECT_CREATE_FAILS((cq_source_type_t)(const void *)not_a_type, 0, 0, EINVAL);
}

static void test_source_create_unknown_mask(void)
{
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_PROC, getpid(), 0x1, EINVAL);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_PROC, getpid(), CQ_PROC_EXIT | 0x1, EINVAL);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_VNODE, STDIN_FILENO, 0x80, EINVAL);
    /* types that take no mask */
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_TIMER, 0, 1, EINVAL);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_SIGNAL, SIGUSR1, 1, EINVAL);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_READ, STDIN_FILENO, 1, EINVAL);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_WRITE, STDERR_FILENO, 1, EINVAL);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_DATA_ADD, 0, 1, EINVAL);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_DATA_OR, 0, 1, EINVAL);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_DATA_REPLACE, 0, 1, EINVAL);
}

static void test_source_create_mask_required(void)
{
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_PROC, getpid(), 0, EINVAL);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_VNODE, STDIN_FILENO, 0, EINVAL);
}

static void test_source_create_unexpected_handle(void)
{
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_TIMER, 1, 0, EINVAL);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_DATA_ADD, 1, 0, EINVAL);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_DATA_OR, 1, 0, EINVAL);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_DATA_REPLACE, 1, 0, EINVAL);
    expect_create_works(CQ_SOURCE_TYPE_TIMER, 0, 0);
    expect_create_works(CQ_SOURCE_TYPE_DATA_ADD, 0, 0);
}

static void test_source_create_bad_signal(void)
{
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_SIGNAL, 0, 0, EINVAL);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_SIGNAL, -1, 0, EINVAL);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_SIGNAL, _NSIG, 0, EINVAL);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_SIGNAL, 1000, 0, EINVAL);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_SIGNAL, SIGKILL, 0, EINVAL);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_SIGNAL, SIGSTOP, 0, EINVAL);
    /* the C library's own, below SIGRTMIN (glibc: 32 and 33); they can never be delivered */
    for (int signo = 32; signo < SIGRTMIN; signo++) {
        EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_SIGNAL, (uintptr_t)signo, 0, EINVAL);
    }
    expect_create_works(CQ_SOURCE_TYPE_SIGNAL, (uintptr_t)SIGRTMIN, 0);
    expect_create_works(CQ_SOURCE_TYPE_SIGNAL, SIGUSR1, 0);
    expect_create_works(CQ_SOURCE_TYPE_SIGNAL, _NSIG - 1, 0);
}

static void test_source_create_bad_descriptor(void)
{
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    close(fds[1]); /* a descriptor number that is not open */
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_READ, fds[1], 0, EBADF);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_WRITE, fds[1], 0, EBADF);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_VNODE, fds[1], CQ_VNODE_WRITE, EBADF);
    /* not a descriptor number at all (a negative int passed as uintptr_t, or beyond INT_MAX) */
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_READ, -1, 0, EBADF);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_WRITE, (uintptr_t)INT_MAX + 1, 0, EBADF);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_VNODE, (uintptr_t)INT_MAX + 1, CQ_VNODE_WRITE, EBADF);
    expect_create_works(CQ_SOURCE_TYPE_READ, (uintptr_t)fds[0], 0);
    close(fds[0]);
}

static void test_source_create_no_such_process(void)
{
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_PROC, 0, CQ_PROC_EXIT, ESRCH);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_PROC, (uintptr_t)INT_MAX + 1, CQ_PROC_EXIT, ESRCH);
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_PROC, -1, CQ_PROC_EXIT, ESRCH);
    /* above any pid_max Linux allows (2^22): the kernel says ESRCH */
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_PROC, 0x7ffffff0, CQ_PROC_EXIT, ESRCH);
    expect_create_works(CQ_SOURCE_TYPE_PROC, (uintptr_t)getpid(), CQ_PROC_EXIT);
}

static void test_source_create_deleted_file(void)
{
    char path[] = "/tmp/cq-bad-input-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    expect_create_works(CQ_SOURCE_TYPE_VNODE, (uintptr_t)fd, CQ_VNODE_DELETE);
    REQUIRE(unlink(path) == 0);
    /* the descriptor is open, but its file has no path left to watch */
    EXPECT_CREATE_FAILS(CQ_SOURCE_TYPE_VNODE, fd, CQ_VNODE_DELETE, ENOENT);
    close(fd);
}

static void get_null_key(void *ctx)
{
    *(void **)ctx = cq_get_specific(NULL);
}

static void test_specific_null_key(void)
{
    static int key, value;
    cq_queue_t q = cq_queue_create("null-key", NULL);
    cq_queue_set_specific(q, &key, &value, NULL);
    CHECK(cq_queue_get_specific(q, &key) == &value);
    CHECK(cq_queue_get_specific(q, NULL) == NULL);
    void *seen = &seen;
    cq_sync_f(q, &seen, get_null_key);
    CHECK(seen == NULL);
    CHECK(cq_get_specific(NULL) == NULL);
    cq_release(q);
}

int main(void)
{
    RUN(test_queue_create_unknown_attr);
    RUN(test_global_queue_flags);
    RUN(test_semaphore_negative_value);
    RUN(test_source_type_unknown_kind);
    RUN(test_source_create_unknown_type);
    RUN(test_source_create_unknown_mask);
    RUN(test_source_create_mask_required);
    RUN(test_source_create_unexpected_handle);
    RUN(test_source_create_bad_signal);
    RUN(test_source_create_bad_descriptor);
    RUN(test_source_create_no_such_process);
    RUN(test_source_create_deleted_file);
    RUN(test_specific_null_key);
    TEST_MAIN_END();
}
