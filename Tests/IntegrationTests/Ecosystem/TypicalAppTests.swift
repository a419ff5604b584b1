// Real iOS storage code in a container: Tests/typicalapp stores data as a
// typical app does at launch and during use (Application Support and a
// SQLite database, preferences, a download in Caches, offline data in a
// folder marked "do not back up", a document saved atomically with a
// protection class, a file received in the Inbox and moved out before it is
// edited, scratch work in tmp), through Foundation and ContainerFiles only,
// finding every folder from the environment `appsandboxfs run` gives it.
// Run so, it causes no denial, and the backup holds exactly what a device's
// would. Told to break one storage guideline, it gets exactly the denial or
// the backup-report finding that guideline's breach deserves, and nothing
// else.

import Foundation
import Glibc
import Testing

@Suite("Ecosystem: a typical app's storage code in a container")
struct TypicalAppTests {
    /// One run of typicalapp in a fresh container with report.pdf delivered
    /// to its Inbox: its status and output, the denials, the backup report.
    struct Run {
        var status: Int32
        var output: String
        var denials: [RulesDenialLine]
        var report: [String: Any]
        var findings: [String] { (report["findings"] as? [[String: Any]] ?? []).map { "\($0["kind"] ?? "") \($0["path"] ?? "")" } }
    }

    private func run(_ arguments: [String], then inspect: (EcoMount, Run) throws -> Void = { _, _ in }) throws {
        try withEcoMount { m in
            try m.mountInBackground(["--denial-log", m.denialLog])
            try writeFile(m.root + "/report.pdf", "%PDF-1.4 quarterly report\n")
            let delivered = m.appsandboxfs(["deliver", m.root + "/report.pdf", "--to", m.mountpoint])
            try #require(delivered.status == 0, "deliver: \(delivered.stderr)")

            let app = m.appsandboxfs(["run", m.mountpoint, "--", Binaries.typicalapp] + arguments, cwd: m.root)
            let report = m.appsandboxfs(["backup-report", m.mountpoint, "--json"])
            let object = try #require(jsonObject(report.stdout), "backup-report --json: \(report.stdout)\(report.stderr)")
            let denials = readFileText(m.denialLog).split(separator: "\n").compactMap { RulesDenialLine(String($0)) }
            try inspect(m, Run(status: app.status, output: app.stdout + app.stderr, denials: denials, report: object))
        }
    }

    @Test("run: Foundation on Linux finds Documents, Application Support, Caches and tmp where iOS has them; Library only through ContainerFiles")
    func foundationFindsTheFolders() throws {
        try withEcoMount { m in
            try m.mountInBackground()
            let result = m.appsandboxfs(["run", m.mountpoint, "--", Binaries.typicalapp, "--folders"])
            #expect(result.status == 0, "\(result.stderr)")
            let mnt = m.mountpoint
            #expect(result.stdout == """
                documentDirectory \(mnt)/Documents
                applicationSupportDirectory \(mnt)/Library/Application Support
                cachesDirectory \(mnt)/Library/Caches
                libraryDirectory\u{20}
                temporaryDirectory \(mnt)/tmp
                NSTemporaryDirectory() \(mnt)/tmp/
                NSHomeDirectory() \(mnt)
                ContainerFolder.library \(mnt)/Library
                ContainerFolder.preferences \(mnt)/Library/Preferences

                """)
        }
    }

    @Test("K1, W2, X1, P2, I3, T1: it runs with no denial; the backup holds exactly its database, preferences, document and the received file")
    func followsEveryGuideline() throws {
        try run([]) { m, run in
            #expect(run.status == 0, "\(run.output)")
            #expect(run.denials.isEmpty, "\(run.denials)")
            #expect(run.output.contains("database: Library/Application Support/Model.sqlite, journal wal, 1 note(s), NSFileProtectionCompleteUntilFirstUserAuthentication"), "\(run.output)")
            #expect(run.output.contains("document: Documents/Shopping List.txt, NSFileProtectionComplete"), "\(run.output)")
            #expect(run.output.contains("inbox: Documents/report.pdf"), "\(run.output)")
            #expect(run.findings.isEmpty, "\(run.findings)")

            // Left out: the offline folder by its flag, the rest by zone.
            let exclusions = (run.report["exclusions"] as? [[String: Any]] ?? []).map { "\($0["path"] ?? "") \($0["reason"] ?? "")" }
            #expect(exclusions == ["Library/Application Support/Offline flag", "Library/Caches zone", "TestApp.app zone", "tmp zone"])

            // What a device's backup would hold, member by member.
            let archive = m.root + "/backup.tar"
            let backup = m.appsandboxfs(["backup", m.mountpoint, archive, "--no-progress"])
            #expect(backup.status == 0, "\(backup.stderr)")
            let members = runProcess(["tar", "-tf", archive]).stdout.split(separator: "\n").map(String.init)
            #expect(members == [
                "Documents/", "Documents/Inbox/", "Documents/Shopping List.txt", "Documents/report.pdf",
                "Library/", "Library/Application Support/", "Library/Application Support/Model.sqlite",
                "Library/Preferences/", "Library/Preferences/typicalapp.plist",
            ])
            #expect(readFileText(m.backing + "/Documents/report.pdf") == "%PDF-1.4 quarterly report\n\nread on Linux\n")
            #expect(readFileText(m.backing + "/Documents/Shopping List.txt") == "Shopping list\n- milk\n- bread\n")
            let rows = runProcess(["sqlite3", m.mountpoint + "/Library/Application Support/Model.sqlite", "SELECT title FROM note"])
            #expect(rows.stdout == "Buy milk\n")
            let classes = runProcess(["getfattr", "--absolute-names", "-n", "NSFileProtectionKey", "-e", "text",
                                      m.mountpoint + "/Documents/Shopping List.txt"])
            #expect(classes.stdout.contains("NSFileProtectionKey=\"NSFileProtectionComplete\""), "\(classes.stdout)\(classes.stderr)")
        }
    }

    /// What breaking each guideline must give: the one denial (operation and
    /// path below the mountpoint; the app then stops with status 1) or the
    /// one finding (kind and path; the app carries on).
    static let breaches: [(guideline: String, denial: String?, finding: String?)] = [
        ("write-at-root", "file-write-create settings.json", nil),                        // S1
        ("create-in-inbox", "file-write-create Documents/Inbox/draft.txt", nil),          // I4
        ("edit-in-inbox", "file-write-data Documents/Inbox/report.pdf", nil),             // I4, I3
        ("write-into-bundle", "file-write-create TestApp.app/downloaded.json", nil),       // B2
        ("download-into-documents", nil, "large-file Documents/Catalog/catalog.bin"),    // K1
        ("offline-data-backed-up", nil, "large-file Library/Application Support/Offline/tiles.bin"),  // K1, X1
        ("leave-tmp-files", nil, "left-in-tmp tmp/export.zip"),                          // K1
        ("flag-system-folder", nil, "flag-on-system-folder Library/Caches"),              // X5, K2
    ]

    @Test("S1, I4, B2, K1, X5: each broken guideline gives exactly its denial or its backup-report finding",
          arguments: breaches.map(\.guideline))
    func breaksOneGuideline(_ guideline: String) throws {
        let expected = try #require(Self.breaches.first { $0.guideline == guideline })
        try run(["--break", guideline]) { m, run in
            let denials = run.denials.map { "\($0.operation) \($0.path.replacingOccurrences(of: m.mountpoint + "/", with: ""))" }
            #expect(denials == (expected.denial.map { [$0] } ?? []), "\(run.output)")
            #expect(run.denials.allSatisfy { $0.process == "typicalapp" })
            #expect(run.findings == (expected.finding.map { [$0] } ?? []), "\(run.output)")
            #expect(run.status == (expected.denial == nil ? 0 : 1), "\(run.output)")
            if expected.denial != nil {
                #expect(run.output.contains("failed: Error Domain=NSCocoaErrorDomain Code=\(guideline == "write-into-bundle" ? 642 : 513)"), "\(run.output)")
            }
        }
    }
}
