import AppSandboxFS
import ArgumentParser
import DriverRuntime
import Foundation

/// `appsandboxfs listapps MOUNTPOINT [--json]` (A4).
struct ListAppsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listapps",
        _superCommandName: "appsandboxfs",
        abstract: "List the apps installed on a device: bundle id, name, bundle path, data path, groups.",
        discussion: """
            Paths are through the mount. `launched`: a process of the app started by `launch`
            runs; `suspended`: `suspend` stopped it (a suspended app is also launched).
            Examples:
              appsandboxfs listapps /mnt/phone
              appsandboxfs listapps /mnt/phone --json
            """)

    @Argument(help: "The mounted device (or its backing directory).")
    var device: String

    @Flag(help: "One JSON array of objects on standard output.")
    var json = false

    func run() throws {
        let device = try DeviceArgument(self.device)
        let catalog = try device.catalog()
        let launches = Launches.live(backing: device.backing)
        func launched(_ app: InstalledApp) -> Bool { launches.contains { $0.bundleID == app.bundleID } }
        func suspended(_ app: InstalledApp) -> Bool { launches.contains { $0.bundleID == app.bundleID && $0.suspended } }
        if json {
            let objects: [[String: Any]] = catalog.sortedApps.map { app in
                [
                    "bundleID": app.bundleID, "name": app.name,
                    "bundlePath": device.shown(app.bundlePath),
                    "dataPath": app.dataPath.map(device.shown) ?? NSNull(),
                    "groups": app.groups.map { ["id": $0, "path": catalog.groupPath($0).map(device.shown) ?? NSNull()] as [String: Any] },
                    "launched": launched(app), "suspended": suspended(app),
                ]
            }
            guard !objects.isEmpty else { print("[]"); return }
            let data = try JSONSerialization.data(withJSONObject: objects, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            print(String(decoding: data, as: UTF8.self))
            return
        }
        for app in catalog.sortedApps {
            print("\(app.bundleID)\t\(app.name)")
            print("  bundle: \(device.shown(app.bundlePath))")
            print("  data:   \(app.dataPath.map(device.shown) ?? "(missing)")")
            for group in app.groups {
                print("  group:  \(group)\t\(catalog.groupPath(group).map(device.shown) ?? "(missing)")")
            }
            if launched(app) { print("  state:  \(suspended(app) ? "suspended" : "launched")") }
        }
    }
}

/// `appsandboxfs get_app_container MOUNTPOINT ID [app|data|groups|GID]` (A4).
struct GetAppContainerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get_app_container",
        _superCommandName: "appsandboxfs",
        abstract: "Print the path of an app's container, as `xcrun simctl get_app_container` does.",
        discussion: """
            app (the default): the .app folder; data: the data container; groups: one line per
            group, GID<TAB>PATH; a group id: that group's container, if the app lists it.
            Exits 1 for an id that is not installed or a group the app does not list.
            Examples:
              appsandboxfs get_app_container /mnt/phone com.example.notes data
              appsandboxfs get_app_container /mnt/phone com.example.notes group.com.example
            """)

    @Argument(help: "The mounted device (or its backing directory).")
    var device: String

    @Argument(help: "The app's bundle id.")
    var bundleID: String

    @Argument(help: "app, data, groups or a group id.")
    var container: String = "app"

    func run() throws {
        let device = try DeviceArgument(self.device)
        let catalog = try device.catalog()
        let app = try device.app(bundleID, in: catalog)
        switch container {
        case "app":
            print(device.shown(app.bundlePath))
        case "data":
            guard let data = app.dataPath else { throw Failure("\(device.path): \(bundleID) has no data container") }
            print(device.shown(data))
        case "groups":
            for group in app.groups {
                print("\(group)\t\(catalog.groupPath(group).map(device.shown) ?? "")")
            }
        default:
            guard app.groups.contains(container), let path = catalog.groupPath(container) else {
                throw Failure("\(device.path): \(bundleID) does not list the group \(container)")
            }
            print(device.shown(path))
        }
    }
}
