/// The privileges an untrusted tree held that were left out, by kind, with
/// the paths where they were: what a restore took out of an archive
/// (UntrustedArchive), what a bundle copy did not copy of a build folder
/// (BundleCopier, rule U1).
public struct DroppedPrivileges: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable, Comparable {
        case setID = "set-user-ID or set-group-ID bits"
        case capabilities = "file capabilities (security.capability)"
        case securityAttributes = "other security.* attributes"
        case trustedAttributes = "trusted.* attributes"
        case systemAttributes = "system.* attributes (ACLs)"
        /// Any other namespace (a bundle keeps only `user.` and names
        /// without a namespace).
        case otherAttributes = "attributes of other namespaces"
        case deviceNodes = "device nodes"
        case fifos = "FIFOs"
        case sockets = "sockets"
        case foreignOwners = "owners other than the container's"

        /// The kind an extended attribute's name falls under when it is
        /// left out; nil for one a container keeps anyway: `user.*`, and
        /// a name without a namespace (no dot).
        public init?(attribute name: [UInt8]) {
            if name == Array("security.capability".utf8) {
                self = .capabilities
            } else if name.starts(with: "security.".utf8) {
                self = .securityAttributes
            } else if name.starts(with: "trusted.".utf8) {
                self = .trustedAttributes
            } else if name.starts(with: "system.".utf8) {
                self = .systemAttributes
            } else if name.starts(with: "user.".utf8) || !name.contains(UInt8(ascii: ".")) {
                return nil
            } else {
                self = .otherAttributes
            }
        }

        public static func < (a: Kind, b: Kind) -> Bool {
            allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
        }
    }

    public private(set) var paths: [Kind: [String]] = [:]

    public var isEmpty: Bool { paths.isEmpty }

    public init() {}

    public mutating func add(_ kind: Kind, _ path: String) { paths[kind, default: []].append(path) }

    /// One line per kind: "2 device nodes: Documents/null, Documents/zero".
    public var lines: [String] {
        paths.keys.sorted().map { kind in
            let where_ = paths[kind]!
            let shown = where_.prefix(5).joined(separator: ", ") + (where_.count > 5 ? ", ..." : "")
            return "\(where_.count) \(kind.rawValue): \(shown)"
        }
    }
}
