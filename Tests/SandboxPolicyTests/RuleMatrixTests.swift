import SandboxPolicy
import Testing

// Every cell: each operation in each zone, each pair of zones for the
// operations that touch two places, against the contract as ContractOracle.swift restates it.

@Suite("The rule table, cell by cell, against the contract")
struct RuleMatrixTests {
    @Test("B2 I4 S1 S2 S3 W1 T1 every one-zone operation in every zone", arguments: Zone.containerZones)
    func everyOperationInEveryZone(zone: Zone) {
        for (operation, kind, logged) in oneZoneOperations(zone) {
            #expect(SandboxPolicy.decide(operation) == verdict(Contract.expected(kind, in: zone), logged),
                    "\(operation)")
        }
    }

    @Test("B1 I1 reads are never denied: open read-only without O_TRUNC", arguments: Zone.containerZones)
    func openForReadingIsAllowed(zone: Zone) {
        #expect(SandboxPolicy.decide(.open(zone, write: false, truncate: false)) == .allow)
    }

    @Test("B2 I3 I4 S1 S2 W3 rename: both ends and the replaced entry, all zone pairs",
          arguments: Zone.containerZones, Zone.containerZones)
    func renameBetweenAnyTwoZones(entry: Zone, folder: Zone) {
        let replacements: [Zone?] = [nil] + Zone.containerZones
        for replaced in replacements {
            #expect(SandboxPolicy.decide(.rename(entry: entry, into: folder, replacing: replaced))
                    == verdict(Contract.expectedRename(entry, into: folder, replacing: replaced), .fileWriteRename),
                    "replacing \(String(describing: replaced))")
        }
    }

    @Test("B2 E4 I4 S1 link: both ends, all zone pairs", arguments: Zone.containerZones, Zone.containerZones)
    func linkBetweenAnyTwoZones(source: Zone, folder: Zone) {
        #expect(SandboxPolicy.decide(.link(source: source, into: folder))
                == verdict(Contract.expectedLink(source, into: folder), .fileLink))
    }

    @Test("B2 I4 S2 W1 exchange: all zone pairs, and the order of the two does not matter",
          arguments: Zone.containerZones, Zone.containerZones)
    func exchangeOfAnyTwoZones(first: Zone, second: Zone) {
        let decided = SandboxPolicy.decide(.exchange(first: first, second: second))
        #expect(decided == verdict(Contract.expectedExchange(first, second), .fileWriteRename))
        #expect(decided == SandboxPolicy.decide(.exchange(first: second, second: first)))
    }
}
