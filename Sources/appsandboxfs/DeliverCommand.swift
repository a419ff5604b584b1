import ArgumentParser
import CLinux
import DriverRuntime
import Foundation
import Glibc
import MountInfo
import POSIXHelpers

struct DeliverCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deliver",
        _superCommandName: "appsandboxfs",
        abstract: "Put files into a container's Documents/Inbox, as Mail or AirDrop would (rule I6).",
        discussion: """
            CONTAINER is a backing directory or the mountpoint of a mounted container.
            A name already taken gets a number, as on iOS: report.pdf, report-1.pdf, report-2.pdf.
            On a device, --app ID delivers into that app's data container (A6): --to is then
            the device (its mountpoint or backing directory).
            Examples:
              appsandboxfs deliver invoice.pdf --to /mnt/phone --app com.example.notes
              appsandboxfs deliver invoice.pdf --to /mnt/MyApp
              appsandboxfs deliver a.txt b.txt --to ~/containers/MyApp
              appsandboxfs deliver a.pdf --to /mnt/MyApp --json | jq -r '.delivered[].name'
            """)

    @Argument(help: "Files to deliver.")
    var files: [String]

    @Option(help: "The container (backing directory or mountpoint).")
    var to: String

    @Flag(help: "Print JSON for tools (the names the files got) instead of lines.")
    var json = false

    @Option(help: ArgumentHelp("On a device: the app whose Inbox receives the files (A6).", valueName: "bundle id"))
    var app: String?

    func run() throws {
        var target = absolutePath(to)
        let backing: String
        if let app {
            let data = try DeviceAppArgument(device: to, bundleID: app)
            target = data.shown
            backing = data.backing
        } else if let entry = MountTable.entry(at: target), entry.isContainer {
            backing = try entry.trustedBacking()
        } else {
            backing = target
        }
        let inboxPath = backing + "/Documents/Inbox"
        try MountChecks.folder(inboxPath, role: "Inbox of \(target)")
        let inbox = try Self.openInbox(backing)
        defer { close(inbox) }
        var delivered: [Output.Delivery] = []
        // Every file is checked before any is delivered: a bad one changes nothing.
        for file in files {
            var s = stat()
            guard stat(absolutePath(file), &s) == 0 else { throw Failure("\(file): \(errorText(errno))") }
            guard s.st_mode & S_IFMT == S_IFREG else { throw Failure("\(file): not a regular file") }
        }
        for file in files {
            let source = absolutePath(file)
            let name = try deliver(source, into: inbox, path: inboxPath)
            let path = "\(target)/Documents/Inbox/\(name)"
            if json {
                delivered.append(Output.Delivery(file: file, name: name, path: path))
            } else {
                print("\(file) -> \(path)")
            }
        }
        if json { try JSONOutput.print(Output(container: target, delivered: delivered)) }
    }

    /// `--json`: what each file became, in the order given.
    struct Output: Encodable {
        var schema = "appsandboxfs.deliver/1"
        var container: String
        var delivered: [Delivery]

        struct Delivery: Encodable {
            /// As given on the command line.
            var file: String
            /// Its name in the Inbox (numbered when the name was taken).
            var name: String
            var path: String
        }
    }

    /// BACKING/Documents/Inbox, opened one name at a time without following
    /// links: the path to BACKING may go through links (the user named it),
    /// but a Documents or Inbox that is a link (made in the backing folder
    /// by whoever can write it) cannot send root's copy elsewhere.
    static func openInbox(_ backing: String) throws -> Int32 {
        let root = open(backing, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard root >= 0 else { throw Failure("\(backing): \(errorText(errno))") }
        defer { close(root) }
        let documents = openat(root, "Documents", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard documents >= 0 else { throw Failure("\(backing)/Documents: not a folder (\(errorText(errno)))") }
        defer { close(documents) }
        let inbox = openat(documents, "Inbox", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard inbox >= 0 else { throw Failure("\(backing)/Documents/Inbox: not a folder (\(errorText(errno)))") }
        return inbox
    }

    /// Copies to a hidden name first, then renames it to its name without
    /// replacing, so a reader never sees half a file and a clash is never
    /// overwritten. Every step is relative to the Inbox's descriptor. The
    /// copy keeps the source's permission bits but no set-ID bits: a
    /// delivered file is data (docs/security.md).
    private func deliver(_ source: String, into inbox: Int32, path inboxPath: String) throws -> String {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw Failure("\(source): \(errorText(errno))") }
        defer { close(input) }
        var status = stat()
        guard fstat(input, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { throw Failure("\(source): not a regular file") }
        let temporary = ".appsandboxfs-delivery-\(getpid())"
        unlinkat(inbox, temporary, 0)
        let output = openat(inbox, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard output >= 0 else { throw Failure("\(inboxPath)/\(temporary): \(errorText(errno))") }
        do {
            defer { close(output) }
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count >= 0 else { throw Failure("\(source): \(errorText(errno))") }
                if count == 0 { break }
                var done = 0
                while done < count {
                    let wrote = buffer.withUnsafeBytes { write(output, $0.baseAddress! + done, count - done) }
                    if wrote < 0 && errno == EINTR { continue }
                    guard wrote > 0 else { throw Failure("\(source): cannot copy into \(inboxPath): \(errorText(errno))") }
                    done += wrote
                }
            }
            fchmod(output, status.st_mode & 0o777)
            fsync(output)
        } catch {
            unlinkat(inbox, temporary, 0)
            throw error
        }
        let original = (source as NSString).lastPathComponent
        for number in 0..<10_000 {
            let name = Self.numberedName(original, number)
            // renameat2(RENAME_NOREPLACE): one step that fails with EEXIST
            // rather than replace a file already there.
            if asfs_renameat2(inbox, temporary, inbox, name, UInt32(asfs_RENAME_NOREPLACE)) == 0 { return name }
            guard errno == EEXIST else {
                let code = errno
                unlinkat(inbox, temporary, 0)
                throw Failure("\(inboxPath)/\(name): \(errorText(code))")
            }
        }
        unlinkat(inbox, temporary, 0)
        throw Failure("\(inboxPath): no free name for \(original)")
    }

    /// "report.pdf", then "report-1.pdf", "report-2.pdf"; a name without an
    /// extension (or a dot file) gets the number at the end.
    static func numberedName(_ name: String, _ number: Int) -> String {
        guard number > 0 else { return name }
        if let dot = name.lastIndex(of: "."), dot != name.startIndex {
            return "\(name[..<dot])-\(number)\(name[dot...])"
        }
        return "\(name)-\(number)"
    }
}
