import SandboxPolicy
import Testing

@Suite("The root and the system folders: S rules")
struct SystemFolderRuleTests {
    static let rootAndSystemFolders: [Zone] = [.root] + Zones.systemFolders.sorted { $0.rawValue < $1.rawValue }
    static let writableSystemFolders = Zones.writableFolders.sorted { $0.rawValue < $1.rawValue }

    @Test("S1 the root admits no new entries: create, mkdir, symlink, link, rename into it are EPERM")
    func rootAdmitsNothingNew() {
        #expect(SandboxPolicy.decide(.create(in: .root)) == .deny(.notPermitted, .fileWriteCreate))
        #expect(SandboxPolicy.decide(.makeDirectory(in: .root)) == .deny(.notPermitted, .fileWriteCreate))
        #expect(SandboxPolicy.decide(.makeSymlink(in: .root)) == .deny(.notPermitted, .fileWriteCreate))
        #expect(SandboxPolicy.decide(.link(source: .documents, into: .root)) == .deny(.notPermitted, .fileLink))
        #expect(SandboxPolicy.decide(.rename(entry: .documents, into: .root, replacing: nil))
                == .deny(.notPermitted, .fileWriteRename))
        #expect(SandboxPolicy.decide(.rename(entry: .tmp, into: .root, replacing: nil))
                == .deny(.notPermitted, .fileWriteRename))
    }

    @Test("S2 I5 the system folders cannot be removed: EPERM", arguments: rootAndSystemFolders)
    func systemFoldersCannotBeRemoved(folder: Zone) {
        #expect(SandboxPolicy.decide(.removeDirectory(entry: folder)) == .deny(.notPermitted, .fileWriteUnlink))
        #expect(SandboxPolicy.decide(.unlink(entry: folder)) == .deny(.notPermitted, .fileWriteUnlink))
    }

    @Test("S2 I5 the system folders cannot be renamed, replaced or exchanged: EPERM", arguments: rootAndSystemFolders)
    func systemFoldersCannotBeRenamed(folder: Zone) {
        for destination in [Zone.root, .documentsFolder, .documents, .libraryFolder, .tmpFolder, .tmp] {
            #expect(SandboxPolicy.decide(.rename(entry: folder, into: destination, replacing: nil))
                    == .deny(.notPermitted, .fileWriteRename), "into \(destination)")
        }
        #expect(SandboxPolicy.decide(.rename(entry: .documents, into: .documentsFolder, replacing: folder))
                == .deny(.notPermitted, .fileWriteRename))
        #expect(SandboxPolicy.decide(.exchange(first: folder, second: .tmp)) == .deny(.notPermitted, .fileWriteRename))
        #expect(SandboxPolicy.decide(.exchange(first: .library, second: folder)) == .deny(.notPermitted, .fileWriteRename))
    }

    @Test("S3 chmod, chown and utimens of the root and the system folders are EPERM", arguments: rootAndSystemFolders)
    func systemFolderAttributesAreFixed(folder: Zone) {
        #expect(SandboxPolicy.decide(.setAttributes(folder, .mode)) == .deny(.notPermitted, .fileWriteMode))
        #expect(SandboxPolicy.decide(.setAttributes(folder, .owner)) == .deny(.notPermitted, .fileWriteOwner))
        #expect(SandboxPolicy.decide(.setAttributes(folder, .times)) == .deny(.notPermitted, .fileWriteTimes))
        #expect(SandboxPolicy.decide(.setAttributes(folder, .size)) == .deny(.notPermitted, .fileWriteData))
    }

    @Test("S2 the contents of the writable system folders can change", arguments: writableSystemFolders)
    func contentsCanChange(folder: Zone) {
        #expect(SandboxPolicy.decide(.create(in: folder)) == .allow)
        #expect(SandboxPolicy.decide(.makeDirectory(in: folder)) == .allow)
        #expect(SandboxPolicy.decide(.rename(entry: .documents, into: folder, replacing: nil)) == .allow)
    }

    @Test("X5 the root and the writable system folders may be flagged with xattrs",
          arguments: [Zone.root] + writableSystemFolders)
    func systemFoldersMayBeFlagged(folder: Zone) {
        #expect(SandboxPolicy.decide(.setExtendedAttribute(folder)) == .allow)
        #expect(SandboxPolicy.decide(.removeExtendedAttribute(folder)) == .allow)
    }

    @Test("S2 a system folder gets no second name by a hard link: EPERM", arguments: rootAndSystemFolders)
    func systemFoldersCannotBeLinked(folder: Zone) {
        #expect(SandboxPolicy.decide(.link(source: folder, into: .documents)) == .deny(.notPermitted, .fileLink))
    }
}
