import ArgumentParser
import ContainerBackup
import AppSandboxFS
import DriverRuntime
import Foundation
import SandboxPolicy

struct BackupReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup-report",
        _superCommandName: "appsandboxfs",
        abstract: "Show what an iOS backup of a container would hold, what it leaves out and why (K1), and what the Data Storage Guidelines advise against.",
        discussion: """
            CONTAINER is a backing directory or the mountpoint of a mounted container; on a
            device, with --app ID, the device, and the report is on the app's data container (A6).
            A device without --app is reported by iOS backup domain (M2): AppDomain-<bundle id>
            for each data container, AppDomainGroup-<group id> for each group container.
            A backup holds Documents (Inbox included) and Library, except Library/Caches
            and except what carries a "do not back up" flag
            (com.apple.metadata:com_apple_backup_excludeItem, or com.apple.MobileBackup = 1)
            or lies below a folder that does. Findings: large files in a backup, entries left
            in tmp, flags on system folders, entries at the container root, flag values iOS
            does not read.
            Exit status: 0, or 2 with --strict when there are findings; 1 when the container
            cannot be read. The JSON schema is in docs/backup.md.
            Examples:
              appsandboxfs backup-report /mnt/MyApp
              appsandboxfs backup-report /mnt/phone --app com.example.notes
              appsandboxfs backup-report ~/MyApp --json --strict --large-file-threshold 5M
            """)

    @Argument(help: "The container (backing directory or mountpoint).")
    var container: String

    @Flag(help: "Print JSON for tools instead of tables.")
    var json = false

    @Flag(help: "Exit with status 2 when there are findings (for CI).")
    var strict = false

    @Option(help: ArgumentHelp("The size from which a backed-up file is a finding: bytes, or with K, M, G (binary).",
                               valueName: "size"))
    var largeFileThreshold: String = "1M"

    @Option(help: "How many of the largest top entries the table shows (JSON lists all).")
    var top: Int = 10

    @Option(help: "The app's name. Default: the one *.app folder in the container.")
    var appName: String?

    @Option(help: ArgumentHelp("On a device: report on this app's data container (A6).", valueName: "bundle id"))
    var app: String?

    func validate() throws {
        if ByteCount.parse(largeFileThreshold) == nil {
            throw ValidationError("--large-file-threshold \(largeFileThreshold): give bytes, or a number with K, M or G")
        }
        if top < 0 { throw ValidationError("--top must be 0 or more") }
    }

    /// M2: a device's report, by backup domain.
    func reportDevice() throws {
        let device = try DeviceArgument(container)
        let report = DeviceBackup.report(try DeviceBackup.scan(device, threshold: ByteCount.parse(largeFileThreshold)!), device: device)
        if json {
            try JSONOutput.print(report)
        } else {
            print(DeviceBackup.table(report), terminator: "")
        }
        if strict && !report.findings.isEmpty { throw ExitCode(2) }
    }

    func run() throws {
        let argument: ContainerArgument
        let layout: ContainerLayout
        if let app {
            let data = try DeviceAppArgument(device: container, bundleID: app)
            argument = try ContainerArgument(backing: data.backing)
            layout = try argument.layout(appName: data.app.name)
        } else {
            argument = try ContainerArgument(container)
            if Device.isDevice(argument.backing) {
                try reportDevice()
                return
            }
            layout = try argument.layout(appName: appName)
        }
        let scan: BackupScan
        do {
            scan = try BackupScan.run(root: argument.backing, layout: layout,
                                      largeFileThreshold: ByteCount.parse(largeFileThreshold)!)
        } catch {
            throw Failure("\(argument.backing): \(error)")
        }
        let report = scan.report
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let data = try encoder.encode(report)
            FileHandle.standardOutput.write(data + Data("\n".utf8))
        } else {
            print(BackupReportTable(report: report, top: top).text, terminator: "")
        }
        if strict && !report.findings.isEmpty { throw ExitCode(2) }
    }
}

extension ByteCount {
    /// "1048576", "512K", "1M", "1MiB", "2G": binary multiples.
    static func parse(_ text: String) -> Int64? {
        var digits = text.uppercased()
        for suffix in ["IB", "B"] where digits.hasSuffix(suffix) && digits.count > suffix.count {
            digits.removeLast(suffix.count)
            break
        }
        var multiplier: Int64 = 1
        if let last = digits.last, let power = ["K": 1, "M": 2, "G": 3, "T": 4][String(last)] {
            multiplier = Int64(1) << (10 * power)
            digits.removeLast()
        }
        guard let value = Int64(digits), value >= 0 else { return nil }
        let (product, overflow) = value.multipliedReportingOverflow(by: multiplier)
        return overflow ? nil : product
    }
}
