// fsprobe: runs a script of file-system calls in one directory and prints one
// result line per call, so that the same script can run in two directories
// (a plain one and one inside a mount) and as another user (setpriv), and the
// outputs be compared line by line.
//
//   fsprobe ROOTDIR [SCRIPT-FILE]      (the script comes from stdin without a file)
//
// fsprobe changes into ROOTDIR first; paths in the script are relative to it.
//
// SCRIPT: one operation per line. Blank lines and lines starting with # print
// nothing; every other line prints exactly one line:
//   ok                    the call succeeded
//   ok VALUE              the call succeeded and returned something
//   err ENAME             the call failed with errno ENAME (EAGAIN, EOPNOTSUPP
//                         for the aliases)
//   bad MESSAGE           the line itself is wrong (exit status 2 at the end)
// VALUEs hold nothing that differs between two directories: no inode numbers,
// devices or absolute times (unless the script set them).
//
// TOKENS are separated by spaces. "quoted" pieces take escapes \n \t \r \0 \\
// \" \xHH and a repeat count: "ab"*3 is ababab; pieces join with bare text up
// to the next space (d/"x"*256 is d/ and 256 x's).
// SLOT is a number naming an open descriptor; an empty slot acts as fd -1
// (EBADF). MODE is octal. Numbers are decimal with an optional k, m, g or t.
// FLAGS are names joined by |, prefix optional (O_RDWR|O_CREAT = rdwr|creat), or 0.
//
// Descriptors
//   open SLOT PATH FLAGS [MODE=644]  FLAGS: RDONLY WRONLY RDWR CREAT EXCL TRUNC APPEND
//                                    DIRECTORY NOFOLLOW NONBLOCK SYNC DSYNC CLOEXEC PATH
//                                    TMPFILE DIRECT NOATIME
//   close SLOT
//   read SLOT COUNT                  -> ok N "DATA"  (over 80 bytes: ok N fnv1a=HASH)
//   pread SLOT COUNT OFFSET          -> ok N "DATA"
//   write SLOT DATA                  -> ok N
//   pwrite SLOT DATA OFFSET          -> ok N
//   lseek SLOT OFFSET SET|CUR|END|DATA|HOLE   -> ok POSITION
//   ftruncate SLOT LENGTH            truncate PATH LENGTH
//   fsync SLOT                       fdatasync SLOT
//   mmap_read SLOT OFFSET LENGTH     -> ok "DATA"   (shared map of [0, OFFSET+LENGTH))
//   mmap_write SLOT OFFSET DATA      (shared map, then msync MS_SYNC)
// Attributes
//   stat PATH [FIELD...]   lstat PATH [FIELD...]   fstat SLOT [FIELD...]
//       -> ok type=reg mode=0644 nlink=1 size=5 uid=0 gid=0  (size left out for
//          folders unless asked); FIELDs: type mode nlink size uid gid blocks rdev
//          atime mtime ctime (times as SECONDS.NANOSECONDS)
//   stamp NAME PATH|@SLOT            remembers atime, mtime, ctime under NAME
//   since NAME PATH|@SLOT            -> ok atime=same|later|earlier mtime=... ctime=...
//   chmod PATH MODE   fchmod SLOT MODE
//   chown PATH UID GID   lchown PATH UID GID   fchown SLOT UID GID   (-1 keeps)
//   utimens PATH ATIME MTIME [NOFOLLOW]   futimens SLOT ATIME MTIME
//       each time: now | omit | SECONDS[.FRACTION]; or `null` alone for a NULL pointer
//   access PATH MODE   eaccess PATH MODE  MODE: F, or letters of RWX
//   sameinode PATH|@SLOT PATH|@SLOT  -> ok same|different  (st_ino and st_dev)
// Names
//   mkdir PATH [MODE=755]   rmdir PATH   unlink PATH   symlink TARGET PATH
//   readlink PATH                    -> ok "TARGET"
//   link OLD NEW   rename OLD NEW   renameat2 OLD NEW NOREPLACE|EXCHANGE|WHITEOUT|0
//   mknod PATH fifo|reg|sock [MODE=644]   mkfifo PATH [MODE=644]
//   readdir PATH [types]             -> ok . .. a b   (sorted; types: a:reg b:dir ...;
//                                       over 64 entries: ok N entries fnv1a=HASH)
//   drain PATH                       unlinks each entry as readdir returns it -> ok COUNT
//   opendir DSLOT PATH   closedir DSLOT   rewinddir DSLOT   (folder streams: own slots)
//   dirread DSLOT all                -> ok NAMES (the rest of the stream, sorted)
//   dirread DSLOT N                  -> ok COUNT (how many of the next N entries came)
// Space
//   fallocate SLOT FLAGS OFFSET LENGTH  FLAGS: 0 KEEP_SIZE PUNCH_HOLE ZERO_RANGE
//                                       COLLAPSE_RANGE INSERT_RANGE
//   copy_file_range SLOT-IN SLOT-OUT LENGTH [OFFSET-IN OFFSET-OUT]   -> ok N
//   statfs PATH                      -> ok namemax=255 bsize=4096
// Extended attributes (NAME is the full name, user.x)
//   setxattr PATH NAME VALUE [CREATE|REPLACE]    lsetxattr ...    fsetxattr SLOT ...
//   getxattr PATH NAME [BUFSIZE]     -> ok N "VALUE" (BUFSIZE 0: ok N)   lgetxattr, fgetxattr
//   listxattr PATH                   -> ok NAME... (sorted)   llistxattr, flistxattr
//   removexattr PATH NAME            lremovexattr, fremovexattr
// Locks
//   flock SLOT SH|EX|UN[|NB]
//   setlk SLOT RD|WR|UN START LEN    setlkw, ofd_setlk, ofd_setlkw (F_OFD_*)
//   getlk SLOT RD|WR START LEN       ofd_getlk  -> ok unlck | ok wrlck START LEN pid=self|other|-1
// The process
//   umask MODE -> ok OLDMODE    sleep MILLISECONDS    echo WORDS -> ok WORDS
// Loops
//   repeat N OP ARGS...              OP N times, {i} in ARGS replaced by 0..N-1
//                                    -> ok N, or the first failure: err ENAME at I

import Glibc
import POSIXHelpers

func fail(_ message: String) -> Never {
    let text = Array("fsprobe: \(message)\n".utf8)
    _ = Glibc.write(2, text, text.count)
    exit(64)
}

let arguments = CommandLine.arguments
guard arguments.count == 2 || arguments.count == 3 else {
    fail("usage: fsprobe ROOTDIR [SCRIPT-FILE]   (script on stdin without a file)")
}

/// All of a file's bytes (stdin for nil).
func readAll(_ path: String?) -> [UInt8] {
    let fd = path.map { Glibc.open($0, O_RDONLY) } ?? 0
    guard fd >= 0 else { fail("cannot open \(path ?? "stdin"): \(errnoName(errno))") }
    let (bytes, error) = readToEnd(fd)
    guard error == 0 else { fail("cannot read the script: \(errnoName(error))") }
    return bytes
}

let script = readAll(arguments.count == 3 ? arguments[2] : nil)
guard chdir(arguments[1]) == 0 else { fail("cannot enter \(arguments[1]): \(errnoName(errno))") }

var interpreter = Interpreter()
var sawBadLine = false
for line in script.split(separator: 0x0a, omittingEmptySubsequences: false) {
    let text: String
    do {
        let tokens = try tokenize(Array(line))
        if tokens.isEmpty { continue }
        text = try interpreter.run(tokens).line
    } catch {
        sawBadLine = true
        text = "bad \(error)"
    }
    // Straight to the descriptor, unbuffered: a crash (SIGBUS from a map)
    // keeps every line before it.
    let bytes = Array((text + "\n").utf8)
    _ = Glibc.write(1, bytes, bytes.count)
}
exit(sawBadLine ? 2 : 0)
