import SandboxPolicy
import Testing

@Suite("Backup classes of zones: K1, K2")
struct BackupClassTests {
    static let layout = ContainerLayout(appName: "MyApp")

    @Test("K1 Documents (Inbox included) and Library except Caches are backed up; Caches, tmp, the bundle and the root are not",
          arguments: [
            (["Documents"], BackupClass.backedUp),
            (["Documents", "a.txt"], .backedUp),
            (["Documents", "Inbox"], .backedUp),
            (["Documents", "Inbox", "a.pdf"], .backedUp),
            (["Library"], .backedUp),
            (["Library", "Application Support", "db.sqlite"], .backedUp),
            (["Library", "Preferences"], .backedUp),
            (["Library", "Preferences", "com.example.plist"], .backedUp),
            (["Library", "SplashBoard", "Snapshots"], .backedUp),
            (["Documents", "Caches", "x"], .backedUp),
            (["Library", "Caches"], .caches),
            (["Library", "Caches", "thumbs", "a.png"], .caches),
            (["tmp"], .temporary),
            (["tmp", "upload.part"], .temporary),
            (["MyApp.app"], .bundle),
            (["MyApp.app", "Info.plist"], .bundle),
            ([], .outside),
            (["SystemData"], .outside),
            (["SystemData", "x"], .outside),
            ([".com.apple.mobile_container_manager.metadata.plist"], .outside),
          ])
    func classOfPaths(path: [String], expected: BackupClass) {
        #expect(BackupClass.of(Self.layout.zone(ofPath: path)) == expected)
    }

    @Test("K1 only the backedUp class is backed up; K2 only caches and temporary are purgeable")
    func flagsOfClasses() {
        #expect(BackupClass.allCases.filter(\.isBackedUp) == [.backedUp])
        #expect(Set(BackupClass.allCases.filter(\.isPurgeable)) == [.caches, .temporary])
    }

    @Test("K1 a folder and its contents share a class", arguments: Zone.containerZones)
    func folderAndContents(zone: Zone) {
        #expect(BackupClass.of(zone) == BackupClass.of(zone.systemFolder))
    }

    @Test("every zone groups under its system folder, which lies at a fixed depth", arguments: [
        ([], Zone.root, 0),
        (["Documents"], .documentsFolder, 1),
        (["Documents", "a", "b"], .documentsFolder, 1),
        (["Documents", "Inbox"], .inboxFolder, 2),
        (["Documents", "Inbox", "a"], .inboxFolder, 2),
        (["Library"], .libraryFolder, 1),
        (["Library", "Application Support"], .libraryFolder, 1),
        (["Library", "Caches", "x"], .cachesFolder, 2),
        (["Library", "Preferences", "x"], .preferencesFolder, 2),
        (["tmp", "x"], .tmpFolder, 1),
        (["MyApp.app", "x"], .bundleFolder, 1),
        (["SystemData", "x"], .rootOther, 0),
    ])
    func systemFolders(path: [String], folder: Zone, depth: Int) {
        let zone = Self.layout.zone(ofPath: path)
        #expect(zone.systemFolder == folder)
        #expect(zone.systemFolderDepth == depth)
        #expect(folder.systemFolder == folder)
    }
}
