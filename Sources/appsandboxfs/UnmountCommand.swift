import ArgumentParser
import CLinux
import DriverRuntime
import Foundation
import MountInfo
import POSIXHelpers
import Spawning

struct UnmountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unmount",
        _superCommandName: "appsandboxfs",
        abstract: "Unmount a container (also a stale one whose driver died).",
        discussion: """
            Returns once the mount is gone and its driver has emptied tmp (unless mounted
            with --keep-tmp) and let go of the container (its process ends a moment
            later), so the container can be mounted again at once.
            A mount busy for a moment (another tool's statfs or listing) is tried again
            for up to a second. A mount still busy (a file, working folder or mapping open
            in it) is left mounted, and the processes keeping it busy are named; with
            --lazy it is detached instead and goes away when the last of them lets go (as
            fusermount3 -u -z; the driver then empties tmp and exits after this command
            has returned). A stale mount (the driver died) is cleaned up. `umount
            MOUNTPOINT` (as root) and `fusermount3 -u MOUNTPOINT` unmount too.
            Exit status: 0; 1 when MOUNTPOINT cannot be unmounted (it is not a mount, or it
            is busy and --lazy was not given).
            Examples:
              appsandboxfs unmount /mnt/MyApp
              appsandboxfs unmount --lazy /mnt/MyApp
              appsandboxfs status /mnt/MyApp || appsandboxfs unmount /mnt/MyApp
            """)

    @Argument(help: "The mountpoint.")
    var mountpoint: String

    @Flag(help: "Detach a busy mount now; it goes away when the last file in it is closed.")
    var lazy = false

    func run() throws {
        let path = absolutePath(mountpoint)
        // Root may unmount anything: refuse what is not a container.
        if let entry = MountTable.entry(at: path), !entry.isContainer {
            throw Failure("\(path): not an appsandboxfs mount (it is \(entry.fsType)); nothing unmounted")
        }
        // The driver's record goes as its session ends: find it first, and
        // ask the driver to say when it has finished with the container.
        let driver = StatusFile.records().first { $0.alive && $0.record.mountpoint == path }?.record
        var watch = driver.flatMap(DeviceControl.watch)
        defer { if let watch { close(watch) } }
        // Tried first, stale or not: a mount that nothing holds goes away
        // at once either way, and the stale-mount probe (a statfs on a
        // thread of its own) is only needed to tell why it did not.
        var (status, message) = Self.detach(path, lazy: false)
        // Busy: tried again for a moment, unless the driver died (a stale
        // mount stays busy; it is detached lazily below).
        var stale: Bool?
        if status != 0, Self.saysBusy(message), MountTable.isMounted(path) {
            stale = MountTable.isStale(path)
            if stale == false { (status, message) = Self.detachWaitingOutAMoment(path, after: (status, message)) }
        }
        if status == 0 {
            if let driver {
                Self.waitForDriver(driver, watch: watch)
                watch = nil
            }
            return
        }
        guard MountTable.isMounted(path) else {
            throw Failure("\(path): not mounted\(message.isEmpty ? "" : " (" + message + ")")")
        }
        // A stale mount (the driver died) is detached lazily without asking:
        // nobody can use it any more. A live one that is busy only with --lazy.
        if !(stale ?? MountTable.isStale(path)) {
            let holders = MountUsers.holding(path)
            guard lazy else {
                let who = holders.isEmpty ? "no process found holding it (\(message))" : "used by " + holders.joined(separator: "; ")
                throw Failure("\(path): busy, not unmounted: \(who); close those, or detach it lazily with --lazy")
            }
            if !holders.isEmpty {
                FileHandleless.warn("\(path): busy (used by \(holders.joined(separator: "; "))); detaching it lazily (--lazy): it goes away when they let go")
            }
        }
        let (lazyStatus, lazyMessage) = Self.detach(path, lazy: true)
        if lazyStatus == 0 { return }
        throw Failure("\(path): cannot unmount: \(lazyMessage.isEmpty ? "fusermount3 exited with \(lazyStatus)" : lazyMessage)")
    }
}

extension UnmountCommand {
    /// Takes the mount at `path` away. Root calls umount2(2) itself, never
    /// following a last symbolic link, as fusermount3 would for it (one
    /// process start less per unmount); any other user goes through
    /// fusermount3, which checks the mount is theirs.
    static func detach(_ path: String, lazy: Bool) -> (status: Int32, errors: String) {
        if geteuid() == 0 {
            if umount2(path, Int32(UMOUNT_NOFOLLOW) | (lazy ? Int32(MNT_DETACH) : 0)) == 0 { return (0, "") }
            return (1, errorText(errno))
        }
        return runTool("/usr/bin/fusermount3", lazy ? ["-u", "-z", path] : ["-u", path], capturingErrors: true)
    }

    /// Whether a failed detach said the mount is busy (umount2's EBUSY, or
    /// fusermount3's message with it).
    static func saysBusy(_ message: String) -> Bool {
        message.contains(errorText(EBUSY)) || message.contains("busy")
    }

    /// `detach(path, lazy: false)` after the failure `first`, tried again
    /// for up to a second while it fails busy and the mount is still
    /// listed: another tool's statfs or listing holds a mount for the moment
    /// its driver takes to answer (`status` looks at every container mount
    /// that way), and unmounting should not fail for that. A mount really
    /// in use is reported busy a second later; any other failure at once.
    static func detachWaitingOutAMoment(_ path: String, after first: (status: Int32, errors: String))
        -> (status: Int32, errors: String)
    {
        var result = first
        let deadline = monotonicMilliseconds() + 1_000
        while result.status != 0, saysBusy(result.errors), monotonicMilliseconds() < deadline, MountTable.isMounted(path) {
            usleep(20_000)
            result = detach(path, lazy: false)
        }
        return result
    }

    /// Waits until the driver has finished with the container: after the
    /// mount is gone it empties tmp (T2), removes its record and ends the
    /// `watch`, then exits; returning earlier would let a look at tmp race
    /// with that. (A new mount of the container waits for the old driver's
    /// tmp locks itself.) Without a `watch` (its control socket could not
    /// be reached), until its process has ended.
    static func waitForDriver(_ driver: MountRecord, watch: Int32?) {
        let limit = 120_000
        if let watch {
            switch DeviceControl.waitForEnd(watch, milliseconds: limit) {
            case .finished: return
            case .refused: break
            case .timedOut:
                FileHandleless.warn("the driver (pid \(driver.pid)) has not finished 2 minutes after the unmount: tmp may not be empty yet")
                return
            }
        }
        waitForExit(driver)
    }

    /// Waits until the driver's process has ended.
    static func waitForExit(_ driver: MountRecord) {
        // A pidfd polls readable the moment the process ends: no polling
        // interval added to every unmount. Opened first, then the record
        // checked, so that the descriptor is the driver's and not a later
        // process that took its pid.
        let process = asfs_pidfd_open(driver.pid)
        defer { if process >= 0 { close(process) } }
        guard StatusFile.isAlive(driver) else { return }
        // Bounded: a driver that cannot finish is reported, not waited for forever.
        let limit = 120_000
        let ended = process >= 0 ? ended(process, driver, withinMilliseconds: limit)
                                 : gone(driver, withinMilliseconds: limit)
        if !ended {
            FileHandleless.warn("the driver (pid \(driver.pid)) has not exited 2 minutes after the unmount: tmp may not be empty yet")
        }
    }

    /// Waits for the pidfd `process` to poll readable.
    private static func ended(_ process: Int32, _ driver: MountRecord, withinMilliseconds limit: Int) -> Bool {
        let deadline = monotonicMilliseconds() + limit
        var entry = pollfd(fd: process, events: Int16(POLLIN), revents: 0)
        while true {
            let left = deadline - monotonicMilliseconds()
            guard left > 0 else { return false }
            let ready = poll(&entry, 1, Int32(left))
            if ready > 0 { return true }
            if ready < 0 && errno != EINTR { return gone(driver, withinMilliseconds: left) }
        }
    }

    /// Where pidfd_open is refused (a seccomp policy): asks every 2 ms.
    private static func gone(_ driver: MountRecord, withinMilliseconds limit: Int) -> Bool {
        for _ in 0..<max(1, limit / 2) {
            guard StatusFile.isAlive(driver) else { return true }
            usleep(2_000)
        }
        return false
    }
}
