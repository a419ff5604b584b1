// The driver writes its status record with its own small JSON writer (not
// JSONEncoder, whose first use slowed every mount's start): it must write
// what JSONEncoder writes, and JSONDecoder must read it back whole.

@testable import DriverRuntime
import Foundation
import Testing

@Suite("Ecosystem: the status record's JSON")
struct RecordJSONTests {
    static func record(_ name: String, options: MountRecord.Options, device: UInt64? = 2049, version: String? = "1.2.3 (abc)",
                       deviceState: String? = "unlocked") -> MountRecord {
        MountRecord(pid: 4321, processStart: 987_654_321, mountpoint: "/mnt/\(name)", backing: "/srv/\(name)/backing",
                    appName: name, started: "2026-11-27T13:45:01Z", options: options, device: device, version: version,
                    deviceState: deviceState)
    }

    static let plain = MountRecord.Options(bundle: nil, keepTmp: false, denialLog: nil, log: nil, cacheTimeout: 1, writeback: true,
                                           keepCache: false, threads: 10, debug: false, passthrough: true, mountOptions: [])
    static let full = MountRecord.Options(bundle: "/b/My.app", keepTmp: true, denialLog: "/var/log/d.log", log: "/l",
                                          cacheTimeout: 0.5, writeback: false, keepCache: true, threads: 2, debug: true,
                                          passthrough: nil, mountOptions: ["noatime", "ro"], capacity: 4 << 20)

    static var records: [MountRecord] {
        // Names a shell or a JSON parser finds hard: quotes, backslashes,
        // every control character, slashes, non-ASCII, emoji.
        let controls = String(decoding: (0..<0x20).map { UInt8($0) } + [0x7F], as: UTF8.self)
        var odd = MountRecord.Options(bundle: "a\"b\\c", keepTmp: false, denialLog: "tab\there", log: controls,
                                      cacheTimeout: 0.00001, writeback: true, keepCache: false, threads: 64, debug: false,
                                      passthrough: false, mountOptions: ["x=\"1\"", "é/😀", ""], capacity: Int64.max)
        odd.capacity = Int64.max
        return [record("Plain", options: plain),
                record("Full", options: full, device: nil, version: nil, deviceState: nil),
                record("Zürich \"quoted\" \\ back\nslash/😀\u{1}", options: odd, device: UInt64.max, deviceState: "before-first-unlock"),
                record("Big", options: MountRecord.Options(bundle: nil, keepTmp: false, denialLog: nil, log: nil, cacheTimeout: 123.456,
                                                            writeback: true, keepCache: false, threads: 10, debug: false,
                                                            passthrough: true, mountOptions: ["allow_other"]))]
    }

    @Test("JSONDecoder reads the written record back unchanged")
    func roundTrip() throws {
        for record in Self.records {
            let text = try #require(record.jsonText())
            let decoded = try JSONDecoder().decode(MountRecord.self, from: Data(text.utf8))
            #expect(decoded == record, "\(text)")
        }
    }

    @Test("The same JSON as JSONOutput (JSONEncoder) writes: the same values, and for plain records the same bytes")
    func sameAsJSONEncoder() throws {
        for record in Self.records {
            let ours = try #require(record.jsonText())
            let theirs = try JSONOutput.data(record)
            let parsedOurs = try JSONSerialization.jsonObject(with: Data(ours.utf8)) as? NSDictionary
            let parsedTheirs = try JSONSerialization.jsonObject(with: theirs) as? NSDictionary
            #expect(parsedOurs != nil && parsedOurs == parsedTheirs, "ours:\n\(ours)\nJSONEncoder's:\n\(String(decoding: theirs, as: UTF8.self))")
        }
        for record in [Self.record("Plain", options: Self.plain), Self.record("Full", options: Self.full)] {
            let ours = try #require(record.jsonText())
            let theirs = String(decoding: try JSONOutput.data(record), as: UTF8.self)
            #expect(ours == theirs, "ours:\n\(ours)\nJSONEncoder's:\n\(theirs)")
        }
    }

    @Test("A cache timeout with no JSON form: no record text (JSONEncoder refuses it too)")
    func nonFiniteRefused() {
        var options = Self.plain
        options.cacheTimeout = .infinity
        #expect(Self.record("Inf", options: options).jsonText() == nil)
        #expect((try? JSONOutput.data(Self.record("Inf", options: options))) == nil)
    }
}
