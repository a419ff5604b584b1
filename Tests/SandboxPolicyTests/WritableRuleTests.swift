import SandboxPolicy
import Testing

@Suite("Documents, Library, tmp and other root entries: W and T rules")
struct WritableRuleTests {
    @Test("W1 T1 every operation below Documents, Library, Caches, Preferences, tmp and other root entries is allowed",
          arguments: Zones.writableContent.sorted { $0.rawValue < $1.rawValue })
    func everythingIsAllowed(zone: Zone) {
        for (operation, _, _) in oneZoneOperations(zone) {
            #expect(SandboxPolicy.decide(operation) == .allow, "\(operation)")
        }
        #expect(SandboxPolicy.decide(.setAttributes(zone, [.mode, .owner, .size, .times])) == .allow)
        #expect(SandboxPolicy.decide(.link(source: zone, into: zone)) == .allow)
        #expect(SandboxPolicy.decide(.rename(entry: zone, into: zone, replacing: zone)) == .allow)
        #expect(SandboxPolicy.decide(.exchange(first: zone, second: zone)) == .allow)
    }

    @Test("W1 T1 create, mkdir, symlink directly in Documents, Library, Caches, Preferences and tmp are allowed",
          arguments: Zones.writableFolders.sorted { $0.rawValue < $1.rawValue })
    func addingToSystemFoldersIsAllowed(folder: Zone) {
        #expect(SandboxPolicy.decide(.create(in: folder)) == .allow)
        #expect(SandboxPolicy.decide(.makeDirectory(in: folder)) == .allow)
        #expect(SandboxPolicy.decide(.makeSymlink(in: folder)) == .allow)
        #expect(SandboxPolicy.decide(.link(source: .documents, into: folder)) == .allow)
    }

    @Test("W3 renames between Documents, Library, Caches, Preferences, tmp and other root entries are allowed",
          arguments: Zones.writableContent.sorted { $0.rawValue < $1.rawValue },
                     Zones.writableDestinations.sorted { $0.rawValue < $1.rawValue })
    func renamesBetweenWritablePlaces(entry: Zone, folder: Zone) {
        #expect(SandboxPolicy.decide(.rename(entry: entry, into: folder, replacing: nil)) == .allow)
    }

    @Test("W1 a rename may replace an existing writable entry")
    func renameOverAnEntry() {
        #expect(SandboxPolicy.decide(.rename(entry: .tmp, into: .documentsFolder, replacing: .documents)) == .allow)
        #expect(SandboxPolicy.decide(.rename(entry: .documents, into: .inboxFolder, replacing: .inbox))
                == .deny(.notPermitted, .fileWriteRename))
    }

    @Test("W1 Library/Application Support is ordinary library content: the app may remove it")
    func applicationSupportIsOrdinary() {
        let layout = ContainerLayout(appName: "MyApp")
        let zone = layout.zone(ofPath: ["Library", "Application Support"])
        #expect(zone == .library)
        #expect(SandboxPolicy.decide(.removeDirectory(entry: zone)) == .allow)
    }

    @Test("S1 other root entries (SystemData, the metadata plist) may be removed and changed, but not renamed within the root")
    func otherRootEntries() {
        #expect(SandboxPolicy.decide(.unlink(entry: .rootOther)) == .allow)
        #expect(SandboxPolicy.decide(.removeDirectory(entry: .rootOther)) == .allow)
        #expect(SandboxPolicy.decide(.write(.rootOther)) == .allow)
        #expect(SandboxPolicy.decide(.create(in: .rootOther)) == .allow)
        #expect(SandboxPolicy.decide(.rename(entry: .rootOther, into: .documentsFolder, replacing: nil)) == .allow)
        #expect(SandboxPolicy.decide(.rename(entry: .rootOther, into: .root, replacing: nil))
                == .deny(.notPermitted, .fileWriteRename))
        #expect(SandboxPolicy.decide(.rename(entry: .documents, into: .root, replacing: .rootOther))
                == .deny(.notPermitted, .fileWriteRename))
    }
}
