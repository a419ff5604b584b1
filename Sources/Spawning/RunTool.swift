// Running a tool (fusermount3, say) to its end, for a command that only
// needs its exit status and, at most, its complaint in one line.

#if os(Linux)
/// Runs a program, its output shown; returns its exit status.
public func runTool(_ path: String, _ arguments: [String]) -> Int32 {
    (try? ChildProcess.start([path] + arguments).wait().code) ?? 127
}

/// Runs a program; what it writes is returned (as one line) instead of shown.
public func runTool(_ path: String, _ arguments: [String], capturingErrors: Bool) -> (status: Int32, errors: String) {
    guard capturingErrors else { return (runTool(path, arguments), "") }
    let result = ChildProcess.run([path] + arguments)
    let text = (result.standardError + result.standardOutput)
        .split(separator: "\n").map(String.init).joined(separator: "; ")
    return (result.status, text)
}
#endif
