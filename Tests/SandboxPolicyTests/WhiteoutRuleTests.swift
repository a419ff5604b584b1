import SandboxPolicy
import Testing

@Suite("RENAME_WHITEOUT: a rename that adds a name where it leaves")
struct WhiteoutRuleTests {
    @Test("I4 S1 a whiteout left in the Inbox or at the root is an add there: EPERM, logged as a rename")
    func whiteoutAddsToTheSourceFolder() {
        #expect(SandboxPolicy.decide(.renameLeavingWhiteout(entry: .inbox, from: .inboxFolder, into: .documentsFolder,
                                                            replacing: nil)) == .deny(.notPermitted, .fileWriteRename))
        #expect(SandboxPolicy.decide(.renameLeavingWhiteout(entry: .rootOther, from: .root, into: .documentsFolder,
                                                            replacing: nil)) == .deny(.notPermitted, .fileWriteRename))
        // The same renames without a whiteout are allowed (I3, S1 allows removing a root entry).
        #expect(SandboxPolicy.decide(.rename(entry: .inbox, into: .documentsFolder, replacing: nil)) == .allow)
        #expect(SandboxPolicy.decide(.rename(entry: .rootOther, into: .documentsFolder, replacing: nil)) == .allow)
    }

    @Test("W1 a whiteout left in Documents is allowed; in the bundle the rename is EROFS either way")
    func whiteoutElsewhere() {
        #expect(SandboxPolicy.decide(.renameLeavingWhiteout(entry: .documents, from: .documents, into: .library,
                                                            replacing: .library)) == .allow)
        #expect(SandboxPolicy.decide(.renameLeavingWhiteout(entry: .bundle, from: .bundle, into: .documents,
                                                            replacing: nil)) == .deny(.readOnly, .fileWriteRename))
    }
}
