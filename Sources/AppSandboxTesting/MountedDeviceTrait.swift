// A Swift Testing trait for a device: each test (each case of a
// parameterized one) runs with a device of its own, its apps installed,
// mounted before it and unmounted after it whatever happens, reached as
// `MountedDevice.current`:
//
//     @Test(.mountedDevice(.init(apps: [notes, widget]))) func sharesDatabase() throws {
//         let device = try #require(MountedDevice.current)
//         ...
//     }
//
// Where a device's apps cannot be launched (no /dev/fuse, or not root), the
// test is skipped with the reason instead of failing.

#if canImport(Testing)
import Foundation
import Testing

extension MountedDevice {
    /// The device the `.mountedDevice()` trait mounted for the running
    /// test; nil outside such a test.
    @TaskLocal public static var current: MountedDevice?
}

/// Mounts a device for each test it applies to (see the top of this file).
public struct MountedDeviceTrait: TestTrait, SuiteTrait, TestScoping {
    public var options: MountedDevice.Options

    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        if let reason = MountedContainer.mountingUnavailableReason {
            try Test.cancel("cannot mount a device here: \(reason)")
        }
        if !MountedDevice.canLaunch {
            try Test.cancel("cannot launch apps here: launch makes mount namespaces, which needs root")
        }
        try await withMountedDevice(options) { device in
            try await MountedDevice.$current.withValue(device) { try await function() }
        }
    }
}

extension Trait where Self == MountedDeviceTrait {
    /// A device of its own for each test, as `MountedDevice.current`.
    public static func mountedDevice(_ options: MountedDevice.Options = MountedDevice.Options()) -> Self {
        MountedDeviceTrait(options: options)
    }
}
#endif
