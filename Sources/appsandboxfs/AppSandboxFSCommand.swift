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
}
