import ArgumentParser

@main
struct AppSandboxFSCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "appsandboxfs",
        abstract: "Mount a directory as an iOS app container, with the iOS sandbox rules enforced.",
        subcommands: [InitCommand.self, MountCommand.self, UnmountCommand.self, DeliverCommand.self,
                      BackupReportCommand.self, PurgeCommand.self, BackupCommand.self, RestoreCommand.self])
}
