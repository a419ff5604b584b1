// A program that uses storage as a typical iOS app does at launch and
// during use, through Foundation and ContainerFiles only, with no path of
// its own: run under `appsandboxfs run MOUNTPOINT -- typicalapp`, it finds
// every folder where iOS puts it. With `--break GUIDELINE` it breaks one of
// Apple's storage guidelines (Guideline.swift), as a buggy app would.
//
//   typicalapp [--break GUIDELINE]
//   typicalapp --folders     where Foundation finds the standard folders
//
// One line per step on standard output. Exit status 0; 1 when a step failed
// (the error is printed, as an app would show or log it); 64 for a bad
// argument. The SQLite database is written by the sqlite3 program (the same
// library and the same file I/O as an app's SQLite).

import ContainerFiles
import Foundation

let arguments = CommandLine.arguments.dropFirst()
if arguments == ["--folders"] {
    let manager = FileManager.default
    for (name, folder) in [("documentDirectory", FileManager.SearchPathDirectory.documentDirectory),
                           ("applicationSupportDirectory", .applicationSupportDirectory),
                           ("cachesDirectory", .cachesDirectory), ("libraryDirectory", .libraryDirectory)] {
        print(name, manager.urls(for: folder, in: .userDomainMask).map(\.path).joined(separator: " "))
    }
    print("temporaryDirectory", manager.temporaryDirectory.path)
    print("NSTemporaryDirectory()", NSTemporaryDirectory())
    print("NSHomeDirectory()", NSHomeDirectory())
    print("ContainerFolder.library", ContainerFolder.library.url.path)
    print("ContainerFolder.preferences", ContainerFolder.preferences.url.path)
    exit(0)
}
var broken: Guideline?
if arguments.count == 2, arguments.first == "--break", let guideline = Guideline(rawValue: arguments.last!) {
    broken = guideline
} else if !arguments.isEmpty {
    let names = Guideline.allCases.map(\.rawValue).joined(separator: ", ")
    FileHandle.standardError.write(Data("usage: typicalapp [--break GUIDELINE | --folders]; guidelines: \(names)\n".utf8))
    exit(64)
}

let manager = FileManager.default
let home = URL(fileURLWithPath: NSHomeDirectory(), isDirectory: true)

/// A path as the app's own log would show it: below its home.
func shown(_ url: URL) -> String {
    let path = url.standardizedFileURL.path, root = home.standardizedFileURL.path + "/"
    return path.hasPrefix(root) ? String(path.dropFirst(root.count)) : path
}

/// Runs one step and prints its line; on an error prints it and exits 1.
func step<Value>(_ name: String, _ body: () throws -> (Value, line: String)) -> Value {
    do {
        let (value, line) = try body()
        print("\(name): \(line)")
        return value
    } catch {
        print("\(name): failed: \(error)")
        exit(1)
    }
}

func step(_ name: String, _ body: () throws -> String) {
    step(name) { ((), line: try body()) }
}

/// Some bytes standing for a download.
func download(_ size: Int) -> Data { Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }) }

/// Runs SQL on a database with the sqlite3 program.
func sqlite(_ database: URL, _ sql: String) throws -> String {
    let process = Process(), output = Pipe()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["sqlite3", database.path, sql]
    process.standardOutput = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: database.path,
                                                        NSLocalizedDescriptionKey: "sqlite3 ended with \(process.terminationStatus)"])
    }
    return text.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// `name` in `folder`, or "name-1.ext", "name-2.ext" ... when it is taken.
func freeName(_ name: String, in folder: URL) -> URL {
    let base = (name as NSString).deletingPathExtension, suffix = (name as NSString).pathExtension
    var candidate = folder.appendingPathComponent(name), number = 0
    while FileManager.default.fileExists(atPath: candidate.path) {
        number += 1
        candidate = folder.appendingPathComponent("\(base)-\(number)" + (suffix.isEmpty ? "" : "." + suffix))
    }
    return candidate
}

// MARK: At launch

step("home") { home.path }

if broken == .writeAtRoot {
    step("settings") {
        let settings = home.appendingPathComponent("settings.json")
        try Data("{}".utf8).write(to: settings)
        return shown(settings)
    }
}

// The app creates Application Support itself; iOS does not.
let support: URL = step("Application Support") {
    let url = try manager.url(for: .applicationSupportDirectory, in: .userDomainMask, appropriateFor: nil, create: true)
    return (url, line: shown(url))
}

let database = support.appendingPathComponent("Model.sqlite")
step("database") {
    let mode = try sqlite(database, "PRAGMA journal_mode=WAL;")
    let count = try sqlite(database, """
        CREATE TABLE IF NOT EXISTS note(id INTEGER PRIMARY KEY, title TEXT NOT NULL);
        INSERT INTO note(title) VALUES ('Buy milk');
        SELECT count(*) FROM note;
        """)
    try ContainerFile.setProtection(.completeUntilFirstUserAuthentication, for: database)
    let protection = try ContainerFile.protection(of: database)?.rawValue ?? "none"
    return "\(shown(database)), journal \(mode), \(count) note(s), \(protection)"
}

step("preferences") {
    UserDefaults.standard.set(true, forKey: "hasLaunchedBefore")
    guard UserDefaults.standard.synchronize() else { throw CocoaError(.fileWriteUnknown) }
    return "hasLaunchedBefore = \(UserDefaults.standard.bool(forKey: "hasLaunchedBefore"))"
}

// MARK: During use

// A re-creatable download: Library/Caches (purgeable, never backed up).
step("download") {
    let caches = try manager.url(for: .cachesDirectory, in: .userDomainMask, appropriateFor: nil, create: true)
    let folder = (broken == .downloadIntoDocuments ? ContainerFolder.documents.url : caches)
        .appendingPathComponent("Catalog", isDirectory: true)
    try manager.createDirectory(at: folder, withIntermediateDirectories: true)
    let file = folder.appendingPathComponent("catalog.bin")
    try download(1_572_864).write(to: file)
    if broken == .flagSystemFolder {
        try ContainerFile.setExcludedFromBackup(true, for: caches)
    }
    return shown(file)
}

// Offline data: re-creatable, but it must stay on the device, so not in
// Caches: a folder of the app's own, marked "do not back up" (Apple QA1719).
step("offline data") {
    let folder = support.appendingPathComponent("Offline", isDirectory: true)
    try manager.createDirectory(at: folder, withIntermediateDirectories: true)
    if broken != .offlineDataBackedUp {
        try ContainerFile.setExcludedFromBackup(true, for: folder)
    }
    try download(1_572_864).write(to: folder.appendingPathComponent("tiles.bin"))
    return "\(shown(folder)), excluded from backup: \(try ContainerFile.isExcludedFromBackup(folder))"
}

// What the user makes: Documents, saved atomically, the strongest class.
let documents = manager.urls(for: .documentDirectory, in: .userDomainMask)[0]
step("document") {
    let list = documents.appendingPathComponent("Shopping List.txt")
    try ContainerFile.write(Data("Shopping list\n- milk\n".utf8), to: list, options: [.atomic, .completeFileProtection])
    try ContainerFile.write(Data("Shopping list\n- milk\n- bread\n".utf8), to: list, options: [.atomic, .completeFileProtection])
    let protection = try ContainerFile.protection(of: list)?.rawValue ?? "none"
    return "\(shown(list)), \(protection)"
}

// A file handed in (Mail, AirDrop) lies in Documents/Inbox, which the app
// may read and delete only: it moves the file out, then edits it.
step("inbox") {
    let inbox = documents.appendingPathComponent("Inbox", isDirectory: true)
    var taken: [String] = []
    for name in try manager.contentsOfDirectory(atPath: inbox.path).sorted() {
        let received = inbox.appendingPathComponent(name)
        let target: URL
        if broken == .editInInbox {
            target = received
        } else {
            target = freeName(name, in: documents)
            try manager.moveItem(at: received, to: target)
        }
        let handle = try FileHandle(forWritingTo: target)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("\nread on Linux\n".utf8))
        try handle.close()
        taken.append(shown(target))
    }
    if broken == .createInInbox {
        let draft = inbox.appendingPathComponent("draft.txt")
        try Data("draft".utf8).write(to: draft)
        taken.append(shown(draft))
    }
    return taken.isEmpty ? "empty" : taken.joined(separator: ", ")
}

if broken == .writeIntoBundle {
    step("bundle") {
        // The app's own bundle, <App>.app beside Documents (Bundle.main on a device).
        let bundleName = try manager.contentsOfDirectory(atPath: home.path).first { $0.hasSuffix(".app") } ?? "App.app"
        let file = home.appendingPathComponent(bundleName).appendingPathComponent("downloaded.json")
        try Data("{}".utf8).write(to: file)
        return shown(file)
    }
}

// Scratch work in tmp, deleted when done.
step("scratch") {
    let scratch = manager.temporaryDirectory.appendingPathComponent("export.zip")
    try download(65_536).write(to: scratch)
    if broken != .leaveTmpFiles {
        try manager.removeItem(at: scratch)
    }
    return shown(scratch)
}
