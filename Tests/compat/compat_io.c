/*
 * Dispatch I/O (dispatch_io_*, dispatch_read/dispatch_write) through libdispatch's names, with
 * clang -fblocks, in C and C++, on both runtimes: one-shots on a pipe, a random-access file
 * channel (write, barrier, read back, cleanup handler), the high-water mark, close with
 * DISPATCH_IO_STOP. Only behaviour both runtimes document is checked.
 */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE
#endif
#include "compat_test.h"

#ifndef __BLOCKS__
#error "compat_io.c needs clang -fblocks"
#endif

#include <fcntl.h>
#include <sys/types.h>

static void test_oneshots(void)
{
    int p[2];
    REQUIRE(pipe(p) == 0);
    dispatch_queue_t q = dispatch_queue_create("compat.io", DISPATCH_QUEUE_SERIAL);
    dispatch_semaphore_t done = dispatch_semaphore_create(0);
    static const char text[] = "dispatch I/O, both runtimes";
    dispatch_data_t d = dispatch_data_create(text, sizeof text, NULL,
                                             DISPATCH_DATA_DESTRUCTOR_DEFAULT);
    __block int werr = -1;
    dispatch_write(p[1], d, q, ^(dispatch_data_t rest, int error) {
        (void)rest;
        werr = error;
        dispatch_semaphore_signal(done);
    });
    WAIT_SEMA(done);
    CHECK_EQ(werr, 0);
    close(p[1]);
    __block int rerr = -1;
    __block size_t got = 0;
    __block bool same = false;
    dispatch_read(p[0], SIZE_MAX, q, ^(dispatch_data_t data, int error) {
        rerr = error;
        got = dispatch_data_get_size(data);
        const void *bytes = NULL;
        size_t size = 0;
        dispatch_data_t map = dispatch_data_create_map(data, &bytes, &size);
        same = size == sizeof text && memcmp(bytes, text, size) == 0;
        dispatch_release(map);
        dispatch_semaphore_signal(done);
    });
    WAIT_SEMA(done);
    CHECK_EQ(rerr, 0);
    CHECK_EQ(got, sizeof text);
    CHECK(same);
    close(p[0]);
    dispatch_release(d);
    dispatch_release(done);
    dispatch_release(q);
}

static void test_random_file(void)
{
    char path[128];
    snprintf(path, sizeof path, "/tmp/compat-io-%d", (int)getpid());
    dispatch_queue_t q = dispatch_queue_create("compat.io", DISPATCH_QUEUE_SERIAL);
    dispatch_semaphore_t done = dispatch_semaphore_create(0);
    dispatch_semaphore_t cleaned = dispatch_semaphore_create(0);
    __block int cleanup_error = -1;
    dispatch_io_t ch = dispatch_io_create_with_path(DISPATCH_IO_RANDOM, path,
                                                    O_CREAT | O_TRUNC | O_RDWR, 0600, q,
                                                    ^(int error) {
                                                        cleanup_error = error;
                                                        dispatch_semaphore_signal(cleaned);
                                                    });
    REQUIRE(ch != NULL);
    unsigned char bytes[100];
    for (int i = 0; i < 100; i++) {
        bytes[i] = (unsigned char)(i * 7);
    }
    dispatch_data_t d = dispatch_data_create(bytes, sizeof bytes, NULL,
                                             DISPATCH_DATA_DESTRUCTOR_DEFAULT);
    __block int werr = -1;
    dispatch_io_write(ch, 0, d, q, ^(bool isdone, dispatch_data_t rest, int error) {
        (void)rest;
        if (isdone) {
            werr = error;
            dispatch_semaphore_signal(done);
        }
    });
    __block bool barrier_ran = false;
    dispatch_io_barrier(ch, ^{
        barrier_ran = true;
        CHECK(dispatch_io_get_descriptor(ch) >= 0);
    });
    dispatch_io_set_high_water(ch, 10);
    __block size_t total = 0, biggest = 0;
    __block int rerr = -1;
    unsigned char back_store[100];
    unsigned char *back = back_store;
    dispatch_io_read(ch, 0, 100, q, ^(bool isdone, dispatch_data_t data, int error) {
        if (data) {
            size_t n = dispatch_data_get_size(data);
            biggest = n > biggest ? n : biggest;
            dispatch_data_apply(data, ^bool(dispatch_data_t region, size_t offset,
                                            const void *buffer, size_t size) {
                (void)region;
                if (total + offset + size <= 100) {
                    memcpy(back + total + offset, buffer, size);
                }
                return true;
            });
            total += n;
        }
        if (isdone) {
            rerr = error;
            dispatch_semaphore_signal(done);
        }
    });
    WAIT_SEMA(done);
    WAIT_SEMA(done);
    CHECK_EQ(werr, 0);
    CHECK_EQ(rerr, 0);
    CHECK(barrier_ran);
    CHECK_EQ(total, 100);
    CHECK(biggest <= 10);
    CHECK(memcmp(back, bytes, 100) == 0);
    dispatch_io_close(ch, 0);
    dispatch_release(ch);
    WAIT_SEMA(cleaned);
    CHECK_EQ(cleanup_error, 0);
    unlink(path);
    dispatch_release(d);
    dispatch_release(done);
    dispatch_release(cleaned);
    dispatch_release(q);
}

/* RANDOM offsets are relative to the position the channel was created at: a negative one
 * reaches back from it; one before the file's start fails (EINVAL). */
static void random_read(dispatch_io_t ch, off_t offset, size_t length, dispatch_queue_t q,
                        char *out, int *error)
{
    dispatch_semaphore_t done = dispatch_semaphore_create(0);
    __block size_t got = 0;
    __block int err = -1;
    dispatch_io_read(ch, offset, length, q, ^(bool isdone, dispatch_data_t data, int e) {
        if (data) {
            dispatch_data_apply(data, ^bool(dispatch_data_t region, size_t at, const void *buf,
                                            size_t size) {
                (void)region;
                if (got + at + size < 16) {
                    memcpy(out + got + at, buf, size);
                }
                return true;
            });
            got += dispatch_data_get_size(data);
        }
        if (isdone) {
            err = e;
            dispatch_semaphore_signal(done);
        }
    });
    WAIT_SEMA(done);
    out[got < 16 ? got : 15] = '\0';
    *error = err;
    dispatch_release(done);
}

static void test_random_negative_offset(void)
{
    char path[128], got[16];
    int error;
    snprintf(path, sizeof path, "/tmp/compat-io-neg-%d", (int)getpid());
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
    REQUIRE(fd >= 0);
    unlink(path);
    REQUIRE(write(fd, "0123456789", 10) == 10); /* the position is now 10 */
    dispatch_queue_t q = dispatch_queue_create("compat.io.neg", DISPATCH_QUEUE_SERIAL);
    dispatch_semaphore_t cleaned = dispatch_semaphore_create(0);
    dispatch_io_t ch = dispatch_io_create(DISPATCH_IO_RANDOM, fd, q, ^(int e) {
        (void)e;
        dispatch_semaphore_signal(cleaned);
    });
    REQUIRE(ch != NULL);
    random_read(ch, -5, 3, q, got, &error);
    CHECK_EQ(error, 0);
    CHECK(strcmp(got, "567") == 0);
    random_read(ch, -10, 2, q, got, &error);
    CHECK_EQ(error, 0);
    CHECK(strcmp(got, "01") == 0);
#ifndef COMPAT_USE_LIBDISPATCH
    /* Ours: before the file's start (libdispatch passes the negative position to pread) */
    random_read(ch, -11, 2, q, got, &error);
    CHECK_EQ(error, EINVAL);
#endif
    dispatch_io_close(ch, 0);
    dispatch_release(ch);
    WAIT_SEMA(cleaned);
    close(fd);
    dispatch_release(cleaned);
    dispatch_release(q);
}

static void test_close_stop(void)
{
    int p[2];
    REQUIRE(pipe(p) == 0);
    dispatch_queue_t q = dispatch_queue_create("compat.io", DISPATCH_QUEUE_SERIAL);
    dispatch_semaphore_t done = dispatch_semaphore_create(0);
    dispatch_semaphore_t cleaned = dispatch_semaphore_create(0);
    dispatch_io_t ch = dispatch_io_create(DISPATCH_IO_STREAM, p[0], q, ^(int error) {
        (void)error;
        dispatch_semaphore_signal(cleaned);
    });
    __block int rerr = -1;
    dispatch_io_read(ch, 0, 10, q, ^(bool isdone, dispatch_data_t data, int error) {
        (void)data;
        if (isdone) {
            rerr = error;
            dispatch_semaphore_signal(done);
        }
    });
    dispatch_io_close(ch, DISPATCH_IO_STOP);
    WAIT_SEMA(done);
    CHECK_EQ(rerr, ECANCELED);
    WAIT_SEMA(cleaned);
    dispatch_release(ch);
    close(p[0]);
    close(p[1]);
    dispatch_release(done);
    dispatch_release(cleaned);
    dispatch_release(q);
}

int main(void)
{
    RUN(test_oneshots);
    RUN(test_random_file);
    RUN(test_random_negative_offset);
    RUN(test_close_stop);
    TEST_MAIN_END();
}
