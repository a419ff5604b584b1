// ContainerFiles without a container: its tables, and what its calls do on
// an ordinary Linux file system (no flags, no classes; setting one fails
// with Foundation's error).

import ContainerBackup
import ContainerFiles
import Foundation
import SandboxPolicy
import Testing

@Suite("ContainerFiles: tables and an ordinary file system")
struct ContainerFilesUnitTests {
    @Test("ContainerFolder's paths are the container layout's folders (the ones init makes and the rules know)")
    func foldersAreTheLayout() {
        #expect(ContainerFolder.allCases.map(\.relativePath) == ContainerLayout.requiredFolders)
        let root = URL(fileURLWithPath: "/mnt/My App", isDirectory: true)
        #expect(ContainerFolder.applicationSupport.url(inContainer: root).path == "/mnt/My App/Library/Application Support")
    }

    @Test("The environment: the variables Foundation on Linux reads for each folder, in order")
    func environmentTable() {
        let variables = ContainerEnvironment.variables(root: "/mnt/MyApp")
        #expect(variables.map(\.name) == ["HOME", "CFFIXED_USER_HOME", "TMPDIR", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"])
        #expect(variables.map(\.value) == [
            "/mnt/MyApp", "/mnt/MyApp", "/mnt/MyApp/tmp/", "/mnt/MyApp/Library/Application Support",
            "/mnt/MyApp/Library/Caches", "/mnt/MyApp/Library/Preferences",
        ])
    }

    @Test("X1: the attribute and the 61 bytes iOS writes, one definition with the backup code's")
    func excludeItemValue() {
        let hex = ContainerFile.excludedFromBackupValue.map { String(format: "%02x", $0) }.joined()
        #expect(hex == "62706c69737430305f1011636f6d2e6170706c652e6261636b75706408000000000000010100000000000000010000000000000000000000000000001c")
        #expect(ContainerFile.excludedFromBackupAttribute == BackupFlag.excludeItem.name)
        #expect(BackupFlag.excludeItemValue == ContainerFile.excludedFromBackupValue)
        #expect(ContainerFile.protectionAttribute == FileAttributeKey.protectionKey.rawValue)
    }

    @Test("On an ordinary Linux file system: no flag, no class; setting either fails with a CocoaError naming the path")
    func ordinaryFileSystem() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("plain.txt")
        try Data("x".utf8).write(to: file)

        #expect(try ContainerFile.isExcludedFromBackup(file) == false)
        #expect(try ContainerFile.protection(of: file) == nil)
        let error = try #require(throws: CocoaError.self) { try ContainerFile.setExcludedFromBackup(true, for: file) }
        #expect(error.code == .fileWriteUnknown)
        #expect(error.userInfo[NSFilePathErrorKey] as? String == file.path)
        #expect((error.userInfo[NSUnderlyingErrorKey] as? POSIXError)?.code == .EOPNOTSUPP)
        #expect(throws: CocoaError.self) { try ContainerFile.setProtection(.complete, for: file) }
        // Removing a flag that is not there is no error.
        try ContainerFile.setExcludedFromBackup(false, for: file)
    }

    @Test("A missing file: reading throws 260 (no such file), writing a flag 4")
    func missingFile() throws {
        let missing = URL(fileURLWithPath: "/nonexistent-\(getpid())/file")
        let read = try #require(throws: CocoaError.self) { try ContainerFile.isExcludedFromBackup(missing) }
        #expect(read.code == .fileReadNoSuchFile)
        let write = try #require(throws: CocoaError.self) { try ContainerFile.setExcludedFromBackup(true, for: missing) }
        #expect(write.code == .fileNoSuchFile)
    }

    @Test("write without a protection option is Data.write; an option no container knows fails before writing")
    func writeOptions() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("a.txt")
        try ContainerFile.write(Data("one".utf8), to: file, options: .atomic)
        #expect(try Data(contentsOf: file) == Data("one".utf8))
        let unknown = Data.WritingOptions(rawValue: 0x7000_0000)
        #expect(throws: CocoaError.self) { try ContainerFile.write(Data("two".utf8), to: file, options: unknown) }
        #expect(try Data(contentsOf: file) == Data("one".utf8))
    }

    private func temporaryFolder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("containerfiles-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
