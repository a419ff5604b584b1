import AppSandboxFS
import ArgumentParser
import DriverRuntime
import Glibc

struct UpdateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        _superCommandName: "appsandboxfs",
        abstract: "Install a new build of the app as an App Store update does: a new bundle, the data kept (U1-U4).",
        discussion: """
            The bundle becomes a copy of DIR (files, folders and symbolic links, with their
            modes, times and user. extended attributes); Documents, Library and tmp are not
            touched. A build folder is untrusted input: the copy belongs to the container's
            owner, and device nodes, FIFOs, sockets, set-user-ID and set-group-ID bits, file
            capabilities, security.* and trusted.* attributes and other owners are left out;
            what was left out is listed, one line per kind (U1). The copy is made
            in a staging folder inside the container and swapped in with one rename, so a
            killed update leaves the old bundle or the new one, whole; running it again
            removes what the killed one left and finishes. Refused, with nothing changed,
            while the container is mounted (iOS stops an app to update it), and when both
            Info.plist files name different CFBundleIdentifiers. A container mounted with
            --bundle DIR shows the build live and needs no update.
            Examples:
              appsandboxfs update ~/containers/MyApp --bundle build/MyApp.app
              appsandboxfs update ~/MyApp --bundle build/MyApp2.app --app-name MyApp2
            """)

    @Argument(help: "The container (its backing directory).")
    var container: String

    @Option(help: "The new build: a folder whose contents become the bundle.")
    var bundle: String

    @Option(help: "Rename the bundle to NAME.app. Default: the installed bundle's name.")
    var appName: String?

    func run() throws {
        let argument = try ContainerArgument(container)
        let source = absolutePath(bundle)
        try MountChecks.folder(source, role: "bundle")
        // U4 before U2: a mount that shows a build folder live says so.
        for (record, alive) in StatusFile.records() where alive && record.backing == argument.backing {
            if let live = record.options.bundle {
                let same = live == source
                FileHandleless.warn("\(argument.backing): mounted at \(record.mountpoint) with --bundle \(live), which shows that build live: \(same ? "no update is needed" : "unmount it to update the container's own bundle")")
                throw ExitCode(same ? 0 : 1)
            }
        }
        if let mountpoint = argument.mountpoints.first {
            throw Failure("\(argument.backing): the container is mounted at \(mountpoint); iOS stops an app before it updates it: unmount it first (appsandboxfs unmount \(mountpoint))")
        }
        var update = AppUpdate(backing: argument.backing, source: source, appName: appName,
                               lockFolder: StatusFile.openLockFolder())
        if let stop = Self.testKillPoint() {
            // Test only: SIGKILL after step N, to prove U3 at every step.
            var step = 0
            update.afterStep = {
                step += 1
                if step == stop { kill(getpid(), SIGKILL) }
            }
        }
        let outcome: AppUpdate.Outcome
        do { outcome = try update.run() } catch { throw Failure("\(error)") }
        for line in outcome.ignoredLocks { FileHandleless.warn(line) }
        for line in outcome.leftOut.lines { FileHandleless.warn("left out of the bundle (U1): \(line)") }
        if !outcome.leftovers.isEmpty {
            print("Removed what an interrupted update left: \(outcome.leftovers.joined(separator: ", "))")
        }
        let replaced = outcome.previousBundle.map { $0 == outcome.bundle ? "replaced" : "replaced \($0) by" } ?? "installed"
        print("Updated \(argument.backing): \(replaced) \(outcome.bundle) (\(outcome.entries) entries from \(source)); Documents, Library and tmp unchanged")
    }

    /// APPSANDBOXFS_TEST_UPDATE_KILL_AFTER=N (tests only).
    static func testKillPoint() -> Int? {
        nonEmptyEnvironment("APPSANDBOXFS_TEST_UPDATE_KILL_AFTER").flatMap { Int($0) }
    }
}
