// `appsandboxfs env` and `appsandboxfs run`: any program run "inside" a
// mounted container sees HOME, CFFIXED_USER_HOME and TMPDIR as an iOS app
// does, and the XDG folders under which Foundation on Linux finds
// Application Support, Caches and the preferences where iOS has them, with
// the real shell evaluating the exports.

import Foundation
import Glibc
import Testing

@Suite("Ecosystem: env and run")
struct EcosystemEnvRunTests {
    @Test("env prints exports a shell evaluates back to the container's paths (a quote and a space in the path)")
    func envExports() throws {
        try withEcoMount(mountName: "it's a mnt") { m in
            try m.mountInBackground()
            let env = m.appsandboxfs(["env", m.mountpoint])
            #expect(env.status == 0, "\(env.stderr)")
            #expect(env.stdout == """
                export HOME='\(m.root)/it'\\''s a mnt'
                export CFFIXED_USER_HOME='\(m.root)/it'\\''s a mnt'
                export TMPDIR='\(m.root)/it'\\''s a mnt/tmp/'
                export XDG_DATA_HOME='\(m.root)/it'\\''s a mnt/Library/Application Support'
                export XDG_CACHE_HOME='\(m.root)/it'\\''s a mnt/Library/Caches'
                export XDG_CONFIG_HOME='\(m.root)/it'\\''s a mnt/Library/Preferences'
                export LD_PRELOAD='\(Binaries.foundationBridge)'

                """)
            for shell in ["bash", "sh"] {
                let evaluated = m.command([shell, "-c", #"eval "$("$0" env "$1")" && printf '%s|%s|%s|%s|%s|%s' "$HOME" "$CFFIXED_USER_HOME" "$TMPDIR" "$XDG_DATA_HOME" "$XDG_CACHE_HOME" "$XDG_CONFIG_HOME""#,
                                           Binaries.appsandboxfs, m.mountpoint])
                #expect(evaluated.status == 0, "\(shell): \(evaluated.stderr)")
                #expect(evaluated.stdout == "\(m.mountpoint)|\(m.mountpoint)|\(m.mountpoint)/tmp/|\(m.mountpoint)/Library/Application Support|\(m.mountpoint)/Library/Caches|\(m.mountpoint)/Library/Preferences", "\(shell)")
            }
        }
    }

    @Test("env --json; env of the backing directory names the mount; env of what is not a container fails (exit 1)")
    func envJSONAndErrors() throws {
        try withEcoMount { m in
            let before = m.appsandboxfs(["env", m.mountpoint])
            #expect(before.status == 1)
            #expect(before.stderr == "Error: \(m.mountpoint): not a mounted container (mount it first: appsandboxfs mount BACKING \(m.mountpoint))\n")

            try m.mountInBackground()
            let json = m.appsandboxfs(["env", m.mountpoint, "--json"])
            let object = try #require(jsonObject(json.stdout), "\(json.stdout)")
            #expect(object["schema"] as? String == "appsandboxfs.env/1")
            #expect(object["container"] as? String == m.mountpoint)
            #expect(object["backing"] as? String == m.backing)
            #expect(object["environment"] as? [String: String] == [
                "HOME": m.mountpoint, "CFFIXED_USER_HOME": m.mountpoint, "TMPDIR": m.mountpoint + "/tmp/",
                "XDG_DATA_HOME": m.mountpoint + "/Library/Application Support",
                "XDG_CACHE_HOME": m.mountpoint + "/Library/Caches", "XDG_CONFIG_HOME": m.mountpoint + "/Library/Preferences",
                "LD_PRELOAD": Binaries.foundationBridge,
            ])

            let byBacking = m.appsandboxfs(["env", m.backing])
            #expect(byBacking.stdout == m.appsandboxfs(["env", m.mountpoint]).stdout)

            let proc = m.appsandboxfs(["env", "/proc"])
            #expect(proc.status == 1)
            #expect(proc.stderr == "Error: /proc: a mount point of proc, not of a container\n")
        }
    }

    @Test("run: the command gets the iOS environment, keeps the rest and the working folder; its exit status is run's")
    func runCommand() throws {
        try withEcoMount { m in
            try m.mountInBackground(["--denial-log", m.denialLog])
            let result = m.command(
                [Binaries.appsandboxfs, "run", m.mountpoint, "--", "sh", "-c",
                 #"echo "$HOME|$CFFIXED_USER_HOME|$TMPDIR|$KEPT|$(pwd)"; echo data > "$TMPDIR/made-inside"; touch "$HOME/Documents/Inbox/x"; exit 7"#],
                cwd: m.root)
            // (KEPT is not set: the environment passes through unchanged.)
            #expect(result.status == 7)
            #expect(result.stdout == "\(m.mountpoint)|\(m.mountpoint)|\(m.mountpoint)/tmp/||\(m.root)\n")
            #expect(readFileText(m.backing + "/tmp/made-inside") == "data\n")
            #expect(result.stderr.contains("Operation not permitted"))
            #expect(readFileText(m.denialLog).contains("Sandbox: touch("))

            let withVariable = m.command(["env", "KEPT=yes", Binaries.appsandboxfs, "run", m.mountpoint, "--", "sh", "-c", #"echo "$KEPT""#])
            #expect(withVariable.stdout == "yes\n")
        }
    }

    @Test("run's own exit codes: 127 command not found, 126 not executable, 64 no command, 1 not a container")
    func runExitCodes() throws {
        try withEcoMount { m in
            #expect(m.appsandboxfs(["run", m.mountpoint, "--", "true"]).status == 1)
            try m.mountInBackground()
            let notFound = m.appsandboxfs(["run", m.mountpoint, "--", "no-such-command-anywhere"])
            #expect(notFound.status == 127)
            #expect(notFound.stderr == "appsandboxfs: no-such-command-anywhere: command not found\n")
            try writeFile(m.root + "/not-executable", "data", mode: 0o644)
            #expect(m.appsandboxfs(["run", m.mountpoint, "--", m.root + "/not-executable"]).status == 126)
            #expect(m.appsandboxfs(["run", m.mountpoint]).status == 64)
            #expect(m.appsandboxfs(["run", m.mountpoint, "--", "sh", "-c", "kill -TERM $$"]).status == 128 + SIGTERM)
        }
    }
}
