import AppSandboxFS
import ContainerBackup
import DriverRuntime
import Foundation
import Glibc
import POSIXHelpers
import SandboxPolicy
import SystemPackage

/// `backup-report`, `backup` and `restore` of a whole device (M2): what it
/// holds, by iOS backup domain. One walk of the device (its zones say what
/// is backed up: a data container as a container, a group container but
/// its Library/Caches, no bundle, no metadata plist), grouped by the
/// container each member lies in.
enum DeviceBackup {
    struct Scanned {
        var scan: BackupScan
        var members: [RawName]
        var sizes: [Int64]
        var domains: [DeviceDomains.Domain]
    }

    static func scan(_ device: DeviceArgument, threshold: Int64 = BackupScan.defaultLargeFileThreshold) throws -> Scanned {
        let catalog = try device.catalog()
        let containers = DeviceDomains.containers(dataContainers: catalog.dataContainers, groupContainers: catalog.groupContainers)
        let scan: BackupScan
        do {
            scan = try BackupScan.run(root: device.backing, layout: .device, largeFileThreshold: threshold, listMembers: true)
        } catch {
            throw Failure("\(device.backing): \(error)")
        }
        let grouped = DeviceDomains.group(scan, containers: containers)
        return Scanned(scan: scan, members: grouped.members, sizes: grouped.sizes, domains: grouped.domains)
    }

    /// `backup-report DEVICE [--json]`.
    struct Report: Encodable {
        var schema = "appsandboxfs.device-backup-report/1"
        var device: String
        var domains: [DeviceDomains.Domain]
        /// Everything in the backup (the domains' sum).
        var backup: Tally
        var excluded: BackupReport.ExcludedTally
        var findings: [BackupReport.Finding]
        var problems: [WalkProblem]
    }

    static func report(_ scanned: Scanned, device: DeviceArgument) -> Report {
        var backup = Tally()
        backup.files = scanned.domains.reduce(0) { $0 + $1.files }
        backup.bytes = scanned.domains.reduce(0) { $0 + $1.bytes }
        backup.entries = scanned.domains.reduce(0) { $0 + $1.entries }
        let report = scanned.scan.report
        return Report(device: device.path, domains: scanned.domains, backup: backup, excluded: report.excluded,
                      findings: report.findings, problems: report.problems)
    }

    static func table(_ report: Report) -> String {
        var text = "Device \(report.device): \(report.domains.count) domains, \(report.backup.files) file\(report.backup.files == 1 ? "" : "s"), \(ByteCount.text(report.backup.bytes)) in a backup\n"
        let width = report.domains.map(\.name.count).max() ?? 0
        for domain in report.domains {
            text += "  " + domain.name.padding(toLength: width, withPad: " ", startingAt: 0)
                + "  \(domain.files) file\(domain.files == 1 ? "" : "s")  \(ByteCount.text(domain.bytes))\n"
        }
        for finding in report.findings { text += "finding: \(finding.path): \(finding.message)\n" }
        for problem in report.problems { text += "problem: \(problem.path): \(problem.error)\n" }
        return text
    }

    /// The archive's records and member names for `TarArchive.create`.
    static func archiveRecords(_ scanned: Scanned) -> (records: [(String, String)], transforms: [String]) {
        ([(DeviceDomains.keyword, scanned.domains.map(\.name).joined(separator: ","))], DeviceDomains.transforms(scanned.domains))
    }

    /// `restore ARCHIVE DEVICE`: each domain of the archive into the matching
    /// container of the device (the same bundle and group ids installed, no
    /// app launched), replacing what was there. Every domain is checked
    /// before any is restored; each is then restored as a container is
    /// (ContainerRestore: staged, untrusted, exchanged whole), the
    /// container manager's metadata plist kept. Returns what to print.
    static func restore(archive: String, domains listed: String, into device: DeviceArgument,
                        privileges: ArchivePrivileges?) throws -> [String] {
        let catalog = try device.catalog()
        var plan: [(domain: String, container: String, shape: ContainerRestore.Shape, layout: ContainerLayout, apps: [String])] = []
        var missing: [String] = []
        for domain in listed.split(separator: ",").map(String.init) {
            if domain.hasPrefix("AppDomainGroup-") {
                let id = String(domain.dropFirst("AppDomainGroup-".count))
                guard let uuid = catalog.groupContainers[id] else { missing.append("group \(id)"); continue }
                plan.append((domain, ContainerLayout.groupContainersPath + "/" + uuid, .groupContainer, .device,
                             catalog.apps(listing: id).map(\.bundleID)))
            } else if domain.hasPrefix("AppDomain-") {
                let id = String(domain.dropFirst("AppDomain-".count))
                guard let app = catalog.apps[id], let path = app.dataPath else { missing.append("app \(id)"); continue }
                plan.append((domain, path, .container, ContainerLayout(appName: app.name), [id]))
            } else {
                throw Failure("\(archive): a domain of an unknown kind: \(domain)")
            }
        }
        if !missing.isEmpty {
            throw Failure("\(device.path): not installed: \(missing.joined(separator: ", ")); install them first, nothing was restored")
        }
        for step in plan {
            for id in step.apps where isLaunched(device: device.backing, bundleID: id) {
                throw Failure("\(device.path): \(id) is launched; iOS restores only apps that are not running: stop it first, nothing was restored")
            }
        }
        var lines: [String] = []
        for step in plan {
            let input = open(archive, O_RDONLY | O_CLOEXEC)
            guard input >= 0 else { throw Failure("\(archive): \(errorText(errno))") }
            defer { close(input) }
            let outcome: ContainerRestore.Outcome
            do {
                let opening = try TarArchive.open(FileDescriptor(rawValue: input))
                let shape = step.shape, layout = step.layout
                outcome = try ContainerRestore.restore(
                    FileDescriptor(rawValue: input), opening: opening, expected: nil, into: device.backing + "/" + step.container,
                    layout: layout, mode: .replace(keepBundle: false), privileges: privileges,
                    domain: ContainerRestore.Domain(folder: step.domain, shape: shape, carried: [ContainerLayout.metadataName]),
                    layOut: { root, path, owner in
                        switch shape {
                        case .container: _ = try Container.layOut(in: root, path: path, layout: layout, withBundle: false)
                        case .groupContainer: try Device.layOutGroup(in: root.rawValue, path: path, owner: owner)
                        }
                    })
            } catch {
                throw Failure("\(archive): cannot restore \(step.domain) into \(device.shown(step.container)): \(error)")
            }
            for leftover in outcome.leftovers { FileHandleless.warn("cannot remove the old data: \(leftover)") }
            for line in outcome.dropped.lines {
                FileHandleless.warn("left out of \(step.domain) (--preserve-privileges keeps it): \(line)")
            }
            let emptied = step.shape == .container ? "Library/Caches and tmp empty" : "Library/Caches empty"
            lines.append("\(step.domain) -> \(device.shown(step.container)) (\(emptied))")
        }
        return lines
    }
}
