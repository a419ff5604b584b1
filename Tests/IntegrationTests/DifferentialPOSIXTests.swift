// Differential POSIX tests (rule W1): every case is an fsprobe script run in
// a plain folder on the backing file system and in a fresh folder in the
// mounted container's Documents; the two outputs must agree line by line.
//
// One mount serves all cases (the `SharedDifferentialMount` trait mounts once
// around the parameterized test); each case gets its own pair of folders.
// The cases are in DifferentialPOSIXCases.swift. A case line may end in
// `=> TEXT`: the plain run's line must then start with TEXT, which checks the
// case itself (that it tests what it says) before the mount is compared.
//
// ASFS_DIFF_PLAIN=1 compares two plain folders instead of mounting: a check
// of fsprobe and of the cases, with no driver needed. ASFS_DIFF_PLAIN=/dir
// puts the second folder under /dir (another file system, to see the
// harness report differences).

import Glibc
import Testing

/// One differential case: `setup` runs as root, then `script` as `user`
/// (root when nil; group the same number; supplementary `groups`, else
/// none), both in the case's folder. A `knownDifference` says why the mount
/// cannot match yet: the difference is then a known issue (and its absence
/// a failure, so that the note goes when the cause does).
struct POSIXCase: Sendable, CustomTestStringConvertible {
    let name: String
    let setup: String
    let script: String
    let user: uid_t?
    let groups: [gid_t]?
    let knownDifference: String?

    init(_ name: String, setup: String = "", asUser user: uid_t? = nil, groups: [gid_t]? = nil,
         knownDifference: String? = nil, _ script: String) {
        self.name = name
        self.setup = setup
        self.script = script
        self.user = user
        self.groups = groups
        self.knownDifference = knownDifference
    }

    var testDescription: String { name }
}

/// The folders the cases run in: a plain one on the backing file system and
/// the subject (the mount, or a second plain folder with ASFS_DIFF_PLAIN).
final class DifferentialEnvironment: Sendable {
    @TaskLocal static var current: DifferentialEnvironment?

    let plainRoot: String
    let mounted: MountedContainer?
    let otherPlainRoot: String?

    init(plainRoot: String, mounted: MountedContainer?, otherPlainRoot: String?) {
        self.plainRoot = plainRoot
        self.mounted = mounted
        self.otherPlainRoot = otherPlainRoot
    }

    /// A fresh, empty pair of folders (mode 0755, root's) for one case.
    func folders(for name: String) throws -> (plain: String, subject: String) {
        let plain = plainRoot + "/" + name
        try makeDirectory(plain, mode: 0o755)
        if let mounted { return (plain, try mounted.scratch(name)) }
        let other = (otherPlainRoot ?? plainRoot + "-other") + "/" + name
        try makeDirectory(other, mode: 0o755)
        return (plain, other)
    }
}

/// Mounts one container around the whole parameterized test (all its cases),
/// and checks at the end that the cases caused no denials.
struct SharedDifferentialMount: TestTrait, TestScoping {
    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? self : nil
    }

    func provideScope(for test: Test, testCase: Test.Case?,
                      performing function: @Sendable () async throws -> Void) async throws {
        let plainRoot = try makeTemporaryDirectory(prefix: "asfs-diff-plain")
        defer { removeTree(plainRoot) }
        if let plainOnly = environment("ASFS_DIFF_PLAIN") {
            let other: String
            if plainOnly.hasPrefix("/") {
                other = plainOnly + "/asfs-diff-other-\(getpid())"
                try makeDirectory(other)
            } else {
                other = try makeTemporaryDirectory(prefix: "asfs-diff-other")
            }
            defer { _ = runProcess(["rm", "-rf", "--one-file-system", "--", other]) }
            let env = DifferentialEnvironment(plainRoot: plainRoot, mounted: nil, otherPlainRoot: other)
            try await DifferentialEnvironment.$current.withValue(env) { try await function() }
            return
        }
        try await withMountedContainer { mounted in
            let env = DifferentialEnvironment(plainRoot: plainRoot, mounted: mounted, otherPlainRoot: nil)
            try await DifferentialEnvironment.$current.withValue(env) { try await function() }
            // Everything ran in Documents: nothing may have been denied.
            let denials = mounted.denialLines()
            #expect(denials.isEmpty, "denials during the differential cases:\n\(denials.joined(separator: "\n"))")
        }
    }
}

extension Trait where Self == SharedDifferentialMount {
    static var sharedDifferentialMount: Self { Self() }
}

@Suite("Differential POSIX (W1): the mount answers as the backing file system")
struct DifferentialPOSIXTests {
    @Test("case", .sharedDifferentialMount, arguments: POSIXCases.all)
    func matchesPlainFolder(_ c: POSIXCase) throws {
        let env = try #require(DifferentialEnvironment.current, "the shared mount trait is missing")
        let (plainDir, subjectDir) = try env.folders(for: c.name)

        let (setup, script, expectations) = strip(c.setup, c.script)
        let plain = run(setup: setup, script: script, as: c, in: plainDir)
        let subject = run(setup: setup, script: script, as: c, in: subjectDir)
        let subjectLabel = env.mounted == nil ? "plain-2" : "mount"

        // The case itself: fsprobe read it, and the plain run gave what the
        // case's `=>` lines say.
        for (label, out) in [("setup", plain.setup), ("script", plain.script)] where out.status != 0 {
            Issue.record("\(c.name): fsprobe \(label) exited \(out.status) on the plain folder:\n\(out.lines.joined(separator: "\n"))\n\(out.stderr)")
        }
        for (index, expected) in expectations where index >= plain.script.lines.count || !plain.script.lines[index].hasPrefix(expected) {
            let got = index < plain.script.lines.count ? plain.script.lines[index] : "(nothing)"
            Issue.record("\(c.name): the case is wrong about the plain file system at \"\(scriptOperations(script)[index])\": expected \(expected), got \(got)")
        }

        // The comparison.
        if let diff = outputDifference(script: setup, expected: plain.setup.lines, actual: subject.setup.lines,
                                       actualLabel: subjectLabel) {
            Issue.record("\(c.name): the setup differs (as root):\n\(diff)")
        }
        let diff = outputDifference(script: script, expected: plain.script.lines, actual: subject.script.lines,
                                    actualLabel: subjectLabel)
        if let known = c.knownDifference, env.mounted != nil {
            withKnownIssue(Comment(rawValue: known)) {
                if let diff { Issue.record("\(c.name): outputs differ (known: \(known)):\n\(diff)") }
            }
        } else if let diff {
            Issue.record("\(c.name): outputs differ\(c.user.map { " (as uid \($0))" } ?? ""):\n\(diff)")
        }
        // Renames inside one mount never give EXDEV (W3), and no call ever
        // gives ENOSYS (X6); true of the plain folder too, so checked apart.
        let all = subject.setup.lines + subject.script.lines
        #expect(!all.contains("err EXDEV"), "\(c.name): EXDEV inside the mount")
        #expect(!all.contains("err ENOSYS"), "\(c.name): ENOSYS from the mount")
    }

    /// W3: the zones are one file system underneath, so renames between
    /// them work and never answer EXDEV (which would make mv copy).
    @Test("renames between Documents, Library, Caches, Application Support and tmp work (W3)")
    func renamesBetweenZones() throws {
        try withMountedContainer { mounted in
            let out = runFSProbe(in: mounted.mountpoint, script: #"""
                open 1 Documents/f creat|wronly
                write 1 "travelling"
                rename Documents/f Library/f
                rename Library/f "Library/Application Support/f"
                rename "Library/Application Support/f" Library/Caches/f
                rename Library/Caches/f Library/Preferences/f
                rename Library/Preferences/f tmp/f
                rename tmp/f Documents/back
                stat Documents/back size
                mkdir Documents/dir
                open 2 Documents/dir/inner creat
                rename Documents/dir tmp/dir
                rename tmp/dir Library/dir
                renameat2 Library/dir Documents/dir NOREPLACE
                open 3 tmp/other creat
                renameat2 Documents/back tmp/other EXCHANGE
                stat tmp/other size
                link tmp/other Library/hardlink
                stat Library/hardlink nlink
                """#)
            #expect(out.status == 0)
            #expect(!out.lines.contains("err EXDEV"), "EXDEV between zones:\n\(out.lines.joined(separator: "\n"))")
            #expect(out.lines == ["ok", "ok 10", "ok", "ok", "ok", "ok", "ok", "ok", "ok size=10",
                                  "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok size=10", "ok", "ok nlink=2"])
            #expect(mounted.denialLines().isEmpty, "denials: \(mounted.denialLines())")
        }
    }

    @Test("the table is large and its names unique")
    func tableIsSound() {
        let names = POSIXCases.all.map(\.name)
        #expect(names.count >= 60)
        #expect(Set(names).count == names.count, "duplicate case names")
        for name in names {
            #expect(name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }, "case name \(name)")
        }
    }

    private struct Run {
        var setup: ProbeOutput
        var script: ProbeOutput
    }

    private func run(setup: String, script: String, as c: POSIXCase, in dir: String) -> Run {
        let setupOutput = setup.isEmpty ? ProbeOutput(lines: [], status: 0, stderr: "")
            : runFSProbe(in: dir, script: setup)
        let scriptOutput = runFSProbe(in: dir, script: script, asUser: c.user, supplementaryGroups: c.groups)
        return Run(setup: setupOutput, script: scriptOutput)
    }

    /// Takes the `=> EXPECTED` ends off the script's lines; returns the
    /// expectations by operation index (setup lines may carry none).
    private func strip(_ setup: String, _ script: String) -> (String, String, [(Int, String)]) {
        var expectations: [(Int, String)] = []
        var lines: [String] = []
        var index = 0
        for line in script.split(separator: "\n", omittingEmptySubsequences: false) {
            var text = String(line)
            if let arrow = text.arrowRange() {
                expectations.append((index, String(text[arrow.upperBound...]).trimmingSpaces()))
                text = String(text[..<arrow.lowerBound])
            }
            if !scriptOperations(text).isEmpty { index += 1 }
            lines.append(text)
        }
        return (setup, lines.joined(separator: "\n"), expectations)
    }
}

private extension String {
    /// Where " => " is in the line.
    func arrowRange() -> Range<String.Index>? {
        let needle = " => "
        var i = startIndex
        while i < endIndex {
            if self[i...].hasPrefix(needle) { return i..<index(i, offsetBy: needle.count) }
            i = index(after: i)
        }
        return nil
    }

    func trimmingSpaces() -> String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
