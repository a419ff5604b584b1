#define _GNU_SOURCE
#include "clinux_process.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int asfs_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int asfs_spawn_addchdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}

int asfs_spawn_addclosefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

const short asfs_POSIX_SPAWN_SETSID = POSIX_SPAWN_SETSID;

int asfs_pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }
