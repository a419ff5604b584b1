import AppSandboxFS
import ArgumentParser
import DriverRuntime
import SandboxPolicy

struct InitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        _superCommandName: "appsandboxfs",
        abstract: "Lay out a new container: NAME.app, Documents/Inbox, Library (Application Support, Caches, Preferences), tmp.",
        discussion: """
            Examples:
              appsandboxfs init ~/containers/MyApp --app-name MyApp
              appsandboxfs init ~/MyApp --app-name MyApp --bundle-from build/MyApp.app
            """)

    @Argument(help: "The backing directory to create (or complete).")
    var backing: String

    @Option(help: "The app's name; the bundle is NAME.app.")
    var appName: String

    @Option(help: "A bundle folder whose contents are copied into NAME.app (as `update` copies a build: U1).")
    var bundleFrom: String?

    @Option(help: "The container's default data protection class (P4), e.g. NSFileProtectionComplete. Default: NSFileProtectionCompleteUntilFirstUserAuthentication.")
    var protection: String?

    func validate() throws {
        if let problem = ContainerLayout.problemWithAppName(appName) {
            throw Failure("app name \"\(appName)\": \(problem)")
        }
        if let protection { _ = try ProtectionArguments.protectionClass(protection) }
    }

    func run() throws {
        let container = Container(backing: absolutePath(backing), layout: ContainerLayout(appName: appName))
        // Completing a container is fine; giving it a second app is not: a
        // container belongs to one app, and mount could not tell which.
        if let entries = try? FileManagerless.list(container.backing) {
            let others = entries.filter { $0.hasSuffix(".app") && $0.count > 4 && $0 != "\(appName).app" }.sorted()
            if let other = others.first {
                throw Failure("\(container.backing): already the container of \(other.dropLast(4)) (\(other)); init it with --app-name \(other.dropLast(4)), or choose another folder")
            }
        }
        do {
            let leftOut = try container.create(bundleFrom: bundleFrom.map(absolutePath))
            for line in leftOut.lines { FileHandleless.warn("left out of the bundle (U1): \(line)") }
            if let protection { try container.setDefaultProtectionClass(try ProtectionArguments.protectionClass(protection)) }
        } catch {
            throw Failure("\(error)")
        }
        print("Created container \(container.backing) for \(appName)")
    }
}
