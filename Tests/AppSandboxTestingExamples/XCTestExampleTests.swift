// How to test storage code against a real iOS container with XCTest: one
// container for the whole test case (mounted in setUp, unmounted in
// tearDown, which XCTest runs also after a failure or a thrown error), or
// one for the length of a closure with withMountedContainer.
//
//   swift test --filter AppSandboxTestingExamples

import AppSandboxTesting
import Foundation
import XCTest

final class PreferencesXCTestExample: XCTestCase {
    private var container: MountedContainer!

    override func setUpWithError() throws {
        container = try MountedContainer.mount(.init(appName: "Settings"))
    }

    override func tearDownWithError() throws {
        // Throws (and so fails the test) when the driver did not end cleanly
        // or the mount was still busy; cleans up in any case.
        try container?.unmount()
        container = nil
    }

    func testPreferencesAreWrittenInLibraryPreferences() throws {
        let plist = container.preferences + "/com.example.Settings.plist"
        try Data("<plist/>".utf8).write(to: URL(fileURLWithPath: plist))
        XCTAssertEqual(FileManager.default.contents(atPath: container.backingPath("Library/Preferences/com.example.Settings.plist")),
                       Data("<plist/>".utf8))
        XCTAssertEqual(container.denials(), [])
    }

    func testTheSystemFoldersCannotBeRemoved() throws {
        XCTAssertThrowsError(try FileManager.default.removeItem(atPath: container.caches))
        XCTAssertTrue(FileManager.default.fileExists(atPath: container.caches))
        XCTAssertEqual(container.denials().map(\.operation), ["file-write-unlink"])
    }

    func testWithAClosure() throws {
        try withMountedContainer { container in
            let database = container.applicationSupport + "/store.txt"
            XCTAssertTrue(FileManager.default.createFile(atPath: database, contents: Data("v1".utf8)))
            XCTAssertThrowsError(try Data().write(to: URL(fileURLWithPath: container.bundle + "/x")))
            XCTAssertEqual(container.denials().count, 1)
        }
    }
}
