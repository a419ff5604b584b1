import BackingStore
import ContainerBackup
import Testing

@Suite("Backup flags: X1, X2")
struct BackupFlagTests {
    /// docs/rules.md (X1): plistlib.dumps("com.apple.backupd", fmt=plistlib.FMT_BINARY).
    static let appleHex = "62706c69737430305f1011636f6d2e6170706c652e6261636b75706408000000000000010100000000000000010000000000000000000000000000001c"

    @Test("X1 the value iOS writes is the 61-byte binary plist of com.apple.backupd")
    func excludeItemValue() {
        #expect(BackupFlag.excludeItemValue.count == 61)
        #expect(BackupFlag.excludeItemValue.map { String(format2: $0) }.joined() == Self.appleHex)
    }

    @Test("X4 the flags are stored under the driver's backing names, user.appsandboxfs.<name>")
    func backingNames() {
        #expect(BackupFlag.excludeItem.backingName == "user.appsandboxfs.com.apple.metadata:com_apple_backup_excludeItem")
        #expect(BackupFlag.mobileBackup.backingName == "user.appsandboxfs.com.apple.MobileBackup")
        for flag in BackupFlag.allCases {
            #expect(flag.backingName == XattrNames.backingName(for: flag.name))
            #expect(XattrNames.mountName(for: flag.backingName) == flag.name)
        }
    }

    @Test("X1 excludeItem excludes whenever present, whatever its value", arguments: [
        BackupFlag.excludeItemValue, [], Array("x".utf8), [0], [0, 0, 0],
    ])
    func excludeItemPresence(value: [UInt8]) {
        let reading = FlagReading(excludeItem: value, mobileBackup: nil)
        #expect(reading.excludes)
        #expect(reading.excluding == [.excludeItem])
        #expect(reading.protectsFromPurge)
        #expect(reading.unrecognizedMobileBackup == nil)
    }

    @Test("X2 MobileBackup: one byte other than 0 excludes (1, and the ASCII 1 of setfattr -v 1)", arguments: [
        [UInt8(1)], [0x31], [0xFF],
    ])
    func mobileBackupExcludes(value: [UInt8]) {
        let reading = FlagReading(excludeItem: nil, mobileBackup: value)
        #expect(reading.excluding == [.mobileBackup])
        #expect(reading.unrecognizedMobileBackup == nil)
    }

    @Test("X2 MobileBackup 0 means back it up: no exclusion, no finding, no protection")
    func mobileBackupZero() {
        let reading = FlagReading(excludeItem: nil, mobileBackup: [0])
        #expect(!reading.excludes)
        #expect(!reading.protectsFromPurge)
        #expect(reading.unrecognizedMobileBackup == nil)
    }

    @Test("X2 MobileBackup of another length does not exclude, but purge keeps it", arguments: [
        [UInt8](), [1, 0], Array("true".utf8),
    ])
    func mobileBackupUnrecognized(value: [UInt8]) {
        let reading = FlagReading(excludeItem: nil, mobileBackup: value)
        #expect(!reading.excludes)
        #expect(reading.unrecognizedMobileBackup == value)
        #expect(reading.protectsFromPurge)
    }

    @Test("X1 X2 no attributes: nothing excluded, nothing protected")
    func none() {
        let reading = FlagReading(excludeItem: nil, mobileBackup: nil)
        #expect(reading == .none)
        #expect(!reading.excludes && !reading.protectsFromPurge)
    }

    @Test("X1 X2 both flags: both listed, in a fixed order")
    func both() {
        #expect(FlagReading(excludeItem: [], mobileBackup: [1]).excluding == [.excludeItem, .mobileBackup])
    }

    @Test("X1 X2 flags are read from the backing directory byte for byte, also values longer than a first read")
    func readingFromFiles() throws {
        let container = try ScratchContainer()
        try container.write("Documents/a", "a")
        try container.flag("Documents/a", .excludeItem)
        try container.write("Documents/b", "b")
        try container.flag("Documents/b", .mobileBackup, Array(repeating: 7, count: 300))
        try container.write("Documents/c", "c")
        try container.flag("Documents/c", .mobileBackup, [0])
        let scan = try container.scan()
        #expect(scan.memberPaths.contains("Documents/b"))
        #expect(scan.memberPaths.contains("Documents/c"))
        #expect(!scan.memberPaths.contains("Documents/a"))
        let unrecognized = scan.report.findings.filter { $0.kind == .unrecognizedFlagValue }
        #expect(unrecognized.map(\.path) == ["Documents/b"])
        #expect(unrecognized.first?.message.contains("300 bytes") == true)
    }
}

extension String {
    /// Two lowercase hex digits.
    init(format2 byte: UInt8) {
        let digits = String(byte, radix: 16)
        self = digits.count == 1 ? "0" + digits : digits
    }
}
