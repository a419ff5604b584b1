import SandboxPolicy
import Testing

/// The data protection table, cell by cell, against the contract's words
/// (docs/rules.md, P2, P6, P7).
@Suite("Data protection: the table (P2, P6, P7)")
struct ProtectionTableTests {
    /// The contract's answer, written out apart from the table.
    static func contract(_ operation: ProtectionOperation, _ protection: ProtectionClass, _ state: KeyState) -> Bool {
        switch (protection, state) {
        case (.none, _), (_, .unlocked): return true
        case (.complete, .lockedInGrace): return true                       // P6: nothing changes in the grace
        case (.complete, _): return false                                   // P6 A, P7
        case (.completeUnlessOpen, .beforeFirstUnlock): return operation == .descriptorIO   // P7 (descriptors: see the table)
        case (.completeUnlessOpen, _): return operation == .create || operation == .descriptorIO  // P6 B
        case (.completeUntilFirstUserAuthentication, .beforeFirstUnlock): return operation == .descriptorIO  // P7
        case (.completeUntilFirstUserAuthentication, _): return true        // P6 C
        }
    }

    @Test("P6 P7 every cell of the table matches the contract",
          arguments: ProtectionClass.allCases)
    func everyCell(protection: ProtectionClass) {
        for operation in ProtectionOperation.allCases {
            for state in KeyState.allCases {
                #expect(ProtectionPolicy.allows(operation, protection, in: state) == Self.contract(operation, protection, state),
                        "\(operation) \(protection.rawValue) \(state)")
            }
        }
    }

    @Test("P6 class A: usable in the grace; after it nothing opens, no descriptor works, nothing is created or truncated")
    func classA() {
        for operation in ProtectionOperation.allCases {
            #expect(ProtectionPolicy.allows(operation, .complete, in: .lockedInGrace))
            #expect(!ProtectionPolicy.allows(operation, .complete, in: .locked))
            #expect(!ProtectionPolicy.allows(operation, .complete, in: .beforeFirstUnlock))
        }
    }

    @Test("P6 class B: no open from the moment of lock (no grace); create and descriptors keep working")
    func classB() {
        #expect(!ProtectionPolicy.allows(.open, .completeUnlessOpen, in: .lockedInGrace))
        #expect(!ProtectionPolicy.allows(.open, .completeUnlessOpen, in: .locked))
        #expect(ProtectionPolicy.allows(.create, .completeUnlessOpen, in: .locked))
        #expect(ProtectionPolicy.allows(.descriptorIO, .completeUnlessOpen, in: .locked))
        #expect(!ProtectionPolicy.allows(.setClass, .completeUnlessOpen, in: .locked))
    }

    @Test("P7 before first unlock only class D opens or is created")
    func beforeFirstUnlock() {
        for protection in ProtectionClass.allCases {
            #expect(ProtectionPolicy.allows(.open, protection, in: .beforeFirstUnlock) == (protection == .none))
            #expect(ProtectionPolicy.allows(.create, protection, in: .beforeFirstUnlock) == (protection == .none))
        }
    }

    @Test("P2 the attribute value is exactly one of the four raw values, no NUL")
    func attributeValues() {
        for protection in ProtectionClass.allCases {
            #expect(ProtectionClass(attributeValue: Array(protection.rawValue.utf8)) == protection)
            #expect(ProtectionClass(attributeValue: Array(protection.rawValue.utf8) + [0]) == nil)
        }
        #expect(ProtectionClass(attributeValue: Array("Complete".utf8)) == nil)
        #expect(ProtectionClass(attributeValue: [UInt8]()) == nil)
        #expect(ProtectionClass.containerDefault == .completeUntilFirstUserAuthentication)   // P4
    }

    @Test("P5 device states are named as on the command line; a key state maps back to its device state")
    func stateNames() {
        #expect(DeviceState.allCases.map(\.rawValue) == ["unlocked", "locked", "before-first-unlock"])
        #expect(KeyState.lockedInGrace.deviceState == .locked)
        #expect(KeyState.locked.deviceState == .locked)
    }
}
