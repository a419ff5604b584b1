// The confined world of `appsandboxfs run --confine`: see confine.h and
// docs/confinement.md.
//
//   run (Swift, several threads)
//    └─ clone(CLONE_NEWNS | CLONE_NEWPID): init, pid 1 of a new PID namespace
//         mount setup, privileges dropped, then
//         └─ clone: the command (execve)
//
// Only the cloned child runs the code below `child side`; it calls system
// calls and copies bytes, nothing that allocates or locks (the parent's
// other threads may have held a lock at the moment of the clone). That is
// also why the identity calls are raw system calls: glibc's setresuid()
// signals every thread of the process, which the clone does not have.
#define _GNU_SOURCE
#include "confine_internal.h"
#include "confine_filter.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <linux/securebits.h>
#include <linux/stat.h>

// The signals `run` and init pass on to the command.
static const int forwarded_signals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};
enum { forwarded_count = sizeof forwarded_signals / sizeof forwarded_signals[0] };

// The process a signal handler passes signals on to: in `run`, the world's
// init; in init, the command. A signal handler can reach nothing else (it
// takes no argument). A signal that arrives in `run` before init exists is
// kept in `pending_signal` and passed on once it does.
static volatile pid_t forward_target;
static volatile sig_atomic_t pending_signal;

static void forward_signal(int signal, siginfo_t *info, void *context) {
    (void)context;
    // SI_KERNEL: the terminal sent it (Ctrl-C, hangup) to the whole
    // foreground process group, the command included: passing it on would
    // deliver it twice.
    if (info->si_code == SI_KERNEL) return;
    pid_t target = forward_target;
    if (target > 0) kill(target, signal);
    else pending_signal = signal;
}

/// Installs forward_signal for the forwarded signals, except those in
/// `ignored` (a command started under nohup ignores SIGHUP, and so does
/// `run`). `previous` (may be NULL) receives the handlers it replaces.
static void install_forwarding(const sigset_t *ignored, struct sigaction *previous) {
    for (int i = 0; i < forwarded_count; i++) {
        if (ignored && sigismember(ignored, forwarded_signals[i]) == 1) continue;
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_sigaction = forward_signal;
        action.sa_flags = SA_SIGINFO | SA_RESTART;
        sigaction(forwarded_signals[i], &action, previous ? &previous[i] : NULL);
    }
}

/// The handlers `run` had before asfs_confine_start.
static struct sigaction run_handlers[forwarded_count];
static sigset_t run_ignored;

static void restore_forwarding(void) {
    for (int i = 0; i < forwarded_count; i++) {
        if (sigismember(&run_ignored, forwarded_signals[i]) == 1) continue;
        sigaction(forwarded_signals[i], &run_handlers[i], NULL);
    }
    forward_target = 0;
}

// ---------------------------------------------------------------- child side

/// fork() without glibc: no atfork handlers (they lock), same semantics.
static pid_t raw_fork(unsigned long flags) {
    return (pid_t)syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0);
}

static void close_inherited(int keep_low, int keep_high) {
    // Everything but 0-2 and the two pipes: a descriptor of a folder
    // outside would let the command openat() or fchdir() out of its world.
    if (keep_low > 3) close_range(3, (unsigned)keep_low - 1, 0);
    if (keep_high > keep_low + 1) close_range((unsigned)keep_low + 1, (unsigned)keep_high - 1, 0);
    close_range((unsigned)keep_high + 1, ~0U, 0);
}

static int clone_tree(const char *path, unsigned flags) {
    return (int)syscall(SYS_open_tree, AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | flags);
}

static int attach_tree(int tree, const char *path) {
    return (int)syscall(SYS_move_mount, tree, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH);
}

/// A read-only copy of `path` mounted on itself (for /proc/sys and the
/// like, which root could otherwise write without any capability).
static void bind_read_only(int report_fd, const char *path) {
    int tree = clone_tree(path, AT_RECURSIVE);
    if (tree < 0) {
        if (errno == ENOENT) return;
        fail(report_fd, 1, "open_tree", path);
    }
    if (set_mount_attributes(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, MOUNT_ATTR_RDONLY, 0) != 0)
        fail(report_fd, 1, "mount_setattr read-only", path);
    if (attach_tree(tree, path) != 0) fail(report_fd, 1, "move_mount", path);
    close(tree);
}

// The devices a program expects in /dev. Raw disks and the rest stay out:
// root without any capability may still open a block device its modes let
// it write.
static const char *const device_names[] = {"null", "zero", "full", "random", "urandom", "tty", "ptmx"};
enum { device_count = sizeof device_names / sizeof device_names[0] };

static void path_in(char *buffer, size_t size, const char *folder, const char *name) {
    size_t used = append(buffer, 0, size, folder);
    used = append(buffer, used, size, "/");
    append(buffer, used, size, name);
}

/// Whether `path` is `folder` or lies below it.
static int is_inside(const char *path, const char *folder) {
    size_t length = strlen(folder);
    if (strncmp(path, folder, length) != 0) return 0;
    return path[length] == '\0' || path[length] == '/' || (length == 1 && folder[0] == '/');
}

/// What the reader of mountinfo keeps of the line it is in: no line is held
/// whole (a line has no length limit: a mountpoint under folders renamed to
/// long names, a long source or option string), only the mount point
/// (field 5, octal escapes undone, at most PATH_MAX - 1 bytes) and whether
/// the file system type (the field after "-") is the one looked for.
struct mountinfo_line {
    int field;          // the field being read, from 0
    size_t length;      // bytes of that field so far
    int first_is_dash;  // the field so far is "-"
    int type_field;     // the type's field, once "-" was seen; else -1
    int type_matches;   // the type so far matches
    int escape;         // octal digits of a \ooo escape read so far, or -1
    int escape_value;
    size_t mount_point_length;
    int mount_point_too_long;
    char mount_point[PATH_MAX];
};

static void mountinfo_line_start(struct mountinfo_line *line) {
    line->field = 0;
    line->length = 0;
    line->first_is_dash = 0;
    line->type_field = -1;
    line->type_matches = 1;
    line->escape = -1;
    line->escape_value = 0;
    line->mount_point_length = 0;
    line->mount_point_too_long = 0;
}

static void mount_point_append(struct mountinfo_line *line, char byte) {
    if (line->mount_point_length + 1 >= sizeof line->mount_point) line->mount_point_too_long = 1;
    else line->mount_point[line->mount_point_length++] = byte;
}

/// Takes one byte of a line (not its newline).
static void mountinfo_line_take(struct mountinfo_line *line, char byte, const char *type) {
    if (byte == ' ') {
        if (line->field >= 6 && line->type_field < 0 && line->length == 1 && line->first_is_dash)
            line->type_field = line->field + 1;
        else if (line->field == line->type_field && type[line->length] != '\0')
            line->type_matches = 0;
        line->field++;
        line->length = 0;
        return;
    }
    if (line->length == 0) line->first_is_dash = byte == '-';
    if (line->field == 4) {
        // mountinfo writes space, tab, newline and backslash as \ooo,
        // always three digits.
        if (line->escape < 0 && byte == '\\') {
            line->escape = 0;
            line->escape_value = 0;
        } else if (line->escape >= 0 && byte >= '0' && byte <= '7') {
            line->escape_value = line->escape_value * 8 + (byte - '0');
            if (++line->escape == 3) {
                mount_point_append(line, (char)line->escape_value);
                line->escape = -1;
            }
        } else {
            line->escape = -1;
            mount_point_append(line, byte);
        }
    } else if (line->field == line->type_field) {
        if (line->length >= strlen(type) || type[line->length] != byte) line->type_matches = 0;
    }
    line->length++;
}

/// At the line's end: whether it is a mount of `type`.
static int mountinfo_line_is(struct mountinfo_line *line, const char *type) {
    if (line->field == line->type_field && type[line->length] != '\0') line->type_matches = 0;
    return line->type_field >= 0 && line->field >= line->type_field && line->type_matches && line->mount_point_length > 0;
}

/// Calls `found` with the mount point of every mount of `type` that `fd`
/// (mountinfo) lists, in order. -1 when reading failed, a mount point of
/// that type was longer than PATH_MAX (ENAMETOOLONG), or `found` returned
/// non-zero.
static int mountinfo_each(int fd, const char *type, int (*found)(const char *mount_point, void *context), void *context) {
    struct mountinfo_line line;
    char chunk[4096];
    mountinfo_line_start(&line);
    for (;;) {
        ssize_t count = read(fd, chunk, sizeof chunk);
        if (count < 0 && errno == EINTR) continue;
        if (count < 0) return -1;
        if (count == 0) break;
        for (ssize_t i = 0; i < count; i++) {
            if (chunk[i] != '\n') {
                mountinfo_line_take(&line, chunk[i], type);
                continue;
            }
            if (mountinfo_line_is(&line, type)) {
                if (line.mount_point_too_long) {
                    errno = ENAMETOOLONG;
                    return -1;
                }
                line.mount_point[line.mount_point_length] = '\0';
                if (found(line.mount_point, context) != 0) return -1;
            }
            mountinfo_line_start(&line);
        }
    }
    return 0;
}

/// What a pass of detach_other_containers_once needs in its callback.
struct detach_pass {
    const struct asfs_confinement *plan;
    int detached;
    const char *failed;  // the mount point that could not be unmounted
};

static int detach_if_other(const char *mount_point, void *context) {
    struct detach_pass *pass = context;
    if (is_inside(mount_point, pass->plan->mountpoint)) return 0;
    if (umount2(mount_point, MNT_DETACH) == 0) pass->detached++;
    else if (errno != EINVAL && errno != ENOENT) {
        pass->failed = mount_point;
        return -1;
    }
    return 0;
}

/// One pass over this namespace's mountinfo: detaches every appsandboxfs
/// mount but the container's own. Returns how many it detached; ends the
/// child when one could not be, or when a line could not be read whole
/// (a container's mount point longer than PATH_MAX: it could not be
/// unmounted by its path). No line is skipped, whatever its length.
static int detach_other_containers_once(const struct asfs_confinement *plan, int report_fd) {
    int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(report_fd, 1, "open", "/proc/self/mountinfo");
    struct detach_pass pass = {plan, 0, NULL};
    if (mountinfo_each(fd, "fuse.appsandboxfs", detach_if_other, &pass) != 0) {
        if (pass.failed) fail(report_fd, 1, "umount", pass.failed);
        fail(report_fd, 1, "read a container's line of", "/proc/self/mountinfo");
    }
    close(fd);
    return pass.detached;
}

/// The parent planned which containers to detach from the mount table as
/// it was before the clone; one mounted outside after that (before the
/// clone, or before the mounts here turned private) came along into this
/// namespace, where no new mount arrives any more. So the table is read
/// again here, with system calls only (no allocation in the child), until
/// a pass finds no other container (R2). The parent's reader is MountInfo;
/// this one only needs the mount point and the type.
static void detach_late_containers(const struct asfs_confinement *plan, int report_fd) {
    for (int pass = 0; pass < 16; pass++) {
        if (detach_other_containers_once(plan, report_fd) == 0) return;
    }
    fail(report_fd, 1, "detach the other containers' mounts", "/proc/self/mountinfo");
}

/// The mounts of R1 and R2, in an order where each step still finds what
/// it needs: other containers go first, hidden folders are in place before
/// the container is cloned (so a hidden folder inside it stays hidden), the
/// clones of the container, its tmp and the devices are taken before
/// everything turns read-only (a clone keeps its own attributes), and /proc
/// is mounted by init itself (a proc mount shows the PID namespace of the
/// process that mounts it).
static void make_world(const struct asfs_confinement *plan, int report_fd) {
    char path[PATH_MAX];
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) fail(report_fd, 1, "make mounts private", "/");

    // Unmounted, not just covered: a copy of another container's mount
    // here would keep its driver alive after it is unmounted outside.
    for (size_t i = 0; i < plan->detach_count; i++) {
        if (umount2(plan->detach[i], MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT)
            fail(report_fd, 1, "umount", plan->detach[i]);
    }
    detach_late_containers(plan, report_fd);
    for (size_t i = 0; i < plan->hide_count; i++) {
        if (mount("appsandboxfs-hidden", plan->hide[i], "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  "mode=0555") != 0 && errno != ENOENT)
            fail(report_fd, 1, "mount an empty folder on", plan->hide[i]);
    }

    int mount_root = open_container(plan, report_fd);
    int container = clone_tree_at(mount_root, AT_RECURSIVE);
    if (container < 0) fail(report_fd, 1, "open_tree", plan->mountpoint);
    // tmp: the folder of that mount, never a link nor another mount.
    struct open_how beneath = {O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                               RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS};
    const char *tmp_name = plan->tmp_folder ? plan->tmp_folder : "tmp";
    int tmp_folder = (int)syscall(SYS_openat2, mount_root, tmp_name, &beneath, sizeof beneath);
    if (tmp_folder < 0) fail(report_fd, 1, "open the container's tmp in", plan->mountpoint);
    int tmp = clone_tree_at(tmp_folder, AT_RECURSIVE);
    int var_tmp = clone_tree_at(tmp_folder, AT_RECURSIVE);
    if (tmp < 0 || var_tmp < 0) fail(report_fd, 1, "open_tree the tmp of", plan->mountpoint);
    close(tmp_folder);
    // Whatever the container was mounted with (`-o dev,suid` is accepted):
    // no device file nor set-user-ID program of the container works inside.
    for (int i = 0; i < 3; i++) {
        int tree = i == 0 ? container : i == 1 ? tmp : var_tmp;
        if (set_mount_attributes(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0) != 0)
            fail(report_fd, 1, "mount_setattr nosuid,nodev", plan->mountpoint);
    }
    int devices[device_count];
    for (int i = 0; i < device_count; i++) {
        path_in(path, sizeof path, "/dev", device_names[i]);
        devices[i] = clone_tree(path, 0);
        if (devices[i] < 0 && errno != ENOENT && errno != ENXIO) fail(report_fd, 1, "open_tree", path);
    }
    int terminals = clone_tree("/dev/pts", 0);
    if (terminals < 0 && errno != ENOENT && errno != EINVAL) fail(report_fd, 1, "open_tree", "/dev/pts");

    // Everything read-only, no set-user-ID and no device files, in one
    // walk of the mount tree.
    if (set_mount_attributes(AT_FDCWD, "/", AT_RECURSIVE,
                             MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0) != 0)
        fail(report_fd, 1, "mount_setattr read-only", "/");

    // A small /dev of our own.
    if (mount("appsandboxfs-dev", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k") != 0)
        fail(report_fd, 1, "mount tmpfs on", "/dev");
    for (int i = 0; i < device_count; i++) {
        if (devices[i] < 0) continue;
        path_in(path, sizeof path, "/dev", device_names[i]);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0) fail(report_fd, 1, "create", path);
        close(fd);
        if (attach_tree(devices[i], path) != 0) fail(report_fd, 1, "move_mount", path);
        close(devices[i]);
    }
    if (mkdir("/dev/pts", 0755) != 0 || mkdir("/dev/shm", 01777) != 0) fail(report_fd, 1, "mkdir", "/dev/pts");
    if (terminals >= 0 && attach_tree(terminals, "/dev/pts") != 0) fail(report_fd, 1, "move_mount", "/dev/pts");
    if (terminals >= 0) close(terminals);
    if (mount("appsandboxfs-shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0)
        fail(report_fd, 1, "mount tmpfs on", "/dev/shm");
    if (symlink("/proc/self/fd", "/dev/fd") != 0 || symlink("/proc/self/fd/0", "/dev/stdin") != 0
        || symlink("/proc/self/fd/1", "/dev/stdout") != 0 || symlink("/proc/self/fd/2", "/dev/stderr") != 0)
        fail(report_fd, 1, "symlink in", "/dev");
    if (set_mount_attributes(AT_FDCWD, "/dev", 0, MOUNT_ATTR_RDONLY, 0) != 0)
        fail(report_fd, 1, "mount_setattr read-only", "/dev");

    // The container, read-write again, and its tmp as /tmp and /var/tmp.
    if (syscall(SYS_move_mount, container, "", mount_root, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
        fail(report_fd, 1, "move_mount", plan->mountpoint);
    close(mount_root);
    if (attach_tree(tmp, "/tmp") != 0) fail(report_fd, 1, "move_mount onto", "/tmp");
    if (attach_tree(var_tmp, "/var/tmp") != 0 && errno != ENOENT) fail(report_fd, 1, "move_mount onto", "/var/tmp");
    close(container);
    close(tmp);
    close(var_tmp);
    asfs_confine_make_app_view(plan, report_fd);

    // /proc of the new PID namespace: no process outside can be seen, so
    // none can be reached through /proc/PID/root, cwd or fd.
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
        fail(report_fd, 1, "mount proc on", "/proc");
    static const char *const kernel_settings[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"};
    for (size_t i = 0; i < sizeof kernel_settings / sizeof kernel_settings[0]; i++)
        bind_read_only(report_fd, kernel_settings[i]);
}

/// R3: no capability left (bounding set included), no way to gain one
/// (no_new_privs, NOROOT), and the requested identity.
static void drop_privileges(const struct asfs_confinement *plan, int report_fd) {
    if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE
                  | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED, 0, 0, 0) != 0)
        fail(report_fd, 1, "prctl", "PR_SET_SECUREBITS");
    for (int capability = 0; capability <= 63; capability++) {
        if (prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0) {
            if (errno == EINVAL) break;  // past the kernel's last capability
            fail(report_fd, 1, "prctl", "PR_CAPBSET_DROP");
        }
    }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
        fail(report_fd, 1, "prctl", "PR_CAP_AMBIENT_CLEAR_ALL");
    if (plan->change_identity) {
        if (syscall(SYS_setgroups, 0, NULL) != 0) fail(report_fd, 1, "setgroups", NULL);
        if (syscall(SYS_setresgid, plan->gid, plan->gid, plan->gid) != 0) fail(report_fd, 1, "setresgid", NULL);
        if (syscall(SYS_setresuid, plan->uid, plan->uid, plan->uid) != 0) fail(report_fd, 1, "setresuid", NULL);
    }
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct none[2];
    memset(none, 0, sizeof none);
    if (syscall(SYS_capset, &header, none) != 0) fail(report_fd, 1, "capset", NULL);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail(report_fd, 1, "prctl", "PR_SET_NO_NEW_PRIVS");
    // TIOCSTI, set-ID bits and the calls around them: confine_filter.c.
    if (asfs_confine_install_filter() != 0) fail(report_fd, 1, "prctl", "PR_SET_SECCOMP");
}

/// The command's process: signals as the caller had them, the working
/// folder, then execve (PATH searched inside the world, as execvp would).
static void exec_command(const struct asfs_confinement *plan, const sigset_t *ignored, int report_fd) {
    for (int signal = 1; signal < NSIG; signal++) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = sigismember(ignored, signal) == 1 ? SIG_IGN : SIG_DFL;
        sigaction(signal, &action, NULL);  // EINVAL for SIGKILL, SIGSTOP and glibc's own
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    if (!plan->working_directory || chdir(plan->working_directory) != 0) {
        if (chdir(plan->mountpoint) != 0) fail(report_fd, 1, "chdir", plan->mountpoint);
    }
    if (strchr(plan->program, '/')) {
        execve(plan->program, plan->argv, plan->envp);
        fail(report_fd, errno == ENOENT ? 127 : 126, plan->program, NULL);
    }
    char candidate[PATH_MAX];
    int denied = 0;
    const char *folder = plan->search_path ? plan->search_path : "/usr/local/bin:/usr/bin:/bin";
    while (1) {
        const char *end = strchr(folder, ':');
        size_t length = end ? (size_t)(end - folder) : strlen(folder);
        if (length + strlen(plan->program) + 2 < sizeof candidate) {
            memcpy(candidate, length ? folder : ".", length ? length : 1);
            size_t used = length ? length : 1;
            candidate[used] = 0;
            path_in(candidate, sizeof candidate, candidate, plan->program);
            execve(candidate, plan->argv, plan->envp);
            if (errno == EACCES) denied = 1;
            else if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP && errno != ENAMETOOLONG)
                fail(report_fd, 126, plan->program, NULL);
        }
        if (!end) break;
        folder = end + 1;
    }
    errno = denied ? EACCES : ENOENT;
    fail(report_fd, denied ? 126 : 127, plan->program, NULL);
}

/// pid 1 of the new namespaces.
static void init_main(const struct asfs_confinement *plan, const sigset_t *ignored, int report_fd, int lifeline) {
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    close_inherited(report_fd < lifeline ? report_fd : lifeline, report_fd < lifeline ? lifeline : report_fd);

    make_world(plan, report_fd);
    drop_privileges(plan, report_fd);

    // When `run` dies (even by SIGKILL), so does init, and with it every
    // process of the namespace. Set after the identity change, which
    // clears it; the lifeline pipe closes the window before.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) fail(report_fd, 1, "prctl", "PR_SET_PDEATHSIG");
    struct pollfd parent = {lifeline, POLLIN, 0};
    if (poll(&parent, 1, 0) > 0) _exit(1);
    close(lifeline);

    pid_t command = raw_fork(0);
    if (command < 0) fail(report_fd, 1, "clone", "the command");
    if (command == 0) exec_command(plan, ignored, report_fd);
    close(report_fd);

    forward_target = command;
    install_forwarding(NULL, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    // Reap every orphan of the namespace; end with the command.
    while (1) {
        int status = 0;
        pid_t ended = waitpid(-1, &status, 0);
        if (ended < 0 && errno == EINTR) continue;
        if (ended < 0) _exit(1);
        if (ended != command) continue;
        _exit(WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status));
    }
}

// --------------------------------------------------------------- parent side

pid_t asfs_confine_start(const struct asfs_confinement *plan, struct asfs_confine_failure *failure) {
    memset(failure, 0, sizeof *failure);
    // The signals the caller ignores stay ignored for the command (nohup).
    sigset_t ignored;
    sigemptyset(&ignored);
    for (int signal = 1; signal < NSIG; signal++) {
        struct sigaction current;
        if (sigaction(signal, NULL, &current) == 0 && current.sa_handler == SIG_IGN) sigaddset(&ignored, signal);
    }
    // Forwarding starts before the clone: a signal sent to `run` while the
    // world is being made must not end `run` and leave the command behind.
    run_ignored = ignored;
    pending_signal = 0;
    forward_target = 0;
    install_forwarding(&ignored, run_handlers);
    int report[2], lifeline[2];
    if (pipe2(report, O_CLOEXEC) != 0) {
        failure->error = errno;
        failure->exit_status = 1;
        append(failure->step, 0, sizeof failure->step, "pipe");
        restore_forwarding();
        return -1;
    }
    if (pipe2(lifeline, O_CLOEXEC) != 0) {
        failure->error = errno;
        failure->exit_status = 1;
        append(failure->step, 0, sizeof failure->step, "pipe");
        close(report[0]);
        close(report[1]);
        restore_forwarding();
        return -1;
    }
    pid_t init = raw_fork(CLONE_NEWNS | CLONE_NEWPID);
    if (init == 0) {
        close(report[0]);
        close(lifeline[1]);
        init_main(plan, &ignored, report[1], lifeline[0]);
    }
    int clone_error = errno;
    if (init > 0) {
        forward_target = init;
        if (pending_signal) kill(init, pending_signal);
    }
    close(report[1]);
    close(lifeline[0]);
    if (init < 0) {
        close(report[0]);
        close(lifeline[1]);
        failure->error = clone_error;
        failure->exit_status = 1;
        append(failure->step, 0, sizeof failure->step, "clone a new mount and PID namespace");
        restore_forwarding();
        return -1;
    }
    struct asfs_confine_failure reported;
    size_t received = 0;
    while (received < sizeof reported) {
        ssize_t count = read(report[0], (char *)&reported + received, sizeof reported - received);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) break;
        received += (size_t)count;
    }
    close(report[0]);
    // init is past its lifeline check once the report pipe is closed.
    close(lifeline[1]);
    if (received == 0) return init;
    int status = 0;
    while (waitpid(init, &status, 0) < 0 && errno == EINTR) {}
    if (received == sizeof reported) {
        *failure = reported;
    } else {
        failure->error = EIO;
        failure->exit_status = 1;
        append(failure->step, 0, sizeof failure->step, "a short report from the confined world");
    }
    restore_forwarding();
    return -1;
}

int asfs_confine_wait(pid_t init) {
    int status = 0;
    pid_t ended;
    do {
        ended = waitpid(init, &status, 0);
    } while (ended < 0 && errno == EINTR);
    restore_forwarding();
    if (ended < 0) return 1;
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}
