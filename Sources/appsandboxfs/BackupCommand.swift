import AppSandboxFS
import ArgumentParser
import ContainerBackup
import DriverRuntime
import Glibc
import POSIXHelpers
import SystemPackage

struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        _superCommandName: "appsandboxfs",
        abstract: "Write a backup archive of a container: exactly what backup-report counts as backed up (K3).",
        discussion: """
            CONTAINER is a backing directory or the mountpoint of a mounted container.
            ARCHIVE is a pax tar archive (GNU tar lists it: tar --xattrs -tvf ARCHIVE) holding
            Documents and Library except Library/Caches and except what is marked "do not
            back up", with modes, owners, modification times and extended attributes.
            "-" writes it to standard output. The file is written under a temporary name
            and renamed when complete, readable by its owner only.
            A device's backup (M2) holds each data container under AppDomain-<bundle id>/ and
            each group container under AppDomainGroup-<group id>/ (not their Library/Caches,
            not the bundles, not the container manager's metadata plists).
            Examples:
              appsandboxfs backup ~/containers/MyApp MyApp-backup.tar
              appsandboxfs backup /mnt/MyApp - | ssh host 'cat > MyApp.tar'
            """)

    @Argument(help: "The container (backing directory or mountpoint).")
    var container: String

    @Argument(help: "The archive to write, or - for standard output.")
    var archive: String

    @Option(help: "The app's name. Default: the one *.app folder in the container.")
    var appName: String?

    @Flag(help: "Show no progress line (it is shown on a terminal for runs longer than half a second).")
    var noProgress = false

    func run() throws {
        let argument = try ContainerArgument(container)
        let device = Device.isDevice(argument.backing) ? try DeviceArgument(container) : nil
        let layout = device == nil ? try argument.layout(appName: appName) : .device
        let toStandardOutput = archive == "-"
        let archivePath = toStandardOutput ? "-" : absolutePath(archive)
        if toStandardOutput {
            if isatty(STDOUT_FILENO) == 1 { throw Failure("not writing an archive to a terminal: redirect standard output") }
        } else {
            for folder in [argument.backing, argument.path] + argument.mountpoints where isInside(archivePath, folder) {
                throw Failure("\(archivePath): inside the container \(folder): the archive would be in its own next backup")
            }
        }

        var scan: BackupScan
        var records: [(String, String)] = [], transforms: [String] = []
        if let device {
            // M2: by domain, each container's members under its domain's name.
            let scanned = try DeviceBackup.scan(device)
            scan = scanned.scan
            scan.members = scanned.members
            scan.memberSizes = scanned.sizes
            (records, transforms) = DeviceBackup.archiveRecords(scanned)
            scan.report.backup = DeviceBackup.report(scanned, device: device).backup
        } else {
            do {
                scan = try BackupScan.run(root: argument.backing, layout: layout, listMembers: true)
            } catch {
                throw Failure("\(argument.backing): \(error)")
            }
        }
        for problem in scan.report.problems {
            FileHandleless.warn("\(problem.path): \(problem.error) (not in the archive)")
        }

        var output = STDOUT_FILENO
        var partial: String?
        if !toStandardOutput {
            let (folder, name) = splitPath(archivePath)
            let temporary = "\(folder)/.\(name).partial-\(getpid())"
            output = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard output >= 0 else { throw Failure("\(temporary): \(errorText(errno))") }
            partial = temporary
        }
        defer {
            if let partial {
                close(output)
                unlink(partial)  // gone already after a successful rename
            }
        }

        let progress = ProgressLine("backup", enabled: !noProgress)
        let changed: Bool
        do {
            changed = try TarArchive.create(root: argument.backing, members: scan.members, memberSizes: scan.memberSizes,
                                            appName: layout.appName,
                                            defaultProtection: device == nil ? scan.report.protection.defaultClass : nil,
                                            records: records, transforms: transforms,
                                            to: FileDescriptor(rawValue: output)) { progress?.update($0) }
        } catch {
            progress?.finish()
            throw Failure("\(archivePath): \(error)")
        }
        progress?.finish()
        if let partial {
            guard fsync(output) == 0, rename(partial, archivePath) == 0 else {
                throw Failure("\(archivePath): \(errorText(errno))")
            }
        }
        if changed {
            FileHandleless.warn("warning: some files changed while they were archived (see tar's messages above): the archive may hold them half-written")
        }
        let summary = "Backed up \(argument.backing) to \(archivePath): \(scan.report.backup.described) (left out: \(scan.report.excluded.all.described))\n"
        if toStandardOutput {
            FileHandleless.warn(summary.trimmingSuffix("\n"))
        } else {
            print(summary, terminator: "")
        }
    }
}

/// ("/a/b", "c") for "/a/b/c".
func splitPath(_ path: String) -> (folder: String, name: String) {
    guard let slash = path.lastIndex(of: "/") else { return (".", path) }
    let folder = slash == path.startIndex ? "/" : String(path[..<slash])
    return (folder, String(path[path.index(after: slash)...]))
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
