// A small Swift program that imports nothing of this project and makes
// Foundation's own storage calls (F1), compiled at test time with the
// toolchain's swiftc: once per source change, kept in the build folder
// (`foundation-probe/`), dynamically linked, and with -static-stdlib and
// -static-executable for F2.

import Foundation
import Glibc
import Testing

enum FoundationProbe {
    /// The program, one line of output per command (see `source`).
    static let dynamic: Result<String, SupportError> = build(name: "calls", flags: [])
    /// The same, with Foundation linked into the program (F2).
    static let staticallyLinked: Result<String, SupportError> = build(name: "calls-static", flags: ["-static-stdlib"])
    /// With no dynamic loader at all (-static-executable): `run` says so.
    static let staticExecutable: Result<String, SupportError> = build(name: "calls-static-executable", flags: ["-static-executable"])

    static var swiftc: String { environment("SWIFTC") ?? "/opt/swift/usr/bin/swiftc" }

    private static func build(name: String, flags: [String]) -> Result<String, SupportError> {
        let folder = Binaries.buildDirectory + "/foundation-probe"
        let sourcePath = folder + "/\(name).swift", program = folder + "/\(name)"
        mkdir(folder, 0o755)
        if (try? String(contentsOfFile: sourcePath, encoding: .utf8)) == source && access(program, X_OK) == 0 {
            return .success(program)
        }
        unlink(program)
        do {
            try source.write(toFile: sourcePath, atomically: true, encoding: .utf8)
        } catch {
            return .failure(SupportError("\(sourcePath): \(error)"))
        }
        let built = runProcess([swiftc] + flags + [sourcePath, "-o", program], timeout: 600)
        guard built.status == 0 else {
            unlink(sourcePath)
            return .failure(SupportError("\(swiftc) \(flags) \(sourcePath): \(built.status): \(built.stderr)"))
        }
        return .success(program)
    }

    /// Runs the program under `appsandboxfs run MOUNTPOINT`, in the
    /// container's root, with `commands`.
    static func run(_ program: String, in m: MountedContainer, _ commands: [String])
        -> (status: Int32, stdout: String, stderr: String) {
        runProcess([Binaries.appsandboxfs, "run", m.mountpoint, "--", program] + commands, cwd: m.mountpoint)
    }

    /// The output lines of `run`, expecting a clean run.
    static func lines(in m: MountedContainer, _ commands: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> [String] {
        let program = try dynamic.get()
        let result = run(program, in: m, commands)
        #expect(result.status == 0, "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(!result.stderr.contains("appsandboxfs:"), "\(result.stderr)", sourceLocation: sourceLocation)
        return result.stdout.split(separator: "\n").map(String.init)
    }

    static let source = #"""
// Foundation's storage calls, one per command; imports nothing else.
import Foundation

func out(_ s: String) { print(s) }
func code(_ e: Error) -> String { "error \((e as NSError).code)" }
func cls(_ name: String) -> FileProtectionType { FileProtectionType(rawValue: name) }
func option(_ name: String) -> Data.WritingOptions {
    switch name {
    case "complete": .completeFileProtection
    case "unlessOpen": .completeFileProtectionUnlessOpen
    case "untilFirst": .completeFileProtectionUntilFirstUserAuthentication
    case "none": .noFileProtection
    default: []
    }
}
var arguments = Array(CommandLine.arguments.dropFirst())
while !arguments.isEmpty {
    let command = arguments.removeFirst()
    func next() -> String { arguments.removeFirst() }
    do {
        switch command {
        case "mark":
            var url = URL(fileURLWithPath: next())
            var values = URLResourceValues()
            values.isExcludedFromBackup = next() == "true"
            try url.setResourceValues(values)
            out("ok")
        case "nsmark":
            let url = NSURL(fileURLWithPath: next())
            try url.setResourceValue(next() == "true", forKey: .isExcludedFromBackupKey)
            out("ok")
        case "nsmarked":
            var value: AnyObject?
            try NSURL(fileURLWithPath: next()).getResourceValue(&value, forKey: .isExcludedFromBackupKey)
            out(value.map { "\(($0 as? NSNumber)?.boolValue ?? false)" } ?? "nil")
        case "mkdirmode":
            let path = next()
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false,
                                                    attributes: [.protectionKey: cls(next()), .posixPermissions: 0o700])
            out(String(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as! Int, radix: 8))
        case "marked":
            let url = URL(fileURLWithPath: next())
            let value = try url.resourceValues(forKeys: [.isExcludedFromBackupKey]).isExcludedFromBackup
            out(value.map { "\($0)" } ?? "nil")
        case "setclass":
            let path = next()
            try FileManager.default.setAttributes([.protectionKey: cls(next())], ofItemAtPath: path)
            out("ok")
        case "create":
            let path = next()
            out("\(FileManager.default.createFile(atPath: path, contents: Data("created".utf8), attributes: [.protectionKey: cls(next())]))")
        case "mkdir":
            let path = next()
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.protectionKey: cls(next())])
            out("ok")
        case "mkdirurl":
            let url = URL(fileURLWithPath: next())
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.protectionKey: cls(next())])
            out("ok")
        case "write", "writeatomic":
            let url = URL(fileURLWithPath: next())
            var options = option(next())
            if command == "writeatomic" { options.insert(.atomic) }
            try Data("written".utf8).write(to: url, options: options)
            out("ok")
        case "class":
            let value = try FileManager.default.attributesOfItem(atPath: next())[.protectionKey]
            out((value as? FileProtectionType)?.rawValue ?? (value as? String) ?? "nil")
        case "others":
            // Keys and options the bridge does not stand in for work as before.
            let path = next()
            try Data("other".utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: path)
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            let size = try URL(fileURLWithPath: path).resourceValues(forKeys: [.fileSizeKey, .isDirectoryKey])
            out("\(String(attributes[.posixPermissions] as! Int, radix: 8)) \(attributes[.size] as! Int) \(size.fileSize ?? -1) \(size.isDirectory ?? true)")
        default:
            out("unknown \(command)")
        }
    } catch {
        out(code(error))
    }
}
"""#
}
