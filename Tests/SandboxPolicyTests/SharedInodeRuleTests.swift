import SandboxPolicy
import Testing

/// Which names of one file may share a node (`SandboxPolicy.sameRulesForFiles`):
/// read off the rule table, so a new rule that sets two zones apart splits
/// their hard links without a change in the driver.
@Suite("B2 I4 W1 hard links: zones whose rules differ for a file")
struct SharedInodeRuleTests {
    @Test("W1 W3 the writable zones judge a file alike: their hard links share a node")
    func writableZonesAlike() {
        // rootOther too: an entry already at the root (SystemData ...) is
        // read-write like Library (S1 forbids only new root names).
        let writable: [Zone] = [.documents, .library, .caches, .preferences, .tmp, .rootOther]
        for a in writable {
            for b in writable { #expect(SandboxPolicy.sameRulesForFiles(a, b), "\(a) and \(b)") }
        }
    }

    @Test("B2 I4 the bundle and the Inbox each judge a file otherwise than Documents, and otherwise than each other")
    func protectedZonesApart() {
        for zone: Zone in [.bundle, .inbox] {
            #expect(!SandboxPolicy.sameRulesForFiles(zone, .documents), "\(zone)")
            #expect(!SandboxPolicy.sameRulesForFiles(.documents, zone), "\(zone)")
            #expect(SandboxPolicy.sameRulesForFiles(zone, zone))
        }
        #expect(!SandboxPolicy.sameRulesForFiles(.bundle, .inbox))
    }

    @Test("The relation is symmetric for every pair of zones")
    func symmetric() {
        for a in Zone.allCases {
            for b in Zone.allCases {
                #expect(SandboxPolicy.sameRulesForFiles(a, b) == SandboxPolicy.sameRulesForFiles(b, a), "\(a) \(b)")
            }
        }
    }
}
