// A rename first asks the node tree whether the kernel holds a node at the
// new name; when it holds none, the driver renames with RENAME_NOREPLACE and
// looks at the name only if something is there (issue 12: one system call
// instead of two for the common rename). These are the renames where
// something is there although the tree has no node at that name: a file
// with two names whose node sits at the other one (the name the kernel used
// last), so the first try fails with EEXIST and the rename must still
// replace, as rename(2) does (W1).

import Glibc
import Testing

@Suite("W1 a rename over a name the tree holds no node for still replaces it")
struct RenameOverTests {
    @Test("W1 rename over one name of a file with two names, its node at the other: replaced, the other name keeps the old file")
    func overAnotherNameOfAKnownFile() throws {
        try withMountedContainer { mounted in
            let dir = try mounted.scratch()
            try writeFile(dir + "/x", "old\n")
            // The link is the name the kernel used last: the node is there.
            #expect(RulesSys.link(dir + "/x", dir + "/y") == 0)
            try writeFile(dir + "/z", "new\n")
            #expect(RulesSys.rename(dir + "/z", dir + "/x") == 0)
            #expect(readFileText(dir + "/x") == "new\n")
            #expect(readFileText(dir + "/y") == "old\n")
            #expect(access(dir + "/z", F_OK) == -1 && errno == ENOENT)
        }
    }

    @Test("W1 the name replaced was the file's last one, the file held only by an O_PATH descriptor and its node without one: fstat still reaches it")
    func overTheLastNameOfAHeldFile() throws {
        // One descriptor in the driver's cache: the file's node loses its
        // descriptor to the files used after it, so that neither the unlink
        // nor the rename finds one in the tree, and the rename's look at the
        // name (after EEXIST) is what must make the node keep its file. An
        // O_PATH descriptor on the mount opens nothing in the backing
        // folder: once the file's last name goes, only the node's kept
        // descriptor still holds it there (a file handle opens nothing).
        try withMountedContainer(extraArguments: ["--descriptor-cache", "1"]) { mounted in
            let dir = try mounted.scratch()
            try writeFile(dir + "/x", "kept\n")
            let held = open(dir + "/x", RulesLinux.openPath | O_CLOEXEC)
            #expect(held >= 0)
            defer { close(held) }
            #expect(RulesSys.link(dir + "/x", dir + "/y") == 0)
            // A chmod needs a node's descriptor: the other files take the
            // cache's one (the cache's clock gives each a second chance,
            // hence several).
            let others = (0..<4).map { dir + "/other\($0)" }
            for other in others { try writeFile(other, "other\n") }
            func useOthers() { for other in others { #expect(chmod(other, 0o640) == 0) } }
            useOthers()
            // "y" goes, "x" is left: the file's node still sits at "y".
            #expect(unlink(dir + "/y") == 0)
            try writeFile(dir + "/z", "new\n")
            useOthers()
            #expect(RulesSys.rename(dir + "/z", dir + "/x") == 0)
            #expect(readFileText(dir + "/x") == "new\n")
            var info = stat()
            #expect(fstat(held, &info) == 0, "fstat of the replaced file: \(posixError(errno))")
            #expect(info.st_nlink == 0)
            #expect(info.st_size == 5)
        }
    }

    @Test("W1 RENAME_NOREPLACE asked by the caller over an existing name fails with EEXIST and changes nothing; over no name it renames")
    func noReplaceFromTheCaller() throws {
        try withMountedContainer { mounted in
            let dir = try mounted.scratch()
            try writeFile(dir + "/a", "a\n")
            try writeFile(dir + "/b", "b\n")
            #expect(RulesSys.renameat2(dir + "/a", dir + "/b", RulesLinux.renameNoReplace) == EEXIST)
            #expect(readFileText(dir + "/a") == "a\n")
            #expect(readFileText(dir + "/b") == "b\n")
            #expect(RulesSys.renameat2(dir + "/a", dir + "/c", RulesLinux.renameNoReplace) == 0)
            #expect(readFileText(dir + "/c") == "a\n")
        }
    }
}
