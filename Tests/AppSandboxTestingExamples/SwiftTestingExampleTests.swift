// How to test storage code against a real iOS container with Swift Testing.
// Each test mounts a container with the real appsandboxfs driver, runs the
// code under test in it, and checks what it did and what the sandbox
// refused. withMountedContainer always unmounts, also when an expectation
// fails or the body throws.
//
//   swift test --filter AppSandboxTestingExamples

import AppSandboxTesting
import Foundation
import Testing

/// The code under test: the storage layer of a small notes app, written
/// against its home folder as an iOS app is (NSHomeDirectory()).
struct NoteStore {
    let home: String

    var documents: String { home + "/Documents" }

    func save(_ text: String, as name: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: documents + "/" + name))
    }

    func load(_ name: String) throws -> String {
        try String(contentsOfFile: documents + "/" + name, encoding: .utf8)
    }

    /// Takes a file handed in through Documents/Inbox: moves it into
    /// Documents (the Inbox itself is read-and-delete only).
    func importFromInbox(_ name: String) throws -> String {
        let target = documents + "/" + name
        try FileManager.default.moveItem(atPath: documents + "/Inbox/" + name, toPath: target)
        return target
    }

    /// A bug on purpose: writes into the Inbox, which iOS refuses.
    func saveDraftInInbox(_ text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: documents + "/Inbox/draft.txt"))
    }
}

@Suite("AppSandboxTesting example (Swift Testing)")
struct NoteStoreSwiftTestingExample {
    @Test("Saving a note works and the sandbox refuses nothing")
    func saveAndLoad() throws {
        try withMountedContainer { container in
            let store = NoteStore(home: container.mountpoint)
            try store.save("Buy milk", as: "todo.txt")
            #expect(try store.load("todo.txt") == "Buy milk")
            // The same bytes are in the backing directory.
            #expect(FileManager.default.contents(atPath: container.backingPath("Documents/todo.txt")) == Data("Buy milk".utf8))
            #expect(container.denials().isEmpty)
        }
    }

    @Test("Writing into the Inbox fails with EPERM and is logged as a denial")
    func inboxWriteIsDenied() throws {
        try withMountedContainer { container in
            let store = NoteStore(home: container.mountpoint)
            #expect(throws: (any Error).self) { try store.saveDraftInInbox("draft") }
            let denials = container.denials()
            #expect(denials.count == 1)
            #expect(denials.first?.operation == "file-write-create")
            #expect(denials.first?.path == container.inbox + "/draft.txt")
        }
    }

    @Test("A file delivered to the Inbox can be imported into Documents")
    func importFromInbox() throws {
        let attachment = FileManager.default.temporaryDirectory.appendingPathComponent("invoice-\(getpid()).txt")
        try Data("total: 42".utf8).write(to: attachment)
        defer { try? FileManager.default.removeItem(at: attachment) }

        try withMountedContainer(.init(appName: "Notes")) { container in
            let delivered = try container.deliver(attachment.path)
            #expect(delivered.hasPrefix(container.inbox + "/"))
            let store = NoteStore(home: container.mountpoint)
            let imported = try store.importFromInbox(attachment.lastPathComponent)
            #expect(try String(contentsOfFile: imported, encoding: .utf8) == "total: 42")
            #expect(container.denials().isEmpty)
        }
    }

    @Test("A template container is copied, never changed, and the bundle is read-only")
    func fromTemplate() throws {
        // A template is any backing directory: here one laid out by prepare.
        let template = try withMountedContainer(.init(appName: "Notes", keepFiles: true, prepare: { backing in
            try Data("seed".utf8).write(to: URL(fileURLWithPath: backing + "/Documents/seed.txt"))
        })) { container in container.backing }
        defer { try? FileManager.default.removeItem(atPath: (template as NSString).deletingLastPathComponent) }

        try withMountedContainer(.template(template)) { container in
            #expect(container.appName == "Notes")
            #expect(try NoteStore(home: container.mountpoint).load("seed.txt") == "seed")
            try NoteStore(home: container.mountpoint).save("changed", as: "seed.txt")
            #expect(throws: (any Error).self) {
                try Data().write(to: URL(fileURLWithPath: container.bundle + "/Injected.plist"))
            }
            #expect(container.denials().map(\.operation) == ["file-write-create"])
        }
        #expect(try String(contentsOfFile: template + "/Documents/seed.txt", encoding: .utf8) == "seed")
    }

    @Test("Code run \"inside\" the container sees the iOS environment (an async body)")
    func environment() async throws {
        try await withMountedContainer { container in
            // appsandboxfs run: a program with the iOS environment (HOME, TMPDIR, ...).
            let result = try await Task.detached {
                try container.run(["sh", "-c", #"echo "$HOME|$TMPDIR" && touch "$TMPDIR/scratch""#])
            }.value
            #expect(result.status == 0)
            #expect(result.standardOutput == "\(container.mountpoint)|\(container.mountpoint)/tmp/\n")
            #expect(FileManager.default.fileExists(atPath: container.tmp + "/scratch"))
            #expect(container.environment["HOME"] == container.mountpoint)
        }
    }
}

/// The same with the trait: every test of the suite gets a container of its
/// own, mounted before it and unmounted after it, as
/// `MountedContainer.current`; where this machine cannot mount (no
/// /dev/fuse, say), the tests are skipped with the reason.
@Suite("AppSandboxTesting example (Swift Testing trait)", .mountedContainer(.init(appName: "Notes")))
struct NoteStoreTraitExample {
    @Test("A note saved in one test's container")
    func saveAndLoad() throws {
        let container = try #require(MountedContainer.current)
        #expect(container.appName == "Notes")
        let store = NoteStore(home: container.mountpoint)
        try store.save("Buy milk", as: "todo.txt")
        #expect(try store.load("todo.txt") == "Buy milk")
        #expect(container.denials().isEmpty)
    }

    @Test("Each test has a container of its own: nothing of the other test is here")
    func freshContainer() throws {
        let container = try #require(MountedContainer.current)
        #expect(!FileManager.default.fileExists(atPath: container.documents + "/todo.txt"))
        #expect(container.isMounted)
    }

    @Test("Parameterized: a container per case", arguments: ["a.txt", "b.txt"])
    func perCase(name: String) throws {
        let container = try #require(MountedContainer.current)
        #expect(try FileManager.default.contentsOfDirectory(atPath: container.documents).filter { $0.hasSuffix(".txt") }.isEmpty)
        try NoteStore(home: container.mountpoint).save(name, as: name)
    }
}
