// P5, P6: whatever grace reaches `DataProtection.lock` (the control socket
// takes any line from root or the driver's user), the driver never traps
// (issue 25: `lock --grace 1e12` crashed it converting Double to UInt64).

@testable import AppSandboxFS
import SandboxPolicy
import Testing

@Suite struct GraceTests {
    @Test("P6 a grace of NaN, a negative one or zero is no grace")
    func noGrace() {
        for grace in [Double.nan, -Double.nan, -1, -Double.infinity, 0, -0.0] {
            #expect(DataProtection.graceEnd(after: 1_000, grace: grace) == 0, "\(grace)")
        }
    }

    @Test("P6 a grace past the longest (1e12, 1e300, infinity) is the longest; near the end of the clock it stops at the state word's limit")
    func hugeGrace() {
        let longest = UInt64(DataProtection.longestGrace * 1e9)
        for grace in [1e12, 1e300, Double.greatestFiniteMagnitude, Double.infinity, DataProtection.longestGrace] {
            #expect(DataProtection.graceEnd(after: 5, grace: grace) == 5 + longest, "\(grace)")
        }
        #expect(DataProtection.graceEnd(after: 5, grace: 1.5) == 5 + 1_500_000_000)
        #expect(DataProtection.graceEnd(after: UInt64.max - 1, grace: 1e12) == (1 << 62) - 1)
        #expect(DataProtection.graceEnd(after: (1 << 62) - 10, grace: 1) == (1 << 62) - 1)
    }

    @Test("P5 P6 lock(grace:) with any value locks, in the grace or not, and never traps")
    func lockTakesAnything() throws {
        for (grace, inGrace) in [(Double.nan, false), (-5, false), (1e12, true), (Double.infinity, true), (1e300, true)] {
            let device = DataProtection(defaultClass: .completeUntilFirstUserAuthentication, state: .unlocked)
            try device.lock(grace: grace)
            #expect(device.keyState() == (inGrace ? .lockedInGrace : .locked), "\(grace)")
        }
    }
}
