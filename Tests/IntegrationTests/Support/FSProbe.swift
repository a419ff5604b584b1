// Running fsprobe scripts (grammar: Tests/fsprobe/main.swift) and comparing
// their outputs.

import Glibc

/// What one fsprobe run printed.
struct ProbeOutput {
    /// One line per operation of the script.
    var lines: [String]
    var status: Int32
    var stderr: String
}

/// Runs a script with fsprobe in `directory`, as root or as another user
/// (then the folders above `directory` must let that user through).
func runFSProbe(in directory: String, script: String, asUser uid: uid_t? = nil, group gid: gid_t? = nil,
                supplementaryGroups groups: [gid_t]? = nil, timeout: Double = 120) -> ProbeOutput {
    let result = runProcess([Binaries.fsprobe, directory], asUser: uid, group: gid,
                            supplementaryGroups: groups, stdin: script, timeout: timeout)
    let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    return ProbeOutput(lines: lines.last == "" ? Array(lines.dropLast()) : lines,
                       status: result.status, stderr: result.stderr)
}

/// The lines of a script that print a result (not blank, not comments), for
/// labelling outputs.
func scriptOperations(_ script: String) -> [String] {
    script.split(separator: "\n", omittingEmptySubsequences: false)
        .map(trimmed)
        .filter { !$0.isEmpty && !$0.hasPrefix("#") }
}

/// A side-by-side listing of two outputs against the script's operations,
/// marking the lines that differ with `!`; nil when they are the same.
func outputDifference(script: String, expected: [String], actual: [String],
                      expectedLabel: String = "plain", actualLabel: String = "mount") -> String? {
    guard expected != actual else { return nil }
    let ops = scriptOperations(script)
    var text = "  \(pad("operation", 44)) \(pad(expectedLabel, 36)) \(actualLabel)\n"
    for i in 0..<max(expected.count, actual.count, ops.count) {
        let e = i < expected.count ? expected[i] : "(nothing)"
        let a = i < actual.count ? actual[i] : "(nothing)"
        let op = i < ops.count ? ops[i] : "?"
        text += (e == a ? "  " : "! ") + "\(pad(op, 44)) \(pad(e, 36)) \(a)\n"
    }
    return text
}

private func pad(_ s: String, _ width: Int) -> String {
    s.count >= width ? s : s + String(repeating: " ", count: width - s.count)
}

private func trimmed(_ s: Substring) -> String {
    String(s.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
}
