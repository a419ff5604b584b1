// ContainerFiles in a mounted container: what it writes is what iOS writes
// (read back by another program, getfattr, through the mount), what the
// backup report and the rules make of it, and the errors a device gives.

@testable import AppSandboxTesting
import ContainerFiles
import Foundation
import Testing

@Suite("ContainerFiles in a mounted container")
struct ContainerFilesMountedTests {
    @Test("X1, X5, K1: setExcludedFromBackup writes iOS's 61-byte value, the backup leaves the folder out; false removes it")
    func excludeFromBackup() throws {
        try withMountedContainer { container in
            let folder = URL(fileURLWithPath: container.applicationSupport + "/Downloads", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data(count: 2048).write(to: folder.appendingPathComponent("tiles.bin"))

            try ContainerFile.setExcludedFromBackup(true, for: folder)
            #expect(try ContainerFile.isExcludedFromBackup(folder))
            let value = try getfattr(ContainerFile.excludedFromBackupAttribute, folder.path)
            #expect(value == "0x" + ContainerFile.excludedFromBackupValue.map { String(format: "%02x", $0) }.joined())

            let report = try backupReport(container)
            let exclusions = try #require(report["exclusions"] as? [[String: Any]])
            let flagged = exclusions.first { $0["path"] as? String == "Library/Application Support/Downloads" }
            #expect(flagged?["reason"] as? String == "flag")
            #expect(flagged?["flags"] as? [String] == [ContainerFile.excludedFromBackupAttribute])

            try ContainerFile.setExcludedFromBackup(false, for: folder)
            #expect(try ContainerFile.isExcludedFromBackup(folder) == false)
            #expect(try getfattr(ContainerFile.excludedFromBackupAttribute, folder.path) == nil)
            #expect(container.denials().isEmpty)
        }
    }

    @Test("P2: setProtection stores the class's raw value without a NUL; write(options:) gives a new file its class, atomic or not")
    func protectionClasses() throws {
        try withMountedContainer { container in
            let file = URL(fileURLWithPath: container.documents + "/notes.txt")
            try Data("a".utf8).write(to: file)
            try ContainerFile.setProtection(.complete, for: file)
            #expect(try ContainerFile.protection(of: file)?.rawValue == "NSFileProtectionComplete")
            #expect(try getfattr(ContainerFile.protectionAttribute, file.path, encoding: "text") == "\"NSFileProtectionComplete\"")

            let cases: [(Data.WritingOptions, FileProtectionType)] = [
                ([.atomic, .completeFileProtection], .complete),
                (.completeFileProtectionUnlessOpen, .completeUnlessOpen),
                ([.atomic, .completeFileProtectionUntilFirstUserAuthentication], .completeUntilFirstUserAuthentication),
                (.noFileProtection, FileProtectionType.none),
            ]
            for (index, (options, protection)) in cases.enumerated() {
                let target = URL(fileURLWithPath: container.documents + "/saved-\(index).txt")
                try ContainerFile.write(Data("saved".utf8), to: target, options: options)
                #expect(try Data(contentsOf: target) == Data("saved".utf8))
                #expect(try ContainerFile.protection(of: target)?.rawValue == protection.rawValue, "options \(options.rawValue)")
            }
            #expect(container.denials().isEmpty)
        }
    }

    @Test("I4, B2: in the Inbox and the bundle the calls fail as on a device: 513 (EPERM) and 642 (EROFS), each a denial")
    func deniedWhereIOSDenies() throws {
        let attachment = FileManager.default.temporaryDirectory.appendingPathComponent("report-\(getpid()).pdf")
        try Data("%PDF".utf8).write(to: attachment)
        defer { try? FileManager.default.removeItem(at: attachment) }
        try withMountedContainer { container in
            let received = URL(fileURLWithPath: try container.deliver(attachment.path))
            let inbox = try #require(throws: CocoaError.self) { try ContainerFile.setExcludedFromBackup(true, for: received) }
            #expect(inbox.code == .fileWriteNoPermission)
            #expect((inbox.userInfo[NSUnderlyingErrorKey] as? POSIXError)?.code == .EPERM)
            #expect(try ContainerFile.isExcludedFromBackup(received) == false)

            let plist = URL(fileURLWithPath: container.bundle + "/Info.plist")
            let bundle = try #require(throws: CocoaError.self) { try ContainerFile.setProtection(.complete, for: plist) }
            #expect(bundle.code == .fileWriteVolumeReadOnly)

            #expect(container.denials().map(\.operation) == ["file-write-xattr", "file-write-xattr"])
            #expect(container.denials().map(\.path) == [received.path, plist.path])
        }
    }
}

/// `getfattr -n NAME -e ENCODING --only-values`-like: the value as getfattr
/// prints it (hex: 0x…, text: "…"), nil when the file has no such attribute.
func getfattr(_ name: String, _ path: String, encoding: String = "hex") throws -> String? {
    let result = try Subprocess.run(["getfattr", "--absolute-names", "-n", name, "-e", encoding, path])
    guard result.succeeded else { return nil }
    let line = result.standardOutput.split(separator: "\n").first { $0.hasPrefix(name + "=") }
    return line.map { String($0.dropFirst(name.count + 1)) }
}

/// `appsandboxfs backup-report --json` of a mounted container, parsed.
func backupReport(_ container: MountedContainer) throws -> [String: Any] {
    let result = try Subprocess.run([container.appsandboxfs, "backup-report", container.mountpoint, "--json"])
    let object = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8))
    return try #require(object as? [String: Any], "backup-report --json: \(result.standardOutput)\(result.standardError)")
}

