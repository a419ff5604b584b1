// A minimal io_uring for commands to a device (IORING_OP_URING_CMD with
// 128-byte submission entries), by raw system calls: liburing is not
// installed here and three calls are all that is needed. Knows nothing of
// FUSE: the caller gives the command's 80-byte area.
#ifndef APPSANDBOXFS_CLINUX_URING_H
#define APPSANDBOXFS_CLINUX_URING_H

#include <stddef.h>
#include <stdint.h>

struct asfs_ring;

/// A ring of `entries` submission entries (128 bytes each) and twice as
/// many completion entries; NULL with *error (a positive errno: ENOSYS or
/// EPERM where a seccomp policy or sysctl forbids io_uring).
struct asfs_ring *asfs_ring_create(unsigned entries, int *error);

/// Unmaps the ring and closes its descriptor (the kernel then cancels the
/// commands still pending).
void asfs_ring_destroy(struct asfs_ring *ring);

/// Queues and submits one IORING_OP_URING_CMD on `fd`: `cmd_op`, with
/// `cmd` (at most 80 bytes) as the command area, `addr`/`len` as the entry's
/// addr and len fields. Safe from any thread (a lock serialises the
/// submission queue). 0, or a negative errno.
int asfs_ring_submit_cmd(struct asfs_ring *ring, int fd, uint32_t cmd_op, uint64_t user_data,
                         const void *cmd, size_t cmd_size, uint64_t addr, uint32_t len);

/// Queues and submits a one-shot poll for POLLIN on `fd` (an eventfd that
/// asks the ring's thread to stop).
int asfs_ring_submit_poll(struct asfs_ring *ring, int fd, uint64_t user_data);

/// Takes the next completion, waiting for one if none is there: 0 with
/// its user_data and result, or a negative errno (-EINTR).
int asfs_ring_wait(struct asfs_ring *ring, uint64_t *user_data, int32_t *result);

/// The possible CPUs (/sys/devices/system/cpu/possible: the highest
/// number + 1), which the kernel counts for FUSE's ring queues; 0 if unknown.
int asfs_possible_cpus(void);

/// Pins the calling thread to `cpu` (best effort: -errno on failure).
int asfs_pin_thread(int cpu);

/// eventfd(0, EFD_CLOEXEC), and a write of 1 to it.
int asfs_eventfd(void);
int asfs_eventfd_signal(int fd);

#endif
