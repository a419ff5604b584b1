import AppSandboxFS
import ArgumentParser
import BackingStore
import ContainerBackup
import DriverRuntime
import Glibc
import MountInfo
import POSIXHelpers
import SandboxPolicy
import SystemPackage

struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        _superCommandName: "appsandboxfs",
        abstract: "Build a container from a backup archive, as a device restore does: Documents and Library from the archive, Library/Caches and tmp empty (K3).",
        discussion: """
            CONTAINER is a new backing directory (absent, or an empty folder), or with
            --replace an existing container whose data the archive replaces (its bundle is
            kept unless --bundle-from is given). It must not be mounted. The container is
            built beside CONTAINER and moved into place at the end: a restore that fails
            changes nothing. Members of the archive in the bundle, Library/Caches, tmp or
            elsewhere at the root are not restored.
            The app's name comes from --app-name, else from the archive (backup records
            it), else from the container being replaced.
            An archive is untrusted input: set-user-ID and set-group-ID bits, file
            capabilities, security.*, trusted.* and system.* attributes (ACLs), device
            nodes, FIFOs and sockets are left out, and every file belongs to the owner of
            the container being replaced (or, for a new container, to the user who
            restores). What was left out is listed, one line per kind. Give
            --preserve-privileges to restore all of it as the archive says (only for an
            archive you made yourself and trust).
            A device's backup (M2) is restored onto a device (its mountpoint, or its backing
            directory) with the same bundle and group ids installed and no app launched: each
            domain replaces the data of the matching container, its metadata kept.
            Examples:
              appsandboxfs restore MyApp-backup.tar ~/containers/MyApp-restored
              appsandboxfs restore MyApp-backup.tar ~/containers/MyApp --replace
              appsandboxfs restore phone-backup.tar /mnt/phone
            """)

    @Argument(help: "The archive to read, or - for standard input.")
    var archive: String

    @Argument(help: "The backing directory to build.")
    var container: String

    @Flag(help: "Replace the data of an existing (unmounted) container.")
    var replace = false

    @Option(help: "The app's name (the bundle is NAME.app).")
    var appName: String?

    @Option(help: "A bundle folder whose contents are copied into NAME.app (as `update` copies a build: U1).")
    var bundleFrom: String?

    @Flag(help: "Restore set-ID bits, file capabilities, security/trusted/system attributes, device nodes, FIFOs, sockets and owners as the archive says (for an archive you trust).")
    var preservePrivileges = false

    @Flag(help: "Show no progress line (it is shown on a terminal for runs longer than half a second).")
    var noProgress = false

    /// M2: a device's backup onto a device (mounted or not) with the same
    /// bundle and group ids installed and no app launched.
    func restoreDevice(_ device: DeviceArgument) throws {
        if archive == "-" { throw Failure("a device's backup is read once per domain: give the archive's file, not -") }
        if replace || appName != nil || bundleFrom != nil {
            throw Failure("\(device.path): a device: --replace, --app-name and --bundle-from do not apply (each domain replaces its container)")
        }
        let path = absolutePath(archive)
        let input = open(path, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw Failure("\(archive): \(errorText(errno))") }
        let opening: TarArchive.Opening
        do {
            defer { close(input) }
            opening = try TarArchive.open(FileDescriptor(rawValue: input))
        } catch { throw Failure("\(archive): \(error)") }
        guard let domains = opening.records[DeviceDomains.keyword] else {
            throw Failure("\(archive): a container's backup, not a device's: restore it into a container's backing directory")
        }
        for line in try DeviceBackup.restore(archive: path, domains: domains, into: device,
                                             privileges: preservePrivileges ? .preserve : nil) {
            print("Restored \(line)")
        }
    }

    func run() throws {
        let target = absolutePath(container)
        if let device = try? DeviceArgument(target) {
            try restoreDevice(device)
            return
        }
        if let entry = MountTable.entry(at: target) {
            throw Failure("\(target): a mount point (\(entry.fsType)): restore into the backing directory of an unmounted container")
        }
        if let mountpoint = MountTable.mountpoints(ofBacking: target).first {
            throw Failure("\(target): the container is mounted at \(mountpoint): unmount it first (appsandboxfs unmount \(mountpoint))")
        }
        var status = stat()
        let exists = lstat(target, &status) == 0
        var existingApp: String?
        if replace {
            guard exists else { throw Failure("\(target): \(errorText(errno)) (--replace needs an existing container)") }
            existingApp = try? ContainerDriver.guessAppName(in: target)
        } else if exists {
            guard status.st_mode & S_IFMT == S_IFDIR, (try? FileManagerless.list(target))?.isEmpty == true else {
                throw Failure("\(target): exists and is not an empty folder: restore into a new folder, or give --replace to replace a container's data")
            }
        } else {
            try MountChecks.folder(splitPath(target).folder, role: "folder")
        }

        let input: Int32
        var size: Int64?
        if archive == "-" {
            input = STDIN_FILENO
        } else {
            input = open(absolutePath(archive), O_RDONLY | O_CLOEXEC)
            guard input >= 0 else { throw Failure("\(archive): \(errorText(errno))") }
            var archiveStatus = stat()
            if fstat(input, &archiveStatus) == 0 && archiveStatus.st_mode & S_IFMT == S_IFREG {
                size = Int64(archiveStatus.st_size)
            }
        }
        defer { if input != STDIN_FILENO { close(input) } }
        let opening: TarArchive.Opening
        do { opening = try TarArchive.open(FileDescriptor(rawValue: input)) } catch { throw Failure("\(archive): \(error)") }

        if opening.records[DeviceDomains.keyword] != nil {
            throw Failure("\(archive): a device's backup (M2): restore it onto a device (appsandboxfs restore ARCHIVE MOUNTPOINT)")
        }
        guard let name = appName ?? existingApp ?? opening.appName else {
            throw Failure("\(archive): the archive does not name its app: give --app-name")
        }
        if appName == nil, let existingApp, let archived = opening.appName, archived != existingApp {
            throw Failure("\(archive): a backup of \(archived), but \(target) holds \(existingApp).app: give --app-name to restore it anyway")
        }
        if let problem = ContainerLayout.problemWithAppName(name) { throw Failure("app name \"\(name)\": \(problem)") }
        let layout = ContainerLayout(appName: name)
        let bundle = bundleFrom.map(absolutePath)
        if replace {
            try MountChecks.container(Container(backing: target, layout: layout), bundleElsewhere: true)
        }
        var bundleStatus = stat()
        let keepBundle = replace && bundle == nil && lstat(target + "/" + layout.bundleName, &bundleStatus) == 0
        let mode: ContainerRestore.Mode = replace ? .replace(keepBundle: keepBundle) : .create

        let progress = ProgressLine("restore", enabled: !noProgress)
        let outcome: ContainerRestore.Outcome
        var bundleLeftOut = DroppedPrivileges()
        do {
            outcome = try ContainerRestore.restore(
                FileDescriptor(rawValue: input), opening: opening, expected: size, into: target, layout: layout, mode: mode,
                privileges: preservePrivileges ? .preserve : nil,
                layOut: { root, path, owner in
                    bundleLeftOut = try Container.layOut(in: root, path: path, layout: layout, bundleFrom: bundle,
                                                         bundleOwner: owner, withBundle: !keepBundle)
                },
                progress: { progress?.update($0) })
        } catch {
            progress?.finish()
            throw Failure("\(archive): cannot restore into \(target): \(error)")
        }
        progress?.finish()
        for leftover in outcome.leftovers { FileHandleless.warn("cannot remove the old data: \(leftover)") }
        for line in outcome.dropped.lines {
            FileHandleless.warn("left out of the archive (--preserve-privileges keeps it): \(line)")
        }
        for line in bundleLeftOut.lines { FileHandleless.warn("left out of the bundle (U1): \(line)") }
        let restored = try? BackupScan.run(root: target, layout: layout)
        let holds = restored.map { ": it holds \($0.report.backup.described) to back up" } ?? ""
        print("Restored \(archive) into \(target) (app \(name); Library/Caches and tmp empty)\(holds)")
    }
}
