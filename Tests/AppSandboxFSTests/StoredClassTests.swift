// P2, P3: the class a file holds in the backing store, read by the driver
// with one listxattr telling which of the two class attributes exist. The
// explicit class wins over the one from creation; neither gives nil; a file
// with more attribute names than the list buffer holds still answers (each
// attribute asked for on its own).

@testable import AppSandboxFS
import BackingStore
import Glibc
import SandboxPolicy
import SystemPackage
import Testing

@Suite struct StoredClassTests {
    /// A new file in a temporary folder, opened O_PATH as nodes hold files.
    final class File {
        let folder: String
        let path: String
        let fd: FileDescriptor

        init() throws {
            var template = Array("/var/tmp/asfs-class-XXXXXX".utf8CString)
            guard mkdtemp(&template) != nil else { throw Errno(rawValue: errno) }
            folder = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
            path = folder + "/file"
            close(creat(path, 0o644))
            let folderFD = try Backing.openRoot(folder)
            defer { Backing.close(folderFD) }
            fd = try Backing.openPath(in: folderFD, "file")
        }

        func set(_ name: String, _ value: String) throws {
            try Array(value.utf8).withUnsafeBytes { raw in
                Result { () throws(Errno) in try Backing.setxattr(fd, name, raw, flags: 0) }
            }.get()
        }

        deinit {
            Backing.close(fd)
            unlink(path)
            rmdir(folder)
        }
    }

    @Test func neitherAttributeGivesNoClass() throws {
        let file = try File()
        try file.set("user.com.apple.MobileBackup", "1")
        let present = ProtectionXattrs.classNamesPresent(file.fd)
        #expect(present?.explicit == false && present?.atCreation == false)
        #expect(SandboxFileSystem.storedClass(file.fd) == nil)
    }

    @Test func theClassFromCreationAlone() throws {
        let file = try File()
        try file.set(ProtectionXattrs.atCreationName, ProtectionClass.complete.rawValue)
        let present = ProtectionXattrs.classNamesPresent(file.fd)
        #expect(present?.explicit == false && present?.atCreation == true)
        #expect(SandboxFileSystem.storedClass(file.fd) == .complete)
    }

    @Test func theExplicitClassWins() throws {
        let file = try File()
        try file.set(ProtectionXattrs.atCreationName, ProtectionClass.complete.rawValue)
        try file.set(ProtectionXattrs.explicitName, ProtectionClass.none.rawValue)
        let present = ProtectionXattrs.classNamesPresent(file.fd)
        #expect(present?.explicit == true && present?.atCreation == true)
        #expect(SandboxFileSystem.storedClass(file.fd) == ProtectionClass.none)
    }

    @Test func aListLongerThanTheBufferStillAnswers() throws {
        let file = try File()
        // 9 names of 245 bytes: a list of 2,214 bytes, past the 2 KiB buffer
        // (and within ext4's one block of attributes).
        for i in 0..<9 { try file.set("user." + String(repeating: "x", count: 239) + "\(i)", "v") }
        try file.set(ProtectionXattrs.explicitName, ProtectionClass.completeUnlessOpen.rawValue)
        #expect(ProtectionXattrs.classNamesPresent(file.fd) == nil)
        #expect(SandboxFileSystem.storedClass(file.fd) == .completeUnlessOpen)
    }
}
