// outside-writer: the program of the confinement example
// (Tests/AppSandboxTestingExamples/ConfinementExampleTests.swift). It does
// what an app does, writing a file in its container ($HOME/Documents), then
// tries to write each path given on its command line, and prints one line
// per attempt: "PATH: written" or "PATH: <the error>".

import Glibc

let home = getenv("HOME").map { String(cString: $0) } ?? "/"
for path in [home + "/Documents/inside.txt"] + CommandLine.arguments.dropFirst() {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    if fd < 0 {
        print("\(path): \(String(cString: strerror(errno)))")
        continue
    }
    let bytes = Array("written by outside-writer\n".utf8)
    let written = write(fd, bytes, bytes.count)
    close(fd)
    print(written == bytes.count ? "\(path): written" : "\(path): \(String(cString: strerror(errno)))")
}
