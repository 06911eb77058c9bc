/*
 * The headers alone: cq_dispatch.h (twice), with no feature-test macros and nothing else, in
 * every mode the compat tests use (C11, C99 -pedantic-errors, C++11/17 -pedantic-errors, clang
 * -fblocks in C and C++). Checks the names' types and values; with blocks, that <Block.h> and the
 * header's own declarations of the blocks runtime agree.
 */
#include <cq_dispatch.h>
#include <cq_dispatch.h>

#if defined(__BLOCKS__) && defined(__has_include)
#if __has_include(<Block.h>)
#include <Block.h>
#define HAVE_BLOCK_H 1
#endif
#endif

#if DISPATCH_API_VERSION != 20180109 || !defined(CQ_DISPATCH_COMPAT)
#error "cq_dispatch.h: unexpected API version"
#endif

static int failures;

/* A helper header's declaration with dispatch_fd_t, in a file that uses no dispatch I/O. */
static int descriptor_of(dispatch_fd_t fd)
{
    return fd;
}

#define EXPECT(cond)                                                                            \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            failures++;                                                                         \
        }                                                                                       \
    } while (0)

static int touched;

static void touch(void *context)
{
    (void)context;
    touched++;
}

int main(void)
{
    dispatch_object_t object;
    dispatch_queue_t q = dispatch_get_global_queue(DISPATCH_QUEUE_PRIORITY_DEFAULT, 0);
    dispatch_function_t fn = touch;
    dispatch_once_t once = 0;
    dispatch_time_t t = DISPATCH_TIME_FOREVER;
    EXPECT(descriptor_of(2) == 2 && sizeof(dispatch_fd_t) == sizeof(int));
    dispatch_source_type_t types[9];
    dispatch_queue_attr_t attr = DISPATCH_QUEUE_CONCURRENT;
    dispatch_qos_class_t qos = QOS_CLASS_UTILITY;
    dispatch_queue_priority_t prio = DISPATCH_QUEUE_PRIORITY_BACKGROUND;
    dispatch_source_proc_flags_t proc = DISPATCH_PROC_EXIT;
    dispatch_source_vnode_flags_t vnode = DISPATCH_VNODE_DELETE | DISPATCH_VNODE_REVOKE;
    dispatch_source_timer_flags_t timer = DISPATCH_TIMER_STRICT;
    dispatch_autorelease_frequency_t freq = DISPATCH_AUTORELEASE_FREQUENCY_NEVER;
    size_t i;

    {
        /* every object converts to dispatch_object_t, and the generic calls take it */
        dispatch_queue_t own = dispatch_queue_create("headers", DISPATCH_QUEUE_SERIAL);
        object = own;
        dispatch_set_context(object, &once);
        EXPECT(dispatch_get_context(own) == &once);
        dispatch_release(object);
    }
    EXPECT(sizeof once == sizeof(intptr_t));
    EXPECT(t == ~0ull && DISPATCH_TIME_NOW == 0);
    EXPECT(NSEC_PER_SEC == 1000000000ull && USEC_PER_SEC == 1000000ull);
    EXPECT(NSEC_PER_MSEC == 1000000ull && NSEC_PER_USEC == 1000ull);
    EXPECT(DISPATCH_QUEUE_SERIAL == NULL && attr != NULL);
    EXPECT(DISPATCH_TARGET_QUEUE_DEFAULT == NULL && DISPATCH_CURRENT_QUEUE_LABEL == NULL);
    EXPECT(DISPATCH_APPLY_AUTO == NULL);
    EXPECT(DISPATCH_QUEUE_PRIORITY_HIGH == 2 && DISPATCH_QUEUE_PRIORITY_LOW == -2);
    EXPECT(prio == -32768 && qos == 0x11);
    EXPECT(proc == 0x80000000ul && DISPATCH_PROC_FORK == 0x40000000ul);
    EXPECT(DISPATCH_PROC_EXEC == 0x20000000ul && DISPATCH_PROC_SIGNAL == 0x08000000ul);
    EXPECT(vnode == 0x41 && DISPATCH_VNODE_WRITE == 2 && DISPATCH_VNODE_EXTEND == 4);
    EXPECT(DISPATCH_VNODE_ATTRIB == 8 && DISPATCH_VNODE_LINK == 0x10);
    EXPECT(DISPATCH_VNODE_RENAME == 0x20);
    EXPECT(timer == 1 && freq == 2);
    types[0] = DISPATCH_SOURCE_TYPE_DATA_ADD;
    types[1] = DISPATCH_SOURCE_TYPE_DATA_OR;
    types[2] = DISPATCH_SOURCE_TYPE_DATA_REPLACE;
    types[3] = DISPATCH_SOURCE_TYPE_PROC;
    types[4] = DISPATCH_SOURCE_TYPE_READ;
    types[5] = DISPATCH_SOURCE_TYPE_SIGNAL;
    types[6] = DISPATCH_SOURCE_TYPE_TIMER;
    types[7] = DISPATCH_SOURCE_TYPE_VNODE;
    types[8] = DISPATCH_SOURCE_TYPE_WRITE;
    for (i = 0; i < 9; i++) {
        EXPECT(types[i] != NULL);
    }
    {
        /* <signal.h> and <sys/param.h> come with the header, as with libdispatch's */
        void (*previous)(int) = signal(SIGPIPE, SIG_IGN);
        EXPECT(previous != SIG_ERR);
        signal(SIGPIPE, previous);
        EXPECT(MAXPATHLEN >= 256);
    }
    dispatch_once_f(&once, NULL, fn);
    EXPECT(once != 0);
    dispatch_sync_f(q, NULL, fn);
    EXPECT(touched == 2);
#ifdef __BLOCKS__
    {
        /* the block forms are there, and <Block.h>'s macros work on dispatch_block_t */
        __block int ran = 0;
        dispatch_block_t block = ^{
            ran++;
        };
#ifdef HAVE_BLOCK_H
        dispatch_block_t copy = Block_copy(block);
        dispatch_sync(q, copy);
        Block_release(copy);
#else
        dispatch_sync(q, block);
#endif
        EXPECT(ran == 1);
    }
#endif
    return failures == 0 ? 0 : 1;
}
