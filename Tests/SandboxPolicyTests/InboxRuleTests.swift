import SandboxPolicy
import Testing

@Suite("Documents/Inbox: I rules")
struct InboxRuleTests {
    @Test("I2 unlink of a file and rmdir of a folder in the Inbox are allowed")
    func deletingIsAllowed() {
        #expect(SandboxPolicy.decide(.unlink(entry: .inbox)) == .allow)
        #expect(SandboxPolicy.decide(.removeDirectory(entry: .inbox)) == .allow)
    }

    @Test("I3 rename of an Inbox entry out to a writable place is allowed",
          arguments: Zones.writableDestinations.sorted { $0.rawValue < $1.rawValue })
    func movingOutIsAllowed(folder: Zone) {
        #expect(SandboxPolicy.decide(.rename(entry: .inbox, into: folder, replacing: nil)) == .allow)
        #expect(SandboxPolicy.decide(.rename(entry: .inbox, into: .documents, replacing: .documents)) == .allow)
    }

    @Test("I3 I4 rename out of the Inbox to the root or into the bundle is still denied")
    func movingOutToForbiddenPlaces() {
        #expect(SandboxPolicy.decide(.rename(entry: .inbox, into: .root, replacing: nil))
                == .deny(.notPermitted, .fileWriteRename))
        #expect(SandboxPolicy.decide(.rename(entry: .inbox, into: .bundleFolder, replacing: nil))
                == .deny(.readOnly, .fileWriteRename))
    }

    @Test("I4 create, mknod, mkdir and symlink in the Inbox are EPERM", arguments: [Zone.inboxFolder, .inbox])
    func addingIsNotPermitted(folder: Zone) {
        #expect(SandboxPolicy.decide(.create(in: folder)) == .deny(.notPermitted, .fileWriteCreate))
        #expect(SandboxPolicy.decide(.makeDirectory(in: folder)) == .deny(.notPermitted, .fileWriteCreate))
        #expect(SandboxPolicy.decide(.makeSymlink(in: folder)) == .deny(.notPermitted, .fileWriteCreate))
    }

    @Test("I4 writing, truncating, fallocate, chmod, chown, utimens, xattrs of an Inbox file are EPERM")
    func changingIsNotPermitted() {
        let denied: [(FileOperation, SandboxOperation)] = [
            (.open(.inbox, write: true, truncate: false), .fileWriteData),
            (.open(.inbox, write: false, truncate: true), .fileWriteData),
            (.open(.inbox, write: true, truncate: true), .fileWriteData),
            (.write(.inbox), .fileWriteData),
            (.allocate(.inbox), .fileWriteData),
            (.setAttributes(.inbox, .size), .fileWriteData),
            (.setAttributes(.inbox, .mode), .fileWriteMode),
            (.setAttributes(.inbox, .owner), .fileWriteOwner),
            (.setAttributes(.inbox, .times), .fileWriteTimes),
            (.setExtendedAttribute(.inbox), .fileWriteXattr),
            (.removeExtendedAttribute(.inbox), .fileWriteXattr),
        ]
        for (operation, logged) in denied {
            #expect(SandboxPolicy.decide(operation) == .deny(.notPermitted, logged), "\(operation)")
        }
    }

    @Test("I4 rename into the Inbox or within it is EPERM", arguments: [
        (Zone.documents, Zone.inboxFolder), (.documents, .inbox), (.tmp, .inboxFolder), (.library, .inbox),
        (.rootOther, .inboxFolder), (.inbox, .inboxFolder), (.inbox, .inbox),
    ])
    func movingInIsNotPermitted(entry: Zone, folder: Zone) {
        #expect(SandboxPolicy.decide(.rename(entry: entry, into: folder, replacing: nil))
                == .deny(.notPermitted, .fileWriteRename))
        #expect(SandboxPolicy.decide(.rename(entry: entry, into: folder, replacing: .inbox))
                == .deny(.notPermitted, .fileWriteRename))
    }

    @Test("I4 exchanging an Inbox entry with any other entry is EPERM",
          arguments: Zones.writableContent.sorted { $0.rawValue < $1.rawValue } + [.inbox])
    func exchangeIsNotPermitted(other: Zone) {
        #expect(SandboxPolicy.decide(.exchange(first: .inbox, second: other)) == .deny(.notPermitted, .fileWriteRename))
    }

    @Test("I4 E4 a link of an Inbox file to anywhere, and any link into the Inbox, is EPERM",
          arguments: Zone.allCases.filter { !Zones.bundle.contains($0) })
    func linkingIsNotPermitted(other: Zone) {
        #expect(SandboxPolicy.decide(.link(source: .inbox, into: other)) == .deny(.notPermitted, .fileLink))
        #expect(SandboxPolicy.decide(.link(source: other, into: .inboxFolder)) == .deny(.notPermitted, .fileLink))
        #expect(SandboxPolicy.decide(.link(source: other, into: .inbox)) == .deny(.notPermitted, .fileLink))
    }

    @Test("I5 the Inbox folder itself cannot be removed, renamed or replaced: EPERM")
    func inboxFolderStays() {
        #expect(SandboxPolicy.decide(.removeDirectory(entry: .inboxFolder)) == .deny(.notPermitted, .fileWriteUnlink))
        #expect(SandboxPolicy.decide(.unlink(entry: .inboxFolder)) == .deny(.notPermitted, .fileWriteUnlink))
        #expect(SandboxPolicy.decide(.rename(entry: .inboxFolder, into: .documentsFolder, replacing: nil))
                == .deny(.notPermitted, .fileWriteRename))
        #expect(SandboxPolicy.decide(.rename(entry: .inboxFolder, into: .tmpFolder, replacing: nil))
                == .deny(.notPermitted, .fileWriteRename))
        #expect(SandboxPolicy.decide(.rename(entry: .documents, into: .documentsFolder, replacing: .inboxFolder))
                == .deny(.notPermitted, .fileWriteRename))
        #expect(SandboxPolicy.decide(.exchange(first: .inboxFolder, second: .documents))
                == .deny(.notPermitted, .fileWriteRename))
    }

    @Test("I4 S3 the Inbox folder's mode, owner, times and xattrs are fixed: EPERM")
    func inboxFolderAttributesAreFixed() {
        #expect(SandboxPolicy.decide(.setAttributes(.inboxFolder, .mode)) == .deny(.notPermitted, .fileWriteMode))
        #expect(SandboxPolicy.decide(.setAttributes(.inboxFolder, .owner)) == .deny(.notPermitted, .fileWriteOwner))
        #expect(SandboxPolicy.decide(.setAttributes(.inboxFolder, .times)) == .deny(.notPermitted, .fileWriteTimes))
        #expect(SandboxPolicy.decide(.setExtendedAttribute(.inboxFolder)) == .deny(.notPermitted, .fileWriteXattr))
        #expect(SandboxPolicy.decide(.removeExtendedAttribute(.inboxFolder)) == .deny(.notPermitted, .fileWriteXattr))
    }
}
