// How to test what a device does around the app: an App Store update that
// replaces the app but must keep its data (U1), and a disk that fills up
// (Q1-Q2). The container is mounted by the real driver; `updateApp`
// unmounts it, installs the new build with `appsandboxfs update` and mounts
// it again, as iOS stops, updates and relaunches the app.
//
//   swift test --filter DeviceExample

import AppSandboxTesting
import Foundation
import Testing

@Suite("AppSandboxTesting example: app update and a full disk")
struct DeviceExampleTests {
    /// A build folder of the app at `version`.
    static func makeBuild(version: Int) throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("build-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let plist = try PropertyListSerialization.data(
            fromPropertyList: ["CFBundleIdentifier": "com.example.TestApp", "CFBundleShortVersionString": "\(version).0"],
            format: .xml, options: 0)
        try plist.write(to: URL(fileURLWithPath: folder + "/Info.plist"))
        try Data("schema \(version)\n".utf8).write(to: URL(fileURLWithPath: folder + "/schema.txt"))
        return folder
    }

    @Test("App update: version 2 replaces version 1, the user's notes and settings survive (U1)")
    func appUpdateKeepsData() throws {
        let version1 = try Self.makeBuild(version: 1), version2 = try Self.makeBuild(version: 2)
        defer {
            try? FileManager.default.removeItem(atPath: version1)
            try? FileManager.default.removeItem(atPath: version2)
        }
        var options = MountedContainer.Options()
        options.prepare = { backing in
            // Install version 1 as the container's bundle.
            let bundle = backing + "/TestApp.app"
            try FileManager.default.removeItem(atPath: bundle)
            try FileManager.default.copyItem(atPath: version1, toPath: bundle)
        }
        try withMountedContainer(options) { container in
            let home = container.mountpoint
            #expect(try String(contentsOfFile: container.path(.bundle) + "/schema.txt", encoding: .utf8) == "schema 1\n")
            // Version 1 of the app saves a note and a setting.
            try Data("Buy milk".utf8).write(to: URL(fileURLWithPath: home + "/Documents/note.txt"))
            try Data("<plist/>".utf8).write(to: URL(fileURLWithPath: home + "/Library/Preferences/com.example.TestApp.plist"))

            try container.updateApp(bundle: version2)

            #expect(try String(contentsOfFile: container.path(.bundle) + "/schema.txt", encoding: .utf8) == "schema 2\n")
            #expect(try String(contentsOfFile: home + "/Documents/note.txt", encoding: .utf8) == "Buy milk")
            #expect(FileManager.default.fileExists(atPath: home + "/Library/Preferences/com.example.TestApp.plist"))
        }
    }

    @Test("A full disk: saving fails with ENOSPC, and works again after the app frees space (Q1, Q2)")
    func fullDisk() throws {
        try withMountedContainer(MountedContainer.Options(capacity: "4M")) { container in
            let documents = container.path(.documents)
            let attributes = try FileManager.default.attributesOfFileSystem(forPath: container.mountpoint)
            #expect((attributes[.systemSize] as? NSNumber)?.int64Value == 4 << 20)
            try Data(count: 3 << 20).write(to: URL(fileURLWithPath: documents + "/video.mov"))
            #expect(throws: (any Error).self) {
                try Data(count: 2 << 20).write(to: URL(fileURLWithPath: documents + "/photo.heic"))
            }
            try FileManager.default.removeItem(atPath: documents + "/video.mov")
            try Data(count: 2 << 20).write(to: URL(fileURLWithPath: documents + "/photo.heic"))
        }
    }
}
