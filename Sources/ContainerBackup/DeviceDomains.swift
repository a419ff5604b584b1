import SandboxPolicy

/// A device's backup by iOS backup domain (M2): `AppDomain-<bundle id>` for
/// an app's data container, `AppDomainGroup-<group id>` for a group
/// container, as iTunes and Finder backups name them. The container
/// manager's metadata plists, the bundles and the device's own folders
/// belong to no domain (their zones are not backed up, `BackupClass`).
///
/// In a device's archive each container's members are stored under their
/// domain's name (`AppDomain-com.example.notes/Documents/a.txt`), so that a
/// restore finds them on a device whose containers have other UUIDs; the
/// archive's global header lists the domains it holds.
public enum DeviceDomains {
    /// The global header's record of the domains, separated by commas.
    public static let keyword = "APPSANDBOXFS.device.domains"

    public static func appDomain(_ bundleID: String) -> String { "AppDomain-" + bundleID }
    public static func groupDomain(_ groupID: String) -> String { "AppDomainGroup-" + groupID }

    /// One domain's share of a backup.
    public struct Domain: Sendable, Codable, Equatable {
        public var name: String
        /// Regular files.
        public var files = 0
        /// The files' bytes.
        public var bytes: Int64 = 0
        /// Every entry, folders and links too.
        public var entries = 0
        /// The container holding it, relative to the device's root.
        public var container: String
    }

    /// Which domain each container is: the container's path relative to the
    /// device's root (`Containers/Data/Application/<UUID>`) -> its domain's
    /// name. A container is left out when its folder name or its id could
    /// not be written into tar's --transform expressions as they are (A2's
    /// ids; folder names of letters, digits and `-`, as UUIDs are).
    public static func containers(dataContainers: [String: String], groupContainers: [String: String]) -> [String: String] {
        var map: [String: String] = [:]
        for (id, uuid) in dataContainers where isUUIDName(uuid) && ContainerLayout.problemWithIdentifier(id) == nil {
            map[ContainerLayout.dataContainersPath + "/" + uuid] = appDomain(id)
        }
        for (id, uuid) in groupContainers where isUUIDName(uuid) && ContainerLayout.problemWithIdentifier(id) == nil {
            map[ContainerLayout.groupContainersPath + "/" + uuid] = groupDomain(id)
        }
        return map
    }

    /// The container (relative path) a member lies in, nil above the containers.
    public static func container(of member: RawName) -> String? {
        let parts = member.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true)
        guard parts.count > 4 else { return nil }
        return parts.prefix(4).map { String(decoding: $0, as: UTF8.self) }.joined(separator: "/")
    }

    /// The scan's members that belong to a domain, with each domain's share,
    /// sorted by name.
    public static func group(_ scan: BackupScan, containers: [String: String])
        -> (members: [RawName], sizes: [Int64], domains: [Domain]) {
        var members: [RawName] = []
        var sizes: [Int64] = []
        var domains: [String: Domain] = [:]
        for (index, member) in scan.members.enumerated() {
            guard let container = container(of: member), let name = containers[container] else { continue }
            members.append(member)
            sizes.append(scan.memberSizes[index])
            var domain = domains[name] ?? Domain(name: name, container: container)
            domain.entries += 1
            if index < scan.memberKinds.count, scan.memberKinds[index] == .file {
                domain.files += 1
                domain.bytes += scan.memberSizes[index]
            }
            domains[name] = domain
        }
        return (members, sizes, domains.values.sorted { $0.name < $1.name })
    }

    /// GNU tar's --transform expressions that store each container's
    /// members under its domain's name (not applied to symbolic links'
    /// targets: `S`).
    public static func transforms(_ domains: [Domain]) -> [String] {
        domains.map { "s,^\($0.container)/,\($0.name)/,S" }
    }

    /// A container folder's name as `install` makes them: letters, digits and `-`.
    private static func isUUIDName(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-")
        }
    }
}
