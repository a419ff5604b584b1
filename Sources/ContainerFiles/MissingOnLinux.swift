import Foundation
#if canImport(Glibc)
import Glibc
#endif

// iOS storage calls that Foundation on Linux does not have at all, so that
// app code using them compiles on Linux with `import ContainerFiles`, and
// answers for the container as a device would (docs/foundation.md). On
// Apple platforms each is Foundation's own.

#if !canImport(Darwin)
extension FileManager {
    /// The shared container of an app group (G3): inside `appsandboxfs
    /// launch`, the container of a group the app lists, from
    /// `GroupContainers.environmentName`; nil for any other group (as on a
    /// device for a group the app's entitlements do not name) and outside
    /// a launch.
    public func containerURL(forSecurityApplicationGroupIdentifier groupIdentifier: String) -> URL? {
        GroupContainers.fromEnvironment()[groupIdentifier].map { URL(fileURLWithPath: $0, isDirectory: true) }
    }
}

extension URLResourceKey {
    /// The space available for data the user asked for (iOS 11): in a
    /// container, the mount's available space (Q1).
    public static let volumeAvailableCapacityForImportantUsageKey =
        URLResourceKey(rawValue: "NSURLVolumeAvailableCapacityForImportantUsageKey")
    /// The space available for data the app could fetch again (iOS 11): in
    /// a container, the mount's available space (Q1).
    public static let volumeAvailableCapacityForOpportunisticUsageKey =
        URLResourceKey(rawValue: "NSURLVolumeAvailableCapacityForOpportunisticUsageKey")
}

extension URLResourceValues {
    /// Answered by `URL.resourceValues(forKeys:)` in a container (the
    /// Foundation bridge, F1); nil elsewhere on Linux.
    public var volumeAvailableCapacityForImportantUsage: Int64? {
        allValues[.volumeAvailableCapacityForImportantUsageKey] as? Int64
    }

    /// As `volumeAvailableCapacityForImportantUsage`.
    public var volumeAvailableCapacityForOpportunisticUsage: Int64? {
        allValues[.volumeAvailableCapacityForOpportunisticUsageKey] as? Int64
    }
}
#endif

/// How `appsandboxfs launch` tells the app where its group containers are
/// (G3): one environment variable holding a JSON object, group id to path.
public enum GroupContainers {
    public static let environmentName = "APPSANDBOXFS_GROUP_CONTAINERS"

    /// The map the environment holds; empty when it holds none (or not an
    /// object of strings). Inside `acting`'s scope, that map instead.
    public static func fromEnvironment() -> [String: String] {
        if let acting { return acting }
        return map(ProcessInfo.processInfo.environment[environmentName])
    }

    /// Group id to path for code run in a test process as one app of a
    /// device (AppSandboxTesting's `MountedDevice.actAs`): a task-local
    /// value, so that tests acting as different apps at once do not mix;
    /// nil (the environment decides) elsewhere.
    @TaskLocal public static var acting: [String: String]?

    /// The environment variable's value for `map` (what `launch` sets).
    public static func json(_ map: [String: String]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: map, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// The map `text` holds: a JSON object of group ids to absolute paths;
    /// anything else is no map (and so no group).
    public static func map(_ text: String?) -> [String: String] {
        guard let text, let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { return [:] }
        return object.compactMapValues { $0 as? String }.filter { $0.value.hasPrefix("/") }
    }
}

extension ContainerFile {
    /// The bytes available to the app on the volume that holds `url`: in a
    /// container, what statfs through the mount says (Q1, `--capacity`).
    /// What `volumeAvailableCapacityForImportantUsage` and
    /// `...ForOpportunisticUsage` answer in a container (a container has
    /// nothing purgeable to count, so both are the same).
    public static func availableCapacity(of url: URL) throws -> Int64 {
        #if canImport(Darwin)
        let values = try url.resourceValues(forKeys: [.volumeAvailableCapacityForImportantUsageKey])
        return values.volumeAvailableCapacityForImportantUsage ?? 0
        #else
        var info = statvfs()
        guard statvfs(url.path, &info) == 0 else {
            throw ExtendedAttributes.cocoaError(errno, url.path, reading: true)
        }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
        #endif
    }
}
