// docs/quickstart.md is real: every `$ command` of its console blocks runs,
// in order, in bash, and prints what the page shows (process ids, times and
// column alignment aside); the commands the page shows failing fail. A
// ```swift block whose first line is `// /tmp/quickstart/NAME` is the file
// the page asks the reader to write there.

import Foundation
import Glibc
import Testing

@Suite("Ecosystem: the quick start runs as written")
struct EcosystemQuickstartTests {
    struct Step {
        var command: String
        var expected: [String]
    }

    /// The `$ ` lines of the ```console blocks, with the lines after each.
    static func steps(of markdown: String) -> [Step] {
        var steps: [Step] = []
        var inConsole = false
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("```") {
                inConsole = !inConsole && line == "```console"
                continue
            }
            guard inConsole else { continue }
            if line.hasPrefix("$ ") {
                steps.append(Step(command: String(line.dropFirst(2)), expected: []))
            } else if !steps.isEmpty {
                steps[steps.count - 1].expected.append(line)
            }
        }
        return steps
    }

    /// The ```swift blocks that name their file in a first-line comment:
    /// (path, contents).
    static func files(of markdown: String) -> [(path: String, text: String)] {
        var files: [(path: String, text: String)] = [], current: [String]?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if current == nil, line == "```swift" {
                current = []
            } else if let lines = current, line.hasPrefix("```") {
                if let first = lines.first, first.hasPrefix("// /tmp/quickstart/") {
                    files.append((String(first.dropFirst(3)), lines.joined(separator: "\n") + "\n"))
                }
                current = nil
            } else {
                current?.append(line)
            }
        }
        return files
    }

    /// Whitespace-separated words, digits runs as N: what must match.
    static func words(_ text: String) -> [String] {
        text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" }).map {
            $0.replacingOccurrences(of: "[0-9]+", with: "N", options: .regularExpression)
        }
    }

    @Test("Every command of docs/quickstart.md prints what the page shows",
          .enabled(if: access("/sbin/mount.fuse.appsandboxfs", X_OK) == 0, "run mount-scripts/setup.sh (the page's step 1)"))
    func quickstart() throws {
        let steps = Self.steps(of: repositoryFile("docs/quickstart.md"))
        try #require(steps.count > 10, "no console blocks found in docs/quickstart.md")
        let root = try makeTemporaryDirectory(prefix: "asfs-eco")
        let base = root + "/quickstart", mountpoint = base + "/mnt"
        defer {
            let pid = (jsonObject(runProcess([Binaries.appsandboxfs, "status", "--json", mountpoint]).stdout)?["mounts"]
                       as? [[String: Any]])?.first?["pid"] as? Int
            if isFuseMount(mountpoint) {
                Issue.record("the quick start left \(mountpoint) mounted")
                _ = runProcess(["fusermount3", "-u", "-z", mountpoint], timeout: 30)
            }
            if let pid { _ = processGone(Int32(pid), within: 15) }
            if !isFuseMount(mountpoint) { removeTree(root) }
        }
        // `appsandboxfs` on PATH is the one under test (not the copy
        // setup.sh installed); mount(8)'s helper runs it through APPSANDBOXFS_BIN.
        try makeDirectory(root + "/bin")
        symlink(Binaries.appsandboxfs, root + "/bin/appsandboxfs")
        try makeDirectory(base)
        for file in Self.files(of: repositoryFile("docs/quickstart.md")) {
            try writeFile(file.path.replacingOccurrences(of: "/tmp/quickstart", with: base), file.text)
        }

        var script = "export PATH='\(root)/bin':\"$PATH\" APPSANDBOXFS_BIN='\(Binaries.appsandboxfs)'\n"
        for (index, step) in steps.enumerated() {
            let command = step.command.replacingOccurrences(of: "/tmp/quickstart", with: base)
            script += "printf '\\n@@@ %d\\n' \(index)\n{ \(command)\n} 2>&1\nprintf '\\n@@@ status %d\\n' $?\n"
        }
        let result = runProcess(["bash", "-c", script], cwd: root, timeout: 300)
        #expect(result.stderr.isEmpty, "\(result.stderr)")

        // The Foundation bridge of the build under test lies beside it; the
        // page shows where setup.sh installs it.
        let builtBridge = parentDirectory(URL(fileURLWithPath: Binaries.appsandboxfs).resolvingSymlinksInPath().path)
            + "/libappsandboxfs-preload.so"
        let output = result.stdout.replacingOccurrences(of: base, with: "/tmp/quickstart")
            .replacingOccurrences(of: builtBridge, with: "/usr/local/lib/appsandboxfs/libappsandboxfs-preload.so")
        let parts = output.components(separatedBy: "\n@@@ ").dropFirst()
        var outputs: [Int: (text: String, status: Int)] = [:]
        var current: Int?
        for part in parts {
            let header = part.prefix { $0 != "\n" }
            let body = part.dropFirst(header.count + 1)
            if header.hasPrefix("status "), let current {
                outputs[current] = (outputs[current]?.text ?? "", Int(header.dropFirst(7)) ?? -1)
            } else if let index = Int(header) {
                current = index
                outputs[index] = (String(body), -1)
            }
        }
        for (index, step) in steps.enumerated() {
            let actual = try #require(outputs[index], "no output for: \(step.command)")
            let shouldFail = step.expected.contains { $0.contains("cannot ") || $0.contains("failed ") }
            #expect((actual.status != 0) == shouldFail, "$ \(step.command)\nexit \(actual.status)\n\(actual.text)")
            #expect(Self.words(actual.text) == Self.words(step.expected.joined(separator: "\n")),
                    "$ \(step.command)\nthe page shows:\n\(step.expected.joined(separator: "\n"))\nit printed:\n\(actual.text)")
        }
    }
}
