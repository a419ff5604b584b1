// Checking denials as the contract states them: the exact errno, nothing
// changed in the backing directory, and one denial-log line naming the
// operation and the path through the mountpoint.
//
//   mounted.expectDenial("chmod", EROFS, "file-write-mode", at: mounted.bundle + "/Info.plist") {
//       RulesSys.chmod(mounted.bundle + "/Info.plist", 0o600)
//   }

import Glibc
import Testing

/// One denial-log line, `Sandbox: <process>(<pid>) deny(1) <operation> <path>`,
/// with the process name and the path unescaped (docs/rules.md, "The denial
/// line"; the same decoding as AppSandboxTesting's `Denial`).
struct RulesDenialLine: Equatable, CustomStringConvertible {
    var process: String
    var pid: Int32
    var operation: String
    var path: String

    /// Parses a line; nil when it is not in the iOS form.
    init?(_ line: String) {
        guard line.hasPrefix("Sandbox: "), let deny = line.range(of: ") deny(1) ") else { return nil }
        let head = line[line.index(line.startIndex, offsetBy: 9)..<deny.lowerBound]  // "name(pid"
        guard let open = head.lastIndex(of: "("), let pid = Int32(head[head.index(after: open)...]) else { return nil }
        let tail = line[deny.upperBound...]
        guard let space = tail.firstIndex(of: " ") else { return nil }
        process = Self.unescape(head[..<open])
        self.pid = pid
        operation = String(tail[..<space])
        path = Self.unescape(tail[tail.index(after: space)...])
    }

    /// \n, \t, \\ and \xNN back to the bytes they stand for.
    static func unescape(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var input = Array(text.utf8)[...]
        while let byte = input.popFirst() {
            guard byte == UInt8(ascii: "\\"), let next = input.popFirst() else { bytes.append(byte); continue }
            switch next {
            case UInt8(ascii: "n"): bytes.append(0x0A)
            case UInt8(ascii: "t"): bytes.append(0x09)
            case UInt8(ascii: "x"):
                bytes.append(UInt8(String(decoding: input.prefix(2), as: UTF8.self), radix: 16) ?? 0x3F)
                input = input.dropFirst(2)
            default: bytes.append(next)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    var description: String { "Sandbox: \(process)(\(pid)) deny(1) \(operation) \(path)" }
}

/// The ten operation names of the contract.
let rulesOperationNames: Set<String> = [
    "file-read-data", "file-write-create", "file-write-data", "file-write-unlink", "file-write-mode",
    "file-write-owner", "file-write-times", "file-write-xattr", "file-link", "file-write-rename",
]

/// The fixture, for the rule tests: mounts as `withMountedContainer` does,
/// then waits until the driver answers requests before running `body`.
/// The fixture's mount is there as soon as it shows in /proc/self/mountinfo,
/// but the driver may still be starting (it probes the backing directory's
/// xattr support on Documents after mounting); a request that always
/// reaches it (statfs) returns only once it serves, so snapshots taken after
/// it see the backing directory at rest.
func withRulesContainer<T>(
    extraArguments: [String] = [],
    prepare: (String) throws -> Void = { _ in },
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (MountedContainer) throws -> T
) throws -> T {
    try withMountedContainer(extraArguments: extraArguments, prepare: prepare, sourceLocation: sourceLocation) { m in
        let code = rulesStatfs(m.mountpoint)
        #expect(code == 0, "statfs of the new mount: \(posixError(code))", sourceLocation: sourceLocation)
        return try body(m)
    }
}

extension MountedContainer {
    /// Runs `body` (a system call answering 0 or its errno) and checks that it
    /// failed with `expected`, that nothing changed in the backing directory
    /// (nor in `watching`, other folders a wrong answer could touch), and that
    /// exactly one denial line was written, for `operation` at one of `paths`
    /// (the absolute paths through the mountpoint; a rename or link may be
    /// logged at either of its two names). The line's pid must be this
    /// process or one of its threads.
    func expectDenial(
        _ label: String, _ expected: Int32, _ operation: String, at paths: String...,
        watching: [String] = [], sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () -> Int32
    ) {
        let roots = [backing] + watching
        let before = roots.map { RulesTreeSnapshot(of: $0) }
        let linesBefore = denialLines().count
        let got = body()
        #expect(RulesSys.outcome(got) == RulesSys.outcome(expected), "\(label)", sourceLocation: sourceLocation)
        for (root, snapshot) in zip(roots, before) {
            let changes = RulesTreeSnapshot(of: root).changes(since: snapshot)
            #expect(changes.isEmpty, "\(label) changed \(root):\n\(changes.joined(separator: "\n"))",
                    sourceLocation: sourceLocation)
        }
        let new = Array(denialLines().dropFirst(linesBefore))
        guard new.count == 1, let line = RulesDenialLine(new[0]) else {
            let message = "\(label): expected one denial line for \(operation) at \(paths[0]), got \(new.count):\n"
                + new.joined(separator: "\n")
            Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
            return
        }
        #expect(line.operation == operation, "\(label): \(line)", sourceLocation: sourceLocation)
        #expect(paths.contains(line.path), "\(label): logged at \(line.path), expected \(paths.joined(separator: " or "))",
                sourceLocation: sourceLocation)
        #expect(line.pid == getpid() || access("/proc/self/task/\(line.pid)", F_OK) == 0,
                "\(label): pid \(line.pid) is not this process (\(getpid())) or one of its threads",
                sourceLocation: sourceLocation)
    }

    /// Runs `body` and checks that it succeeded without a denial line.
    func expectAllowed(_ label: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () -> Int32) {
        let linesBefore = denialLines().count
        let got = body()
        #expect(RulesSys.outcome(got) == "ok", "\(label)", sourceLocation: sourceLocation)
        let new = Array(denialLines().dropFirst(linesBefore))
        #expect(new.isEmpty, "\(label) wrote denial lines:\n\(new.joined(separator: "\n"))", sourceLocation: sourceLocation)
    }

    /// Runs `body` and checks that it failed with `expected` (an errno of the
    /// backing file system, not a denial): no denial line, nothing changed.
    func expectPassedThrough(_ label: String, _ expected: Int32, sourceLocation: SourceLocation = #_sourceLocation,
                             _ body: () -> Int32) {
        let before = RulesTreeSnapshot(of: backing)
        let linesBefore = denialLines().count
        let got = body()
        #expect(RulesSys.outcome(got) == RulesSys.outcome(expected), "\(label)", sourceLocation: sourceLocation)
        let changes = RulesTreeSnapshot(of: backing).changes(since: before)
        #expect(changes.isEmpty, "\(label) changed the backing directory:\n\(changes.joined(separator: "\n"))",
                sourceLocation: sourceLocation)
        let new = Array(denialLines().dropFirst(linesBefore))
        #expect(new.isEmpty, "\(label) wrote denial lines:\n\(new.joined(separator: "\n"))", sourceLocation: sourceLocation)
    }

    /// The denial lines, parsed (lines not in the iOS form are left out).
    func parsedDenials() -> [RulesDenialLine] { denialLines().compactMap(RulesDenialLine.init) }
}
