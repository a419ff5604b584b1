import AppSandboxFS
import ArgumentParser
import DriverRuntime
import Foundation

/// `appsandboxfs install MOUNTPOINT APPDIR` (A2, G1).
struct InstallCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install",
        _superCommandName: "appsandboxfs",
        abstract: "Install an app on a device: a new bundle container with a copy of APPDIR, a data container, its group containers.",
        discussion: """
            Installing an id that is installed already is an update: a new bundle container,
            the data container kept. Prints the bundle id, the data container's path and each
            group container's path, one per line; what the copy left out (U1) goes to standard error.
            An update is refused while the app is launched (`launch`), unless --kill ends it first.
            Examples:
              appsandboxfs install /mnt/phone build/Notes.app
              appsandboxfs install /mnt/phone build/Notes.app --group group.com.example
              appsandboxfs install /mnt/phone Notes.app --bundle-id com.example.notes
              appsandboxfs install /mnt/phone build-2/Notes.app --kill
            """)

    @Argument(help: "The mounted device (or its backing directory).")
    var device: String

    @Argument(help: "The app's folder (NAME or NAME.app): copied as NAME.app.")
    var appDirectory: String

    @Option(help: "The bundle id. Default: CFBundleIdentifier of APPDIR/Info.plist.")
    var bundleID: String?

    @Option(help: "An App Group the app lists (repeat for several). Default: the application-groups of an entitlements plist in APPDIR.")
    var group: [String] = []

    @Flag(help: "Update even while the app is launched: its processes are killed first (A2).")
    var kill = false

    func run() throws {
        let device = try DeviceArgument(self.device)
        let installed: DeviceInstaller.Installed
        do {
            installed = try DeviceInstaller(backing: device.backing).install(
                appFolder: absolutePath(appDirectory), bundleID: bundleID, groups: group.isEmpty ? nil : group) { id in
                    if let refusal = Launches.refuseIfLaunched(backing: device.backing, bundleID: id, kill: kill, verb: "update") {
                        throw refusal
                    }
                }
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure("\(error)")
        }
        for line in installed.leftOut.lines { FileHandleless.warn("left out of the bundle (U1): \(line)") }
        let app = installed.app
        print(app.bundleID)
        print(app.dataPath.map(device.shown) ?? "")
        for group in app.groups {
            print(installed.catalog.groupPath(group).map(device.shown) ?? "")
        }
    }
}

/// `appsandboxfs uninstall MOUNTPOINT ID` (A5).
struct UninstallCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "uninstall",
        _superCommandName: "appsandboxfs",
        abstract: "Remove an app from a device: its bundle and data containers, and each group container no other app lists.",
        discussion: """
            Exits 1 when the id is not installed, or (nothing removed) while the app is launched
            (`launch`) unless --kill ends it first.
            Examples:
              appsandboxfs uninstall /mnt/phone com.example.notes
              appsandboxfs uninstall /mnt/phone com.example.notes --kill
            """)

    @Argument(help: "The mounted device (or its backing directory).")
    var device: String

    @Argument(help: "The app's bundle id.")
    var bundleID: String

    @Flag(help: "Uninstall even while the app is launched: its processes are killed first (A5).")
    var kill = false

    func run() throws {
        let device = try DeviceArgument(self.device)
        if let refusal = Launches.refuseIfLaunched(backing: device.backing, bundleID: bundleID, kill: kill, verb: "uninstall") {
            throw refusal
        }
        let removed: DeviceInstaller.Uninstalled?
        do { removed = try DeviceInstaller(backing: device.backing).uninstall(bundleID: bundleID) } catch {
            throw Failure("\(error)")
        }
        guard removed != nil else { throw Failure("\(device.path): no app \(bundleID) is installed") }
    }
}
