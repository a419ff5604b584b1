import AppSandboxFS
import SandboxPolicy

/// How `mount` tells a device from a container: the layout, and the name
/// the status record gives it.
public enum DeviceMount {
    public static func layout(backing: String, appName: String?) throws -> (layout: ContainerLayout, name: String) {
        if Device.isDevice(backing) {
            if appName != nil { throw Failure("\(backing): a device, not a container: --app-name does not apply") }
            return (.device, "")
        }
        let name = try appName ?? ContainerDriver.guessAppName(in: backing)
        if let problem = ContainerLayout.problemWithAppName(name) {
            throw Failure("app name \"\(name)\": \(problem)")
        }
        return (ContainerLayout(appName: name), name)
    }
}
