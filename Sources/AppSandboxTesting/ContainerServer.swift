/// What `MountedContainer` asks of whatever serves its mount: a driver
/// process (`Driver`) or threads of the test process (`InProcessDriver`).
protocol ContainerServer: Sendable {
    /// The process serving the mount (the test process itself in-process).
    var pid: Int32 { get }
    /// How serving ended (the shell's number: the exit code, or 128 + the
    /// signal); nil while it goes on.
    var exitStatus: Int32? { get }
    /// Whether serving has ended, whether or not `exitStatus` knows yet.
    var hasExited: Bool { get }
    /// Waits up to `timeout` seconds for serving to end; its status, or nil.
    func waitForExit(timeout: Double) -> Int32?
    func signal(_ number: Int32)
    /// The teardown is done: the watcher may go.
    func releaseWatcher()
}
