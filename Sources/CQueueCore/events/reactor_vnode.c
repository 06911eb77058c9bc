/*
 * VNODE sources: inotify watches (one per inode, shared by the sources on it) and the
 * translation of inotify events to CQ_VNODE_* flags.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "events/reactor_internal.h"
#include "events/reactor_loop_internal.h"
#include "platform/diag_internal.h"

static int inotify_mask_for(uintptr_t mask)
{
    int m = IN_UNMOUNT;
    if (mask & (CQ_VNODE_DELETE | CQ_VNODE_LINK | CQ_VNODE_ATTRIB)) {
        m |= IN_ATTRIB | IN_DELETE_SELF;
    }
    if (mask & (CQ_VNODE_WRITE | CQ_VNODE_EXTEND)) {
        m |= IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO;
    }
    if (mask & CQ_VNODE_LINK) {
        m |= IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO; /* a directory's subdirectories */
    }
    if (mask & CQ_VNODE_RENAME) {
        m |= IN_MOVE_SELF;
    }
    return m;
}

static int add_watch(int fd, uintptr_t mask);

int cq__vnode_watch(int fd, uintptr_t mask)
{
    if (cq__reactor_ensure_started() != 0) {
        errno = R.error;
        return -1;
    }
    return add_watch(fd, mask);
}

/* inotify watches the inode behind `fd` (found through its path); -1 with errno on failure. */
static int add_watch(int fd, uintptr_t mask)
{
    char proc[64], path[PATH_MAX];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(proc, path, sizeof path - 1);
    if (n < 0) {
        return -1;
    }
    path[n] = '\0';
    /* IN_MASK_ADD: other sources may watch the same inode with other events. */
    return inotify_add_watch(R.inofd, path, (uint32_t)inotify_mask_for(mask) | IN_MASK_ADD);
}

void cq__reactor_watch_register(struct cq_source_s *s)
{
    if (s->wd < 0) {
        return;
    }
    /* The watch made when the source was created may be gone: another source on the inode
     * shared it (inotify gives one watch per inode), and its unregistration, handled here
     * since, removed it with its last registered source. Add it again (the same watch if it
     * is still there; else a new one, maybe under another number). */
    int wd = add_watch((int)s->handle, s->mask);
    if (wd >= 0) {
        s->wd = wd;
    }
    R.watches = cq__reactor_table_fit(R.watches, &R.nwatches, s->wd, "a file watch");
    if (R.watches[s->wd] == NULL) {
        R.watches[s->wd] = calloc(1, sizeof(struct watch));
        if (R.watches[s->wd] == NULL) {
            cq__crash("out of memory registering a file watch");
        }
        R.watches[s->wd]->wd = s->wd;
    }
    struct stat st;
    if (fstat((int)s->handle, &st) == 0) {
        s->vnode_size = st.st_size;
        s->vnode_nlink = st.st_nlink;
        s->vnode_dev = st.st_dev;
        s->vnode_ino = st.st_ino;
    }
    cq__reactor_list_add(&R.watches[s->wd]->sources, s);
}

void cq__reactor_watch_unregister(struct cq_source_s *s)
{
    if (s->wd < 0 || s->wd >= R.nwatches || R.watches[s->wd] == NULL) {
        return;
    }
    struct watch *w = R.watches[s->wd];
    cq__reactor_list_remove(&w->sources, s);
    if (w->sources == NULL) {
        inotify_rm_watch(R.inofd, w->wd);
        R.watches[w->wd] = NULL;
        free(w);
    }
}

/* The CQ_VNODE_* flags of one inotify event for `s`. `child`: the event names an entry of the
 * watched directory (its len is not 0). Of those only the entry changes count, as WRITE on the
 * directory (kqueue's NOTE_WRITE on a directory): a write to a file inside it, or a chmod of
 * one, is that file's event, not the directory's. */
static uintptr_t vnode_flags(struct cq_source_s *s, uint32_t in_mask, bool child)
{
    uintptr_t f = 0;
    if (child) {
        in_mask &= IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO;
        if (in_mask == 0) {
            return 0;
        }
    }
    /* A descriptor closed under the source stops it firing (sources.md), also when its number
     * now names another file: the watch is on the inode, whose last events came on (the
     * close of a deleted file's descriptor reported DELETE a second time, from IN_DELETE_SELF),
     * and the other file's size and link count drove EXTEND, LINK and DELETE. */
    struct stat st;
    if (fstat((int)s->handle, &st) != 0 || (uint64_t)st.st_dev != s->vnode_dev ||
        (uint64_t)st.st_ino != s->vnode_ino) {
        return 0;
    }
    if (in_mask & IN_DELETE_SELF) {
        f |= CQ_VNODE_DELETE;
    }
    if (in_mask & IN_MOVE_SELF) {
        f |= CQ_VNODE_RENAME;
    }
    if (in_mask & IN_UNMOUNT) {
        f |= CQ_VNODE_REVOKE;
    }
    if (in_mask & (IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)) {
        f |= CQ_VNODE_WRITE;
        if (st.st_size > s->vnode_size) {
            f |= CQ_VNODE_EXTEND;
        }
        if (child && st.st_nlink != s->vnode_nlink) {
            f |= CQ_VNODE_LINK; /* a subdirectory came or went (its ".." links the directory) */
        }
    }
    if (in_mask & IN_ATTRIB) {
        f |= CQ_VNODE_ATTRIB;
        if (st.st_nlink != s->vnode_nlink) {
            f |= CQ_VNODE_LINK;
        }
        if (st.st_nlink == 0) {
            f |= CQ_VNODE_DELETE; /* unlinked while we hold it open */
        }
    }
    s->vnode_size = st.st_size;
    s->vnode_nlink = st.st_nlink;
    f &= s->mask;
    if (f & CQ_VNODE_DELETE) {
        /* once: a file is deleted once (IN_ATTRIB at the last unlink, and IN_DELETE_SELF when
         * the inode goes, for a directory at rmdir) */
        if (s->vnode_deleted) {
            f &= ~(uintptr_t)CQ_VNODE_DELETE;
        }
        s->vnode_deleted = true;
    }
    return f;
}

void cq__reactor_read_inotify(void)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;
    while ((n = read(R.inofd, buf, sizeof buf)) > 0) {
        for (char *p = buf; p < buf + n;) {
            struct inotify_event *e = (struct inotify_event *)p;
            p += sizeof *e + e->len;
            if (e->wd < 0 || e->wd >= R.nwatches || R.watches[e->wd] == NULL) {
                continue;
            }
            for (struct cq_source_s *s = R.watches[e->wd]->sources; s; s = s->next_on_key) {
                uintptr_t f = vnode_flags(s, e->mask, e->len > 0);
                if (f) {
                    cq__source_event(s, f, false);
                }
            }
        }
    }
}
