import ArgumentParser
import CLinux
import DriverRuntime
import Glibc
import MountInfo
import POSIXHelpers
import SandboxPolicy

/// `run --confine` (R1-R5): gathers what the confined world must hide from
/// the mount table and the drivers' status records, lets SandboxPolicy's
/// ConfinementPlan decide, and has CLinux's confine.c make the world in a
/// new mount and PID namespace and start the command there. `run` itself
/// stays outside and waits: the namespaces need a process of their own,
/// and a Swift process (several threads) cannot unshare its mount namespace.
enum ConfinedRun {
    /// A user and group to run as instead of the caller's.
    struct Identity {
        var uid: uid_t
        var gid: gid_t

        /// "UID" or "UID:GID" (numbers; the group defaults to the user's
        /// number, as for iOS's mobile, 501:501).
        init?(_ text: String) {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2, let uid = UInt32(parts[0]) else { return nil }
            guard let gid = parts.count == 2 ? UInt32(parts[1]) : uid else { return nil }
            self.uid = uid
            self.gid = gid
        }
    }

    /// What `launch` changes in the world of `run --confine` on a device
    /// (G2): the app's tmp, the view of Containers, the working folder and
    /// the environment. Paths below the mountpoint are relative to it.
    struct AppWorld {
        var tmpFolder: String
        var viewRoot: String
        var readOnly: [String]
        var readWrite: [String]
        var workingDirectory: String
        var environment: [(name: String, value: String)]
    }

    /// Runs `command` confined to `container`; returns its shell status.
    /// `app` narrows the world to one app of a device (`launch`);
    /// `started` is told the pid of the world's first process once the
    /// command runs.
    static func run(_ command: [String], in container: MountedContainerPath, identity: Identity?,
                    app: AppWorld? = nil, started: (pid_t) -> Void = { _ in }) throws -> Int32 {
        let plan = try makePlan(for: container)
        let device = try mountDevice(of: plan.mountpoint)
        let workingDirectory = app?.workingDirectory ?? currentDirectory()

        // Everything the child needs, as C strings made before the clone
        // (the child may not allocate).
        let keep = CStrings()
        defer { keep.free() }
        let detach = keep.array(plan.detach)
        let hide = keep.array(plan.hide)
        let argv = keep.array(command) + [nil]
        let bridge = FoundationBridgeLibrary.forConfinedWorld(app?.environment ?? container.iOSEnvironment)
        let environment = environmentList(setting: bridge.environment)
        let envp = keep.array(environment) + [nil]
        let viewReadOnly = keep.array(app?.readOnly ?? [])
        let viewReadWrite = keep.array(app?.readWrite ?? [])

        var failure = asfs_confine_failure()
        let pid: pid_t = viewReadOnly.withUnsafeBufferPointer { readOnlyList in
          viewReadWrite.withUnsafeBufferPointer { readWriteList in
            detach.withUnsafeBufferPointer { detachList in
            hide.withUnsafeBufferPointer { hideList in
                argv.withUnsafeBufferPointer { argvList in
                    envp.withUnsafeBufferPointer { envpList in
                        var confinement = asfs_confinement()
                        confinement.mountpoint = UnsafePointer(keep.string(plan.mountpoint))
                        confinement.device_major = device.major
                        confinement.device_minor = device.minor
                        confinement.detach = UnsafeRawPointer(detachList.baseAddress)?.assumingMemoryBound(to: UnsafePointer<CChar>?.self)
                        confinement.detach_count = detachList.count
                        confinement.hide = UnsafeRawPointer(hideList.baseAddress)?.assumingMemoryBound(to: UnsafePointer<CChar>?.self)
                        confinement.hide_count = hideList.count
                        confinement.working_directory = workingDirectory.map { UnsafePointer(keep.string($0)) }
                        if let identity {
                            confinement.change_identity = 1
                            confinement.uid = identity.uid
                            confinement.gid = identity.gid
                        }
                        confinement.program = UnsafePointer(keep.string(command[0]))
                        confinement.search_path = nonEmptyEnvironment("PATH").map { UnsafePointer(keep.string($0)) }
                        confinement.argv = UnsafePointer(argvList.baseAddress)
                        confinement.envp = UnsafePointer(envpList.baseAddress)
                        if let app {
                            confinement.tmp_folder = UnsafePointer(keep.string(app.tmpFolder))
                            confinement.view_root = UnsafePointer(keep.string(app.viewRoot))
                            confinement.view_read_only = UnsafeRawPointer(readOnlyList.baseAddress)?.assumingMemoryBound(to: UnsafePointer<CChar>?.self)
                            confinement.view_read_only_count = readOnlyList.count
                            confinement.view_read_write = UnsafeRawPointer(readWriteList.baseAddress)?.assumingMemoryBound(to: UnsafePointer<CChar>?.self)
                            confinement.view_read_write_count = readWriteList.count
                        }
                        return asfs_confine_start(&confinement, &failure)
                    }
                }
            }
          }
        }
        }
        guard pid > 0 else { throw describe(failure, command: command[0]) }
        if let warning = bridge.warning { FileHandleless.warn(warning) }
        started(pid)
        return asfs_confine_wait(pid)
    }

    /// The plan for this container, or the one-line refusal (R1, R5).
    static func makePlan(for container: MountedContainerPath) throws -> ConfinementPlan {
        // In a user namespace other than the first, the mounts inherited from
        // outside are locked: the other containers could not be unmounted
        // (umount answers EINVAL, as for a folder that is no mount), and the
        // command would run half-confined (R2, R5).
        if let map = try? String(contentsOfFileWithoutFoundation: "/proc/self/uid_map"),
           map.split(whereSeparator: \.isWhitespace) != ["0", "0", "4294967295"] {
            throw Failure("\(container.mountpoint): --confine cannot make its world inside a user namespace (the mounts inherited there are locked, so other containers could not be unmounted); nothing was run")
        }
        // The bundle source is known only from the driver's record: without
        // the records it could not be hidden (R2), so nothing runs (R5).
        let records: [(record: MountRecord, alive: Bool)]
        do { records = try StatusFile.recordsOrFailure() } catch {
            throw Failure("\(container.mountpoint): cannot read the drivers' status records (\(error)), which name what the confined world must hide; nothing was run")
        }
        // This container's driver serves its control socket beside its
        // record: a command running as root that reached it could unlock
        // its own device (R2, R3). Its record in this state folder, tied to
        // the mount by the device number, proves the driver uses this
        // folder, which is hidden below. A driver started with another
        // APPSANDBOXFS_STATE_DIR (or by another user) serves from a folder
        // no one here can name: refused (R5).
        let device = MountTable.entry(at: container.mountpoint)?.deviceNumber
        guard let driver = records.last(where: { $0.alive && $0.record.mountpoint == container.mountpoint
                                                 && $0.record.device != nil && $0.record.device == device })?.record else {
            throw Failure("\(container.mountpoint): its driver's status record is not in \(StatusFile.directory) (a driver started with another APPSANDBOXFS_STATE_DIR, or by another user), so the folder of its control socket cannot be hidden: run with the driver's APPSANDBOXFS_STATE_DIR; nothing was run")
        }
        // Every other container is unmounted inside; its backing directory
        // is hidden only where its line can be believed (the same check as
        // the other verbs'): a line of another user's names what that user
        // chose, "/" or this container's Documents say.
        let mounts = MountTable.entries().filter(\.isContainer).map { entry in
            ConfinementPlan.ContainerMount(mountpoint: entry.mountpoint,
                                           backing: try? entry.trustedBacking(records: records))
        }
        let bundleSource = driver.options.bundle
        var temporaryFolders = ["/tmp", "/var/tmp"]
        temporaryFolders += temporaryFolders.compactMap(realPath).filter { !temporaryFolders.contains($0) }
        let this = ConfinementPlan.ContainerMount(mountpoint: container.mountpoint, backing: container.backing)
        // Root's drivers' folder whoever runs this, and this user's own,
        // where this container's driver serves (its record is there).
        let stateFolders = Array(Set(["/run/appsandboxfs", StatusFile.directory]))
        switch ConfinementPlan.make(container: this, bundleSource: bundleSource, mounts: mounts,
                                    temporaryFolders: temporaryFolders, stateFolders: stateFolders) {
        case .success(let plan): return plan
        case .failure(let refusal): throw Failure("\(container.mountpoint): \(refusal)")
        }
    }

    /// The device of the container mount at `mountpoint`, which confine.c
    /// checks the path still leads to.
    private static func mountDevice(of mountpoint: String) throws -> (major: UInt32, minor: UInt32) {
        let entry = MountTable.entry(at: mountpoint)
        let parts = (entry?.device ?? "").split(separator: ":").compactMap { UInt32($0) }
        guard entry?.fsType == MountTable.containerType, parts.count == 2 else {
            throw Failure("\(mountpoint): not a mounted container any more; nothing was run")
        }
        return (parts[0], parts[1])
    }

    /// The exit status and one line for a world or command that could not
    /// be started.
    private static func describe(_ failure: asfs_confine_failure, command: String) -> Error {
        var step = failure.step
        let what = withUnsafeBytes(of: &step) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let reason = errorText(failure.error)
        switch failure.exit_status {
        case 127:
            FileHandleless.warn("\(command): command not found")
            return ExitCode(127)
        case 126:
            FileHandleless.warn("\(command): \(reason)")
            return ExitCode(126)
        default:
            var hint = ""
            if failure.error == EPERM { hint = " (--confine needs root: CAP_SYS_ADMIN to make a mount and PID namespace)" }
            if failure.error == ENOSYS { hint = " (this kernel lacks it: --confine needs Linux 5.12 or later)" }
            return Failure("cannot make the confined world: \(what): \(reason)\(hint); nothing was run")
        }
    }

    private static func currentDirectory() -> String? {
        guard let path = getcwd(nil, 0) else { return nil }
        defer { Glibc.free(path) }
        return String(cString: path)
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { Glibc.free(resolved) }
        return String(cString: resolved)
    }

    /// This process's environment with `setting` put first (replacing the
    /// same names), as "NAME=value".
    private static func environmentList(setting: [(String, String)]) -> [String] {
        let names = Set(setting.map(\.0))
        var list = setting.map { "\($0.0)=\($0.1)" }
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            let name = String(text.prefix { $0 != "=" })
            if !names.contains(name) { list.append(text) }
            entry += 1
        }
        return list
    }
}

/// C strings that live until `free()`.
private final class CStrings {
    private var owned: [UnsafeMutablePointer<CChar>] = []

    func string(_ text: String) -> UnsafeMutablePointer<CChar> {
        let copy = strdup(text)!
        owned.append(copy)
        return copy
    }

    func array(_ texts: [String]) -> [UnsafeMutablePointer<CChar>?] { texts.map { string($0) } }

    func free() { owned.forEach { Glibc.free($0) } }
}
