// Issue 31: what a mount gets from its maker's privileges, decided in one
// place (`MountPrivileges`) for `appsandboxfs mount` and both modes of the
// test fixture: allow_other for root, and for another user only where
// /etc/fuse.conf has user_allow_other (read as fusermount3 reads it);
// passthrough only with CAP_SYS_ADMIN. Each left-out part says so in one
// line; an allow_other fusermount3 would refuse is refused before anything
// changes, with how to enable it.

@testable import AppSandboxFS
import Glibc
import Testing

@Suite struct MountPrivilegesTests {
    let root = MountPrivileges(uid: 0, hasSysAdmin: true, userAllowOther: false)
    let user = MountPrivileges(uid: 1000, hasSysAdmin: false, userAllowOther: false)

    @Test("Root: allow_other added (or the caller's own kept), passthrough as asked, nothing to say")
    func rootMount() throws {
        let plain = try root.decide(options: ["ro"], passthrough: true, mountpoint: "/m")
        #expect(plain == .init(addedOptions: ["allow_other"], passthrough: true))
        let asked = try root.decide(options: ["allow_other"], passthrough: false, mountpoint: "/m")
        #expect(asked == .init(addedOptions: [], passthrough: false))
    }

    @Test("Another user, no user_allow_other: no allow_other and no passthrough, one line each naming the uid and the reason")
    func userMount() throws {
        let decision = try user.decide(options: [], passthrough: true, mountpoint: "/m")
        #expect(decision.addedOptions.isEmpty)
        #expect(!decision.passthrough)
        let note = try #require(decision.otherUsersNote)
        #expect(note.hasPrefix("/m: mounted without allow_other: only uid 1000 reaches the container"))
        #expect(note.contains("user_allow_other") && !note.contains("\n"))
        #expect(decision.passthroughNote?.contains("CAP_SYS_ADMIN") == true)
        // No passthrough asked for (--capacity, --writeback): nothing to say of it.
        #expect(try user.decide(options: [], passthrough: false, mountpoint: "/m").passthroughNote == nil)
    }

    @Test("Another user with user_allow_other: allow_other as for root, no line")
    func userAllowedOthers() throws {
        var allowed = user
        allowed.userAllowOther = true
        let decision = try allowed.decide(options: [], passthrough: false, mountpoint: "/m")
        #expect(decision == .init(addedOptions: ["allow_other"], passthrough: false))
        #expect(try allowed.decide(options: ["allow_other"], passthrough: false, mountpoint: "/m").addedOptions.isEmpty)
    }

    @Test("Another user asking for allow_other or allow_root without user_allow_other: refused, saying how to enable it", arguments: ["allow_other", "allow_root"])
    func userAskingForOthers(_ option: String) {
        #expect {
            _ = try user.decide(options: ["ro", option], passthrough: false, mountpoint: "/m")
        } throws: { error in
            let text = "\(error)"
            return text.hasPrefix("-o \(option): ") && text.contains("/etc/fuse.conf") && text.contains("user_allow_other")
                && text.contains("uid 1000") && !text.contains("\n")
        }
        // An unreadable fuse.conf: fusermount3 (set-user-ID) reads it and decides.
        var unknown = user
        unknown.userAllowOther = nil
        #expect(throws: Never.self) { _ = try unknown.decide(options: [option], passthrough: false, mountpoint: "/m") }
    }

    @Test("fuse.conf is read as fusermount3 reads it: a whole line, comments and surrounding blanks left out")
    func fuseConfLines() {
        #expect(MountPrivileges.userAllowOther(inFuseConf: ["user_allow_other"]))
        #expect(MountPrivileges.userAllowOther(inFuseConf: ["# comment", "  user_allow_other\t# yes", "mount_max = 9"]))
        #expect(MountPrivileges.userAllowOther(inFuseConf: ["user_allow_other\r"]))
        #expect(!MountPrivileges.userAllowOther(inFuseConf: ["#user_allow_other"]))
        #expect(!MountPrivileges.userAllowOther(inFuseConf: ["user_allow_other = 1", "user_allow_others"]))
        #expect(!MountPrivileges.userAllowOther(inFuseConf: []))
    }

    @Test("A missing fuse.conf has no user_allow_other; a whole line of it gives it, a last line without its newline does not count")
    func installedFuseConf() throws {
        let folder = try #require(mkdtemp(strdup("/tmp/asfs-fuseconf-XXXXXX")).map { String(cString: $0) })
        defer { _ = unlink(folder + "/fuse.conf"); _ = rmdir(folder) }
        #expect(MountPrivileges.current(fuseConf: folder + "/fuse.conf").userAllowOther == false)
        let file = fopen(folder + "/fuse.conf", "w")
        fputs("user_allow_other", file)
        fflush(file)
        #expect(MountPrivileges.current(fuseConf: folder + "/fuse.conf").userAllowOther == false)
        fputs("\n", file)
        fclose(file)
        #expect(MountPrivileges.current(fuseConf: folder + "/fuse.conf").userAllowOther == true)
        #expect(MountPrivileges.current().uid == geteuid())
    }
}
