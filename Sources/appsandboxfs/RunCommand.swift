import ArgumentParser
import Glibc

struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a command \"inside\" a mounted container: with the environment an iOS app sees there (see env).",
        discussion: """
            Sets HOME, CFFIXED_USER_HOME, TMPDIR and the XDG folders as `appsandboxfs env`
            prints them (so Foundation's documentDirectory, cachesDirectory,
            applicationSupportDirectory, temporaryDirectory and UserDefaults land in the
            container's Documents, Library/Caches, Library/Application Support, tmp and
            Library/Preferences), keeps the rest of the environment and the working folder,
            and replaces itself with COMMAND (found on PATH), so signals and the exit status
            are COMMAND's own. Put -- before COMMAND when it has options of its own.
            Exit status: COMMAND's; 127 when COMMAND is not found, 126 when it cannot be
            run; 1 when CONTAINER_MOUNT is not a mounted container.
            Examples:
              appsandboxfs run /mnt/MyApp -- swift test
              appsandboxfs run /mnt/MyApp -- sh -c 'echo "$HOME" > "$TMPDIR/probe"'
              appsandboxfs run /mnt/MyApp -- sqlite3 Documents/app.db .tables
            """)

    @Argument(help: "The mountpoint of a mounted container.")
    var containerMount: String

    @Argument(parsing: .remaining, help: "The command and its arguments.")
    var command: [String] = []

    func validate() throws {
        if command.isEmpty { throw ValidationError("give the command to run after --") }
    }

    func run() throws {
        let container = try MountedContainerPath(containerMount)
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
        FileHandleless.warn("\(command[0]): \(String(cString: strerror(code)))")
        throw ExitCode(126)
    }
}
