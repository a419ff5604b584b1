// Negative controls: the checkers of the reliability tests can fail. Each
// is fed a difference it must find, on plain folders (no mount, fast).

import Glibc
import Testing

@Suite("Reliability: the checkers notice what they must (negative controls)")
struct ReliabilityControlsTests {
    @Test("the every-operation differential notices one changed byte, a lost xattr and a missing file")
    func differentialNoticesDifferences() throws {
        let root = try makeTemporaryDirectory(prefix: "asfs-every-control")
        defer { removeTree(root) }
        let a = (0..<3).map { root + "/a\($0)" }, b = (0..<3).map { root + "/b\($0)" }
        for folder in a + b { try makeDirectory(folder) }
        var engine = EveryOpEngine(seed: 0xC0_47_201)
        for _ in 0..<200 {
            let operation = engine.next(in: EveryOpTree(roots: a))
            #expect(operation.apply(roots: a) == operation.apply(roots: b), "\(operation)")
        }
        #expect(EveryOpTree(roots: a) == EveryOpTree(roots: b), "the same operations on two plain folders differ")
        let files = EveryOpTree(roots: a).paths(ofType: "file").filter { (try? fileSize($0.on(a))) ?? 0 > 0 }
        let file = try #require(files.first, "200 operations left no file with data")

        // One byte.
        let fd = open(file.on(b), O_WRONLY | O_CLOEXEC)
        var byte: UInt8 = 0
        let original = open(file.on(a), O_RDONLY | O_CLOEXEC)
        _ = pread(original, &byte, 1, 0)
        close(original)
        byte ^= 0x5A
        _ = pwrite(fd, &byte, 1, 0)
        close(fd)
        let changed = EveryOpTree(roots: b)
        #expect(changed != EveryOpTree(roots: a))
        #expect(changed.difference(from: EveryOpTree(roots: a), label: "mount").contains("first difference at offset 0"))

        // An xattr, and a file.
        #expect(RulesSys.setxattr(file.on(a), "user.control", [1]) == 0)
        #expect(EveryOpTree(roots: a).difference(from: EveryOpTree(roots: b), label: "x").contains("user.control"))
        #expect(unlink(file.on(b)) == 0)
        #expect(EveryOpTree(roots: b).difference(from: EveryOpTree(roots: a), label: "mount").contains("(absent)"))
    }

    @Test("the crash verifier notices a lost fsynced file, changed bytes, a short log and an undone rename")
    func crashVerifierNoticesLoss() throws {
        let root = try makeTemporaryDirectory(prefix: "asfs-crash-control")
        defer { removeTree(root) }
        let verify = root + "/verify.py"
        try writeFile(verify, ReliabilityHeavyTests.Crashes.verifySource)
        try makeDirectory(root + "/base")
        try makeDirectory(root + "/base/Documents")
        let digest = { (text: String) -> String in
            runProcess(["python3", "-c", "import hashlib,sys; print(hashlib.sha256(sys.argv[1].encode()).hexdigest())", text])
                .stdout.split(separator: "\n").first.map(String.init) ?? ""
        }
        try writeFile(root + "/base/Documents/kept.bin", "kept")
        try writeFile(root + "/base/Documents/log.bin", "abcdef")
        let good = [
            "F\tDocuments/kept.bin\t\(digest("kept"))\t4",
            "A\tDocuments/log.bin\t4\t\(digest("abcd"))",
        ]
        func check(_ lines: [String]) -> Int32 {
            let journal = root + "/journal.txt"
            try? writeFile(journal, lines.joined(separator: "\n") + "\n")
            return runProcess(["python3", verify, root + "/base", "with-tmp", journal]).status
        }
        #expect(check(good) == 0, "a journal the folder satisfies is refused")
        #expect(check(good + ["F\tDocuments/lost.bin\t\(digest("lost"))\t4"]) != 0, "a lost file passes")
        #expect(check(good + ["F\tDocuments/kept.bin\t\(digest("KEPT"))\t4"]) != 0, "changed bytes pass")
        #expect(check(good + ["A\tDocuments/log.bin\t8\t\(digest("abcdefgh"))"]) != 0, "a short log passes")
        #expect(check(good + ["R\tDocuments/kept.bin\tDocuments/moved.bin"]) != 0, "an undone rename passes")
        // A rename the driver's death interrupted may have happened or not;
        // the file must be under exactly one of the two names, intact.
        let interrupted = ["r\tDocuments/kept.bin\tDocuments/moved.bin", "E\t1.0\tTransport endpoint is not connected on x"]
        #expect(check(good + interrupted) == 0, "an interrupted rename not done is refused")
        try writeFile(root + "/base/Documents/moved.bin", "kept")
        #expect(check(good + interrupted) != 0, "a file under both names passes")
        removeTree(root + "/base/Documents/kept.bin")
        #expect(check(good + interrupted) == 0, "an interrupted rename that was done is refused")
        removeTree(root + "/base/Documents/moved.bin")
        #expect(check(good + interrupted) != 0, "a file under neither name passes")
    }
}

private func fileSize(_ path: String) throws -> Int {
    var st = stat()
    guard stat(path, &st) == 0 else { throw SupportError("stat \(path): \(posixError(errno))") }
    return Int(st.st_size)
}
