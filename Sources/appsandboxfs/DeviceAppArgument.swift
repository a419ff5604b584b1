import AppSandboxFS
import DriverRuntime
import Foundation
import Glibc

/// `--app ID` of the verbs that take a container (`deliver`, `env`, `run`,
/// `backup-report`, `purge`; A6): their container argument names a device
/// (its mountpoint or backing directory), and the container is that app's
/// data container, below the mount as the user reaches it and below the
/// device's backing directory for the verbs that work there.
struct DeviceAppArgument {
    let device: DeviceArgument
    let app: InstalledApp
    /// The data container's path relative to the device's root.
    let dataPath: String

    init(device argument: String, bundleID: String) throws {
        device = try DeviceArgument(argument)
        app = try device.app(bundleID, in: try device.catalog())
        guard let dataPath = app.dataPath else {
            throw Failure("\(device.path): \(bundleID) has no data container (reinstall it: appsandboxfs install)")
        }
        self.dataPath = dataPath
    }

    /// The data container as the user reaches it (through the mount when the
    /// argument was a mountpoint).
    var shown: String { device.shown(dataPath) }
    /// The data container in the device's backing directory.
    var backing: String { device.backing + "/" + dataPath }

    /// K2, K3 and U2 on a device: the app must not be launched (A6), where
    /// a container must not be mounted. Exit 1, one line.
    func requireNotLaunched(_ verb: String) throws {
        if isLaunched(device: device.backing, bundleID: app.bundleID) {
            throw Failure("\(device.path): \(app.bundleID) is launched; iOS \(verb) only apps that are not running: stop it first")
        }
    }
}

/// Whether a process of the app `bundleID` runs on the device whose backing
/// directory is `device` (started by `appsandboxfs launch`, G2): its
/// launch records in the state folder whose first process still lives.
func isLaunched(device: String, bundleID: String) -> Bool {
    !Launches.live(backing: device, bundleID: bundleID).isEmpty
}
