// F3 with a real Swift program: an app's executable, built at test time
// with the toolchain's swiftc, installed as `<Name>.app/<Name>`
// (CFBundleExecutable) and launched: Foundation's `Bundle.main` is the
// `.app` as the app sees it through the mount, its resources are found
// there, and writing into it fails with EROFS.
//
//   swift test --filter BundleMainExample     (root: launch is confined)

import AppSandboxTesting
import Foundation
import Spawning
import Testing

private let probeSource = """
    import Foundation
    import Glibc
    print("bundle=\\(Bundle.main.bundleURL.path)")
    print("resource=\\(Bundle.main.url(forResource: "greeting", withExtension: "txt")?.path ?? "nil")")
    print("identifier=\\(Bundle.main.bundleIdentifier ?? "nil")")
    let fd = open(Bundle.main.bundleURL.path + "/written.txt", O_WRONLY | O_CREAT, 0o644)
    print(fd >= 0 ? "write=ok" : "write=\\(String(cString: strerror(errno)))")
    do {
        try Data("x".utf8).write(to: Bundle.main.bundleURL.appendingPathComponent("data.txt"))
        print("foundationWrite=ok")
    } catch {
        print("foundationWrite=\\((error as NSError).code)")
    }
    """

/// The probe, built once per source change beside the test binary
/// (`.build/debug/bundle-probe/`), dynamically linked against the
/// toolchain's Foundation.
private let probe: Result<String, FixtureError> = {
    let swiftc = ProcessInfo.processInfo.environment["SWIFTC"] ?? "/opt/swift/usr/bin/swiftc"
    let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? "/tmp/x"
    var folder = (executable as NSString).deletingLastPathComponent
    while !folder.isEmpty && folder != "/" && !folder.hasSuffix("/debug") && !folder.hasSuffix("/release") {
        folder = (folder as NSString).deletingLastPathComponent
    }
    folder += "/bundle-probe"
    let source = folder + "/probe.swift", program = folder + "/probe"
    try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    if (try? String(contentsOfFile: source, encoding: .utf8)) == probeSource && FileManager.default.isExecutableFile(atPath: program) {
        return .success(program)
    }
    try? FileManager.default.removeItem(atPath: program)
    do { try probeSource.write(toFile: source, atomically: true, encoding: .utf8) } catch {
        return .failure(FixtureError("\(source): \(error)"))
    }
    let built = ChildProcess.run([swiftc, source, "-o", program], timeout: 600)
    guard built.succeeded else {
        try? FileManager.default.removeItem(atPath: source)
        return .failure(FixtureError("\(swiftc) \(source) failed (\(built.status)): \(built.standardError)"))
    }
    return .success(program)
}()

@Suite("AppSandboxTesting example: Bundle.main of a launched Swift app",
       .enabled(if: MountedDevice.canLaunch, "launch needs root and /dev/fuse"),
       .enabled(if: FileManager.default.isExecutableFile(atPath: ProcessInfo.processInfo.environment["SWIFTC"] ?? "/opt/swift/usr/bin/swiftc"),
                "needs swiftc (/opt/swift/usr/bin/swiftc or $SWIFTC)"))
struct BundleMainExampleTests {
    /// F3: Bundle.main is the .app, through the mount; its resource is
    /// found; the .app is read-only (EROFS, errno and Foundation alike).
    @Test func f3BundleMainIsTheAppInItsBundleContainer() throws {
        let program = try probe.get()
        let app = MountedDevice.AppDescription(bundleID: "com.example.probe", name: "Probe",
                                               executable: .program(program), resources: ["greeting.txt": "hello\n"])
        try withMountedDevice(.init(apps: [app])) { device in
            let installed = try device.app("com.example.probe")
            let result = try device.launch(installed)
            #expect(result.succeeded, "\(result)")
            let lines = result.standardOutput.split(separator: "\n").map(String.init)
            #expect(installed.bundle.hasPrefix(device.mountpoint + "/Containers/Bundle/Application/"))
            #expect(lines.contains("bundle=\(installed.bundle)"), "\(lines)")
            #expect(lines.contains("resource=\(installed.bundle)/greeting.txt"), "\(lines)")
            #expect(lines.contains("identifier=com.example.probe"), "\(lines)")
            #expect(lines.contains("write=Read-only file system"), "\(lines)")
            // CocoaError.fileWriteVolumeReadOnly
            #expect(lines.contains("foundationWrite=\(CocoaError.fileWriteVolumeReadOnly.rawValue)"), "\(lines)")
        }
    }
}
