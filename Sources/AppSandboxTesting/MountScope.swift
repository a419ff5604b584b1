// What withMountedContainer and withMountedDevice share: the body runs with
// what was mounted, and the unmount follows whatever happens.

/// A container or a device the fixture mounted.
protocol MountScope: Sendable {
    /// Unmounts and cleans up; throws what the teardown found wrong.
    func unmount() throws
    /// The same after the body threw: what went wrong is only printed (the
    /// body's error is the one to report).
    func unmountAfterFailure()
}

extension MountedContainer: MountScope {}
extension MountedDevice: MountScope {}

/// Runs `body` with `mounted`, then unmounts it, also when `body` throws.
/// Throws what `body` throws; else what the teardown found wrong.
func runThenUnmount<Mounted: MountScope, T>(_ mounted: Mounted, _ body: (Mounted) throws -> T) throws -> T {
    let value: T
    do {
        value = try body(mounted)
    } catch {
        mounted.unmountAfterFailure()
        throw error
    }
    try mounted.unmount()
    return value
}

/// The same for an async body (a cancelled task's body throws, and the
/// unmount follows).
@available(macOS 10.15, iOS 13, tvOS 13, watchOS 6, *)
func runThenUnmount<Mounted: MountScope, T>(_ mounted: Mounted, isolation: isolated (any Actor)? = #isolation,
                                            _ body: (Mounted) async throws -> T) async throws -> T {
    let value: T
    do {
        value = try await body(mounted)
    } catch {
        mounted.unmountAfterFailure()
        throw error
    }
    try mounted.unmount()
    return value
}
