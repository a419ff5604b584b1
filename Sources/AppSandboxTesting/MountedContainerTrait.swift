// A Swift Testing trait for the fixture: each test (each case of a
// parameterized one) runs with a container of its own, mounted before it
// and unmounted after it whatever happens, reached as
// `MountedContainer.current`:
//
//     @Test(.mountedContainer()) func savesNotes() throws {
//         let container = try #require(MountedContainer.current)
//         ...
//     }
//
// On a machine that cannot mount (no /dev/fuse, no fusermount3 and not
// root), the test is skipped with the reason instead of failing.

#if canImport(Testing)
import Foundation
import POSIXHelpers
import Testing

extension MountedContainer {
    /// The container the `.mountedContainer()` trait mounted for the
    /// running test; nil outside such a test.
    @TaskLocal public static var current: MountedContainer?

    /// Why this machine cannot mount a container, or nil when it can:
    /// /dev/fuse must open, and either we are root or fusermount3 is there
    /// (set-user-ID) to mount for us.
    public static var mountingUnavailableReason: String? {
        let fd = open("/dev/fuse", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return "/dev/fuse: \(errorText(errno)) (FUSE is not available here)" }
        close(fd)
        if geteuid() != 0 && Subprocess.onPath("fusermount3") == nil {
            return "not root and no fusermount3 on PATH (install fuse3)"
        }
        return nil
    }
}

/// Mounts a container for each test it applies to (see the top of this
/// file). As a suite trait it applies to every test of the suite.
public struct MountedContainerTrait: TestTrait, SuiteTrait, TestScoping {
    public var options: MountedContainer.Options

    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        if let reason = MountedContainer.mountingUnavailableReason {
            try Test.cancel("cannot mount a container here: \(reason)")
        }
        try await withMountedContainer(options) { container in
            try await MountedContainer.$current.withValue(container) { try await function() }
        }
    }
}

extension Trait where Self == MountedContainerTrait {
    /// A container of its own for each test, as `MountedContainer.current`.
    public static func mountedContainer(_ options: MountedContainer.Options = MountedContainer.Options()) -> Self {
        MountedContainerTrait(options: options)
    }
}

extension Trait where Self == ConditionTrait {
    /// Skips the test where no container can be mounted (see
    /// `MountedContainer.mountingUnavailableReason`), for tests that mount
    /// with `withMountedContainer` themselves.
    public static var canMountContainers: Self {
        .enabled("needs /dev/fuse, and root or fusermount3") { MountedContainer.mountingUnavailableReason == nil }
    }
}
#endif
