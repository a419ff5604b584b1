import SandboxPolicy
import Testing

/// R1 and R2: what the confined world of `run --confine` hides, unmounts
/// and refuses, decided from the mount table alone.
@Suite("ConfinementPlan (R1, R2)")
struct ConfinementPlanTests {
    typealias Mount = ConfinementPlan.ContainerMount
    let this = Mount(mountpoint: "/srv/apps/a/mnt", backing: "/srv/apps/a/backing")

    @Test("R2: the backing directory and the bundle source are hidden; other containers are unmounted and their backing hidden")
    func hidesAndDetaches() throws {
        let other = Mount(mountpoint: "/mnt/b", backing: "/data/b")
        let plan = try ConfinementPlan.make(container: this, bundleSource: "/home/dev/build/A.app",
                                            mounts: [this, other]).get()
        #expect(plan.mountpoint == "/srv/apps/a/mnt")
        #expect(plan.containerTmp == "/srv/apps/a/mnt/tmp")
        #expect(plan.detach == ["/mnt/b"])
        #expect(plan.hide == ["/data/b", "/home/dev/build/A.app", "/srv/apps/a/backing"])
    }

    @Test("R1: folders under /tmp and /var/tmp (and their real paths) need no hiding: the container's tmp covers them")
    func temporaryFoldersCovered() throws {
        let other = Mount(mountpoint: "/tmp/x/mnt", backing: "/private/tmp/x/backing")
        let plan = try ConfinementPlan.make(container: Mount(mountpoint: this.mountpoint, backing: "/var/tmp/a"),
                                            bundleSource: nil, mounts: [this, other],
                                            temporaryFolders: ["/tmp", "/var/tmp", "/private/tmp"]).get()
        #expect(plan.hide.isEmpty)
        #expect(plan.detach == ["/tmp/x/mnt"], "unmounted all the same: a copy would keep its driver alive")
    }

    @Test("R2: nothing is hidden or unmounted twice (a path inside another one)")
    func nested() throws {
        let outer = Mount(mountpoint: "/mnt/c", backing: "/data/c")
        let inner = Mount(mountpoint: "/mnt/c/Documents/d", backing: "/data/c/nested")
        let plan = try ConfinementPlan.make(container: this, bundleSource: nil, mounts: [inner, this, outer]).get()
        #expect(plan.detach == ["/mnt/c"])
        #expect(plan.hide == ["/data/c", "/srv/apps/a/backing"])
    }

    @Test("R1: a mountpoint under /tmp or /var/tmp is refused")
    func mountpointInTemporaryFolder() {
        for (mountpoint, folder) in [("/tmp/a/mnt", "/tmp"), ("/var/tmp/mnt", "/var/tmp"), ("/tmp", "/tmp")] {
            let result = ConfinementPlan.make(container: Mount(mountpoint: mountpoint, backing: "/data/a"),
                                              bundleSource: nil, mounts: [])
            #expect(throws: ConfinementPlan.Refusal.mountpointInTemporaryFolder(folder)) { try result.get() }
        }
        // /tmpfoo is not /tmp.
        #expect(throws: Never.self) {
            try ConfinementPlan.make(container: Mount(mountpoint: "/tmpfoo/mnt", backing: "/data/a"), bundleSource: nil, mounts: []).get()
        }
    }

    @Test("R2: a folder to hide or unmount that holds the mountpoint is refused")
    func mountpointInsideHiddenFolder() {
        let inBacking = ConfinementPlan.make(container: Mount(mountpoint: "/data/a/mnt", backing: "/data/a"),
                                             bundleSource: nil, mounts: [])
        #expect(throws: ConfinementPlan.Refusal.mountpointInside("/data/a", role: "its backing directory")) { try inBacking.get() }
        let inOther = ConfinementPlan.make(container: Mount(mountpoint: "/mnt/b/Documents/a", backing: "/data/a"),
                                           bundleSource: nil, mounts: [Mount(mountpoint: "/mnt/b", backing: "/data/b")])
        #expect(throws: ConfinementPlan.Refusal.mountpointInside("/mnt/b", role: "another container's mountpoint")) { try inOther.get() }
        let inOthersBacking = ConfinementPlan.make(container: Mount(mountpoint: "/data/b/x", backing: "/data/a"),
                                                   bundleSource: nil, mounts: [Mount(mountpoint: "/mnt/b", backing: "/data/b")])
        #expect(throws: ConfinementPlan.Refusal.mountpointInside("/data/b", role: "another container's backing directory")) {
            try inOthersBacking.get()
        }
    }

    @Test("R2 (issue 25, item 9): a line that cannot be believed (another user's FUSE mount as fuse.appsandboxfs naming \"/\" or this container's Documents) is unmounted inside and hides nothing")
    func unbelievedLineHidesNothing() throws {
        for forged in ["/", "/srv/apps/a/mnt/Documents", "/srv/apps/a/mnt"] {
            let forger = Mount(mountpoint: "/home/eve/mnt", backing: nil)
            let plan = try ConfinementPlan.make(container: this, bundleSource: nil, mounts: [this, forger]).get()
            #expect(plan.detach == ["/home/eve/mnt"], "\(forged)")
            #expect(plan.hide == ["/srv/apps/a/backing"], "\(forged)")
            // The same line believed: what the forger chose would be hidden
            // (or the run refused), which is why it must not be.
            let believed = ConfinementPlan.make(container: this, bundleSource: nil,
                                                mounts: [this, Mount(mountpoint: "/home/eve/mnt", backing: forged)])
            #expect((try? believed.get())?.hide.contains(forged) ?? true, "\(forged)")
        }
    }
}
