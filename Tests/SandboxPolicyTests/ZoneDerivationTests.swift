import SandboxPolicy
import Testing

@Suite("Zones from names and paths")
struct ZoneDerivationTests {
    static let layout = ContainerLayout(appName: "MyApp")

    @Test("every path shape of a container lies in its zone", arguments: [
        ([], Zone.root),
        (["MyApp.app"], .bundleFolder),
        (["MyApp.app", "Info.plist"], .bundle),
        (["MyApp.app", "Frameworks", "X.framework", "X"], .bundle),
        (["MyApp.app", "Documents"], .bundle),
        (["Documents"], .documentsFolder),
        (["Documents", "a.txt"], .documents),
        (["Documents", "sub", "Inbox"], .documents),
        (["Documents", "sub", "Inbox", "x"], .documents),
        (["Documents", "Inbox"], .inboxFolder),
        (["Documents", "Inbox", "a.pdf"], .inbox),
        (["Documents", "Inbox", "x", "y"], .inbox),
        (["Documents", "Inbox", "Inbox"], .inbox),
        (["Documents", "Inboxes"], .documents),
        (["Documents", "inbox"], .documents),
        (["Documents", "Caches"], .documents),
        (["Library"], .libraryFolder),
        (["Library", "Application Support"], .library),
        (["Library", "Application Support", "db.sqlite"], .library),
        (["Library", "SplashBoard", "Snapshots"], .library),
        (["Library", "Caches"], .cachesFolder),
        (["Library", "Caches", "a"], .caches),
        (["Library", "Caches", "Preferences", "a"], .caches),
        (["Library", "Preferences"], .preferencesFolder),
        (["Library", "Preferences", "com.example.plist"], .preferences),
        (["Library", "Inbox"], .library),
        (["tmp"], .tmpFolder),
        (["tmp", "scratch"], .tmp),
        (["tmp", "Documents", "Inbox"], .tmp),
        (["SystemData"], .rootOther),
        (["SystemData", "a", "b"], .rootOther),
        ([".com.apple.mobile_container_manager.metadata.plist"], .rootOther),
        (["Documentsx"], .rootOther),
        (["documents"], .rootOther),
        (["Documents.app"], .rootOther),
        (["Inbox"], .rootOther),
        (["Caches"], .rootOther),
        (["TMP"], .rootOther),
        (["MyApp"], .rootOther),
        (["MyApp.APP"], .rootOther),
        (["myapp.app"], .rootOther),
        ([".app"], .rootOther),
        (["MyApp.app.app"], .rootOther),
        (["Other.app"], .rootOther),
        (["Other.app", "Documents"], .rootOther),
    ])
    func zoneOfPath(path: [String], expected: Zone) {
        #expect(Self.layout.zone(ofPath: path) == expected)
    }

    @Test("zone(ofPath:) is zone(ofChild:in:) applied one component at a time")
    func pathIsChildAfterChild() {
        let path = ["Documents", "Inbox", "x", "y"]
        var zone = Zone.root
        var seen: [Zone] = []
        for name in path {
            zone = Self.layout.zone(ofChild: name, in: zone)
            seen.append(zone)
        }
        #expect(seen == [.documentsFolder, .inboxFolder, .inbox, .inbox])
        #expect(Self.layout.zone(ofPath: path) == zone)
    }

    @Test("below a content zone every name stays in that zone", arguments: Zone.containerZones)
    func contentZonesAreClosed(parent: Zone) {
        let names = ["Documents", "Library", "tmp", "Inbox", "Caches", "Preferences", "MyApp.app", "x"]
        let children = Set(names.map { Self.layout.zone(ofChild: $0, in: parent) })
        switch parent {
        case .root, .documentsFolder, .libraryFolder:
            #expect(children.count > 1)                 // these start zones of their own
        case .bundleFolder: #expect(children == [.bundle])
        case .inboxFolder: #expect(children == [.inbox])
        case .cachesFolder: #expect(children == [.caches])
        case .preferencesFolder: #expect(children == [.preferences])
        case .tmpFolder: #expect(children == [.tmp])
        default: #expect(children == [parent])
        }
    }

    @Test("an app named like a system folder keeps both apart", arguments: ["Inbox", "Documents", "tmp", "Library", "Caches"])
    func appNamedLikeAFolder(appName: String) {
        let layout = ContainerLayout(appName: appName)
        #expect(layout.bundleName == appName + ".app")
        #expect(layout.zone(ofPath: [appName + ".app"]) == .bundleFolder)
        #expect(layout.zone(ofPath: [appName + ".app", "Info.plist"]) == .bundle)
        #expect(layout.zone(ofPath: ["Documents"]) == .documentsFolder)
        #expect(layout.zone(ofPath: ["Documents", "Inbox"]) == .inboxFolder)
        #expect(layout.zone(ofPath: ["Documents", appName + ".app"]) == .documents)
        #expect(layout.zone(ofPath: ["Library", "Caches"]) == .cachesFolder)
        #expect(layout.zone(ofPath: ["tmp"]) == .tmpFolder)
    }

    @Test("names are compared byte for byte, not by Unicode equivalence")
    func namesAreBytes() {
        let composed = ContainerLayout(appName: "Caf\u{E9}")         // é as one code point
        #expect(composed.zone(ofPath: ["Caf\u{E9}.app"]) == .bundleFolder)
        #expect(composed.zone(ofPath: ["Cafe\u{301}.app"]) == .rootOther) // e + combining acute: another file name
        #expect(composed.appName == "Caf\u{E9}")
        #expect(composed.bundleName == "Caf\u{E9}.app")
    }

    @Test("required folders: the system folders and Application Support, each after its parent")
    func requiredFolders() {
        #expect(ContainerLayout.requiredFolders == [
            "Documents", "Documents/Inbox", "Library", "Library/Application Support",
            "Library/Caches", "Library/Preferences", "tmp",
        ])
        for (index, folder) in ContainerLayout.requiredFolders.enumerated() {
            let parts = folder.split(separator: "/").map(String.init)
            if parts.count > 1 {
                let parent = parts.dropLast().joined(separator: "/")
                let parentIndex = ContainerLayout.requiredFolders.firstIndex(of: parent)
                #expect(parentIndex.map { $0 < index } == true, "\(folder) before its parent")
            }
        }
        let zones = ContainerLayout.requiredFolders.map {
            Self.layout.zone(ofPath: $0.split(separator: "/").map(String.init))
        }
        #expect(zones == [.documentsFolder, .inboxFolder, .libraryFolder, .library,
                          .cachesFolder, .preferencesFolder, .tmpFolder])
    }
}
