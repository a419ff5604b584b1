import FuseKit
import Glibc
import Logging

/// One container mounted and served: its file system, its FUSE session,
/// and tmp emptied before the mount and after it (T2). The command line's
/// driver process and the test fixture's in-process driver
/// (AppSandboxTesting) both go through it, so that a mount is made one way.
public final class ContainerMount: Sendable {
    public let fileSystem: SandboxFileSystem
    public let session: FuseSession
    /// The options libfuse was given (for the log).
    public let mountOptions: [String]
    /// The configuration as mounted: the one given, with what this
    /// process's privileges allow (`MountPrivileges`: passthrough).
    public let configuration: MountConfiguration
    /// That others cannot reach the mount, told at `mount`.
    private let otherUsersNote: String?

    /// Everything that can fail before anything in the backing directory
    /// changes (L1). `options`: `-o` options ("ro", "noexec", ...) besides
    /// the ones every container has. `privileges`: the mounting process's
    /// (allow_other and passthrough follow from them).
    public init(configuration: MountConfiguration, options: [String], debug: Bool = false, ioUring: Bool = false,
                privileges: MountPrivileges = .current(), logger: Logger) throws {
        let decision = try privileges.decide(options: options, passthrough: configuration.usesPassthrough,
                                             mountpoint: configuration.mountpoint)
        var configuration = configuration
        if !decision.passthrough { configuration.passthrough = false }
        self.configuration = configuration
        otherUsersNote = decision.otherUsersNote
        if let note = decision.passthroughNote { logger.notice("\(note)") }
        fileSystem = try SandboxFileSystem(configuration: configuration)
        mountOptions = decision.addedOptions
            + ["default_permissions", "fsname=\(configuration.backing)", "subtype=appsandboxfs"] + options
        let transportLogger = logger
        session = try FuseSession(fileSystem: fileSystem, options: mountOptions, debug: debug,
                                  passthrough: configuration.usesPassthrough, killPrivV2: configuration.killPrivV2,
                                  ioUring: ioUring, log: { transportLogger.notice("\($0)") },
                                  info: { transportLogger.debug("\($0)") })
    }

    /// Empties tmp (T2: a driver that was killed left it as it was; this also
    /// waits for an earlier driver of the container to finish clearing it),
    /// then mounts. `warn` gets what the user should hear of (tmp kept or
    /// not fully emptied, no user xattrs in the backing file system, no
    /// allow_other for this user).
    /// `handlingSignals`: see `FuseSession.mount`.
    public func mount(handlingSignals: Bool = true, warn: (String) -> Void) throws {
        let backing = configuration.backing
        if let otherUsersNote { warn(otherUsersNote) }
        do {
            let (outcome, failures) = try fileSystem.tmp.prepareForMount()
            if outcome == .inUseByAnotherDriver {
                warn("tmp: another driver serves \(backing): its contents are kept")
            }
            for failure in failures { warn("tmp: cannot remove \(failure)") }
        } catch {
            warn("\(error)")
        }
        let container = Container(backing: backing, layout: configuration.layout)
        if !container.supportsUserXattrs() {
            warn("\(backing): this file system does not store user extended attributes: every xattr call through the mount (the backup flags included) will answer ENOTSUP")
        }
        // A bundle from elsewhere needs a name in the root to be listed under.
        if configuration.bundleOverride != nil { _ = mkdir(backing + "/" + configuration.layout.bundleName, 0o755) }
        try session.mount(at: configuration.mountpoint, handlingSignals: handlingSignals)
        fileSystem.attach(session)
    }

    /// Serves requests until the container is unmounted (or a handled
    /// signal comes), then empties tmp from the root descriptor opened at
    /// mount (T2). Returns 0, or the negative errno that made reading
    /// /dev/fuse fail. `privateUmask`: see `FuseSession.run`.
    @discardableResult
    public func serve(privateUmask: Bool = false, warn: (String) -> Void) -> Int32 {
        let status = session.run(maxThreads: configuration.maxThreads, privateUmask: privateUmask)
        do {
            let (_, failures) = try fileSystem.tmp.finishAfterUnmount()
            for failure in failures { warn("tmp: cannot remove \(failure)") }
        } catch {
            warn("\(error)")
        }
        return status
    }
}
