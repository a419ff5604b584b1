// Part three's zones (A1-A3, A6, G1): a device's folders, its containers'
// UUID folders, their metadata plists and group containers, derived from
// names, and their rows of the rule table.

import SandboxPolicy
import Testing

@Suite("Device zones and rows (A3, A6, G1)")
struct DeviceZoneTests {
    static let layout = ContainerLayout.device
    static let uuid = "0A1B2C3D-0000-4000-8000-00000000ABCD"
    static let metadata = ".com.apple.mobile_container_manager.metadata.plist"
    static let data = ["Containers", "Data", "Application", uuid]
    static let group = ["Containers", "Shared", "AppGroup", uuid]
    static let bundle = ["Containers", "Bundle", "Application", uuid]

    @Test("A1-A3 every path shape of a device lies in its zone", arguments: [
        ([], Zone.deviceRoot),
        (["Containers"], .containersFolder),
        (["Containers", "Bundle"], .bundleParentFolder),
        (["Containers", "Bundle", "Application"], .bundleApplicationsFolder),
        (["Containers", "Data"], .dataParentFolder),
        (["Containers", "Data", "Application"], .dataApplicationsFolder),
        (["Containers", "Shared"], .sharedParentFolder),
        (["Containers", "Shared", "AppGroup"], .appGroupsFolder),
        ([".appsandboxfs-device.plist"], .deviceOther),
        (["Containers", "Other"], .deviceOther),
        (["Containers", "Data", "Other", "x"], .deviceOther),
        (bundle, .bundleContainer),
        (bundle + [metadata], .containerMetadata),
        (bundle + ["Notes.app"], .bundleFolder),
        (bundle + ["Notes.app", "Info.plist"], .bundle),
        (bundle + ["Notes.app", "Documents", "Inbox"], .bundle),
        (data, .dataContainer),
        (data + [metadata], .containerMetadata),
        (data + ["Documents"], .documentsFolder),
        (data + ["Documents", "Inbox"], .inboxFolder),
        (data + ["Documents", "Inbox", "a.pdf"], .inbox),
        (data + ["Documents", "Inbox", "a", "b"], .inbox),
        (data + ["Library", "Caches"], .cachesFolder),
        (data + ["Library", "Caches", "x", "y"], .caches),
        (data + ["Library", "Preferences"], .preferencesFolder),
        (data + ["Library", "Application Support"], .library),
        (data + ["tmp"], .tmpFolder),
        (data + ["tmp", "a", "b", "c"], .tmp),
        (data + ["SystemData"], .rootOther),
        (data + ["Notes.app"], .rootOther),
        (group, .groupContainer),
        (group + [metadata], .containerMetadata),
        (group + ["Library"], .libraryFolder),
        (group + ["Library", "Caches"], .cachesFolder),
        (group + ["Library", "Preferences"], .preferencesFolder),
        (group + ["Library", "Application Support"], .library),
        (group + ["Database"], .groupContent),
        (group + ["Database", "shared.sqlite"], .groupContent),
        (group + ["Documents", "Inbox"], .groupContent),
    ] as [([String], Zone)])
    func derivation(_ path: [String], _ expected: Zone) {
        #expect(Self.layout.zone(ofPath: path) == expected, "\(path)")
    }

    @Test("A3 nothing above the containers, no UUID folder and no metadata plist may change: EPERM for every kind of change",
          arguments: [Zone.deviceRoot, .containersFolder, .bundleParentFolder, .bundleApplicationsFolder, .dataParentFolder,
                      .dataApplicationsFolder, .sharedParentFolder, .appGroupsFolder, .deviceOther, .bundleContainer,
                      .dataContainer, .groupContainer, .containerMetadata])
    func systemEntries(_ zone: Zone) {
        let denied = Verdict.deny(.notPermitted, .fileWriteUnlink)
        #expect(SandboxPolicy.decide(.unlink(entry: zone)) == denied)
        #expect(SandboxPolicy.decide(.removeDirectory(entry: zone)) == denied)
        #expect(SandboxPolicy.decide(.rename(entry: zone, into: .documents, replacing: nil)) == .deny(.notPermitted, .fileWriteRename))
        #expect(SandboxPolicy.decide(.open(zone, write: true, truncate: false)) == .deny(.notPermitted, .fileWriteData))
        #expect(SandboxPolicy.decide(.setAttributes(zone, .mode)) == .deny(.notPermitted, .fileWriteMode))
        #expect(SandboxPolicy.decide(.setAttributes(zone, .owner)) == .deny(.notPermitted, .fileWriteOwner))
        #expect(SandboxPolicy.decide(.setAttributes(zone, .times)) == .deny(.notPermitted, .fileWriteTimes))
        #expect(SandboxPolicy.decide(.setExtendedAttribute(zone)) == .deny(.notPermitted, .fileWriteXattr))
        #expect(SandboxPolicy.decide(.removeExtendedAttribute(zone)) == .deny(.notPermitted, .fileWriteXattr))
        #expect(SandboxPolicy.decide(.link(source: zone, into: .documents)) == .deny(.notPermitted, .fileLink))
        // Nothing is added to them, except to a group container's root (G1).
        let add = SandboxPolicy.decide(.makeDirectory(in: zone))
        #expect(add == (zone == .groupContainer ? .allow : .deny(.notPermitted, .fileWriteCreate)), "\(zone)")
    }

    @Test("A3 B rules hold for a bundle container's .app; G1 a group's own entries are read-write, its Library cannot go")
    func bundleAndGroup() {
        let bundleFolder = Self.layout.zone(ofPath: Self.bundle + ["Notes.app"])
        #expect(SandboxPolicy.decide(.create(in: bundleFolder)) == .deny(.readOnly, .fileWriteCreate))
        let content = Self.layout.zone(ofPath: Self.group + ["Database", "db.sqlite"])
        for operation: FileOperation in [.create(in: content), .unlink(entry: content), .open(content, write: true, truncate: true),
                                         .setExtendedAttribute(content), .rename(entry: content, into: .groupContainer, replacing: nil)] {
            #expect(SandboxPolicy.decide(operation) == .allow, "\(operation)")
        }
        for folder in [["Library"], ["Library", "Caches"], ["Library", "Preferences"]] {
            let zone = Self.layout.zone(ofPath: Self.group + folder)
            #expect(SandboxPolicy.decide(.removeDirectory(entry: zone)) == .deny(.notPermitted, .fileWriteUnlink), "\(folder)")
        }
    }

    @Test("A6 the container of a device path: its first four names")
    func containerOfPath() {
        #expect(ContainerLayout.container(of: Self.data + ["Documents", "a"]) == ArraySlice(Self.data))
        #expect(ContainerLayout.container(of: Self.data) == ArraySlice(Self.data))
        #expect(ContainerLayout.container(of: ["Containers", "Data", "Application"]) == nil)
    }

    @Test("A2 bundle and group ids: reverse-DNS ASCII letters, digits, - and .", arguments: [
        ("com.example.app", true), ("group.com.example-1.x", true), ("A.B", true),
        ("", false), ("nodots", false), ("com..example", false), (".com.example", false), ("com.example.", false),
        ("com.exa mple", false), ("com/example.x", false), ("com.éxample", false), ("com_example.x", false),
    ])
    func identifiers(_ id: String, _ valid: Bool) {
        #expect((ContainerLayout.problemWithIdentifier(id) == nil) == valid, "\(id)")
    }

    @Test("one container's layout keeps its depth and root zone")
    func containerUnchanged() {
        let container = ContainerLayout(appName: "MyApp")
        #expect(container.zoneDepth == 3 && container.rootZone == .root && !container.isDevice)
        #expect(Self.layout.zoneDepth == 7 && Self.layout.rootZone == .deviceRoot && Self.layout.isDevice)
    }
}
