// X1-X6 through a real mount: the skip-backup attributes with real system
// calls (setxattr(2), getxattr(2), listxattr(2), removexattr(2)) and the
// ordinary tools (setfattr, getfattr, cp -a, rsync -X).

import Glibc
import Testing

@Suite("Backup flags through the mount: X1-X6", .serialized)
struct BackupXattrTests {
    /// A file and a folder in each writable zone, made through the mount.
    static func places(_ mounted: MountedContainer) throws -> [String] {
        var places: [String] = []
        for folder in [mounted.documents, mounted.library, mounted.applicationSupport, mounted.tmp] {
            let file = folder + "/flagged-file", dir = folder + "/flagged-folder"
            try writeFile(file, "data\n")
            try makeDirectory(dir)
            places += [file, dir]
        }
        return places
    }

    @Test("X1 excludeItem: setxattr stores the 61-byte value, getxattr returns it byte for byte, listxattr lists it, on files and folders in Documents, Library and tmp")
    func excludeItemRoundTrip() throws {
        try withMountedContainer { mounted in
            #expect(BackupNames.appleValue.count == 61)
            for path in try Self.places(mounted) {
                #expect(BackupXattr.set(path, BackupNames.excludeItem, BackupNames.appleValue) == 0, "\(path)")
                #expect(BackupXattr.size(path, BackupNames.excludeItem) == .success(61), "\(path)")
                #expect(BackupXattr.get(path, BackupNames.excludeItem) == .success(BackupNames.appleValue), "\(path)")
                #expect(BackupXattr.get(path, BackupNames.excludeItem, capacity: 60) == .failure(BackupErrno(ERANGE)), "\(path)")
                let names = try BackupXattr.list(path).get()
                #expect(names.filter { $0 == BackupNames.excludeItem }.count == 1, "\(path): \(names)")
                // X4: stored in the backing directory as a user. attribute, the same bytes.
                let relative = String(path.dropFirst(mounted.mountpoint.count + 1))
                #expect(BackupXattr.getNoFollow(mounted.backingPath(relative), BackupNames.backingExcludeItem) == BackupNames.appleValue)
            }
        }
    }

    @Test("X1 excludeItem stores any value: empty, one byte, text, 2000 bytes")
    func excludeItemAnyValue() throws {
        try withMountedContainer { mounted in
            let path = try mounted.scratch() + "/f"
            try writeFile(path, "x")
            // ext4 keeps all of a file's attributes in one 4 KiB block: a larger
            // value gets the backing file system's own ENOSPC, passed through.
            let big = (0..<2000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            for value in [[], [0], Array("yes".utf8), big] {
                #expect(BackupXattr.set(path, BackupNames.excludeItem, value) == 0, "\(value.count) bytes")
                let back = BackupXattr.get(path, BackupNames.excludeItem)
                #expect(back == .success(value), "\(value.count) bytes: got \((try? back.get())?.count ?? -1) bytes")
            }
        }
    }

    @Test("X2 MobileBackup: the one-byte value 1 is stored, returned and listed as X1, on files and folders")
    func mobileBackupRoundTrip() throws {
        try withMountedContainer { mounted in
            for path in try Self.places(mounted) {
                #expect(BackupXattr.set(path, BackupNames.mobileBackup, [1]) == 0, "\(path)")
                #expect(BackupXattr.get(path, BackupNames.mobileBackup) == .success([1]), "\(path)")
                #expect(BackupXattr.size(path, BackupNames.mobileBackup) == .success(1))
                #expect(try BackupXattr.list(path).get().filter { $0 == BackupNames.mobileBackup }.count == 1)
                let relative = String(path.dropFirst(mounted.mountpoint.count + 1))
                #expect(BackupXattr.getNoFollow(mounted.backingPath(relative), BackupNames.backingMobileBackup) == [1])
            }
        }
    }

    @Test("X3 setfattr, getfattr -n, getfattr -d -m - and setfattr -x on files and folders in Documents, Library and tmp")
    func tools() throws {
        try withMountedContainer { mounted in
            for path in try Self.places(mounted) {
                let set1 = runProcess(["setfattr", "-n", BackupNames.excludeItem, "-v", "0x" + BackupNames.appleHex, path])
                #expect(set1.status == 0, "\(set1.stderr)")
                let set2 = runProcess(["setfattr", "-n", BackupNames.mobileBackup, "-v", "0x01", path])
                #expect(set2.status == 0, "\(set2.stderr)")
                let one = runProcess(["getfattr", "--absolute-names", "-n", BackupNames.excludeItem, "-e", "hex", path])
                #expect(one.status == 0)
                #expect(one.stdout.contains("\(BackupNames.excludeItem)=0x\(BackupNames.appleHex)\n"), "\(one.stdout)")
                let all = runProcess(["getfattr", "--absolute-names", "-d", "-m", "-", "-e", "hex", path])
                #expect(all.stdout.contains("\(BackupNames.excludeItem)=0x\(BackupNames.appleHex)\n"), "\(all.stdout)")
                #expect(all.stdout.contains("\(BackupNames.mobileBackup)=0x01\n"), "\(all.stdout)")
                // The syscall sees what the tool set.
                #expect(BackupXattr.get(path, BackupNames.excludeItem) == .success(BackupNames.appleValue))
                let remove = runProcess(["setfattr", "-x", BackupNames.mobileBackup, path])
                #expect(remove.status == 0)
                #expect(BackupXattr.get(path, BackupNames.mobileBackup) == .failure(BackupErrno(ENODATA)))
                let relative = String(path.dropFirst(mounted.mountpoint.count + 1))
                #expect(BackupXattr.getNoFollow(mounted.backingPath(relative), BackupNames.backingMobileBackup) == nil)
            }
        }
    }

    @Test("X3 XATTR_CREATE and XATTR_REPLACE as POSIX says: EEXIST, ENODATA; removexattr and getxattr of a missing name: ENODATA")
    func createAndReplace() throws {
        try withMountedContainer { mounted in
            for path in try Self.places(mounted) {
                for name in [BackupNames.excludeItem, BackupNames.mobileBackup] {
                    #expect(BackupXattr.set(path, name, [1], flags: BackupXattr.replace) == ENODATA, "\(path) \(name)")
                    #expect(BackupXattr.get(path, name) == .failure(BackupErrno(ENODATA)))
                    #expect(BackupXattr.set(path, name, [1], flags: BackupXattr.create) == 0)
                    #expect(BackupXattr.set(path, name, [2], flags: BackupXattr.create) == EEXIST)
                    #expect(BackupXattr.get(path, name) == .success([1]))
                    #expect(BackupXattr.set(path, name, [3], flags: BackupXattr.replace) == 0)
                    #expect(BackupXattr.get(path, name) == .success([3]))
                    #expect(BackupXattr.remove(path, name) == 0)
                    #expect(BackupXattr.remove(path, name) == ENODATA)
                    #expect(BackupXattr.get(path, name) == .failure(BackupErrno(ENODATA)))
                    #expect(try BackupXattr.list(path).get().contains(name) == false)
                }
            }
        }
    }

    @Test("X4 the flags persist in the backing directory and survive unmount and mount")
    func survivesRemount() throws {
        try withMountedContainer { mounted in
            let file = mounted.documents + "/kept.db", folder = mounted.library + "/Downloads"
            try writeFile(file, "db")
            try makeDirectory(folder)
            #expect(BackupXattr.set(file, BackupNames.excludeItem, BackupNames.appleValue) == 0)
            #expect(BackupXattr.set(folder, BackupNames.mobileBackup, [1]) == 0)
            try backupRemount(mounted) {
                #expect(BackupXattr.get(file, BackupNames.excludeItem) == .success(BackupNames.appleValue))
                #expect(BackupXattr.get(folder, BackupNames.mobileBackup) == .success([1]))
                #expect((try? BackupXattr.list(file).get())?.contains(BackupNames.excludeItem) == true)
            }
            // Unmounted: the backing directory holds them as user. attributes.
            #expect(BackupXattr.getNoFollow(mounted.backingPath("Documents/kept.db"), BackupNames.backingExcludeItem) == BackupNames.appleValue)
            #expect(BackupXattr.getNoFollow(mounted.backingPath("Library/Downloads"), BackupNames.backingMobileBackup) == [1])
        }
    }

    @Test("X4 the flags move with the file and the folder on rename, within Documents and to Library and tmp")
    func movesWithRename() throws {
        try withMountedContainer { mounted in
            let file = mounted.documents + "/a.db"
            try writeFile(file, "a")
            #expect(BackupXattr.set(file, BackupNames.excludeItem, BackupNames.appleValue) == 0)
            var current = file
            for next in [mounted.documents + "/b.db", mounted.library + "/c.db", mounted.applicationSupport + "/d.db",
                         mounted.tmp + "/e.db", mounted.documents + "/f.db"] {
                #expect(rename(current, next) == 0, "\(current) -> \(next): \(posixError(errno))")
                #expect(BackupXattr.get(next, BackupNames.excludeItem) == .success(BackupNames.appleValue), "\(next)")
                current = next
            }
            let folder = mounted.documents + "/Downloads"
            try makeDirectory(folder)
            try writeFile(folder + "/inner", "i")
            #expect(BackupXattr.set(folder, BackupNames.mobileBackup, [1]) == 0)
            #expect(BackupXattr.set(folder + "/inner", BackupNames.excludeItem, BackupNames.appleValue) == 0)
            #expect(rename(folder, mounted.library + "/Downloads") == 0)
            #expect(BackupXattr.get(mounted.library + "/Downloads", BackupNames.mobileBackup) == .success([1]))
            #expect(BackupXattr.get(mounted.library + "/Downloads/inner", BackupNames.excludeItem) == .success(BackupNames.appleValue))
            #expect(BackupXattr.getNoFollow(mounted.backingPath("Library/Downloads"), BackupNames.backingMobileBackup) == [1])
        }
    }

    @Test("X4 cp -a and rsync -aX through the mount carry the flags, byte for byte")
    func copiesCarryFlags() throws {
        try withMountedContainer { mounted in
            let folder = mounted.documents + "/Models"
            try makeDirectory(folder)
            try writeFile(folder + "/model.bin", "weights")
            #expect(BackupXattr.set(folder, BackupNames.mobileBackup, [1]) == 0)
            #expect(BackupXattr.set(folder + "/model.bin", BackupNames.excludeItem, BackupNames.appleValue) == 0)
            #expect(BackupXattr.set(folder + "/model.bin", "user.origin", Array("download".utf8)) == 0)

            let cp = runProcess(["cp", "-a", folder, mounted.library + "/ModelsCopy"])
            #expect(cp.status == 0, "\(cp.stderr)")
            let rsync = runProcess(["rsync", "-aX", folder + "/", mounted.applicationSupport + "/ModelsSynced/"])
            #expect(rsync.status == 0, "\(rsync.stderr)")
            for copy in [mounted.library + "/ModelsCopy", mounted.applicationSupport + "/ModelsSynced"] {
                #expect(BackupXattr.get(copy, BackupNames.mobileBackup) == .success([1]), "\(copy)")
                #expect(BackupXattr.get(copy + "/model.bin", BackupNames.excludeItem) == .success(BackupNames.appleValue), "\(copy)")
                #expect(BackupXattr.get(copy + "/model.bin", "user.origin") == .success(Array("download".utf8)), "\(copy)")
                let relative = String(copy.dropFirst(mounted.mountpoint.count + 1))
                #expect(BackupXattr.getNoFollow(mounted.backingPath(relative + "/model.bin"), BackupNames.backingExcludeItem) == BackupNames.appleValue)
            }
        }
    }

    @Test("X4 no aliases: an Apple name, its backing name and a user. look-alike never share storage; listxattr shows each once")
    func noAliases() throws {
        try withMountedContainer { mounted in
            let path = try mounted.scratch() + "/f"
            try writeFile(path, "x")
            let names = [BackupNames.mobileBackup, BackupNames.backingMobileBackup, "user.com.apple.MobileBackup",
                         "user.appsandboxfs.user.appsandboxfs.com.apple.MobileBackup"]
            for (index, name) in names.enumerated() {
                #expect(BackupXattr.set(path, name, [UInt8(index + 10)]) == 0, "\(name)")
            }
            for (index, name) in names.enumerated() {
                #expect(BackupXattr.get(path, name) == .success([UInt8(index + 10)]), "\(name)")
            }
            let listed = try BackupXattr.list(path).get()
            for name in names { #expect(listed.filter { $0 == name }.count == 1, "\(name) in \(listed)") }
            #expect(listed.count == names.count, "\(listed)")
            #expect(BackupXattr.remove(path, BackupNames.backingMobileBackup) == 0)
            #expect(BackupXattr.get(path, BackupNames.mobileBackup) == .success([10]))
        }
    }

    @Test("X6 other user. attributes pass through unchanged, both ways")
    func userAttributesPassThrough() throws {
        try withMountedContainer { mounted in
            let path = try mounted.scratch() + "/f"
            try writeFile(path, "x")
            let relative = String(path.dropFirst(mounted.mountpoint.count + 1))
            let value: [UInt8] = [0, 1, 2, 255, 10, 13]
            #expect(BackupXattr.set(path, "user.color", value) == 0)
            #expect(BackupXattr.getNoFollow(mounted.backingPath(relative), "user.color") == value)
            #expect(BackupXattr.setNoFollow(mounted.backingPath(relative), "user.fromBacking", Array("b".utf8)) == 0)
            #expect(BackupXattr.get(path, "user.fromBacking") == .success(Array("b".utf8)))
            let listed = try BackupXattr.list(path).get()
            #expect(Set(listed) == ["user.color", "user.fromBacking"])
        }
    }

    @Test("X6 no xattr call ever answers ENOSYS: after every kind of failing call, xattrs still work on the mount")
    func neverENOSYS() throws {
        try withMountedContainer(extraArguments: ["--debug"]) { mounted in
            let file = try mounted.scratch() + "/f"
            try writeFile(file, "x")
            let link = mounted.documents + "/link"
            #expect(symlink("f", link) == 0)
            // Failing calls of every kind.
            _ = BackupXattr.get(file, "com.apple.missing")
            _ = BackupXattr.get(file, "system.posix_acl_access")
            _ = BackupXattr.set(file, "system.nonsense", [1])
            _ = BackupXattr.remove(file, "com.apple.missing")
            _ = BackupXattr.set(file, "com.apple.x", [1], flags: BackupXattr.replace)
            _ = BackupXattr.set(mounted.bundle + "/Info.plist", BackupNames.excludeItem, [1])
            _ = BackupXattr.set(mounted.inbox, BackupNames.excludeItem, [1])
            _ = BackupXattr.list(mounted.bundle)
            _ = runProcess(["getfattr", "-h", "-d", "-m", "-", link])
            _ = runProcess(["setfattr", "-h", "-n", "user.x", "-v", "1", link])
            // Each operation still reaches the driver.
            #expect(BackupXattr.set(file, BackupNames.excludeItem, BackupNames.appleValue) == 0)
            #expect(BackupXattr.get(file, BackupNames.excludeItem) == .success(BackupNames.appleValue))
            #expect(try BackupXattr.list(file).get() == [BackupNames.excludeItem])
            #expect(BackupXattr.remove(file, BackupNames.excludeItem) == 0)
            // libfuse's debug log shows every reply: none to an xattr request is ENOSYS (-38).
            let replies = backupXattrReplies(mounted.stderrText())
            #expect(replies.count >= 10, "the debug log shows the xattr requests")
            #expect(replies.contains { $0.reply.hasPrefix("error: -95") }, "some answered ENOTSUP")
            let enosys = replies.filter { $0.reply.hasPrefix("error: -38") }
            #expect(enosys.isEmpty, "\(enosys.prefix(5))")
        }
    }

    @Test("X6 a backing file system without user xattrs: every xattr call answers ENOTSUP, never ENOSYS, and mount warns")
    func withoutUserXattrs() throws {
        var backing: String?
        defer {
            if let backing {
                _ = runProcess(["umount", backing])
                let root = parentDirectory(backing)
                if root.hasPrefix("/tmp/") && !isFuseMount(root + "/mnt") { removeTree(root) }
            }
        }
        try withMountedContainer(extraArguments: ["--debug"], prepare: { path in
            // ramfs keeps no extended attributes at all.
            let mount = runProcess(["mount", "-t", "ramfs", "-o", "mode=755", "ramfs", path])
            guard mount.status == 0 else { throw SupportError("cannot mount ramfs: \(mount.stderr)") }
            backing = path
            try layOutContainer(at: path, appName: "TestApp")
        }) { mounted in
            let file = try mounted.scratch() + "/f"
            try writeFile(file, "x")
            #expect(BackupXattr.set(file, BackupNames.excludeItem, BackupNames.appleValue) == EOPNOTSUPP)
            #expect(BackupXattr.set(file, "user.color", [1]) == EOPNOTSUPP)
            #expect(BackupXattr.get(file, BackupNames.excludeItem) == .failure(BackupErrno(EOPNOTSUPP)))
            #expect(BackupXattr.remove(file, BackupNames.excludeItem) == EOPNOTSUPP)
            let list = BackupXattr.list(file)
            #expect(list == .failure(BackupErrno(EOPNOTSUPP)) || list == .success([]))
            let tool = runProcess(["setfattr", "-n", BackupNames.mobileBackup, "-v", "0x01", file])
            #expect(tool.stderr.contains("Operation not supported"), "\(tool.stderr)")
            let log = mounted.stderrText()
            #expect(log.contains("does not store user extended attributes"), "\(tail(log))")
            let replies = backupXattrReplies(log)
            #expect(replies.count >= 5, "the debug log shows the xattr requests")
            let enosys = replies.filter { $0.reply.hasPrefix("error: -38") }
            #expect(enosys.isEmpty, "\(enosys.prefix(5))")
        }
    }
}
