import ArgumentParser
import DriverRuntime

@main
struct AppSandboxFSCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "appsandboxfs",
        abstract: "Mount a directory as an iOS app container, with the iOS sandbox rules enforced.",
        discussion: """
            Exit status: 0 on success, 1 when a command fails (one line on standard error:
            Error: <path>: <problem>), 64 for a command line it cannot parse; backup-report
            --strict, status and run have their own (see each verb's --help, and
            docs/cli.md).
            Examples:
              appsandboxfs init ~/containers/MyApp --app-name MyApp
              appsandboxfs mount ~/containers/MyApp /mnt/MyApp
              appsandboxfs run /mnt/MyApp -- sh -c 'echo hi > "$HOME/Documents/hi.txt"'
              appsandboxfs status
              appsandboxfs unmount /mnt/MyApp
              mount -t fuse.appsandboxfs ~/containers/MyApp /mnt/MyApp -o app_name=MyApp
            """,
        version: Version.description,
        subcommands: [InitCommand.self, MountCommand.self, UnmountCommand.self, DeliverCommand.self,
                      BackupReportCommand.self, PurgeCommand.self, BackupCommand.self, RestoreCommand.self,
                      EnvCommand.self, RunCommand.self, StatusCommand.self, UpdateCommand.self,
                      LockCommand.self, UnlockCommand.self, RebootCommand.self,
                      DeviceCommand.self, InstallCommand.self, UninstallCommand.self, ListAppsCommand.self,
                      GetAppContainerCommand.self,
                      LaunchCommand.self, SuspendCommand.self, ResumeCommand.self])

    /// A verb's arguments are parsed with the verb as the root first: each
    /// verb names this command as its super-command, so the parser skips
    /// building the tree of all verbs and its check for a completion-script
    /// request, which cost about 0.4 ms of every start (a scripted
    /// container's life has three: init, mount, unmount). Whatever that
    /// parse does not answer with the verb itself (an error, --help,
    /// --version, a completion request) is parsed again through the whole
    /// tree, which says and exits exactly as it always did.
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard var command = parsedByVerb(arguments) else { return main(nil) }
        do {
            try command.run()
        } catch {
            exit(withError: error)
        }
    }

    /// The command `arguments` make when their first names a verb and the
    /// verb's own parse takes the rest; nil for anything else.
    static func parsedByVerb(_ arguments: [String]) -> ParsableCommand? {
        guard let name = arguments.first, !arguments.contains(where: { $0.hasPrefix("--generate-completion-script") }),
              let verb = configuration.subcommands.first(where: { $0._commandName == name }),
              let command = try? verb.parseAsRoot(Array(arguments.dropFirst())),
              commands(under: verb).contains(where: { $0 == type(of: command) }) else { return nil }
        return command
    }

    /// `root` and every command under it.
    private static func commands(under root: ParsableCommand.Type) -> [ParsableCommand.Type] {
        [root] + root.configuration.subcommands.flatMap { commands(under: $0) }
    }
}
