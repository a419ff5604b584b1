import ArgumentParser
import DriverRuntime
import Glibc
import POSIXHelpers

struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        _superCommandName: "appsandboxfs",
        abstract: "Run a command \"inside\" a mounted container: with the environment an iOS app sees there (see env).",
        discussion: """
            Sets HOME, CFFIXED_USER_HOME, TMPDIR and the XDG folders as `appsandboxfs env`
            prints them (so Foundation's documentDirectory, cachesDirectory,
            applicationSupportDirectory, temporaryDirectory and UserDefaults land in the
            container's Documents, Library/Caches, Library/Application Support, tmp and
            Library/Preferences), keeps the rest of the environment and the working folder,
            and replaces itself with COMMAND (found on PATH), so signals and the exit status
            are COMMAND's own. Put -- before COMMAND when it has options of its own.
            With --confine (root only; docs/confinement.md), COMMAND runs in a world of its
            own, as an app in the iOS sandbox: the container read-write at its mountpoint,
            the rest of the file system read-only, /tmp and /var/tmp the container's tmp,
            backing directories and other containers out of reach, no capabilities and no
            way to gain any, no process outside visible. `run` then waits for COMMAND and
            passes on the signals it receives; descriptors other than 0, 1 and 2 are closed.
            The mountpoint must not lie in /tmp or /var/tmp.
            On a device, --app ID runs in the app's data container (A6): CONTAINER_MOUNT is
            then the mounted device (not with --confine: `launch` runs an app confined).
            Exit status: COMMAND's (with --confine, 128 + the signal that ended it); 127 when
            COMMAND is not found, 126 when it cannot be run; 1 when CONTAINER_MOUNT is not a
            mounted container, or when the confined world cannot be made (nothing runs then).
            Examples:
              appsandboxfs run /mnt/MyApp -- swift test
              appsandboxfs run /mnt/phone --app com.example.notes -- ls Documents
              appsandboxfs run /mnt/MyApp -- sh -c 'echo "$HOME" > "$TMPDIR/probe"'
              appsandboxfs run /mnt/MyApp -- sqlite3 Documents/app.db .tables
              appsandboxfs run /mnt/MyApp --confine --user 501 -- .build/debug/MyAppTool
            """)

    @Argument(help: "The mountpoint of a mounted container.")
    var containerMount: String

    @Flag(help: "Run COMMAND confined to the container (mount and PID namespaces, no capabilities).")
    var confine = false

    @Option(help: ArgumentHelp("With --confine: run as this user (and group; default: the user's number). An app on a device runs as 501.",
                               valueName: "uid[:gid]"))
    var user: String?

    @Option(help: ArgumentHelp("On a device: run in this app's data container (A6).", valueName: "bundle id"))
    var app: String?

    @Argument(parsing: .remaining, help: "The command and its arguments.")
    var command: [String] = []

    func validate() throws {
        if command.isEmpty { throw ValidationError("give the command to run after --") }
        if app != nil && confine { throw ValidationError("--app with --confine: an app on a device runs confined with `appsandboxfs launch`") }
        if let user {
            if !confine { throw ValidationError("--user needs --confine") }
            if ConfinedRun.Identity(user) == nil { throw ValidationError("--user \(user): give UID or UID:GID (numbers)") }
        }
    }

    func run() throws {
        let container = try MountedContainerPath(containerMount, app: app)
        FoundationBridgeLibrary.warnIfUnreachable(command[0])
        if confine {
            let status = try ConfinedRun.run(command, in: container, identity: user.flatMap(ConfinedRun.Identity.init))
            if status != 0 { throw ExitCode(status) }
            return
        }
        for (name, value) in container.iOSEnvironment {
            setenv(name, value, 1)
        }
        let arguments = command.map { strdup($0) } + [nil]
        // Reached only when execvp fails: the exit that follows must not
        // leave the copies behind (LeakSanitizer reports them).
        defer { arguments.forEach { free($0) } }
        execvp(command[0], arguments)
        // Only reached when the command could not be started.
        let code = errno
        if code == ENOENT {
            FileHandleless.warn("\(command[0]): command not found")
            throw ExitCode(127)
        }
        FileHandleless.warn("\(command[0]): \(errorText(code))")
        throw ExitCode(126)
    }
}
