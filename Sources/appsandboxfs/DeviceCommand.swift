import AppSandboxFS
import ArgumentParser
import DriverRuntime
import Foundation
import MountInfo
import POSIXHelpers
import SandboxPolicy

/// `appsandboxfs device init DIR` (A1).
struct DeviceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device",
        _superCommandName: "appsandboxfs",
        abstract: "Make a device of many apps (part three).",
        discussion: """
            A device holds many apps' bundle, data and App Group containers, served by one
            driver; see `appsandboxfs device init --help` and docs/apps.md.
            Examples:
              appsandboxfs device init ~/devices/phone
            """,
        subcommands: [DeviceInitCommand.self])
}

struct DeviceInitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Make an empty device: Containers/Bundle/Application, Containers/Data/Application, Containers/Shared/AppGroup.",
        discussion: """
            Mount it with `appsandboxfs mount DIR MOUNTPOINT`, then `install` apps into the mount.
            Examples:
              appsandboxfs device init ~/devices/phone
              appsandboxfs device init ~/devices/phone --protection NSFileProtectionComplete
            """)

    @Argument(help: "The device's backing directory (made if missing; must be empty).")
    var backing: String

    @Option(help: "The default data protection class of every data and group container (P4). Default: NSFileProtectionCompleteUntilFirstUserAuthentication.")
    var protection: String?

    func validate() throws {
        if let protection { _ = try ProtectionArguments.protectionClass(protection) }
    }

    func run() throws {
        let device = Device(backing: absolutePath(backing))
        do { try device.create(protection: try protection.map(ProtectionArguments.protectionClass)) } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure("\(error)")
        }
        print("Created device \(device.backing)")
    }
}

/// The DEVICE argument of the device verbs: a mounted device's mountpoint
/// (its backing directory read from the mount table, trusted as the
/// container verbs trust it), or a device's backing directory. Paths are
/// printed below the argument as given: through the mount when it is one.
struct DeviceArgument {
    /// As given, made absolute.
    let path: String
    let backing: String

    init(_ argument: String) throws {
        path = absolutePath(argument)
        backing = try backingDirectory(of: path)
        guard Device.isDevice(backing) else {
            throw Failure("\(path): not a device (make one with `appsandboxfs device init`)")
        }
    }

    /// A path relative to the device's root, as the user reaches it.
    func shown(_ relative: String) -> String { path + "/" + relative }

    func catalog() throws -> DeviceCatalog {
        let root = open(backing, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard root >= 0 else { throw Failure("\(backing): \(errorText(errno))") }
        defer { close(root) }
        do { return try DeviceCatalog(root: root, path: backing) } catch { throw Failure("\(error)") }
    }

    /// The app installed as `id`, or a failure naming it (exit 1).
    func app(_ id: String, in catalog: DeviceCatalog) throws -> InstalledApp {
        guard let app = catalog.apps[id] else { throw Failure("\(path): no app \(id) is installed") }
        return app
    }
}

/// The arguments of a verb acting on one app of a mounted device (launch,
/// suspend, resume): the device's mountpoint, then the app's bundle id.
struct LaunchedAppArguments: ParsableArguments {
    @Argument(help: "The mountpoint of a mounted device.")
    var device: String

    @Argument(help: "The app's bundle id.")
    var bundleID: String
}
