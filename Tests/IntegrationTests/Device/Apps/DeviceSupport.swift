// A device of many apps for the part-three tests (A1-A6, G1, M1): made with
// `appsandboxfs device init`, mounted with `appsandboxfs mount` (a driver of
// its own), unmounted and removed whatever happens.

import Foundation
import Glibc
import Testing

final class MountedDevice {
    let root: String
    var backing: String { root + "/device" }
    var mountpoint: String { root + "/mnt" }
    var denialLog: String { root + "/denials.log" }

    /// `parent`: outsideTemporaryFolders for `launch` (confined, R1).
    /// With `mountLater`, the device is made but not mounted (the test mounts it).
    init(initArguments: [String] = [], mountArguments: [String] = [], in parent: String = "/tmp",
         mountLater: Bool = false) throws {
        root = try makeTemporaryDirectory(prefix: "device-apps", in: parent)
        try makeDirectory(mountpoint)
        let made = runProcess([Binaries.appsandboxfs, "device", "init", backing] + initArguments)
        guard made.status == 0 else { throw SupportError("device init: \(made)") }
        if !mountLater { try mount(mountArguments) }
    }

    func mount(_ extra: [String] = []) throws {
        let mounted = runProcess([Binaries.appsandboxfs, "mount", backing, mountpoint, "--denial-log", denialLog] + extra)
        guard mounted.status == 0, isFuseMount(mountpoint) else { throw SupportError("mount: \(mounted)") }
    }

    func unmount() {
        guard isFuseMount(mountpoint) else { return }
        let done = runProcess([Binaries.appsandboxfs, "unmount", mountpoint], timeout: 30)
        if done.status != 0 || isFuseMount(mountpoint) {
            _ = runProcess(["fusermount3", "-u", "-z", mountpoint], timeout: 15)
        }
    }

    /// Unmounts (waiting for the driver) and removes everything.
    func finish() {
        unmount()
        removeTree(root)
    }

    func path(_ relative: String) -> String { mountpoint + "/" + relative }

    /// `appsandboxfs VERB MOUNTPOINT ARGS...`
    func run(_ verb: String, _ arguments: [String] = []) -> (status: Int32, stdout: String, stderr: String) {
        runProcess([Binaries.appsandboxfs, verb, mountpoint] + arguments)
    }

    func lines(_ text: String) -> [String] { text.split(separator: "\n").map(String.init) }

    /// An app folder made by the test: Info.plist (XML or binary) naming
    /// `bundleID`, an executable, a resource; with `entitlementGroups`, an
    /// entitlements plist listing them.
    func makeApp(_ name: String, bundleID: String?, binary: Bool = false, entitlementGroups: [String]? = nil,
                 version: Int = 1) throws -> String {
        let folder = root + "/builds-\(version)/" + name
        try makeDirectory(root + "/builds-\(version)")
        try makeDirectory(folder)
        var info: [String: Any] = ["CFBundleExecutable": name.replacingOccurrences(of: ".app", with: ""),
                                   "CFBundleVersion": "\(version)"]
        if let bundleID { info["CFBundleIdentifier"] = bundleID }
        let plist = try PropertyListSerialization.data(fromPropertyList: info, format: binary ? .binary : .xml, options: 0)
        try writeFile(folder + "/Info.plist", Array(plist))
        try writeFile(folder + "/" + name.replacingOccurrences(of: ".app", with: ""), "#!/bin/sh\necho v\(version)\n", mode: 0o755)
        try writeFile(folder + "/resource.txt", "version \(version)\n")
        if let entitlementGroups {
            let entitlements = try PropertyListSerialization.data(
                fromPropertyList: ["com.apple.security.application-groups": entitlementGroups], format: .xml, options: 0)
            try writeFile(folder + "/App.entitlements", Array(entitlements))
        }
        return folder
    }

    /// The denial lines written so far.
    func denialLines() -> [String] { lines(readFileText(denialLog)) }
}

func withMountedDevice(initArguments: [String] = [], mountArguments: [String] = [],
                       _ body: (MountedDevice) throws -> Void) throws {
    let device = try MountedDevice(initArguments: initArguments, mountArguments: mountArguments)
    defer { device.finish() }
    try body(device)
}

/// The dictionary of a property list file.
func readPlist(_ path: String) -> [String: Any]? {
    guard let bytes = readFileBytes(path) else { return nil }
    return (try? PropertyListSerialization.propertyList(from: Data(bytes), options: [], format: nil)) as? [String: Any]
}

/// An upper-case RFC 4122 UUID string.
func isUpperCaseUUID(_ name: String) -> Bool {
    guard let uuid = UUID(uuidString: name) else { return false }
    return uuid.uuidString == name && name == name.uppercased()
}
