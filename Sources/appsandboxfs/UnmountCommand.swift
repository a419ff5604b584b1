import ArgumentParser
import Foundation

struct UnmountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unmount",
        abstract: "Unmount a container (also a stale one whose driver died).",
        discussion: """
            Returns once the mount is gone and its driver has emptied tmp (unless mounted
            with --keep-tmp) and exited, so the container can be mounted again at once.
            A busy mount (a file or working folder still open
            in it) is detached lazily: it goes away when the last one closes (then the
            driver empties tmp and exits after this command has returned). A stale
            mount (the driver died) is cleaned up. `umount MOUNTPOINT` (as root) and
            `fusermount3 -u MOUNTPOINT` unmount too.
            Exit status: 0; 1 when MOUNTPOINT cannot be unmounted (it is not a mount).
            Examples:
              appsandboxfs unmount /mnt/MyApp
              appsandboxfs status /mnt/MyApp || appsandboxfs unmount /mnt/MyApp
            """)

    @Argument(help: "The mountpoint.")
    var mountpoint: String

    func run() throws {
        let path = absolutePath(mountpoint)
        // Root may unmount anything: refuse what is not a container.
        if let entry = MountTable.entry(at: path), entry.fsType != "fuse.appsandboxfs" {
            throw Failure("\(path): not an appsandboxfs mount (it is \(entry.fsType)); nothing unmounted")
        }
        // A stale mount (the driver died) or a busy one (a file still open in
        // it) can only be detached lazily; say why only if that fails too.
        if !MountChecks.isStale(path) {
            // The driver's record goes as its session ends: find it first.
            let driver = StatusFile.records().first { $0.alive && $0.record.mountpoint == path }?.record
            let (status, message) = runTool("/usr/bin/fusermount3", ["-u", path], capturingErrors: true)
            if status == 0 {
                if let driver { Self.waitForExit(driver) }
                return
            }
            guard MountTable.isMounted(path) else {
                throw Failure("\(path): not mounted\(message.isEmpty ? "" : " (" + message + ")")")
            }
        }
        let (status, message) = runTool("/usr/bin/fusermount3", ["-u", "-z", path], capturingErrors: true)
        if status == 0 { return }
        throw Failure("\(path): cannot unmount: \(message.isEmpty ? "fusermount3 exited with \(status)" : message)")
    }
}

extension UnmountCommand {
    /// Waits until the driver has ended: after the mount is gone it empties
    /// tmp (T2) and exits; returning earlier would let a new mount of the
    /// container, or a look at tmp, race with that.
    static func waitForExit(_ driver: MountRecord) {
        // Bounded: a driver that cannot finish is reported, not waited for forever.
        for _ in 0..<60_000 {
            guard StatusFile.isAlive(driver) else { return }
            usleep(2_000)
        }
        FileHandleless.warn("the driver (pid \(driver.pid)) has not exited 2 minutes after the unmount: tmp may not be empty yet")
    }
}

/// Runs a program and returns its exit status.
func runTool(_ path: String, _ arguments: [String]) -> Int32 {
    runTool(path, arguments, capturingErrors: false).status
}

/// Runs a program; with `capturingErrors`, what it writes to standard error
/// is returned (as one line) instead of shown.
func runTool(_ path: String, _ arguments: [String], capturingErrors: Bool) -> (status: Int32, errors: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let pipe = Pipe()
    if capturingErrors { process.standardError = pipe }
    do {
        try process.run()
    } catch {
        return (127, "\(path): cannot run")
    }
    let data = capturingErrors ? pipe.fileHandleForReading.readDataToEndOfFile() : Data()
    process.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
        .split(separator: "\n").map(String.init).joined(separator: "; ")
    return (process.terminationStatus, text)
}

func absolutePath(_ path: String) -> String {
    if path.hasPrefix("/") { return URL(fileURLWithPath: path).standardizedFileURL.path }
    return URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(path).standardizedFileURL.path
}
