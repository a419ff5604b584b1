import DriverRuntime
import Foundation
import Glibc

/// The Foundation bridge's preload library (docs/foundation.md, F1, F2):
/// `run` and `env` put it in LD_PRELOAD, so that a program's own Foundation
/// calls for the backup mark and the protection class act on the container.
/// It lies beside the appsandboxfs program (a build folder), or in
/// `../lib/appsandboxfs/` from it (an install).
enum FoundationBridgeLibrary {
    static let fileName = "libappsandboxfs-preload.so"

    /// The library's path; nil when it is not installed.
    static let path: String? = {
        let folder = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().path
        let parent = URL(fileURLWithPath: folder).deletingLastPathComponent().path
        let candidates = [folder + "/" + fileName, parent + "/lib/appsandboxfs/" + fileName]
        return candidates.first { access($0, R_OK) == 0 }
    }()

    /// LD_PRELOAD with the library first and what the environment already
    /// preloads after it; nil when the library is not installed.
    static var preload: String? {
        guard let path else { return nil }
        let existing = getenv("LD_PRELOAD").map { String(cString: $0) } ?? ""
        let others = existing.split(whereSeparator: { $0 == " " || $0 == ":" }).filter { $0 != path }
        return ([path] + others.map(String.init)).joined(separator: " ")
    }

    /// The environment for a confined world (R1, `run --confine` and
    /// `launch`): that world replaces /tmp and /var/tmp with the container's
    /// tmp, so a library below them (a checkout under /tmp) cannot be loaded
    /// there. Then the bridge leaves LD_PRELOAD, and `warning` is the F2
    /// line to print once the world is made (a refusal stays one line, R5).
    static func forConfinedWorld(_ environment: [(name: String, value: String)])
        -> (environment: [(name: String, value: String)], warning: String?) {
        guard let path, ["/tmp/", "/var/tmp/"].contains(where: { path.hasPrefix($0) }) else { return (environment, nil) }
        let kept: [(name: String, value: String)] = environment.compactMap { variable in
            guard variable.name == "LD_PRELOAD" else { return variable }
            let others = variable.value.split(whereSeparator: { $0 == " " || $0 == ":" }).filter { $0 != path }
            return others.isEmpty ? nil : (variable.name, others.joined(separator: " "))
        }
        return (kept, "the Foundation bridge (\(path)) lies below a folder a confined world replaces with the container's tmp: these Foundation calls stay no-ops in it: \(calls)")
    }

    static let calls = "URL.setResourceValues and NSURL.setResourceValue(_:forKey:) with isExcludedFromBackup; URL.resourceValues(forKeys:) for isExcludedFromBackupKey; FileManager.setAttributes, createFile and createDirectory with .protectionKey; FileManager.attributesOfItem(atPath:)[.protectionKey]; Data.write(to:options:) with a protection option"

    /// The F2 line when the library is missing.
    static func warnIfMissing() {
        guard path == nil else { return }
        FileHandleless.warn("the Foundation bridge (\(fileName)) is not installed beside appsandboxfs or in ../lib/appsandboxfs: these Foundation calls stay no-ops in a container: \(calls)")
    }

    /// The F2 line for a command that no preloaded library can reach: a
    /// Swift program linked with -static-executable (no dynamic loader, so
    /// no LD_PRELOAD) that carries Foundation. (A -static-stdlib program
    /// has a loader: the preload library itself says so.)
    static func warnIfUnreachable(_ command: String) {
        guard path != nil, let program = lookUp(command), let image = MappedFile(program),
              image.isStaticExecutable, image.contains("20FoundationEssentials") else { return }
        let name = program[program.index(after: program.lastIndex(of: "/") ?? program.startIndex)...]
        FileHandleless.warn("\(name): these Foundation calls stay no-ops in a container (the program is linked statically, with no dynamic loader to load the Foundation bridge): \(calls)")
    }

    /// `command` as execvp finds it.
    private static func lookUp(_ command: String) -> String? {
        if command.contains("/") { return command }
        let folders = (getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin").split(separator: ":")
        return folders.map { "\($0)/\(command)" }.first { access($0, X_OK) == 0 }
    }

    /// A program's file, mapped for reading.
    private final class MappedFile {
        let bytes: UnsafeRawBufferPointer

        init?(_ path: String) {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return nil }
            defer { close(fd) }
            var info = stat()
            guard fstat(fd, &info) == 0, info.st_size > 64,
                  let base = mmap(nil, Int(info.st_size), PROT_READ, MAP_PRIVATE, fd, 0), base != MAP_FAILED else { return nil }
            bytes = UnsafeRawBufferPointer(start: base, count: Int(info.st_size))
        }

        deinit { munmap(UnsafeMutableRawPointer(mutating: bytes.baseAddress), bytes.count) }

        /// A 64-bit ELF executable with no PT_INTERP program header.
        var isStaticExecutable: Bool {
            guard bytes.starts(with: [0x7f, 0x45, 0x4c, 0x46, 2]) else { return false }
            let headers = Int(bytes.load(fromByteOffset: 32, as: UInt64.self))
            let size = Int(bytes.load(fromByteOffset: 54, as: UInt16.self))
            let count = Int(bytes.load(fromByteOffset: 56, as: UInt16.self))
            guard headers > 0, size >= 4, headers + size * count <= bytes.count else { return false }
            return !(0..<count).contains { bytes.load(fromByteOffset: headers + $0 * size, as: UInt32.self) == 3 }
        }

        func contains(_ text: String) -> Bool {
            let needle = Array(text.utf8)
            guard let first = needle.first, let base = bytes.baseAddress else { return false }
            var offset = 0
            while offset + needle.count <= bytes.count {
                guard let hit = memchr(base + offset, Int32(first), bytes.count - offset - needle.count + 1) else { return false }
                let at = base.distance(to: UnsafeRawPointer(hit))
                if memcmp(hit, needle, needle.count) == 0 { return true }
                offset = at + 1
            }
            return false
        }
    }
}
