import AppSandboxFS
import ArgumentParser
import ContainerFiles
import DriverRuntime
import Foundation
import MountInfo

/// `appsandboxfs launch MOUNTPOINT ID [--user UID[:GID]] [-- ARGS...]` (G2,
/// F3, G3): the app's executable, confined as `run --confine` confines a
/// command, in a world where the device shows only the app's containers.
struct LaunchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "launch",
        _superCommandName: "appsandboxfs",
        abstract: "Run an installed app's executable confined, seeing only its own containers (as on iOS).",
        discussion: """
            Runs <Name>.app/<CFBundleExecutable> (from its Info.plist; else <Name>.app/<Name>)
            from inside its bundle (the working folder is the .app), confined as `run --confine`
            (root only; docs/confinement.md): in its world, Containers shows only the app's
            bundle container (read-only), its data container and the group containers it
            lists; /tmp is its data container's tmp; HOME, CFFIXED_USER_HOME, TMPDIR and the
            XDG folders point into its data container; the Foundation bridge is preloaded;
            APPSANDBOXFS_GROUP_CONTAINERS maps each listed group id to its container (JSON), which
            ContainerFiles' containerURL(forSecurityApplicationGroupIdentifier:) answers.
            Waits for the app. A second launch starts another process of the same app.
            Exit status: the app's (128 + the signal that ended it); 1 when the app is not
            installed or its world cannot be made; 126/127 when the executable cannot be run.
            Examples:
              appsandboxfs launch /mnt/phone com.example.notes
              appsandboxfs launch /mnt/phone com.example.notes --user 501 -- --verbose
            """)

    @OptionGroup var app: LaunchedAppArguments

    @Option(help: ArgumentHelp("Run as this user (and group; default: the user's number). An app on a device runs as 501.",
                               valueName: "uid[:gid]"))
    var user: String?

    @Argument(parsing: .remaining, help: "Arguments for the app.")
    var arguments: [String] = []

    func validate() throws {
        if let user, ConfinedRun.Identity(user) == nil { throw ValidationError("--user \(user): give UID or UID:GID (numbers)") }
    }

    func run() throws {
        let device = try DeviceArgument(self.app.device)
        let bundleID = self.app.bundleID
        guard MountTable.entry(at: device.path) != nil else {
            throw Failure("\(device.path): not a mounted device (mount it first: appsandboxfs mount \(device.backing) MOUNTPOINT); nothing was run")
        }
        let container = try MountedContainerPath(device.path)
        let catalog = try device.catalog()
        let app = try device.app(bundleID, in: catalog)
        guard let data = app.dataPath else { throw Failure("\(device.path): \(bundleID) has no data container; nothing was run") }
        let bundle = device.shown(app.bundlePath)
        let executable = bundle + "/" + (try Self.executableName(in: bundle) ?? app.name)
        let groups = app.groups.compactMap { group in catalog.groupPath(group).map { (id: group, path: $0) } }
        let map = Dictionary(uniqueKeysWithValues: groups.map { ($0.id, device.shown($0.path)) })
        let environment = ContainerEnvironment.variables(root: device.shown(data))
            + (FoundationBridgeLibrary.preload.map { [("LD_PRELOAD", $0)] } ?? [])
            + [(GroupContainers.environmentName, GroupContainers.json(map))]
        let world = ConfinedRun.AppWorld(tmpFolder: data + "/tmp", viewRoot: "Containers",
                                         readOnly: [app.bundleContainerPath],
                                         readWrite: [data] + groups.map(\.path),
                                         workingDirectory: bundle, environment: environment)
        FoundationBridgeLibrary.warnIfUnreachable(executable)
        var launched: Int32?
        defer { if let launched { Launches.remove(pid: launched) } }
        let status = try ConfinedRun.run([executable] + arguments, in: container,
                                         identity: user.flatMap(ConfinedRun.Identity.init), app: world) { pid in
            launched = pid
            let record = LaunchRecord(pid: pid, start: StatusFile.processStartTime(pid) ?? 0, backing: device.backing,
                                      bundleID: app.bundleID, suspended: false)
            do { try Launches.publish(record) } catch {
                FileHandleless.warn("\(error): listapps, suspend and uninstall will not see this launch")
            }
        }
        if status != 0 { throw ExitCode(status) }
    }

    /// CFBundleExecutable of the bundle's Info.plist (XML or binary): one
    /// name in the .app, never a path out of it.
    static func executableName(in bundle: String) throws -> String? {
        guard let bytes = FileManager.default.contents(atPath: bundle + "/Info.plist"),
              let info = try? PropertyListSerialization.propertyList(from: bytes, format: nil) as? [String: Any],
              let name = info["CFBundleExecutable"] as? String else { return nil }
        guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
            throw Failure("\(bundle)/Info.plist: CFBundleExecutable \"\(name)\" is not a file name in the bundle; nothing was run")
        }
        return name
    }
}
