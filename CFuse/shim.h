// libfuse3's low-level API for Swift. FUSE_USE_VERSION 312 makes
// fuse_session_loop_mt a real function (with 31 or 35 it is a macro Swift
// cannot call). The inline helpers rebuild what libfuse offers only as macros
// or bit-fields.
#ifndef APPSANDBOXFS_CFUSE_SHIM_H
#define APPSANDBOXFS_CFUSE_SHIM_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <string.h>
#include <stddef.h>

/// FUSE_ARGS_INIT
static inline struct fuse_args cfuse_args(int argc, char **argv) {
    struct fuse_args args = { argc, argv, 0 };
    return args;
}

/// A one-buffer FUSE_BUFVEC_INIT that reads `size` bytes at `offset` of `fd`.
static inline struct fuse_bufvec cfuse_bufvec_fd(int fd, size_t size, off_t offset) {
    struct fuse_bufvec vec;
    memset(&vec, 0, sizeof vec);
    vec.count = 1;
    vec.buf[0].size = size;
    vec.buf[0].flags = (enum fuse_buf_flags)(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
    vec.buf[0].fd = fd;
    vec.buf[0].pos = offset;
    return vec;
}

// Bit-fields of struct fuse_file_info.
static inline void cfuse_fi_set_direct_io(struct fuse_file_info *fi, int on) { fi->direct_io = on ? 1 : 0; }
static inline void cfuse_fi_set_keep_cache(struct fuse_file_info *fi, int on) { fi->keep_cache = on ? 1 : 0; }
static inline void cfuse_fi_set_cache_readdir(struct fuse_file_info *fi, int on) { fi->cache_readdir = on ? 1 : 0; }
static inline void cfuse_fi_set_noflush(struct fuse_file_info *fi, int on) { fi->noflush = on ? 1 : 0; }
/// A WRITE of the page cache's dirty pages (FUSE_WRITE_CACHE), not of a caller's write(2).
static inline int cfuse_fi_writepage(const struct fuse_file_info *fi) { return fi->writepage; }

// The `to_set` bits of setattr, as constants Swift can see.
static const int cfuse_SET_ATTR_MODE = FUSE_SET_ATTR_MODE;
static const int cfuse_SET_ATTR_UID = FUSE_SET_ATTR_UID;
static const int cfuse_SET_ATTR_GID = FUSE_SET_ATTR_GID;
static const int cfuse_SET_ATTR_SIZE = FUSE_SET_ATTR_SIZE;
static const int cfuse_SET_ATTR_ATIME = FUSE_SET_ATTR_ATIME;
static const int cfuse_SET_ATTR_MTIME = FUSE_SET_ATTR_MTIME;
static const int cfuse_SET_ATTR_ATIME_NOW = FUSE_SET_ATTR_ATIME_NOW;
static const int cfuse_SET_ATTR_MTIME_NOW = FUSE_SET_ATTR_MTIME_NOW;
static const int cfuse_SET_ATTR_CTIME = FUSE_SET_ATTR_CTIME;

// FUSE passthrough (kernel 6.9+). libfuse 3.14 and this machine's
// <linux/fuse.h> predate it, so the wire structures and ioctls it needs are
// spelled out here, as the kernel's include/uapi/linux/fuse.h has them.
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#define CFUSE_INIT_EXT (1u << 30)
#define CFUSE_WRITEBACK_CACHE (1u << 16)
#define CFUSE_HANDLE_KILLPRIV_V2 (1u << 28)
/// FUSE_PASSTHROUGH is bit 37 of the 64-bit flags: bit 5 of flags2.
#define CFUSE_PASSTHROUGH_FLAGS2 (1u << 5)
/// FUSE_DIRECT_IO_ALLOW_MMAP is bit 36: bit 4 of flags2.
#define CFUSE_DIRECT_IO_ALLOW_MMAP_FLAGS2 (1u << 4)
/// FUSE_OVER_IO_URING is bit 41: bit 9 of flags2.
#define CFUSE_OVER_IO_URING_FLAGS2 (1u << 9)
#define CFUSE_FOPEN_PASSTHROUGH (1u << 7)
#define CFUSE_FOPEN_DIRECT_IO (1u << 0)
#define CFUSE_FOPEN_NOFLUSH (1u << 5)
#define CFUSE_OPCODE_INIT 26u

struct cfuse_in_header { uint32_t len, opcode; uint64_t unique, nodeid; uint32_t uid, gid, pid; uint16_t total_extlen, padding; };
struct cfuse_init_in { uint32_t major, minor, max_readahead, flags, flags2, unused[11]; };
struct cfuse_out_header { uint32_t len; int32_t error; uint64_t unique; };
struct cfuse_init_out {
    uint32_t major, minor, max_readahead, flags;
    uint16_t max_background, congestion_threshold;
    uint32_t max_write, time_gran;
    uint16_t max_pages, map_alignment;
    uint32_t flags2, max_stack_depth;
    uint16_t request_timeout, unused[11];
};
struct cfuse_attr {
    uint64_t ino, size, blocks, atime, mtime, ctime;
    uint32_t atimensec, mtimensec, ctimensec, mode, nlink, uid, gid, rdev, blksize, flags;
};
struct cfuse_entry_out {
    uint64_t nodeid, generation, entry_valid, attr_valid;
    uint32_t entry_valid_nsec, attr_valid_nsec;
    struct cfuse_attr attr;
};
struct cfuse_open_out { uint64_t fh; uint32_t open_flags; int32_t backing_id; };
struct cfuse_backing_map { int32_t fd; uint32_t flags; uint64_t padding; };

/// FUSE_DEV_IOC_BACKING_OPEN: the backing id (> 0), or -1 with errno.
static inline int cfuse_backing_open(int device, int fd) {
    struct cfuse_backing_map map = { fd, 0, 0 };
    return ioctl(device, _IOW(229, 1, struct cfuse_backing_map), &map);
}

/// FUSE_DEV_IOC_BACKING_CLOSE.
static inline int cfuse_backing_close(int device, int32_t backing_id) {
    uint32_t id = (uint32_t)backing_id;
    return ioctl(device, _IOW(229, 2, uint32_t), &id);
}

/// If `buffer` holds an INIT request: 1, with its unique and what the
/// kernel offers (bit 0 passthrough, bit 1 FUSE over io_uring, bit 2 shared
/// mappings of direct I/O files).
static inline int cfuse_parse_init(const void *buffer, ssize_t length, uint64_t *unique, int *offers) {
    if (length < (ssize_t)(sizeof(struct cfuse_in_header) + offsetof(struct cfuse_init_in, unused))) return 0;
    struct cfuse_in_header header;
    memcpy(&header, buffer, sizeof header);
    if (header.opcode != CFUSE_OPCODE_INIT) return 0;
    struct cfuse_init_in init;
    memset(&init, 0, sizeof init);
    memcpy(&init, (const char *)buffer + sizeof header, offsetof(struct cfuse_init_in, unused));
    *unique = header.unique;
    *offers = 0;
    if (init.flags & CFUSE_INIT_EXT) {
        if (init.flags2 & CFUSE_PASSTHROUGH_FLAGS2) *offers |= 1;
        if (init.flags2 & CFUSE_OVER_IO_URING_FLAGS2) *offers |= 2;
        if (init.flags2 & CFUSE_DIRECT_IO_ALLOW_MMAP_FLAGS2) *offers |= 4;
    }
    return 1;
}

/// The unique of a reply being sent, or 0.
static inline uint64_t cfuse_reply_unique(const struct iovec *iov, int count) {
    if (count < 1 || iov[0].iov_len < sizeof(struct cfuse_out_header)) return 0;
    struct cfuse_out_header header;
    memcpy(&header, iov[0].iov_base, sizeof header);
    return header.unique;
}

#define CFUSE_INIT_REPLY_SIZE 80
_Static_assert(CFUSE_INIT_REPLY_SIZE == sizeof(struct cfuse_out_header) + sizeof(struct cfuse_init_out), "INIT reply");

/// Rewrites libfuse's INIT reply (`iov`) into `buffer` (CFUSE_INIT_REPLY_SIZE
/// bytes) to ask for what libfuse 3.14 cannot: with `passthrough`, backing
/// files one level deep (not with the writeback cache, which the kernel will
/// not combine with it), and with `killPrivV2` clearing set-ID bits and
/// capabilities in the server (FUSE_HANDLE_KILLPRIV_V2, which spares the
/// check before every passthrough write); with `uring`, FUSE over io_uring;
/// with `directMmap`, shared mappings of direct I/O handles
/// (FUSE_DIRECT_IO_ALLOW_MMAP: the kernel keeps mapped pages coherent). Returns what
/// the rewritten reply asks for (bit 0 passthrough, 1 killpriv_v2, 2
/// io_uring, 3 direct I/O mmap), or -1 when libfuse's reply is to go as it is
/// (an error, an unexpected size, nothing to ask). Nothing is written: the
/// caller publishes the grants before the kernel can see the reply, since the
/// kernel sends the first opens the moment it has it.
static inline int cfuse_amend_init_reply(const struct iovec *iov, int count, int passthrough, int killPrivV2,
                                         int uring, int directMmap, void *buffer) {
    size_t total = 0;
    for (int i = 0; i < count; i++) total += iov[i].iov_len;
    if (total != CFUSE_INIT_REPLY_SIZE) return -1;
    size_t at = 0;
    for (int i = 0; i < count; i++) { memcpy((char *)buffer + at, iov[i].iov_base, iov[i].iov_len); at += iov[i].iov_len; }
    struct cfuse_out_header header;
    struct cfuse_init_out init;
    memcpy(&header, buffer, sizeof header);
    memcpy(&init, (char *)buffer + sizeof header, sizeof init);
    if (header.error != 0) return -1;
    if (init.flags & CFUSE_WRITEBACK_CACHE) passthrough = 0;
    if (!passthrough && !uring && !directMmap) return -1;
    init.flags |= CFUSE_INIT_EXT;
    int grant = 0;
    if (passthrough) {
        init.flags2 |= CFUSE_PASSTHROUGH_FLAGS2;
        init.max_stack_depth = 1;
        grant |= 1;
        if (killPrivV2) { init.flags |= CFUSE_HANDLE_KILLPRIV_V2; grant |= 2; }
    }
    if (uring) { init.flags2 |= CFUSE_OVER_IO_URING_FLAGS2; grant |= 4; }
    if (directMmap) { init.flags2 |= CFUSE_DIRECT_IO_ALLOW_MMAP_FLAGS2; grant |= 8; }
    memcpy((char *)buffer + sizeof header, &init, sizeof init);
    return grant;
}

// FUSE over io_uring (kernel 6.14+), as include/uapi/linux/fuse.h has it:
// each ring entry is a header area (the in/out header, the opcode's own
// header, and the entry's bookkeeping) and a payload buffer; the 80-byte
// command area of a 128-byte submission entry names the queue and, for a
// commit, the request answered.
#define CFUSE_IO_URING_CMD_REGISTER 1u
#define CFUSE_IO_URING_CMD_COMMIT_AND_FETCH 2u
struct cfuse_uring_ent_in_out { uint64_t flags, commit_id; uint32_t payload_sz, padding; uint64_t reserved; };
struct cfuse_uring_req_header { char in_out[128]; char op_in[128]; struct cfuse_uring_ent_in_out ring_ent_in_out; };
struct cfuse_uring_cmd_req { uint64_t flags, commit_id; uint16_t qid; uint8_t padding[6]; };

/// Lays out the request a ring entry holds as read(2) on /dev/fuse would
/// give it (in header, opcode header, payload), for
/// fuse_session_process_buf: its length, or 0 if it is malformed or longer
/// than `capacity`. `*commit_id`: what the commit must name.
static inline size_t cfuse_ring_request(const struct cfuse_uring_req_header *header, const void *payload,
                                        void *buffer, size_t capacity, uint64_t *commit_id) {
    struct cfuse_in_header in;
    memcpy(&in, header->in_out, sizeof in);
    size_t payload_size = header->ring_ent_in_out.payload_sz;
    *commit_id = header->ring_ent_in_out.commit_id;
    // The kernel counts every argument in `len`; the first one, the
    // opcode's header, went to op_in, the rest to the payload.
    if (in.len < sizeof in + payload_size || in.len > capacity) return 0;
    size_t op_size = in.len - sizeof in - payload_size;
    if (op_size > sizeof header->op_in) return 0;
    memcpy(buffer, &in, sizeof in);
    memcpy((char *)buffer + sizeof in, header->op_in, op_size);
    memcpy((char *)buffer + sizeof in + op_size, payload, payload_size);
    return in.len;
}

/// Puts a reply libfuse gathered in `iov` (out header first) into a ring
/// entry: the header into in_out, the rest into the payload. Its total
/// length, or -1 when it does not fit (the entry then answers EIO).
static inline ssize_t cfuse_ring_reply(struct cfuse_uring_req_header *header, void *payload, size_t capacity,
                                       const struct iovec *iov, int count) {
    struct cfuse_out_header out;
    if (count < 1 || iov[0].iov_len < sizeof out) return -1;
    memcpy(&out, iov[0].iov_base, sizeof out);
    size_t at = 0, total = iov[0].iov_len;
    int fits = 1;
    const char *rest = (const char *)iov[0].iov_base + sizeof out;
    size_t rest_len = iov[0].iov_len - sizeof out;
    for (int i = 0; i < count && fits; i++) {
        const char *base = i == 0 ? rest : (const char *)iov[i].iov_base;
        size_t length = i == 0 ? rest_len : iov[i].iov_len;
        if (i > 0) total += length;
        if (at + length > capacity) { fits = 0; break; }
        memcpy((char *)payload + at, base, length);
        at += length;
    }
    if (!fits) { out.error = -5; at = 0; }
    out.len = (uint32_t)(sizeof out + at);
    memcpy(header->in_out, &out, sizeof out);
    header->ring_ent_in_out.payload_sz = (uint32_t)at;
    return fits ? (ssize_t)total : -1;
}

static inline uint64_t cfuse_timeout_seconds(double t) {
    if (t <= 0) return 0;
    if (t >= 18446744073709551615.0) return UINT64_MAX;
    return (uint64_t)t;
}

static inline uint32_t cfuse_timeout_nanoseconds(double t) {
    if (t <= 0 || t >= 18446744073709551615.0) return 0;
    double fraction = (t - (double)(uint64_t)t) * 1000000000.0;
    return fraction >= 999999999.0 ? 999999999u : (uint32_t)fraction;
}

static inline struct cfuse_open_out cfuse_open_out_make(uint64_t fh, uint32_t open_flags, int32_t backing_id) {
    struct cfuse_open_out out;
    memset(&out, 0, sizeof out);
    out.fh = fh;
    // The kernel refuses (EIO) any other flag with passthrough: KEEP_CACHE
    // in particular, as the file's data never enters the FUSE page cache.
    out.open_flags = (open_flags & (CFUSE_FOPEN_DIRECT_IO | CFUSE_FOPEN_NOFLUSH)) | CFUSE_FOPEN_PASSTHROUGH;
    out.backing_id = backing_id;
    return out;
}

/// Answers open with a file the kernel reads and writes through `backing_id`.
static inline int cfuse_reply_open_passthrough(fuse_req_t req, uint64_t fh, uint32_t open_flags, int32_t backing_id) {
    struct cfuse_open_out out = cfuse_open_out_make(fh, open_flags, backing_id);
    return fuse_reply_buf(req, (const char *)&out, sizeof out);
}

/// Answers create the same way, with the entry libfuse's fuse_reply_create would send.
static inline int cfuse_reply_create_passthrough(fuse_req_t req, const struct fuse_entry_param *e, uint64_t fh,
                                                 uint32_t open_flags, int32_t backing_id) {
    struct { struct cfuse_entry_out entry; struct cfuse_open_out open; } out;
    memset(&out, 0, sizeof out);
    out.entry.nodeid = e->ino;
    out.entry.generation = e->generation;
    out.entry.entry_valid = cfuse_timeout_seconds(e->entry_timeout);
    out.entry.entry_valid_nsec = cfuse_timeout_nanoseconds(e->entry_timeout);
    out.entry.attr_valid = cfuse_timeout_seconds(e->attr_timeout);
    out.entry.attr_valid_nsec = cfuse_timeout_nanoseconds(e->attr_timeout);
    const struct stat *s = &e->attr;
    out.entry.attr.ino = s->st_ino;
    out.entry.attr.mode = s->st_mode;
    out.entry.attr.nlink = (uint32_t)s->st_nlink;
    out.entry.attr.uid = s->st_uid;
    out.entry.attr.gid = s->st_gid;
    out.entry.attr.rdev = (uint32_t)s->st_rdev;
    out.entry.attr.size = (uint64_t)s->st_size;
    out.entry.attr.blksize = (uint32_t)s->st_blksize;
    out.entry.attr.blocks = (uint64_t)s->st_blocks;
    out.entry.attr.atime = (uint64_t)s->st_atim.tv_sec;
    out.entry.attr.mtime = (uint64_t)s->st_mtim.tv_sec;
    out.entry.attr.ctime = (uint64_t)s->st_ctim.tv_sec;
    out.entry.attr.atimensec = (uint32_t)s->st_atim.tv_nsec;
    out.entry.attr.mtimensec = (uint32_t)s->st_mtim.tv_nsec;
    out.entry.attr.ctimensec = (uint32_t)s->st_ctim.tv_nsec;
    out.open = cfuse_open_out_make(fh, open_flags, backing_id);
    return fuse_reply_buf(req, (const char *)&out, sizeof out);
}

_Static_assert(sizeof(struct cfuse_in_header) == 40, "fuse_in_header");
_Static_assert(sizeof(struct cfuse_init_out) == 64, "fuse_init_out");
_Static_assert(offsetof(struct cfuse_init_out, max_stack_depth) == 36, "max_stack_depth");
_Static_assert(sizeof(struct cfuse_attr) == 88, "fuse_attr");
_Static_assert(sizeof(struct cfuse_entry_out) == 128, "fuse_entry_out");
_Static_assert(sizeof(struct cfuse_open_out) == 16, "fuse_open_out");
_Static_assert(sizeof(struct cfuse_backing_map) == 16, "fuse_backing_map");
_Static_assert(sizeof(struct cfuse_uring_req_header) == 288, "fuse_uring_req_header");
_Static_assert(sizeof(struct cfuse_uring_cmd_req) == 24, "fuse_uring_cmd_req");

#endif
