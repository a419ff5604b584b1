import SandboxPolicy
import Testing

@Suite("Open flags, setattr changes and the errno of each denial")
struct OperationDetailTests {
    @Test("B2 I4 W1 open: only writing or truncating is judged", arguments: [
        (false, false, Zone.bundle, Verdict.allow),
        (true, false, .bundle, .deny(.readOnly, .fileWriteData)),
        (false, true, .bundle, .deny(.readOnly, .fileWriteData)),
        (true, true, .bundle, .deny(.readOnly, .fileWriteData)),
        (false, false, .inbox, .allow),
        (true, false, .inbox, .deny(.notPermitted, .fileWriteData)),
        (false, true, .inbox, .deny(.notPermitted, .fileWriteData)),
        (true, true, .inbox, .deny(.notPermitted, .fileWriteData)),
        (false, false, .documents, .allow),
        (true, false, .documents, .allow),
        (false, true, .documents, .allow),
        (true, true, .documents, .allow),
    ])
    func openFlags(write: Bool, truncate: Bool, zone: Zone, expected: Verdict) {
        #expect(SandboxPolicy.decide(.open(zone, write: write, truncate: truncate)) == expected)
    }

    @Test("B2 I4 S3 each attribute of a setattr names its own operation", arguments: [
        (AttributeChange.mode, SandboxOperation.fileWriteMode),
        (.owner, .fileWriteOwner),
        (.size, .fileWriteData),
        (.times, .fileWriteTimes),
    ])
    func attributeOperationNames(change: AttributeChange, logged: SandboxOperation) {
        #expect(SandboxPolicy.decide(.setAttributes(.bundle, change)) == .deny(.readOnly, logged))
        #expect(SandboxPolicy.decide(.setAttributes(.inbox, change)) == .deny(.notPermitted, logged))
        #expect(SandboxPolicy.decide(.setAttributes(.documents, change)) == .allow)
    }

    @Test("S3 a setattr of several attributes is denied if any is; the first of mode, owner, size, times is logged")
    func severalAttributes() {
        #expect(SandboxPolicy.decide(.setAttributes(.documentsFolder, [.times, .owner]))
                == .deny(.notPermitted, .fileWriteOwner))
        #expect(SandboxPolicy.decide(.setAttributes(.tmpFolder, [.size, .times]))
                == .deny(.notPermitted, .fileWriteData))
        #expect(SandboxPolicy.decide(.setAttributes(.inbox, [.mode, .owner, .size, .times]))
                == .deny(.notPermitted, .fileWriteMode))
        #expect(SandboxPolicy.decide(.setAttributes(.library, [.mode, .owner, .size, .times])) == .allow)
    }

    @Test("S3 a setattr that changes nothing is allowed anywhere", arguments: Zone.allCases)
    func emptyAttributeChange(zone: Zone) {
        #expect(SandboxPolicy.decide(.setAttributes(zone, [])) == .allow)
    }

    @Test("EROFS is 30 and EPERM is 1, the values a process sees")
    func errnoValues() {
        #expect(Denial.readOnly.errno == 30)
        #expect(Denial.notPermitted.errno == 1)
        #expect(Verdict.allow.isAllowed)
        #expect(!Verdict.deny(.notPermitted, .fileLink).isAllowed)
    }

    @Test("the operation names are those of the iOS denial log")
    func operationNames() {
        let names: [SandboxOperation: String] = [
            .fileReadData: "file-read-data", .fileWriteCreate: "file-write-create",
            .fileWriteData: "file-write-data", .fileWriteUnlink: "file-write-unlink",
            .fileWriteMode: "file-write-mode", .fileWriteOwner: "file-write-owner",
            .fileWriteTimes: "file-write-times", .fileWriteXattr: "file-write-xattr",
            .fileLink: "file-link", .fileWriteRename: "file-write-rename",
        ]
        for (operation, name) in names {
            #expect(operation.rawValue == name)
        }
    }
}
