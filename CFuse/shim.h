// libfuse3's low-level API for Swift. FUSE_USE_VERSION 312 makes
// fuse_session_loop_mt a real function (with 31 or 35 it is a macro Swift
// cannot call). The inline helpers rebuild what libfuse offers only as macros
// or bit-fields.
#ifndef APPSANDBOXFS_CFUSE_SHIM_H
#define APPSANDBOXFS_CFUSE_SHIM_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <string.h>

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

/// A one-buffer FUSE_BUFVEC_INIT over memory.
static inline struct fuse_bufvec cfuse_bufvec_mem(const void *mem, size_t size) {
    struct fuse_bufvec vec;
    memset(&vec, 0, sizeof vec);
    vec.count = 1;
    vec.buf[0].size = size;
    vec.buf[0].mem = (void *)mem;
    return vec;
}

/// Copies a write_buf request's data into `fd` at `offset`.
static inline ssize_t cfuse_write_bufvec_to_fd(struct fuse_bufvec *in, int fd, off_t offset) {
    struct fuse_bufvec out;
    memset(&out, 0, sizeof out);
    out.count = 1;
    out.buf[0].size = fuse_buf_size(in);
    out.buf[0].flags = (enum fuse_buf_flags)(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
    out.buf[0].fd = fd;
    out.buf[0].pos = offset;
    return fuse_buf_copy(&out, in, (enum fuse_buf_copy_flags)0);
}

// Bit-fields of struct fuse_file_info.
static inline void cfuse_fi_set_direct_io(struct fuse_file_info *fi, int on) { fi->direct_io = on ? 1 : 0; }
static inline void cfuse_fi_set_keep_cache(struct fuse_file_info *fi, int on) { fi->keep_cache = on ? 1 : 0; }
static inline void cfuse_fi_set_cache_readdir(struct fuse_file_info *fi, int on) { fi->cache_readdir = on ? 1 : 0; }
static inline void cfuse_fi_set_noflush(struct fuse_file_info *fi, int on) { fi->noflush = on ? 1 : 0; }
static inline int cfuse_fi_flock_release(const struct fuse_file_info *fi) { return fi->flock_release; }

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

#endif
