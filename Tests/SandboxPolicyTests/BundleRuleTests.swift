import SandboxPolicy
import Testing

@Suite("Bundle: B rules and E4")
struct BundleRuleTests {
    @Test("B2 every change in the bundle is EROFS, named as iOS names it", arguments: [Zone.bundleFolder, .bundle])
    func everyChangeIsReadOnly(zone: Zone) {
        for (operation, _, logged) in oneZoneOperations(zone) {
            #expect(SandboxPolicy.decide(operation) == .deny(.readOnly, logged), "\(operation)")
        }
    }

    @Test("B2 a setattr of several attributes in the bundle is EROFS")
    func everyAttributeChangeIsReadOnly() {
        #expect(SandboxPolicy.decide(.setAttributes(.bundle, [.mode, .owner, .size, .times]))
                == .deny(.readOnly, .fileWriteMode))
    }

    @Test("B1 reading in the bundle is allowed", arguments: [Zone.bundleFolder, .bundle])
    func readingIsAllowed(zone: Zone) {
        #expect(SandboxPolicy.decide(.open(zone, write: false, truncate: false)) == .allow)
    }

    @Test("B4 the bundle folder cannot be removed, renamed or replaced: EROFS, not EPERM")
    func bundleFolderStays() {
        #expect(SandboxPolicy.decide(.removeDirectory(entry: .bundleFolder)) == .deny(.readOnly, .fileWriteUnlink))
        #expect(SandboxPolicy.decide(.unlink(entry: .bundleFolder)) == .deny(.readOnly, .fileWriteUnlink))
        // Within the root: the root's S1 (EPERM) also applies; the bundle's EROFS wins.
        #expect(SandboxPolicy.decide(.rename(entry: .bundleFolder, into: .root, replacing: nil))
                == .deny(.readOnly, .fileWriteRename))
        #expect(SandboxPolicy.decide(.rename(entry: .bundleFolder, into: .documentsFolder, replacing: nil))
                == .deny(.readOnly, .fileWriteRename))
        #expect(SandboxPolicy.decide(.rename(entry: .rootOther, into: .root, replacing: .bundleFolder))
                == .deny(.readOnly, .fileWriteRename))
        #expect(SandboxPolicy.decide(.exchange(first: .bundleFolder, second: .documents))
                == .deny(.readOnly, .fileWriteRename))
    }

    @Test("B2 rename into, out of and within the bundle is EROFS", arguments: [
        (Zone.documents, Zone.bundleFolder), (.documents, .bundle), (.tmp, .bundle),
        (.bundle, .documentsFolder), (.bundle, .tmp), (.bundle, .library),
        (.bundle, .bundle), (.bundle, .bundleFolder),
    ])
    func renameTouchingTheBundle(entry: Zone, folder: Zone) {
        #expect(SandboxPolicy.decide(.rename(entry: entry, into: folder, replacing: nil))
                == .deny(.readOnly, .fileWriteRename))
    }

    @Test("B2 EROFS wins over EPERM when a rename also breaks a sandbox rule", arguments: [
        (Zone.bundle, Zone.inboxFolder), (.inbox, .bundle), (.bundle, .root), (.inboxFolder, .bundle),
        (.documentsFolder, .bundleFolder),
    ])
    func readOnlyWinsOverNotPermitted(entry: Zone, folder: Zone) {
        #expect(SandboxPolicy.decide(.rename(entry: entry, into: folder, replacing: nil))
                == .deny(.readOnly, .fileWriteRename))
    }

    @Test("E4 B2 a link of a bundle file to anywhere, or of anything into the bundle, is EROFS",
          arguments: Zone.allCases)
    func linkTouchingTheBundle(other: Zone) {
        #expect(SandboxPolicy.decide(.link(source: .bundle, into: other)) == .deny(.readOnly, .fileLink))
        #expect(SandboxPolicy.decide(.link(source: other, into: .bundle)) == .deny(.readOnly, .fileLink))
        #expect(SandboxPolicy.decide(.link(source: other, into: .bundleFolder)) == .deny(.readOnly, .fileLink))
    }
}
