import AppSandboxFS
import ArgumentParser
import DriverRuntime
import SandboxPolicy

// The lock screen of a mounted container (P5): `lock`, `unlock`, `reboot`.
// Each asks the mount's driver through its control socket (DeviceControl)
// and returns once the new state is in force.

struct LockCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lock",
        _superCommandName: "appsandboxfs",
        abstract: "Lock the device around a mounted container (data protection, P6).",
        discussion: """
            Class B (NSFileProtectionCompleteUnlessOpen) files cannot be opened from now on;
            class A (NSFileProtectionComplete) files stay usable for the grace, then cannot be
            opened and their open descriptors fail (EPERM). Returns at once: the state is
            `locked` when it returns, the grace runs in the driver. A device already locked
            keeps its grace. Before the first unlock (after `reboot`), unlock first.
            Examples:
              appsandboxfs lock /mnt/MyApp
              appsandboxfs lock /mnt/MyApp --grace 0
            """)

    @Argument(help: "The mountpoint.")
    var mountpoint: String

    @Option(parsing: .unconditional, help: "Seconds class A files stay usable after the lock (as \"Require passcode: Immediately\").")
    var grace: String = "10"

    func run() throws {
        let seconds: Double
        do { seconds = try DeviceControl.graceSeconds(grace, name: "--grace") } catch { throw Failure("\(error); nothing changed") }
        print(try DeviceControl.send("lock \(seconds)", to: absolutePath(mountpoint)))
    }
}

struct UnlockCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unlock",
        _superCommandName: "appsandboxfs",
        abstract: "Unlock the device around a mounted container: every class is usable again.",
        discussion: """
            Examples:
              appsandboxfs unlock /mnt/MyApp
            """)

    @Argument(help: "The mountpoint.")
    var mountpoint: String

    func run() throws {
        print(try DeviceControl.send("unlock", to: absolutePath(mountpoint)))
    }
}

struct RebootCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reboot",
        _superCommandName: "appsandboxfs",
        abstract: "Restart the device around a mounted container: before first unlock (P7).",
        discussion: """
            Only NSFileProtectionNone files can then be opened or created, until `unlock`.
            Examples:
              appsandboxfs reboot /mnt/MyApp
            """)

    @Argument(help: "The mountpoint.")
    var mountpoint: String

    func run() throws {
        print(try DeviceControl.send("reboot", to: absolutePath(mountpoint)))
    }
}

/// Parsing the names of the command line: one clear line for a bad one.
enum ProtectionArguments {
    static func protectionClass(_ text: String) throws -> ProtectionClass {
        guard let value = ProtectionClass(rawValue: text) else {
            throw Failure("protection class \"\(text)\": not one of \(ProtectionClass.validNames); nothing changed")
        }
        return value
    }

    static func deviceState(_ text: String) throws -> DeviceState {
        guard let value = DeviceState(rawValue: text) else {
            throw Failure("device state \"\(text)\": not one of \(DeviceState.allCases.map(\.rawValue).joined(separator: ", ")); nothing changed")
        }
        return value
    }
}
