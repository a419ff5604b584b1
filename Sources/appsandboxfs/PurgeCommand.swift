import AppSandboxFS
import ArgumentParser
import ContainerBackup
import DriverRuntime
import Glibc

struct PurgeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        _superCommandName: "appsandboxfs",
        abstract: "Empty Library/Caches and tmp as iOS does when storage runs low (K2), keeping what is marked \"do not back up\".",
        discussion: """
            CONTAINER is a backing directory or the mountpoint of a mounted container, but
            purge refuses while the container is mounted: iOS purges only apps that are not
            running. It never removes an entry that carries a flag
            (com.apple.metadata:com_apple_backup_excludeItem or com.apple.MobileBackup),
            nor anything below a flagged folder, and never follows a symbolic link.
            On a device, --app ID purges that app's data container (A6): CONTAINER is then the
            device (mounted or not), and purge refuses while the app is launched instead.
            On a device without --app (Z2), every app that is neither launched nor suspended
            has its data container purged, and every group none of whose apps is launched its
            Library/Caches; the others are left as they are, each named on a line "left ...".
            Without --caches or --tmp, both are emptied.
            Examples:
              appsandboxfs purge ~/containers/MyApp
              appsandboxfs purge ~/containers/MyApp --caches --dry-run
              appsandboxfs purge /mnt/phone --app com.example.notes
              appsandboxfs purge /mnt/phone
              appsandboxfs purge ~/MyApp --dry-run --json | jq '.targets[].removed'
            """)

    @Argument(help: "The container (its backing directory).")
    var container: String

    @Flag(help: "Empty Library/Caches.")
    var caches = false

    @Flag(help: "Empty tmp.")
    var tmp = false

    @Flag(help: "Change nothing; say what would be removed.")
    var dryRun = false

    @Flag(help: "Print JSON for tools instead of lines.")
    var json = false

    @Option(help: ArgumentHelp("On a device: purge this app's data container, which may be mounted while the app is not launched (A6).",
                               valueName: "bundle id"))
    var app: String?

    func run() throws {
        let argument: ContainerArgument
        if let app {
            let data = try DeviceAppArgument(device: container, bundleID: app)
            try data.requireNotLaunched("purges")
            argument = try ContainerArgument(backing: data.backing)
        } else {
            argument = try ContainerArgument(container)
        }
        var targets: [Purge.Target] = []
        if caches || !tmp { targets.append(.caches) }
        if tmp || !caches { targets.append(.tmp) }
        if app == nil, Device.isDevice(argument.backing) {
            try DevicePurge(device: try DeviceArgument(container), targets: targets, dryRun: dryRun).run(json: json)
            return
        }
        if app == nil, let mountpoint = argument.mountpoints.first {
            throw Failure("\(argument.backing): the container is mounted at \(mountpoint); iOS purges only apps that are not running: unmount it first (appsandboxfs unmount \(mountpoint))")
        }
        for target in targets {
            try MountChecks.folder(argument.backing + "/" + target.rawValue, role: "container folder")
        }

        let outcomes: [Purge.Outcome]
        do {
            outcomes = try Purge.run(root: argument.backing, targets: targets, dryRun: dryRun)
        } catch {
            throw Failure("\(argument.backing): \(error)")
        }
        if json {
            try JSONOutput.print(PurgeOutput(container: argument.backing, dryRun: dryRun, outcomes: outcomes))
            let problems = outcomes.reduce(0) { $0 + $1.problems.count }
            for outcome in outcomes {
                for problem in outcome.problems { FileHandleless.warn("\(problem.path): \(problem.error)") }
            }
            if problems > 0 { throw Failure("\(argument.backing): \(problems) entries could not be purged") }
            return
        }
        let problems = Self.printOutcomes(outcomes, dryRun: dryRun)
        if problems > 0 { throw Failure("\(argument.backing): \(problems) entries could not be purged") }
    }

    /// Prints what each target lost and kept (each line after `prefix`),
    /// warns of each problem; returns how many problems there were.
    static func printOutcomes(_ outcomes: [Purge.Outcome], dryRun: Bool, prefix: String = "") -> Int {
        var problems = 0
        for outcome in outcomes {
            let verb = dryRun ? "would remove" : "removed"
            print("\(prefix)\(outcome.target.rawValue): \(verb) \(outcome.removed.described)")
            for kept in outcome.kept {
                var why = kept.flags.map(\.name).joined(separator: ", ")
                if kept.unrecognizedValue { why += (why.isEmpty ? "" : ", ") + "com.apple.MobileBackup (a value iOS does not read)" }
                if kept.wholeFolder {
                    print("\(prefix)  kept everything: \(kept.path) carries \(why)")
                } else {
                    print("\(prefix)  kept \(kept.path) (\(kept.kind.rawValue), \(why))")
                }
            }
            for problem in outcome.problems {
                FileHandleless.warn("\(problem.path): \(problem.error)")
                problems += 1
            }
        }
        return problems
    }
}

/// `purge --json`: what each target lost and kept.
struct PurgeOutput: Encodable {
    var schema = "appsandboxfs.purge/1"
    /// The backing directory.
    var container: String
    var dryRun: Bool
    var targets: [Target]

    struct Target: Encodable {
        /// "Library/Caches" or "tmp".
        var target: String
        /// What was removed (with --dry-run: what would be).
        var removed: Tally
        var kept: [Kept]
        var problems: [WalkProblem]
    }

    struct Kept: Encodable {
        /// Below the container root.
        var path: String
        var kind: EntryKind
        var flags: [BackupFlag]
        var unrecognizedValue: Bool
        /// A folder above the target (or the target itself) carries the
        /// flag: nothing was purged there.
        var wholeFolder: Bool
    }

    init(container: String, dryRun: Bool, outcomes: [Purge.Outcome]) {
        self.container = container
        self.dryRun = dryRun
        targets = outcomes.map { outcome in
            Target(target: outcome.target.rawValue, removed: outcome.removed,
                   kept: outcome.kept.map {
                       Kept(path: $0.path, kind: $0.kind, flags: $0.flags, unrecognizedValue: $0.unrecognizedValue,
                            wholeFolder: $0.wholeFolder)
                   },
                   problems: outcome.problems)
        }
    }
}
