import ArgumentParser
import ContainerFiles
import DriverRuntime
import Foundation
import Glibc
import MountInfo

struct EnvCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "env",
        _superCommandName: "appsandboxfs",
        abstract: "Print the environment an iOS app sees in a mounted container (HOME, CFFIXED_USER_HOME, TMPDIR, XDG_*), as shell exports.",
        discussion: """
            CONTAINER_MOUNT is the mountpoint of a mounted container (or its backing
            directory, when it is mounted). HOME and CFFIXED_USER_HOME are the container's
            root, TMPDIR its tmp folder with a trailing slash, as on iOS (what
            NSHomeDirectory() and NSTemporaryDirectory() return). XDG_DATA_HOME,
            XDG_CACHE_HOME and XDG_CONFIG_HOME are Library/Application Support,
            Library/Caches and Library/Preferences: where Foundation on Linux then finds
            applicationSupportDirectory, cachesDirectory and UserDefaults' plists, as on iOS
            (documentDirectory is CFFIXED_USER_HOME/Documents). LD_PRELOAD adds the Foundation
            bridge, so a program's own backup-flag and protection calls act on the
            container (docs/foundation.md). The values are quoted for sh, bash and zsh.
            On a device, --app ID names the app's data container (A6): CONTAINER_MOUNT is
            then the mounted device.
            Exit status: 0; 1 when CONTAINER_MOUNT is not a mounted container.
            Examples:
              appsandboxfs env /mnt/MyApp
              appsandboxfs env /mnt/phone --app com.example.notes
              eval "$(appsandboxfs env /mnt/MyApp)"
              appsandboxfs env /mnt/MyApp --json
            """)

    @Argument(help: "The mountpoint of a mounted container.")
    var containerMount: String

    @Flag(help: "Print JSON for tools instead of shell exports.")
    var json = false

    @Option(help: ArgumentHelp("On a device: the app whose data container it is (A6).", valueName: "bundle id"))
    var app: String?

    func run() throws {
        let container = try MountedContainerPath(containerMount, app: app)
        let environment = container.iOSEnvironment
        if json {
            try JSONOutput.print(Output(container: container.mountpoint, backing: container.backing,
                                        environment: Dictionary(uniqueKeysWithValues: environment.map { ($0.name, $0.value) })))
        } else {
            for (name, value) in environment {
                print("export \(name)=\(shellQuoted(value))")
            }
        }
    }

    struct Output: Encodable {
        var schema = "appsandboxfs.env/1"
        var container: String
        var backing: String
        var environment: [String: String]
    }
}

/// A mounted container named on the command line by its mountpoint, or by
/// its backing directory when that is mounted.
struct MountedContainerPath {
    let mountpoint: String
    let backing: String

    /// With `app`, `argument` is a mounted device, and the container is
    /// that app's data container (A6).
    init(_ argument: String, app: String?) throws {
        guard let app else {
            try self.init(argument)
            return
        }
        let device = try MountedContainerPath(argument)
        let data = try DeviceAppArgument(device: device.mountpoint, bundleID: app)
        self.init(mountpoint: data.shown, backing: data.backing)
    }

    private init(mountpoint: String, backing: String) {
        self.mountpoint = mountpoint
        self.backing = backing
    }

    init(_ argument: String) throws {
        let path = absolutePath(argument)
        if let entry = MountTable.entry(at: path) {
            backing = try entry.trustedBacking()
            mountpoint = path
        } else if let first = MountTable.mountpoints(ofBacking: path).first {
            mountpoint = first
            backing = path
        } else {
            throw Failure("\(path): not a mounted container (mount it first: appsandboxfs mount BACKING \(path))")
        }
        if MountTable.isStale(mountpoint) {
            throw Failure("\(mountpoint): a stale mount (its driver died: transport endpoint is not connected); run `appsandboxfs unmount \(mountpoint)`")
        }
        FoundationBridgeLibrary.warnIfMissing()
    }

    /// What an iOS app finds in its environment, in this order, and
    /// LD_PRELOAD with the Foundation bridge (F1; docs/foundation.md).
    var iOSEnvironment: [(name: String, value: String)] {
        ContainerEnvironment.variables(root: mountpoint)
            + (FoundationBridgeLibrary.preload.map { [("LD_PRELOAD", $0)] } ?? [])
    }
}

/// `text` in single quotes, each ' written as '\'' (sh, bash, zsh, dash).
func shellQuoted(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
}
