// R3: what the confined world's processes may not ask of the kernel even
// without any capability, enforced by a seccomp filter that every child
// inherits and none can remove (docs/confinement.md, "The system call
// filter"). Each refusal is a hole found in the adversarial pass:
//
// - TIOCSTI (and TIOCLINUX): the command shares the caller's terminal,
//   often a root shell's. TIOCSTI types into that terminal's input, which
//   the shell reads as a command once `run` ends: unconfined, as root. The
//   kernel refuses it without CAP_SYS_ADMIN only where
//   dev.tty.legacy_tiocsti is 0. A filter, rather than a session without the
//   terminal, keeps Ctrl-C, Ctrl-Z and job control as for any command.
// - Set-user-ID and set-group-ID bits (chmod, open/creat/mknod modes): a
//   command running as root (no --user) owns root's files in the container,
//   and the driver stores what mode it asks for. A set-user-ID root copy of
//   a shell in the backing directory runs as root for any local user who
//   can reach it there. Asking for those bits fails with EPERM.
// - Calls that carry a mode the filter cannot read: openat2 (a struct) and
//   io_uring (its own open) fail with ENOSYS; programs fall back to openat.
// - The kernel keyring (keyctl, add_key, request_key): ENOSYS. `run`'s
//   session keyring, root's, is inherited and stays possessed across the
//   identity change: even with --user 501 the command could read the keys
//   root's login session holds (network file system credentials and the
//   like) and add its own to root's user keyring.
// - New namespaces (unshare, clone with a CLONE_NEW* flag, setns): EPERM.
//   Without any capability, a process may still make a user namespace and,
//   inside it, mount namespaces of its own where it is root; R3 wants the
//   command without the privilege to change mounts or namespaces at all.
//   clone3 passes its flags in a struct the filter cannot read: ENOSYS, and
//   the C library falls back to clone, whose flags it can.
// - Every other ABI (i386 through int 0x80, x32): refused with ENOSYS, or
//   the same call through another system call number would pass.
#define _GNU_SOURCE
#include "confine_filter.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#define FOREIGN_CALL_BIT 0x40000000u /* x32 */
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#define FOREIGN_CALL_BIT 0u
#else
#error "confine_filter.c: this architecture's audit number is missing"
#endif

#define LOAD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, field))
#define RETURN(action) BPF_STMT(BPF_RET | BPF_K, (action))
#define ALLOW RETURN(SECCOMP_RET_ALLOW)
#define FAIL(error) RETURN(SECCOMP_RET_ERRNO | (error))
// The lower 32 bits of an argument (little-endian): what the kernel reads of
// an int or mode_t argument; the upper half cannot hide a value.
#define LOAD_ARGUMENT(index) LOAD(args[index])

/// The call `number` fails with `error`.
#define REFUSE(number, error) \
    LOAD(nr), BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (number), 0, 1), FAIL(error)
/// The call `number` fails with EPERM when argument `index` has any of `bits`.
#define REFUSE_BITS(number, index, bits) \
    LOAD(nr), BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (number), 0, 4), LOAD_ARGUMENT(index), \
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, (bits), 0, 1), FAIL(EPERM), ALLOW
/// ioctl fails with EPERM for the requests `first` and `second`.
#define REFUSE_IOCTLS(first, second) \
    LOAD(nr), BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 5), LOAD_ARGUMENT(1), \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (first), 2, 0), BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (second), 1, 0), \
    ALLOW, FAIL(EPERM)

#define SET_ID (S_ISUID | S_ISGID)
// Every namespace flag clone and unshare take. CLONE_NEWTIME (0x80) is left
// out of clone's: there the low byte is the exit signal, and clone cannot
// make a time namespace anyway (unshare can: its own list has it).
#define NEW_NAMESPACES (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP)
#define NEW_TIME_NAMESPACE 0x00000080
#ifndef __NR_clone3
#define __NR_clone3 435
#endif

int asfs_confine_install_filter(void) {
    struct sock_filter filter[] = {
        LOAD(arch), BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0), FAIL(ENOSYS),
        LOAD(nr), BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, FOREIGN_CALL_BIT, 0, 1), FAIL(ENOSYS),
        REFUSE_IOCTLS(TIOCSTI, TIOCLINUX),
        REFUSE(__NR_keyctl, ENOSYS),
        REFUSE(__NR_add_key, ENOSYS),
        REFUSE(__NR_request_key, ENOSYS),
        REFUSE(__NR_openat2, ENOSYS),
        REFUSE(__NR_io_uring_setup, ENOSYS),
        REFUSE(__NR_io_uring_enter, ENOSYS),
        REFUSE(__NR_io_uring_register, ENOSYS),
        REFUSE(__NR_clone3, ENOSYS),
        REFUSE(__NR_setns, EPERM),
        REFUSE_BITS(__NR_unshare, 0, NEW_NAMESPACES | NEW_TIME_NAMESPACE),
        REFUSE_BITS(__NR_clone, 0, NEW_NAMESPACES),
        REFUSE_BITS(__NR_fchmod, 1, SET_ID),
        REFUSE_BITS(__NR_fchmodat, 2, SET_ID),
#ifdef __NR_fchmodat2
        REFUSE_BITS(__NR_fchmodat2, 2, SET_ID),
#else
        REFUSE_BITS(452, 2, SET_ID),
#endif
        REFUSE_BITS(__NR_openat, 3, SET_ID),
        REFUSE_BITS(__NR_mknodat, 2, SET_ID),
#ifdef __NR_chmod
        REFUSE_BITS(__NR_chmod, 1, SET_ID),
        REFUSE_BITS(__NR_creat, 1, SET_ID),
        REFUSE_BITS(__NR_open, 2, SET_ID),
        REFUSE_BITS(__NR_mknod, 1, SET_ID),
#endif
        ALLOW,
    };
    struct sock_fprog program = {(unsigned short)(sizeof filter / sizeof filter[0]), filter};
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0);
}
