// Where the programs under test are: beside the test binary (SwiftPM builds
// the test target's executable dependencies into the same folder), unless
// the environment says otherwise.

import Glibc

enum Binaries {
    /// The build's bin folder: the folder of /proc/self/exe
    /// (e.g. .build-tests/x86_64-unknown-linux-gnu/debug).
    static let buildDirectory: String = {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return "." }
        let exe = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return parentDirectory(exe)
    }()

    /// The driver: $APPSANDBOXFS_BIN (the program, or the folder holding it),
    /// else <build dir>/appsandboxfs.
    static var appsandboxfs: String {
        if let override = environment("APPSANDBOXFS_BIN") {
            return isDirectory(override) ? override + "/appsandboxfs" : override
        }
        return buildDirectory + "/appsandboxfs"
    }

    /// The Foundation bridge's preload library that the driver under test
    /// uses: the one beside it (docs/foundation.md).
    static var foundationBridge: String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let program = realpath(appsandboxfs, &buffer).map { String(cString: $0) } ?? appsandboxfs
        return parentDirectory(program) + "/libappsandboxfs-preload.so"
    }

    /// The probe: $FSPROBE_BIN, else fsprobe beside the test binary, else
    /// beside $APPSANDBOXFS_BIN.
    static var fsprobe: String {
        if let override = environment("FSPROBE_BIN") { return override }
        let beside = buildDirectory + "/fsprobe"
        if access(beside, X_OK) == 0 { return beside }
        return parentDirectory(appsandboxfs) + "/fsprobe"
    }

    /// The program that stores data as a typical iOS app does: $TYPICALAPP_BIN,
    /// else beside the test binary.
    static var typicalapp: String {
        environment("TYPICALAPP_BIN") ?? buildDirectory + "/typicalapp"
    }
}

func environment(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    let text = String(cString: value)
    return text.isEmpty ? nil : text
}

func parentDirectory(_ path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return slash == path.startIndex ? "/" : String(path[..<slash])
}

func isDirectory(_ path: String) -> Bool {
    var st = stat()
    return stat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR
}
