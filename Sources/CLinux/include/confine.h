// The confined world of `appsandboxfs run --confine` (rules R1-R5): the
// kernel's own isolation, set up in a freshly cloned child with system calls
// only. A Swift process has several threads, and a forked copy of it may
// call nothing that takes a lock (malloc, stdio, glibc's set*id broadcast):
// everything here is a raw system call or a string copy into a buffer that
// exists before the clone.
#ifndef APPSANDBOXFS_CONFINE_H
#define APPSANDBOXFS_CONFINE_H

#include <stddef.h>
#include <sys/types.h>

/// What the confined world is made of (the decisions come from
/// SandboxPolicy's ConfinementPlan; every path absolute).
struct asfs_confinement {
    /// The container's mountpoint: stays read-write (with its rules). Its
    /// tmp folder is mounted again on /tmp and /var/tmp.
    const char *mountpoint;
    /// The device of the container's mount (mountinfo's major:minor): the
    /// path must still lead, without a link, to the root of that mount.
    unsigned device_major;
    unsigned device_minor;
    /// Other containers' mountpoints: unmounted in the new namespace.
    const char *const *detach;
    size_t detach_count;
    /// Backing directories and bundle sources: an empty read-only folder
    /// is mounted on each.
    const char *const *hide;
    size_t hide_count;
    /// The working folder to enter inside (NULL or unreachable: the
    /// container's root).
    const char *working_directory;
    /// Run as uid:gid with no supplementary groups; else keep the caller's.
    int change_identity;
    uid_t uid;
    gid_t gid;
    /// The command: a path, or a name looked up on `search_path` inside.
    const char *program;
    const char *search_path;
    char *const *argv;
    char *const *envp;
    /// The container's tmp folder, relative to the mountpoint (NULL: "tmp").
    /// On a device it is the app's data container's tmp (G2).
    const char *tmp_folder;
    /// On a device (G2, `launch`): a folder relative to the mountpoint
    /// ("Containers") replaced in the world by an empty read-only tmpfs
    /// that shows only the folders listed below (each relative to the
    /// mountpoint and inside it), read-only or read-write. NULL for a
    /// container (`run`).
    const char *view_root;
    const char *const *view_read_only;
    size_t view_read_only_count;
    const char *const *view_read_write;
    size_t view_read_write_count;
};

/// Why the world or the command could not be started.
struct asfs_confine_failure {
    /// errno of the step that failed.
    int error;
    /// The exit status `run` should end with: 1 for the world, 126 or 127
    /// for the command.
    int exit_status;
    /// The step, e.g. "mount_setattr / read-only" or the command's name.
    char step[480];
};

/// Starts the confined world: returns the pid of its first process (the
/// namespace's init, which runs the command and ends with its status), or
/// -1 with `failure` filled in (the command never ran). Returns only once
/// the command has been executed (or could not be). From here until
/// asfs_confine_wait returns, the signals `run` receives from other
/// processes (HUP, INT, QUIT, TERM, USR1, USR2, unless ignored) are passed
/// on to the command through init; those the terminal sends reach the
/// command directly. Call it from one thread at a time.
pid_t asfs_confine_start(const struct asfs_confinement *plan, struct asfs_confine_failure *failure);

/// Waits for the world's init to end and puts `run`'s signal handlers
/// back. Returns the shell's number: the command's exit status, or 128 +
/// the signal that ended it.
int asfs_confine_wait(pid_t init);

#endif
