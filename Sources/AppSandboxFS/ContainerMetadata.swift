import Foundation

/// A container's metadata plist on a device, the keys iOS's container
/// manager writes: the identifier (bundle id or group id), the content
/// class (1 bundle, 2 data, 7 group), the folder's UUID and, for a bundle
/// container, the groups the app was installed with.
///
/// Written with PropertyListEncoder, not PropertyListSerialization: with
/// Foundation linked statically (the release build), PropertyListSerialization
/// refuses any array inside a `[String: Any]` ("property lists cannot contain
/// objects of type 'Not A Type'"), so `install` failed in the installed
/// program while every debug build passed. Read back with
/// PropertyListSerialization (`DeviceCatalog`), which reads either.
struct ContainerMetadata: Encodable {
    var identifier: String
    var contentClass: Int
    var uuid: String? = nil
    /// A bundle container's groups (possibly none); nil for the others,
    /// which carry no MCMMetadataInfo.
    var groups: [String]? = nil

    /// The keys `DeviceCatalog` reads them by.
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
        static let identifier = Key(stringValue: DeviceCatalog.identifierKey)
        static let contentClass = Key(stringValue: DeviceCatalog.contentClassKey)
        static let uuid = Key(stringValue: DeviceCatalog.uuidKey)
        static let info = Key(stringValue: DeviceCatalog.infoKey)
        static let groups = Key(stringValue: DeviceCatalog.groupsKey)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(identifier, forKey: .identifier)
        try container.encode(contentClass, forKey: .contentClass)
        try container.encodeIfPresent(uuid, forKey: .uuid)
        if let groups {
            var info = container.nestedContainer(keyedBy: Key.self, forKey: .info)
            try info.encode(groups, forKey: .groups)
        }
    }
}
