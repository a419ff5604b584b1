// How to test code that must cope with a locked device (data protection):
// a background sync that keeps its session token in a
// NSFileProtectionComplete file and its downloads in a
// NSFileProtectionCompleteUnlessOpen folder, as Apple recommends.
//
//   swift test --filter LockedDeviceExample

import AppSandboxTesting
import Foundation
import Testing

/// The code under test: what an app's background refresh does.
struct BackgroundSync {
    let home: String

    var tokenPath: String { home + "/Library/Application Support/token" }
    var downloads: String { home + "/Library/Application Support/Downloads" }

    enum Outcome: Equatable {
        case synced(downloaded: String)
        /// The token is unreadable while the device is locked: try again
        /// once protected data is available (protectedDataDidBecomeAvailable).
        case deferredUntilUnlock
    }

    /// Reads the token (class A) and stores a download (class B folder).
    /// A locked device answers EPERM (Cocoa error 257): defer, do not crash.
    func run(fetch: () -> String) throws -> Outcome {
        let token: Data
        do {
            token = try Data(contentsOf: URL(fileURLWithPath: tokenPath))
        } catch let error as CocoaError where error.code == .fileReadNoPermission {
            return .deferredUntilUnlock
        }
        let name = "item-\(token.count).json"
        try Data(fetch().utf8).write(to: URL(fileURLWithPath: downloads + "/" + name))
        return .synced(downloaded: name)
    }
}

@Suite("AppSandboxTesting example: a locked device (Swift Testing)")
struct LockedDeviceExample {
    /// A container with the token and the downloads folder laid out as the app does at first launch.
    func prepared(_ container: MountedContainer) throws -> BackgroundSync {
        let sync = BackgroundSync(home: container.mountpoint)
        try FileManager.default.createDirectory(atPath: sync.downloads, withIntermediateDirectories: true)
        try container.setProtection(.completeUnlessOpen, of: sync.downloads)
        try Data("secret".utf8).write(to: URL(fileURLWithPath: sync.tokenPath))
        try container.setProtection(.complete, of: sync.tokenPath)
        return sync
    }

    @Test("Unlocked: the sync reads its token and downloads")
    func unlocked() throws {
        try withMountedContainer { container in
            let sync = try prepared(container)
            #expect(try sync.run { "{}" } == .synced(downloaded: "item-6.json"))
            #expect(try container.protection(of: sync.downloads + "/item-6.json") == .completeUnlessOpen)
        }
    }

    @Test("Locked: the sync defers instead of failing, and the refusal is logged")
    func locked() throws {
        try withMountedContainer { container in
            let sync = try prepared(container)
            try container.lock(grace: 0)
            #expect(try sync.run { "{}" } == .deferredUntilUnlock)
            let refusal = try #require(container.protectionDenials().first)
            #expect(refusal.path == sync.tokenPath)
            #expect(refusal.protection == .complete && refusal.state == .locked)
            try container.unlock()
            #expect(try sync.run { "{}" } == .synced(downloaded: "item-6.json"))
        }
    }
}
