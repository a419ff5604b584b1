// What the fixture does on Linux without starting a program: lay out a
// container, serve one in-process, unmount as root, remove its folder.

#if os(Linux)
import AppSandboxFS
import BackingStore
import Glibc
import POSIXHelpers
import SandboxPolicy
import Spawning

enum FixtureSystem {
    /// A fresh container, as `appsandboxfs init --app-name NAME` lays it out
    /// (the same code: AppSandboxFS's `Container`).
    static func layOutContainer(_ backing: String, appName: String) throws {
        if let problem = ContainerLayout.problemWithAppName(appName) {
            throw FixtureError("app name \"\(appName)\": \(problem)")
        }
        do {
            try Container(backing: backing, layout: ContainerLayout(appName: appName)).create()
        } catch {
            throw FixtureError("laying out a container in \(backing): \(error)")
        }
    }

    /// Mounts and serves the container in this process (`Options.inProcess`);
    /// a template's missing folders are made first, as `mount --create` does.
    static func serveInProcess(backing: String, mountpoint: String, appName: String, root: String,
                               options: MountedContainer.Options) throws -> any ContainerServer {
        if let problem = ContainerLayout.problemWithAppName(appName) {
            throw FixtureError("app name \"\(appName)\": \(problem)")
        }
        let layout = ContainerLayout(appName: appName)
        if options.template != nil {
            do { try Container(backing: backing, layout: layout).create(withBundle: options.bundle == nil) } catch {
                throw FixtureError("completing the container \(backing): \(error)")
            }
        }
        return try InProcessDriver.start(backing: backing, mountpoint: mountpoint, layout: layout, root: root,
                                         options: options)
    }

    /// umount2(2) for root (fusermount3 does no more for root); nil for
    /// anyone else, who goes through fusermount3.
    static func unmountAsRoot(_ mountpoint: String) -> ProcessResult? {
        guard geteuid() == 0 else { return nil }
        if umount2(mountpoint, Int32(UMOUNT_NOFOLLOW)) == 0 {
            return ProcessResult(status: 0, standardOutput: "", standardError: "")
        }
        return ProcessResult(status: 1, standardOutput: "", standardError: "umount \(mountpoint): \(errorText(errno))")
    }

    /// `rm -rf --one-file-system PATH` without the process: never follows a
    /// link, never enters another file system (a mount still there).
    static func removeTree(_ path: String) {
        _ = TreeRemover.removeContents(ofFolderAt: path)
        rmdir(path)
    }

    /// An in-process container's device state changes directly; false for
    /// a driver process (reached through `appsandboxfs lock`).
    static func changeDeviceStateInProcess(_ server: any ContainerServer, verb: String, extra: [String]) throws -> Bool {
        guard let driver = server as? InProcessDriver else { return false }
        switch verb {
        case "lock":
            let grace = extra.count == 2 ? Double(extra[1]) ?? 10 : 10
            do { try driver.dataProtection.lock(grace: grace) } catch {
                throw FixtureError("lock: \(error)")
            }
        case "unlock": driver.dataProtection.unlock()
        case "reboot": driver.dataProtection.reboot()
        default: throw FixtureError("unknown device state change \(verb)")
        }
        return true
    }
}

/// Changes of this process's mount table: /proc/self/mountinfo polls with
/// POLLPRI after each mount or unmount, so a wait for a mount to appear
/// wakes when it does instead of at the next tick.
final class MountTableChanges {
    private let descriptor: Int32

    init() {
        descriptor = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC)
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Returns at the next change, or after `milliseconds`.
    func wait(milliseconds: Int32) {
        guard descriptor >= 0 else {
            usleep(UInt32(milliseconds) * 1000)
            return
        }
        var entry = pollfd(fd: descriptor, events: Int16(POLLPRI), revents: 0)
        _ = poll(&entry, 1, milliseconds)
    }
}
#endif
