// The command line as users expect it: --help with examples for every
// verb, shell completions that a real bash loads and answers with, the man
// page generated from the parser, one JSON style for every verb that
// reports, and the documented exit codes. The verbs and their options come
// from the parser itself, so a new verb or option is checked too.

import Foundation
import Glibc
import Testing

@Suite("Ecosystem: help, completions, man page, JSON, exit codes")
struct EcosystemCommandLineTests {
    @Test("Every verb's --help has an Examples: section whose lines run that verb")
    func helpHasExamples() throws {
        let model = try CommandLineModel.load()
        #expect(model.verbs.map(\.name).sorted() == ["backup", "backup-report", "deliver", "device init", "env", "get_app_container",
                                                     "init", "install", "launch", "listapps", "lock", "mount", "purge",
                                                     "reboot", "restore", "resume", "run", "status", "suspend", "uninstall",
                                                     "unlock", "unmount", "update"])
        for verb in model.verbs {
            let help = runProcess([Binaries.appsandboxfs] + verb.words + ["--help"])
            #expect(help.status == 0)
            let examples = help.stdout.components(separatedBy: "Examples:\n").dropFirst().first ?? ""
            let lines = examples.split(separator: "\n", omittingEmptySubsequences: false).prefix { !$0.isEmpty }
            #expect(!lines.isEmpty, "\(verb.name) --help shows no examples")
            for line in lines {
                #expect(line.hasPrefix("  "), "\(verb.name) --help: an example too long for 80 columns wraps: \(line)")
                #expect((line + " ").contains("appsandboxfs \(verb.name) "),
                        "an example of \(verb.name) that does not run it: \(line)")
            }
        }
        let top = runProcess([Binaries.appsandboxfs, "--help"])
        let topExamples = (top.stdout.components(separatedBy: "Examples:\n").dropFirst().first ?? "")
            .split(separator: "\n", omittingEmptySubsequences: false).prefix { !$0.isEmpty }
        #expect(topExamples.count >= 5 && topExamples.allSatisfy { $0.hasPrefix("  ") }, "\(topExamples)")
        #expect(top.stdout.contains("Examples:\n  appsandboxfs init "))
        #expect(top.stdout.contains("mount -t fuse.appsandboxfs"))
    }

    @Test("The bash completion script loads in a real bash and completes verbs and options")
    func bashCompletion() throws {
        let script = runProcess([Binaries.appsandboxfs, "--generate-completion-script", "bash"])
        #expect(script.status == 0)
        let file = try TemporaryFile()
        try file.write(script.stdout)

        // Loads: `complete -p` shows the function bound to the command.
        let loaded = runProcess(["bash", "-c", #"source "$0" && complete -p appsandboxfs"#, file.path])
        #expect(loaded.status == 0, "\(loaded.stderr)")
        #expect(loaded.stdout.hasPrefix("complete ") && loaded.stdout.hasSuffix(" appsandboxfs\n"), "\(loaded.stdout)")
        let function = try #require(loaded.stdout.components(separatedBy: " -F ").last?.split(separator: " ").first.map(String.init))

        /// What bash offers for the words typed so far ("" as the last word:
        /// the cursor after a space).
        func complete(_ words: [String]) -> [String] {
            let program = """
                source "$1"
                shift
                COMP_WORDS=("$@")
                COMP_CWORD=$(( $# - 1 ))
                COMP_LINE="$*"
                COMP_POINT=${#COMP_LINE}
                COMPREPLY=()
                \(function) appsandboxfs "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
                printf '%s\\n' "${COMPREPLY[@]}"
                """
            let result = runProcess(["bash", "-c", program, "bash", file.path] + words,
                                    cwd: "/", timeout: 60)
            return result.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        }

        #expect(complete(["appsandboxfs", "mo"]) == ["mount"])
        #expect(complete(["appsandboxfs", "st"]) == ["status"])
        #expect(Set(complete(["appsandboxfs", ""])).isSuperset(of: ["init", "mount", "unmount", "env", "run", "status", "backup-report"]))
        #expect(Set(complete(["appsandboxfs", "mount", "--ke"])) == ["--keep-tmp", "--keep-cache"])
        #expect(complete(["appsandboxfs", "status", "--js"]) == ["--json"])

        // setup.sh installed the same script where bash-completion finds it.
        let installed = "/usr/local/share/bash-completion/completions/appsandboxfs"
        if access(installed, F_OK) == 0 {
            #expect(readFileText(installed) == script.stdout, "\(installed) is out of date: run mount-scripts/setup.sh")
        }
        for shell in ["zsh", "fish"] {
            let other = runProcess([Binaries.appsandboxfs, "--generate-completion-script", shell])
            #expect(other.status == 0 && other.stdout.contains("appsandboxfs"), "\(shell)")
        }
    }

    @Test("The man page (docs/appsandboxfs.1, generated from the parser) renders and lists every verb and option")
    func manPage() throws {
        let page = repositoryRoot + "/docs/appsandboxfs.1"
        try #require(access(page, R_OK) == 0, "docs/appsandboxfs.1 is missing: run bash mount-scripts/generate-manual.sh")
        let rendered = runProcess(["man", "--warnings", "-E", "UTF-8", "-l", page], timeout: 60)
        #expect(rendered.status == 0, "\(rendered.stderr)")
        #expect(rendered.stderr.isEmpty, "man warns: \(rendered.stderr)")
        // The page as text: man's bold and underlining removed, hyphenation undone.
        let text = rendered.stdout.replacingOccurrences(of: ".\u{8}", with: "", options: .regularExpression)
            .replacingOccurrences(of: "\u{2010}\n\\s*", with: "", options: .regularExpression)
            .replacingOccurrences(of: "\u{2010}", with: "-")
            .replacingOccurrences(of: "\u{2212}", with: "-")
        #expect(text.contains("APPSANDBOXFS(1)"))
        let stale = "docs/appsandboxfs.1 is out of date: run bash mount-scripts/generate-manual.sh"
        for verb in try CommandLineModel.load().verbs {
            // A verb of a verb (`device init`) is a section inside its verb's, 8 columns further in.
            for (depth, word) in verb.words.enumerated() {
                let indent = String(repeating: " ", count: 5 + 8 * depth)
                #expect(text.contains("\n" + indent + word), "no section for \(verb.name): \(stale)")
            }
            for option in verb.options {
                #expect(text.contains(option), "\(verb.name) \(option) is not in the man page: \(stale)")
            }
        }
        let installed = "/usr/local/share/man/man1/appsandboxfs.1"
        if access(installed, F_OK) == 0 {
            #expect(readFileBytes(installed) == readFileBytes(page), "\(installed) is out of date: run mount-scripts/setup.sh")
        }
    }

    @Test("Every verb with --json prints one object: a schema named after the verb, camelCase keys, sorted, slashes unescaped; listapps one array (A4)")
    func jsonStyle() throws {
        // What each run printed, by verb (a verb may be run several ways),
        // and the schema it names: appsandboxfs.<verb>/1, but for a device's
        // backup report, a format of its own (M2).
        var outputs: [(verb: String, schema: String, text: String)] = []
        func record(_ arguments: [String], _ text: String, schema: String? = nil) {
            outputs.append((arguments[0], schema ?? "appsandboxfs.\(arguments[0])/1", text))
        }
        try withEcoMount { m in
            try writeFile(m.root + "/letter.txt", "Dear app")
            try writeFile(m.backing + "/Library/Caches/c.bin", "cache")
            // How to make each reporting verb report, on an unmounted and a
            // mounted container. A verb that gains --json must be added here.
            let unmounted: [[String]] = [
                ["backup-report", m.backing, "--json"],
                ["purge", m.backing, "--dry-run", "--json"],
                ["deliver", m.root + "/letter.txt", "--to", m.backing, "--json"],
            ]
            let mounted: [[String]] = [["status", "--json"], ["env", m.mountpoint, "--json"]]
            for arguments in unmounted { record(arguments, m.appsandboxfs(arguments).stdout) }
            try m.mountInBackground()
            for arguments in mounted { record(arguments, m.appsandboxfs(arguments).stdout) }
            #expect(m.appsandboxfs(["unmount", m.mountpoint]).status == 0)
        }
        // A device (part three): the same verbs with --app (A6), the device's
        // backup report by domain (M2), and listapps.
        var listapps = ""
        try withMountedDevice { d in
            let app = try d.makeApp("Notes.app", bundleID: "com.example.notes")
            #expect(d.run("install", [app, "--group", "group.com.example.notes"]).status == 0)
            try writeFile(d.root + "/letter.txt", "Dear app")
            let id = "com.example.notes"
            let deviceReport = ["backup-report", d.mountpoint, "--json"]
            let reportText = runProcess([Binaries.appsandboxfs] + deviceReport).stdout
            record(deviceReport, reportText, schema: "appsandboxfs.device-backup-report/1")
            for arguments in [["backup-report", d.mountpoint, "--app", id, "--json"],
                              ["purge", d.mountpoint, "--app", id, "--dry-run", "--json"],
                              ["deliver", d.root + "/letter.txt", "--to", d.mountpoint, "--app", id, "--json"],
                              ["env", d.mountpoint, "--app", id, "--json"]] {
                record(arguments, runProcess([Binaries.appsandboxfs] + arguments).stdout)
            }
            let report = try #require(jsonObject(reportText), "\(reportText)")
            #expect((report["domains"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
                    == ["AppDomain-com.example.notes", "AppDomainGroup-group.com.example.notes"], "M2: \(report)")
            listapps = d.run("listapps", ["--json"]).stdout
        }
        let withJSON = try CommandLineModel.load().verbs.filter { $0.options.contains("--json") }.map(\.name)
        #expect(Set(withJSON) == Set(outputs.map(\.verb)).union(["listapps"]))

        for (verb, schema, text) in outputs {
            let object = try #require(jsonObject(text), "\(verb) --json: \(text)")
            #expect(object["schema"] as? String == schema)
            try checkJSONStyle(verb, text, object)
            #expect(text.hasSuffix("}\n"))
        }
        // The documented exception: listapps --json prints one array of
        // objects (A4), with no schema key.
        let apps = try #require((try? JSONSerialization.jsonObject(with: Data(listapps.utf8))) as? [[String: Any]],
                                "listapps --json: \(listapps)")
        #expect(apps.count == 1 && apps.first?["bundleID"] as? String == "com.example.notes")
        let appKeys = Set(apps.first.map { Array($0.keys) } ?? [])
        #expect(appKeys.isSuperset(of: ["bundleID", "name", "bundlePath", "dataPath", "groups", "launched", "suspended"]))
        try checkJSONStyle("listapps", listapps, apps)
        #expect(listapps.hasSuffix("]\n"))
    }

    /// camelCase keys, sorted, slashes not escaped.
    private func checkJSONStyle(_ verb: String, _ text: String, _ value: Any) throws {
        var keys: [String] = []
        collectKeys(value, into: &keys)
        for key in keys {
            #expect(key.first?.isLowercase == true && !key.contains("_") && !key.contains("-"),
                    "\(verb) --json: key \(key) is not camelCase")
        }
        let reencoded = try JSONSerialization.data(withJSONObject: value, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        // Same keys in the same order (sorted): compare the key sequence.
        #expect(keySequence(text) == keySequence(String(decoding: reencoded, as: UTF8.self)), "\(verb) --json: keys not sorted")
        #expect(!text.contains("\\/"), "\(verb) --json escapes slashes")
    }

    @Test("Exit codes: 0, 1 with one Error: line, 64 for a bad command line, 2 for backup-report --strict findings")
    func exitCodes() throws {
        try withEcoMount { m in
            #expect(m.appsandboxfs(["--help"]).status == 0)
            let usage = m.appsandboxfs(["mount", m.backing])
            #expect(usage.status == 64)
            #expect(usage.stderr.hasPrefix("Error: Missing expected argument '<mountpoint>'"))
            #expect(m.appsandboxfs(["no-such-verb"]).status == 64)

            let failure = m.appsandboxfs(["mount", m.root + "/missing", m.mountpoint, "--app-name", "TestApp"])
            #expect(failure.status == 1)
            #expect(failure.stderr == "Error: backing directory \(m.root)/missing: No such file or directory\n")

            try writeFile(m.backing + "/tmp/left-behind", "x")
            #expect(m.appsandboxfs(["backup-report", m.backing]).status == 0)
            #expect(m.appsandboxfs(["backup-report", m.backing, "--strict"]).status == 2)
        }
    }

    @Test("docs/cli.md documents every verb, its options and its exit status; every doc's commands use real options and its links lead to files (issue 18)")
    func documentation() throws {
        let cli = repositoryFile("docs/cli.md")
        try #require(!cli.isEmpty, "docs/cli.md is missing")
        let sections = cli.components(separatedBy: "\n## ")
        for verb in try CommandLineModel.load().verbs {
            let section = sections.first { $0.hasPrefix("`\(verb.name)`") || $0.hasPrefix(verb.name + "\n") || $0.hasPrefix("appsandboxfs \(verb.name)") }
            let text = try #require(section, "docs/cli.md has no section for \(verb.name)")
            #expect(text.contains("Exit status"), "docs/cli.md: \(verb.name) has no exit status")
            for option in verb.options {
                #expect(text.contains(option), "docs/cli.md: \(verb.name) does not mention \(option)")
            }
        }
        // Every page that shows commands: the README and each docs/*.md
        // (a new page is checked too).
        let pages = try FileManager.default.contentsOfDirectory(atPath: repositoryRoot + "/docs")
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        let documents = ["README.md"] + pages
        for page in ["docs/backup.md", "docs/device.md", "docs/protection.md", "docs/confinement.md", "docs/security.md",
                     "docs/rules.md", "docs/reliability.md", "docs/conformance.md", "docs/performance.md", "docs/design.md",
                     "docs/quickstart.md", "docs/cli.md", "docs/ci.md"] {
            #expect(documents.contains(page), "\(page) is missing")
        }
        // Every `appsandboxfs VERB --option` the docs show exists.
        let verbs = Dictionary(uniqueKeysWithValues: try CommandLineModel.load().verbs.map { ($0.name, Set($0.options)) })
        let verbPattern = try NSRegularExpression(pattern: #"appsandboxfs ([a-z_-]+)((?: +[^ \n|;&`)]+)*)"#)
        for document in documents {
            // A command continued on the next line (a trailing backslash, or
            // a synopsis wrapped onto indented lines) is one line, and
            // `[--a|--b]` names two options.
            let text = repositoryFile(document)
                .replacingOccurrences(of: #"\\\n[ \t]*"#, with: " ", options: .regularExpression)
                .replacingOccurrences(of: #"\n +(?=\[-)"#, with: " ", options: .regularExpression)
                .replacingOccurrences(of: "|--", with: " --")
            for match in verbPattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let rest = String(text[Range(match.range(at: 2), in: text)!])
                // `appsandboxfs device init DIR`: a verb of a verb.
                let word = String(text[Range(match.range(at: 1), in: text)!])
                let verb = verbs[word] != nil ? word : word + " " + (rest.split(separator: " ").first ?? "")
                guard let options = verbs[verb] else { continue }  // prose: "appsandboxfs under test"
                // Words after a bare -- are the command's (run ... -- swift test --skip-build);
                // a synopsis puts optional ones in brackets ([--json]).
                for word in rest.split(separator: " ").prefix(while: { $0 != "--" }).map({ $0.drop { "[(".contains($0) } })
                where word.hasPrefix("--") && word.count > 2 && !word.contains("<Tab>") {
                    let option = String(word.prefix { !"=,]`".contains($0) })
                    #expect(options.contains(option) || option == "--help", "\(document): appsandboxfs \(verb) has no \(option)")
                }
            }
        }
        let readme = repositoryFile("README.md")
        for doc in ["docs/quickstart.md", "docs/cli.md", "docs/ci.md", "docs/rules.md", "docs/design.md"] {
            #expect(readme.contains("(\(doc))"), "README.md does not link \(doc)")
        }
        // The contract is stated in the repository, in docs/rules.md: no
        // page points at a file outside it that a clone does not hold.
        for document in documents {
            let text = repositoryFile(document)
            for outside in ["../shared", "-semantics.md", "ios-facts.md", "seeds/"] {
                #expect(!text.contains(outside), "\(document) points at \(outside), which is not in the repository: point at docs/rules.md")
            }
        }
        // Every relative link in the docs and the README leads to a file.
        for document in documents {
            let folder = document.contains("/") ? parentDirectory(repositoryRoot + "/" + document) : repositoryRoot
            let text = repositoryFile(document)
            let pattern = try NSRegularExpression(pattern: #"\]\(([^)#:]+)(#[^)]*)?\)"#)
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let target = String(text[Range(match.range(at: 1), in: text)!])
                #expect(access(folder + "/" + target, F_OK) == 0, "\(document) links \(target), which is missing")
            }
        }
    }

    @Test("docs/rules.md states every rule of the contract's three parts, one row per id")
    func rulesPage() {
        let rules = repositoryFile("docs/rules.md")
        let partOne = ["B1", "B2", "B3", "B4", "W1", "W2", "W3", "I1", "I2", "I3", "I4", "I5", "I6", "T1", "T2", "T3", "T4",
                       "S1", "S2", "S3", "E1", "E2", "E3", "E4", "X1", "X2", "X3", "X4", "X5", "X6", "K1", "K2", "K3",
                       "L1", "L2", "L3", "L4"]
        let partTwo = ["P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8", "P9", "Q1", "Q2", "Q3", "Q4", "U1", "U2", "U3", "U4",
                       "R1", "R2", "R3", "R4", "R5"]
        let partThree = ["F1", "F2", "F3", "A1", "A2", "A3", "A4", "A5", "A6", "G1", "G2", "G3", "G4", "Z1", "Z2", "M1", "M2", "M3"]
        let rows = rules.split(separator: "\n").filter { $0.hasPrefix("| ") }
        for id in partOne + partTwo + partThree {
            let row = rows.filter { $0.hasPrefix("| \(id) | ") }
            #expect(row.count == 1, "docs/rules.md has \(row.count) rows for \(id), not one")
        }
    }
}

/// Every key of every object, except the names inside `environment` (env
/// --json: variable names are data, not keys of the format).
private func collectKeys(_ value: Any, into keys: inout [String]) {
    if let object = value as? [String: Any] {
        for (key, inner) in object {
            keys.append(key)
            if key != "environment" { collectKeys(inner, into: &keys) }
        }
    } else if let array = value as? [Any] {
        for inner in array { collectKeys(inner, into: &keys) }
    }
}

/// The keys of a pretty-printed JSON text in the order they appear.
private func keySequence(_ text: String) -> [String] {
    text.split(separator: "\n").compactMap { line in
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasPrefix("\""), let end = trimmed.range(of: "\" : ") else { return nil }
        return String(trimmed[trimmed.index(after: trimmed.startIndex)..<end.lowerBound])
    }
}
