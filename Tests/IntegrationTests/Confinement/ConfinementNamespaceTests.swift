// R2, R3, R5 holes found by a black-box pass of `run --confine`:
// - a command could still make user namespaces (and in them, mount
//   namespaces where it is root): R3 says no privilege to change mounts or
//   namespaces at all;
// - a command running as root reached the drivers' control sockets in
//   /run/appsandboxfs and unlocked its own device, or rebooted another
//   container's (R2, R3, P5);
// - `run --confine` started inside a user namespace could neither read the
//   status records (the bundle source) nor unmount the other containers
//   (mounts locked by that namespace) and ran the command half-confined
//   instead of refusing (R2, R5).

import Glibc
import Testing

@Suite("Confinement: no new namespaces, no control sockets, no half-made world (R2, R3, R5)")
struct ConfinementNamespaceTests {
    @Test("R3 unshare and clone of new namespaces fail with EPERM, as root and as 501; threads and pipelines still work",
          arguments: [[], ["--user", "501"]])
    func noNewNamespaces(options: [String]) throws {
        try withConfinableContainer { m in
            let result = m.runConfinedScript("""
                for flags in -U -Ur -Urm -Urn -m -p -n -i -u -C -T; do
                    unshare $flags --fork true 2>/dev/null; echo "unshare $flags $?"
                done
                python3 -c 'import ctypes
                libc = ctypes.CDLL(None, use_errno=True)
                result = libc.unshare(0x10000000)  # CLONE_NEWUSER
                print("os.unshare", 0 if result == 0 else ctypes.get_errno())'
                python3 -c 'import threading; t = threading.Thread(target=lambda: print("thread")); t.start(); t.join()'
                echo piped | cat | tr a-z A-Z
                """, options: options)
            let printed = result.stdout.split(separator: "\n").map(String.init)
            for flags in ["-U", "-Ur", "-Urm", "-Urn", "-m", "-p", "-n", "-i", "-u", "-C", "-T"] {
                let line = printed.first { $0.hasPrefix("unshare \(flags) ") }
                #expect(line != nil && line != "unshare \(flags) 0", "unshare \(flags) succeeded: \(result.stdout)\(result.stderr)")
            }
            #expect(printed.contains("os.unshare \(EPERM)"), "\(result.stdout)\(result.stderr)")
            #expect(printed.contains("thread") && printed.contains("PIPED"), "\(result.stdout)\(result.stderr)")
        }
    }

    @Test("R2 R3 P5 a command running as root sees no driver's control socket: the state folder is empty, and the device stays locked")
    func noControlSockets() throws {
        try withConfinableContainer { m in
            m.lock(grace: 0)
            defer { m.unlock() }
            let result = m.runConfinedScript("""
                ls -A /run/appsandboxfs | wc -l
                for socket in /run/appsandboxfs/*.control; do
                    python3 -c 'import socket, sys
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"unlock\\n"); print(s.recv(100))' "$socket"
                done 2>&1
                """)
            let printed = result.stdout.split(separator: "\n").map(String.init)
            #expect(printed.first == "0", "the state folder is visible: \(result.stdout)")
            #expect(!result.stdout.contains("ok"), "a control socket answered: \(result.stdout)")
            let state = m.device("status", ["--json"])
            #expect(state.stdout.contains("\"deviceState\" : \"locked\""), "\(state.stdout)")
        }
    }

    @Test("R2 R5 run --confine started inside a user namespace (by uid 65534, or by root) refuses in one line and runs nothing",
          arguments: [["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"], []])
    func userNamespaceRefused(asUser: [String]) throws {
        try withConfinableContainer { m in
            let marker = m.root + "/ran"
            let result = runProcess(asUser + ["unshare", "-Ur", "--"] + m.confinedCommand(["sh", "-c", "echo ran > \(marker)"]),
                                    timeout: 60)
            #expect(result.status != 0, "\(result)")
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].contains("nothing was run"), "not one line:\n\(result.stderr)")
            #expect(!exists(marker), "the command ran")
        }
    }
}
