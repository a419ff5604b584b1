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
        let candidates = [folder + "/" + fileName, folder + "/../lib/appsandboxfs/" + fileName]
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

    /// The F2 line when the library is missing.
    static func warnIfMissing() {
        guard path == nil else { return }
        FileHandleless.warn("the Foundation bridge (\(fileName)) is not installed beside appsandboxfs or in ../lib/appsandboxfs: these Foundation calls stay no-ops in a container: URL.setResourceValues and NSURL.setResourceValue(_:forKey:) with isExcludedFromBackup; URL.resourceValues(forKeys:) for isExcludedFromBackupKey; FileManager.setAttributes, createFile and createDirectory with .protectionKey; FileManager.attributesOfItem(atPath:)[.protectionKey]; Data.write(to:options:) with a protection option")
    }
}
