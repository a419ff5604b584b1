// How the command line parses: a verb's arguments with the verb as the
// root (cheaper: no tree of all verbs, no completion-request check), and
// everything that parse does not answer with the verb itself through the
// whole tree, which prints and exits as it always did.

import ArgumentParser
import Testing
@testable import appsandboxfs

@Suite("Command line: a verb parsed as the root first")
struct VerbParseTests {
    @Test("Every verb names appsandboxfs as its super-command, so that its own parse skips the tree's completion check")
    func everyVerbHasTheSuperCommand() {
        for verb in AppSandboxFSCommand.configuration.subcommands {
            #expect(verb.configuration._superCommandName == "appsandboxfs", "\(verb._commandName)")
        }
    }

    @Test("A verb with good arguments is parsed by itself; help, version, errors and completion requests are left to the tree")
    func whatTheVerbParses() throws {
        let parsed = try #require(AppSandboxFSCommand.parsedByVerb(["init", "/srv/MyApp", "--app-name", "MyApp"]) as? InitCommand)
        #expect(parsed.backing == "/srv/MyApp" && parsed.appName == "MyApp")
        #expect(AppSandboxFSCommand.parsedByVerb(["unmount", "--lazy", "/mnt/MyApp"]) is UnmountCommand)
        #expect(AppSandboxFSCommand.parsedByVerb(["device", "init", "/srv/Phone"]) != nil)
        for arguments in [[], ["--version"], ["--help"], ["help", "init"], ["bogus"], ["init"], ["init", "--help"],
                          ["init", "-h"], ["init", "x", "--app-name", "A", "--version"], ["init", "x", "--bogus"],
                          ["init", "x", "--app-name", "../A"], ["device", "help", "init"],
                          ["init", "--generate-completion-script", "bash"], ["status", "--generate-completion-script=zsh"]] {
            #expect(AppSandboxFSCommand.parsedByVerb(arguments) == nil, "\(arguments)")
        }
    }
}
