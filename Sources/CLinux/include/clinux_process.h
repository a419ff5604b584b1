// Process and descriptor calls that Swift's Glibc module hides (GNU
// extensions): for the one process spawner (Sources/Spawning).
#ifndef APPSANDBOXFS_CLINUX_PROCESS_H
#define APPSANDBOXFS_CLINUX_PROCESS_H

#include <spawn.h>
#include <stdint.h>
#include <sys/types.h>

/// pipe2(fds, O_CLOEXEC): both ends close on exec from the start.
int asfs_pipe_cloexec(int fds[2]);
/// posix_spawn_file_actions_addchdir_np (glibc 2.29).
int asfs_spawn_addchdir(posix_spawn_file_actions_t *actions, const char *path);
/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34).
int asfs_spawn_addclosefrom(posix_spawn_file_actions_t *actions, int from);
/// POSIX_SPAWN_SETSID (glibc 2.26).
extern const short asfs_POSIX_SPAWN_SETSID;
/// pidfd_open(2): a descriptor that polls readable once `pid` has ended.
int asfs_pidfd_open(pid_t pid);

#endif
