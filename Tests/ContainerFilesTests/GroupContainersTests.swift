// G3: what containerURL(forSecurityApplicationGroupIdentifier:) reads inside
// `appsandboxfs launch` (the map launch sets is checked by
// LaunchTests.g2LaunchedAppSeesOnlyItsOwnContainers).

import ContainerFiles
import Foundation
import Testing

@Suite struct GroupContainersTests {
    @Test func g3MapNamesListedGroupsOnly() {
        let map = GroupContainers.map(#"{"group.com.example.shared":"/mnt/phone/Containers/Shared/AppGroup/A1"}"#)
        #expect(map == ["group.com.example.shared": "/mnt/phone/Containers/Shared/AppGroup/A1"])
        #expect(map["group.com.example.other"] == nil)
    }

    @Test func g3NoMapMeansNoGroup() {
        #expect(GroupContainers.map(nil).isEmpty)
        #expect(GroupContainers.map("not json").isEmpty)
        #expect(GroupContainers.map(#"["/a"]"#).isEmpty)
        #expect(GroupContainers.map(#"{"group.a":"relative/path","group.b":3}"#).isEmpty)
    }

    #if !canImport(Darwin)
    /// Outside a launch (this test process has no map), every group is nil.
    @Test func g3OutsideLaunchEveryGroupIsNil() {
        guard ProcessInfo.processInfo.environment[GroupContainers.environmentName] == nil else { return }
        #expect(FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.com.example") == nil)
    }
    #endif
}
