#define _GNU_SOURCE
#include "clinux.h"

#include <fcntl.h>
#include <sched.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <linux/fs.h>

_Static_assert(asfs_O_PATH == O_PATH, "O_PATH");
_Static_assert(asfs_O_TMPFILE == O_TMPFILE, "O_TMPFILE");
_Static_assert(asfs_AT_EMPTY_PATH == AT_EMPTY_PATH, "AT_EMPTY_PATH");
_Static_assert(asfs_RENAME_NOREPLACE == RENAME_NOREPLACE, "RENAME_NOREPLACE");
_Static_assert(asfs_RENAME_EXCHANGE == RENAME_EXCHANGE, "RENAME_EXCHANGE");
_Static_assert(asfs_RENAME_WHITEOUT == RENAME_WHITEOUT, "RENAME_WHITEOUT");
_Static_assert(asfs_SEEK_DATA == SEEK_DATA, "SEEK_DATA");
_Static_assert(asfs_SEEK_HOLE == SEEK_HOLE, "SEEK_HOLE");
_Static_assert(asfs_FALLOC_FL_KEEP_SIZE == FALLOC_FL_KEEP_SIZE, "KEEP_SIZE");
_Static_assert(asfs_FALLOC_FL_PUNCH_HOLE == FALLOC_FL_PUNCH_HOLE, "PUNCH_HOLE");

const long asfs_UTIME_NOW = UTIME_NOW;
const long asfs_UTIME_OMIT = UTIME_OMIT;

int asfs_renameat2(int olddirfd, const char *oldpath, int newdirfd,
                   const char *newpath, unsigned int flags) {
    return renameat2(olddirfd, oldpath, newdirfd, newpath, flags);
}

int asfs_fallocate(int fd, int mode, off_t offset, off_t length) {
    return fallocate(fd, mode, offset, length);
}

ssize_t asfs_copy_file_range(int fd_in, off_t *off_in, int fd_out,
                             off_t *off_out, size_t length, unsigned int flags) {
    return copy_file_range(fd_in, off_in, fd_out, off_out, length, flags);
}

int asfs_syncfs(int fd) { return syncfs(fd); }

pid_t asfs_gettid(void) { return gettid(); }

int asfs_unshare_fs(void) { return unshare(CLONE_FS); }

int asfs_setfsuid(uid_t uid) { return setfsuid(uid); }

int asfs_setfsgid(gid_t gid) { return setfsgid(gid); }

int asfs_thread_setgroups(size_t size, const gid_t *list) {
    return (int)syscall(SYS_setgroups, size, list);
}

void asfs_proc_fd_path(int fd, char *buffer, size_t size) {
    snprintf(buffer, size, "/proc/self/fd/%d", fd);
}

int asfs_setxattr(const char *path, const char *name, const void *value, size_t size, int flags) {
    return setxattr(path, name, value, size, flags);
}
ssize_t asfs_getxattr(const char *path, const char *name, void *value, size_t size) {
    return getxattr(path, name, value, size);
}
ssize_t asfs_listxattr(const char *path, char *list, size_t size) { return listxattr(path, list, size); }
int asfs_removexattr(const char *path, const char *name) { return removexattr(path, name); }
ssize_t asfs_lgetxattr(const char *path, const char *name, void *value, size_t size) {
    return lgetxattr(path, name, value, size);
}
int asfs_lsetxattr(const char *path, const char *name, const void *value, size_t size, int flags) {
    return lsetxattr(path, name, value, size, flags);
}
ssize_t asfs_llistxattr(const char *path, char *list, size_t size) { return llistxattr(path, list, size); }
int asfs_lremovexattr(const char *path, const char *name) { return lremovexattr(path, name); }

// MAX_HANDLE_SZ: the largest handle any file system makes.
enum { asfs_handle_max = 128 };

int asfs_name_to_handle(int fd, unsigned char *bytes, size_t capacity, size_t *length, int *type, int *mount_id) {
    union {
        struct file_handle handle;
        unsigned char space[sizeof(struct file_handle) + asfs_handle_max];
    } buffer;
    buffer.handle.handle_bytes = asfs_handle_max;
    if (name_to_handle_at(fd, "", &buffer.handle, mount_id, AT_EMPTY_PATH) != 0) return -1;
    if (buffer.handle.handle_bytes > capacity) {
        errno = EOVERFLOW;
        return -1;
    }
    memcpy(bytes, buffer.handle.f_handle, buffer.handle.handle_bytes);
    *length = buffer.handle.handle_bytes;
    *type = buffer.handle.handle_type;
    return 0;
}

int asfs_open_by_handle(int mount_fd, const unsigned char *bytes, size_t length, int type, int flags) {
    union {
        struct file_handle handle;
        unsigned char space[sizeof(struct file_handle) + asfs_handle_max];
    } buffer;
    if (length > asfs_handle_max) {
        errno = EINVAL;
        return -1;
    }
    buffer.handle.handle_bytes = (unsigned int)length;
    buffer.handle.handle_type = type;
    memcpy(buffer.handle.f_handle, bytes, length);
    return open_by_handle_at(mount_fd, &buffer.handle, flags);
}

void asfs_malloc_trim(void) { malloc_trim(0); }
