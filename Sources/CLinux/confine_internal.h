// What the two halves of the confined world's child side share (confine.c
// makes the world, confine_app_view.c a device app's view of its
// containers): private to CLinux. Like all of the child side, these call
// system calls and copy bytes, nothing that allocates or locks.
#ifndef APPSANDBOXFS_CONFINE_INTERNAL_H
#define APPSANDBOXFS_CONFINE_INTERNAL_H

#include "confine.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <linux/stat.h>

static inline size_t append(char *buffer, size_t used, size_t size, const char *text) {
    while (text && *text && used + 1 < size) buffer[used++] = *text++;
    buffer[used] = 0;
    return used;
}

/// Tells `run` why the world could not be made, and ends.
static inline void fail(int report_fd, int status, const char *step, const char *path) {
    int error = errno;
    struct asfs_confine_failure failure;
    memset(&failure, 0, sizeof failure);
    failure.error = error;
    failure.exit_status = status;
    size_t used = append(failure.step, 0, sizeof failure.step, step);
    if (path) {
        used = append(failure.step, used, sizeof failure.step, " ");
        append(failure.step, used, sizeof failure.step, path);
    }
    ssize_t ignored = write(report_fd, &failure, sizeof failure);
    (void)ignored;
    _exit(status);
}

static inline int set_mount_attributes(int dirfd, const char *path, unsigned flags, unsigned long set, unsigned long clear) {
    struct mount_attr attributes;
    memset(&attributes, 0, sizeof attributes);
    attributes.attr_set = set;
    attributes.attr_clr = clear;
    return (int)syscall(SYS_mount_setattr, dirfd, path, flags, &attributes, sizeof attributes);
}

static inline int clone_tree_at(int fd, unsigned flags) {
    return (int)syscall(SYS_open_tree, fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | flags);
}

/// The container's mount, opened by its path without following a link and
/// checked to be the root of the mount the plan was made for (its device).
/// Whoever can write a folder above the mountpoint could otherwise swap it
/// for a link (or mount something over it) between the plan and here, and
/// have a read-write copy of any folder, "/" included, put in the world.
static inline int open_container(const struct asfs_confinement *plan, int report_fd) {
    struct open_how how = {O_PATH | O_DIRECTORY | O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
    int fd = (int)syscall(SYS_openat2, AT_FDCWD, plan->mountpoint, &how, sizeof how);
    if (fd < 0) fail(report_fd, 1, "open without following links", plan->mountpoint);
    struct statx status;
    memset(&status, 0, sizeof status);
    if (syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_TYPE, &status) != 0) fail(report_fd, 1, "statx", plan->mountpoint);
    if (!(status.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) || !(status.stx_attributes & STATX_ATTR_MOUNT_ROOT)
        || status.stx_dev_major != plan->device_major || status.stx_dev_minor != plan->device_minor) {
        errno = EXDEV;
        fail(report_fd, 1, "the container's mount is no longer at (a link or another mount in the way)", plan->mountpoint);
    }
    return fd;
}

/// G2: the app's view of a device's containers (confine_app_view.c); does
/// nothing when the plan has no view.
void asfs_confine_make_app_view(const struct asfs_confinement *plan, int report_fd);

#endif
