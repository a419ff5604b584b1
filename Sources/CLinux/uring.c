#define _GNU_SOURCE
#include "uring.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/io_uring.h>

struct asfs_ring {
    int fd;
    pthread_mutex_t submit_lock;
    // Submission queue (shared with the kernel).
    void *sq_map;
    size_t sq_map_size;
    unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
    unsigned sq_entries;
    struct io_uring_sqe *sqes; // 128 bytes each: index with sqe_at()
    size_t sqes_size;
    // Completion queue (shared; may be the same mapping as the SQ).
    void *cq_map;
    size_t cq_map_size;
    unsigned *cq_head, *cq_tail, *cq_mask;
    struct io_uring_cqe *cqes;
};

static struct io_uring_sqe *sqe_at(struct asfs_ring *ring, unsigned index) {
    return (struct io_uring_sqe *)((char *)ring->sqes + (size_t)index * 128);
}

struct asfs_ring *asfs_ring_create(unsigned entries, int *error) {
    struct io_uring_params params;
    memset(&params, 0, sizeof params);
    params.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQSIZE;
    params.cq_entries = entries * 2;
    int fd = (int)syscall(__NR_io_uring_setup, entries, &params);
    if (fd < 0) { *error = errno; return NULL; }
    struct asfs_ring *ring = calloc(1, sizeof *ring);
    if (!ring) { close(fd); *error = ENOMEM; return NULL; }
    ring->fd = fd;
    pthread_mutex_init(&ring->submit_lock, NULL);

    ring->sq_map_size = params.sq_off.array + params.sq_entries * sizeof(unsigned);
    ring->cq_map_size = params.cq_off.cqes + params.cq_entries * sizeof(struct io_uring_cqe);
    int single = (params.features & IORING_FEAT_SINGLE_MMAP) != 0;
    if (single && ring->cq_map_size > ring->sq_map_size) ring->sq_map_size = ring->cq_map_size;
    ring->sq_map = mmap(NULL, ring->sq_map_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                        IORING_OFF_SQ_RING);
    if (ring->sq_map == MAP_FAILED) goto fail;
    if (single) {
        ring->cq_map = ring->sq_map;
    } else {
        ring->cq_map = mmap(NULL, ring->cq_map_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                            IORING_OFF_CQ_RING);
        if (ring->cq_map == MAP_FAILED) { ring->cq_map = NULL; goto fail; }
    }
    ring->sqes_size = (size_t)params.sq_entries * 128;
    ring->sqes = mmap(NULL, ring->sqes_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
    if (ring->sqes == MAP_FAILED) { ring->sqes = NULL; goto fail; }

    char *sq = ring->sq_map, *cq = ring->cq_map;
    ring->sq_head = (unsigned *)(sq + params.sq_off.head);
    ring->sq_tail = (unsigned *)(sq + params.sq_off.tail);
    ring->sq_mask = (unsigned *)(sq + params.sq_off.ring_mask);
    ring->sq_array = (unsigned *)(sq + params.sq_off.array);
    ring->sq_entries = params.sq_entries;
    ring->cq_head = (unsigned *)(cq + params.cq_off.head);
    ring->cq_tail = (unsigned *)(cq + params.cq_off.tail);
    ring->cq_mask = (unsigned *)(cq + params.cq_off.ring_mask);
    ring->cqes = (struct io_uring_cqe *)(cq + params.cq_off.cqes);
    return ring;

fail:
    *error = errno;
    if (ring->sq_map && ring->sq_map != MAP_FAILED) munmap(ring->sq_map, ring->sq_map_size);
    if (ring->cq_map && ring->cq_map != ring->sq_map) munmap(ring->cq_map, ring->cq_map_size);
    close(fd);
    pthread_mutex_destroy(&ring->submit_lock);
    free(ring);
    return NULL;
}

void asfs_ring_destroy(struct asfs_ring *ring) {
    if (!ring) return;
    munmap(ring->sqes, ring->sqes_size);
    if (ring->cq_map != ring->sq_map) munmap(ring->cq_map, ring->cq_map_size);
    munmap(ring->sq_map, ring->sq_map_size);
    close(ring->fd);
    pthread_mutex_destroy(&ring->submit_lock);
    free(ring);
}

/// Fills a free entry with `fill` under the lock and submits it.
static int submit(struct asfs_ring *ring, void (*fill)(struct io_uring_sqe *, const void *), const void *context) {
    pthread_mutex_lock(&ring->submit_lock);
    unsigned tail = *ring->sq_tail;
    unsigned head = __atomic_load_n(ring->sq_head, __ATOMIC_ACQUIRE);
    if (tail - head >= ring->sq_entries) {
        pthread_mutex_unlock(&ring->submit_lock);
        return -EBUSY;
    }
    unsigned index = tail & *ring->sq_mask;
    struct io_uring_sqe *sqe = sqe_at(ring, index);
    memset(sqe, 0, 128);
    fill(sqe, context);
    ring->sq_array[index] = index;
    __atomic_store_n(ring->sq_tail, tail + 1, __ATOMIC_RELEASE);
    int result;
    do {
        result = (int)syscall(__NR_io_uring_enter, ring->fd, 1, 0, 0, NULL, 0);
    } while (result < 0 && errno == EINTR);
    result = result < 0 ? -errno : 0;
    pthread_mutex_unlock(&ring->submit_lock);
    return result;
}

struct cmd_context {
    int fd;
    uint32_t cmd_op;
    uint64_t user_data, addr;
    uint32_t len;
    const void *cmd;
    size_t cmd_size;
};

static void fill_cmd(struct io_uring_sqe *sqe, const void *context) {
    const struct cmd_context *c = context;
    sqe->opcode = IORING_OP_URING_CMD;
    sqe->fd = c->fd;
    sqe->cmd_op = c->cmd_op;
    sqe->user_data = c->user_data;
    sqe->addr = c->addr;
    sqe->len = c->len;
    memcpy(sqe->cmd, c->cmd, c->cmd_size);
}

int asfs_ring_submit_cmd(struct asfs_ring *ring, int fd, uint32_t cmd_op, uint64_t user_data,
                         const void *cmd, size_t cmd_size, uint64_t addr, uint32_t len) {
    if (cmd_size > 80) return -EINVAL;
    struct cmd_context context = { fd, cmd_op, user_data, addr, len, cmd, cmd_size };
    return submit(ring, fill_cmd, &context);
}

struct poll_context { int fd; uint64_t user_data; };

static void fill_poll(struct io_uring_sqe *sqe, const void *context) {
    const struct poll_context *c = context;
    sqe->opcode = IORING_OP_POLL_ADD;
    sqe->fd = c->fd;
    sqe->poll32_events = POLLIN;
    sqe->user_data = c->user_data;
}

int asfs_ring_submit_poll(struct asfs_ring *ring, int fd, uint64_t user_data) {
    struct poll_context context = { fd, user_data };
    return submit(ring, fill_poll, &context);
}

int asfs_ring_wait(struct asfs_ring *ring, uint64_t *user_data, int32_t *result) {
    for (;;) {
        unsigned head = *ring->cq_head;
        if (head != __atomic_load_n(ring->cq_tail, __ATOMIC_ACQUIRE)) {
            const struct io_uring_cqe *cqe = &ring->cqes[head & *ring->cq_mask];
            *user_data = cqe->user_data;
            *result = cqe->res;
            __atomic_store_n(ring->cq_head, head + 1, __ATOMIC_RELEASE);
            return 0;
        }
        if (syscall(__NR_io_uring_enter, ring->fd, 0, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0) return -errno;
    }
}

int asfs_possible_cpus(void) {
    FILE *file = fopen("/sys/devices/system/cpu/possible", "re");
    if (!file) return 0;
    char text[256];
    int highest = -1;
    if (fgets(text, sizeof text, file)) {
        // "0-3" or "0,2-5": the number after the last '-' or ','.
        char *last = text;
        for (char *p = text; *p; p++) if (*p == '-' || *p == ',') last = p + 1;
        highest = atoi(last);
    }
    fclose(file);
    return highest + 1;
}

int asfs_pin_thread(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set) == 0 ? 0 : -errno;
}

int asfs_eventfd(void) { return eventfd(0, EFD_CLOEXEC); }

int asfs_eventfd_signal(int fd) {
    uint64_t one = 1;
    return write(fd, &one, sizeof one) == sizeof one ? 0 : -errno;
}
