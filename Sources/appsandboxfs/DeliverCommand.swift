import ArgumentParser
import CLinux
import Foundation
import Glibc
import MountInfo

struct DeliverCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deliver",
        abstract: "Put files into a container's Documents/Inbox, as Mail or AirDrop would (rule I6).",
        discussion: """
            CONTAINER is a backing directory or the mountpoint of a mounted container.
            A name already taken gets a number, as on iOS: report.pdf, report-1.pdf, report-2.pdf.
            Examples:
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

    func run() throws {
        let target = absolutePath(to)
        let backing: String
        if let entry = MountTable.entry(at: target), entry.isContainer {
            backing = try entry.trustedBacking()
        } else {
            backing = target
        }
        let inbox = backing + "/Documents/Inbox"
        try MountChecks.folder(inbox, role: "Inbox of \(target)")
        var delivered: [Output.Delivery] = []
        // Every file is checked before any is delivered: a bad one changes nothing.
        for file in files {
            var s = stat()
            guard stat(absolutePath(file), &s) == 0 else { throw Failure("\(file): \(String(cString: strerror(errno)))") }
            guard s.st_mode & S_IFMT == S_IFREG else { throw Failure("\(file): not a regular file") }
        }
        for file in files {
            let source = absolutePath(file)
            let name = try deliver(source, into: inbox)
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

    /// Copies to a hidden name first, then renames without replacing, so a
    /// reader never sees half a file and a clash is never overwritten.
    private func deliver(_ source: String, into inbox: String) throws -> String {
        let temporary = inbox + "/.appsandboxfs-delivery-\(getpid())"
        unlink(temporary)
        do {
            try FileManager.default.copyItem(atPath: source, toPath: temporary)
        } catch {
            throw Failure("\(source): cannot copy into \(inbox): \(error.localizedDescription)")
        }
        let fd = open(temporary, O_RDONLY | O_CLOEXEC)
        if fd >= 0 { fsync(fd); close(fd) }
        let original = (source as NSString).lastPathComponent
        for number in 0..<10_000 {
            let name = Self.numberedName(original, number)
            if renameNoReplace(temporary, inbox + "/" + name) { return name }
            guard errno == EEXIST else {
                let code = errno
                unlink(temporary)
                throw Failure("\(inbox)/\(name): \(String(cString: strerror(code)))")
            }
        }
        unlink(temporary)
        throw Failure("\(inbox): no free name for \(original)")
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

    /// rename(2) that fails with EEXIST rather than replace (renameat2's
    /// RENAME_NOREPLACE): one step, nothing left half done.
    private func renameNoReplace(_ from: String, _ to: String) -> Bool {
        asfs_rename_noreplace(from, to) == 0
    }
}
