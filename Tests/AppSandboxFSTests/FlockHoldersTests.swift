// Issue 25, item 11: `update` tells a driver's lock on the backing folder
// from anyone else's by who holds it, read from /proc/locks.

@testable import AppSandboxFS
import Glibc
import Testing

@Suite struct FlockHoldersTests {
    @Test("U2 /proc/locks lines: holders of flock locks on the inode, not waiters, not POSIX locks, not other inodes")
    func parse() {
        let text = """
            1: FLOCK  ADVISORY  WRITE 1234 08:02:131090 0 EOF
            1: -> FLOCK  ADVISORY  WRITE 999 08:02:131090 0 EOF
            2: POSIX  ADVISORY  WRITE 777 08:02:131090 0 EOF
            3: FLOCK  ADVISORY  READ 4321 00:2c:131090 0 EOF
            4: FLOCK  ADVISORY  READ 5555 08:02:7 0 EOF
            5: OFDLCK ADVISORY  READ -1 08:02:131090 0 EOF
            """
        #expect(FlockHolders.parse(text, inode: 131090) == [1234, 4321])
    }

    @Test("U2 a lock this process holds on a folder is found, with its pid and uid")
    func ownLockFound() throws {
        var template = Array("/tmp/flock-holders-XXXXXX".utf8CString)
        let made = try #require(mkdtemp(&template))
        let path = String(cString: made)
        defer { rmdir(path) }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        var status = stat()
        #expect(fstat(fd, &status) == 0)
        #expect(flock(fd, LOCK_SH) == 0)
        #expect(FlockHolders.read(inode: status.st_ino).contains(FlockHolders.Holder(pid: getpid(), uid: geteuid())))
    }
}
