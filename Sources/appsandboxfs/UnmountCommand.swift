import ArgumentParser
import Foundation

struct UnmountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unmount",
        abstract: "Unmount a container (also a stale one whose driver died).",
        discussion: "Example:\n  appsandboxfs unmount /mnt/MyApp")

    @Argument(help: "The mountpoint.")
    var mountpoint: String

    func run() throws {
        let path = absolutePath(mountpoint)
        let status = runTool("/usr/bin/fusermount3", ["-u", path])
        if status == 0 { return }
        // A stale mount ("Transport endpoint is not connected") needs a lazy unmount.
        if runTool("/usr/bin/fusermount3", ["-u", "-z", path]) == 0 { return }
        throw Failure("\(path): cannot unmount (fusermount3 exited with \(status))")
    }
}

/// Runs a program and returns its exit status.
func runTool(_ path: String, _ arguments: [String]) -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    do {
        try process.run()
    } catch {
        return 127
    }
    process.waitUntilExit()
    return process.terminationStatus
}

func absolutePath(_ path: String) -> String {
    if path.hasPrefix("/") { return URL(fileURLWithPath: path).standardizedFileURL.path }
    return URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(path).standardizedFileURL.path
}
