// How a child ended and what it printed: plain values, on every platform
// (the fixture names them on macOS too, where it mounts nothing and runs
// no program); the spawner itself is Linux code (ChildProcess.swift).

/// How a child ended.
public enum ExitStatus: Sendable, Equatable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)

    public init(waitStatus status: Int32) {
        // The W* macros are not imported into Swift.
        self = status & 0x7f == 0 ? .exited((status >> 8) & 0xff) : .signaled(status & 0x7f)
    }

    /// The shell's number for it: the exit code, or 128 + the signal.
    public var code: Int32 {
        switch self {
        case .exited(let code): code
        case .signaled(let signal): 128 + signal
        }
    }

    public var description: String {
        switch self {
        case .exited(let code): "exit \(code)"
        case .signaled(let signal): "killed by signal \(signal)"
        }
    }
}

/// How a program run to its end ended, and what it printed.
public struct ProcessOutput: Sendable, Equatable {
    /// The exit code, or 128 + the signal that killed it (as a shell says);
    /// 127 when it could not start.
    public var status: Int32
    public var standardOutput: String
    public var standardError: String

    public var succeeded: Bool { status == 0 }

    public init(status: Int32, standardOutput: String, standardError: String) {
        self.status = status
        self.standardOutput = standardOutput
        self.standardError = standardError
    }
}
