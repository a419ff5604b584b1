// Linux system calls and constants that Swift's Glibc module hides because it
// is built without _GNU_SOURCE. Thin wrappers only: each returns what the
// system call returns and leaves errno as the kernel set it.
#ifndef APPSANDBOXFS_CLINUX_H
#define APPSANDBOXFS_CLINUX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

// Values of the Linux ABI; linux.c checks each against the system headers.
enum {
    asfs_O_PATH = 010000000,
    asfs_O_TMPFILE = 020200000,
    asfs_AT_EMPTY_PATH = 0x1000,
    asfs_RENAME_NOREPLACE = 1,
    asfs_RENAME_EXCHANGE = 2,
    asfs_RENAME_WHITEOUT = 4,
    asfs_SEEK_DATA = 3,
    asfs_SEEK_HOLE = 4,
    asfs_FALLOC_FL_KEEP_SIZE = 0x01,
    asfs_FALLOC_FL_PUNCH_HOLE = 0x02,
};

extern const long asfs_UTIME_NOW;
extern const long asfs_UTIME_OMIT;

int asfs_renameat2(int olddirfd, const char *oldpath, int newdirfd,
                   const char *newpath, unsigned int flags);
int asfs_fallocate(int fd, int mode, off_t offset, off_t length);
ssize_t asfs_copy_file_range(int fd_in, off_t *off_in, int fd_out,
                             off_t *off_out, size_t length, unsigned int flags);
int asfs_syncfs(int fd);
pid_t asfs_gettid(void);
/// setfsuid/setfsgid: per-thread identity for creating files as the caller.
int asfs_setfsuid(uid_t uid);
int asfs_setfsgid(gid_t gid);
/// The per-thread supplementary groups (raw system call, not glibc's
/// process-wide setgroups).
int asfs_thread_setgroups(size_t size, const gid_t *list);
int asfs_setxattr(const char *path, const char *name, const void *value, size_t size, int flags);
ssize_t asfs_getxattr(const char *path, const char *name, void *value, size_t size);
ssize_t asfs_listxattr(const char *path, char *list, size_t size);
int asfs_removexattr(const char *path, const char *name);
ssize_t asfs_lgetxattr(const char *path, const char *name, void *value, size_t size);
int asfs_lsetxattr(const char *path, const char *name, const void *value, size_t size, int flags);
ssize_t asfs_llistxattr(const char *path, char *list, size_t size);
int asfs_lremovexattr(const char *path, const char *name);
/// Path of a descriptor in /proc/self/fd, for the calls that have no *at()
/// form taking an O_PATH descriptor (xattrs, open of an O_PATH fd).
void asfs_proc_fd_path(int fd, char *buffer, size_t size);
/// name_to_handle_at(fd, "", AT_EMPTY_PATH) into `bytes` (at most
/// `capacity`), with the handle's length, type and mount id. struct
/// file_handle has a flexible array member, which Swift cannot build.
int asfs_name_to_handle(int fd, unsigned char *bytes, size_t capacity, size_t *length, int *type, int *mount_id);
/// unshare(CLONE_FS): the calling thread gets a file-system context (umask,
/// working folder, root) of its own, which it then changes alone.
int asfs_unshare_fs(void);
/// malloc_trim(0): free memory of every arena back to the system.
void asfs_malloc_trim(void);
/// open_by_handle_at for a handle made by asfs_name_to_handle.
int asfs_open_by_handle(int mount_fd, const unsigned char *bytes, size_t length, int type, int flags);

// Process calls for the spawner, and what the build knows of itself.
#include "clinux_process.h"
#include "clinux_build.h"

#endif
