import SandboxPolicy
import Testing

/// The declared checks of each request (RequestChecks.swift): every request
/// has its list, and the lists keep the order the rules require, so that
/// when several rules refuse, the caller gets the errno (and the one denial
/// line) of the first.
@Suite("Request checks: each request's checks, in the rules' order")
struct RequestChecksTests {
    /// Each request's list, written out apart from the table, with the rules it applies.
    static let expected: [(CheckedRequest, [Check])] = [
        (.create, [.zone, .protection(.create, of: .folder), .capacity(.newEntry)]),          // B2 I4 S1, P6 P7 (P3), Q2
        (.mknod, [.zone, .capacity(.newEntry)]),                                              // B2 I4 S1, Q2
        (.mkdir, [.zone, .capacity(.newEntry)]),                                              // B2 I4 S1, Q2
        (.symlink, [.zone, .escape, .capacity(.newEntry)]),                                   // B2 I4 S1, E1, Q2
        (.link, [.zone, .capacity(.newEntry)]),                                               // B2 I4 S1, Q2
        (.unlink, [.zone, .capacity(.removal)]),                                              // B2 I2 S2, Q2
        (.rmdir, [.zone, .capacity(.removal)]),                                               // B2 I2 S2, Q2
        (.rename, [.zone, .capacity(.rename)]),                                               // B2 I3 I4 S1 S2, Q2
        (.openForReading, [.protection(.open, of: .entry)]),                                  // P6 P7 (reads: no zone, I1)
        (.openForWriting, [.zone, .protection(.open, of: .entry)]),                           // B2 I4, P6 P7
        (.openTruncating, [.zone, .protection(.open, of: .entry), .capacity(.measure)]),      // B2 I4, P6 P7, Q2
        (.read, [.protection(.descriptorIO, of: .handle)]),                                   // P6
        (.write, [.zone, .protection(.descriptorIO, of: .handle), .clearSetIDBits, .capacity(.write)]),  // B2 I4, P6, W1, Q2
        (.fsync, [.protection(.descriptorIO, of: .handle)]),                                  // P6
        (.fallocate, [.zone, .protection(.descriptorIO, of: .handle), .clearSetIDBits, .capacity(.allocate)]),  // B2 I4, P6, W1, Q2
        (.copyFileRange, [.zone, .protection(.descriptorIO, of: .sourceHandle), .protection(.descriptorIO, of: .handle),
                          .clearSetIDBits, .capacity(.write)]),                               // B2 I4, P6, W1, Q2
        (.setAttributes, [.zone]),                                                            // B2 I4 S3
        (.truncate, [.zone, .protection(.truncate, of: .entry), .capacity(.measure)]),        // B2 I4, P6, Q2
        (.ftruncate, [.zone, .protection(.descriptorIO, of: .handle), .capacity(.measure)]),  // B2 I4, P6, Q2
        (.flushTimes, []),                                                                    // no process asked
        (.setxattr, [.zone, .attributeName, .capacity(.newEntry)]),                           // B2 I4, X6, Q2
        (.removexattr, [.zone, .attributeName, .capacity(.measure)]),                         // B2 I4, X6, Q2
        (.setProtectionClass, [.zone, .attributeName]),                                       // B2 I4, X6 (then P1 P2 F1)
        (.removeProtectionClass, [.zone, .attributeName]),                                    // B2 I4, X6 (then P1 P2)
    ]

    @Test("every request has its checks listed, as written out here")
    func everyRequestListed() {
        #expect(Set(Self.expected.map(\.0)) == Set(CheckedRequest.allCases))
        #expect(Self.expected.count == CheckedRequest.allCases.count)
        for (request, checks) in Self.expected {
            #expect(request.checks == checks, "\(request)")
        }
    }

    /// A check's place in the order the rules require.
    static func rank(_ check: Check) -> Int {
        switch check {
        case .zone: 0                       // B2, I4, S1-S3: the sandbox's own refusal answers first
        case .escape, .attributeName: 1     // E1, X6: after the zone (a link in the bundle is EROFS)
        case .protection: 2                 // P6, P7: after the sandbox's rules (EROFS before EPERM of a class)
        case .clearSetIDBits: 3             // W1: after every refusal, before the data
        case .capacity: 4                   // Q2: last, around the call
        }
    }

    @Test("B2 I4 S1 before E1 X6, before P6 P7, before W1, before Q2", arguments: CheckedRequest.allCases)
    func order(request: CheckedRequest) {
        let ranks = request.checks.map(Self.rank)
        #expect(ranks == ranks.sorted(), "\(request): \(request.checks)")
    }

    @Test("B2 I4: every request that changes the container asks its zone first", arguments: CheckedRequest.allCases)
    func zoneFirst(request: CheckedRequest) {
        let readsOrFlushes: Set<CheckedRequest> = [.openForReading, .read, .fsync, .flushTimes]
        if readsOrFlushes.contains(request) {
            #expect(!request.checks.contains(.zone), "\(request)")
        } else {
            #expect(request.checks.first == .zone, "\(request)")
        }
    }

    @Test("Q2: at most one reservation, the last check, and the one `reservation` names", arguments: CheckedRequest.allCases)
    func capacityLast(request: CheckedRequest) {
        let reservations = request.checks.compactMap { check -> Reservation? in
            if case .capacity(let reservation) = check { return reservation }
            return nil
        }
        #expect(reservations.count <= 1, "\(request)")
        #expect(request.reservation == reservations.first, "\(request)")
        if let reservation = reservations.first {
            #expect(request.checks.last == .capacity(reservation), "\(request)")
        }
    }

    @Test("Q2: what needs space reserves it: write, fallocate, copy_file_range, create, mkdir, symlink, setxattr")
    func spaceNeeded() {
        #expect(CheckedRequest.write.reservation == .write)
        #expect(CheckedRequest.copyFileRange.reservation == .write)
        #expect(CheckedRequest.fallocate.reservation == .allocate)
        for request in [CheckedRequest.create, .mknod, .mkdir, .symlink, .link, .setxattr] {
            #expect(request.reservation == .newEntry, "\(request)")
        }
    }

    @Test("E1: only a new symbolic link's target is judged, after its zone")
    func escapeOnlyForSymlinks() {
        for request in CheckedRequest.allCases where request != .symlink {
            #expect(!request.checks.contains(.escape), "\(request)")
        }
        #expect(CheckedRequest.symlink.checks.prefix(2) == [.zone, .escape])
    }

    @Test("P6 P7: opening, creating, truncating and I/O through a handle ask data protection")
    func protectionWhereP6Says() {
        #expect(CheckedRequest.create.checks.contains(.protection(.create, of: .folder)))
        for request in [CheckedRequest.openForReading, .openForWriting, .openTruncating] {
            #expect(request.checks.contains(.protection(.open, of: .entry)), "\(request)")
        }
        #expect(CheckedRequest.truncate.checks.contains(.protection(.truncate, of: .entry)))
        for request in [CheckedRequest.read, .write, .fsync, .fallocate, .ftruncate, .copyFileRange] {
            #expect(request.checks.contains(.protection(.descriptorIO, of: .handle)), "\(request)")
        }
        // copy_file_range: the source is read, and judged before the destination.
        let copy = CheckedRequest.copyFileRange.checks
        #expect(copy.firstIndex(of: .protection(.descriptorIO, of: .sourceHandle))!
                < copy.firstIndex(of: .protection(.descriptorIO, of: .handle))!)
    }
}
