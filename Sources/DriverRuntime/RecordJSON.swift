/// The status record's JSON, written here rather than by JSONEncoder: the
/// driver writes its record between its mount and "ready", and the
/// encoder's first use in a process (its generic containers and the
/// conformances they look up, inside the prebuilt Foundation) cost that
/// start 0.35-0.5 ms. The text is what JSONOutput writes (keys sorted,
/// pretty-printed, slashes unescaped; optional keys of the record left out
/// when nil, every option's key always), and it is read back with
/// JSONDecoder like any record: `RecordJSONTests` checks the two encoders
/// agree.
extension MountRecord {
    /// The record as JSON text; nil when a number has no JSON form (a
    /// cache timeout that is not finite), as JSONEncoder would refuse it.
    public func jsonText() -> String? {
        guard options.cacheTimeout.isFinite else { return nil }
        var fields: [(String, JSONText)] = [
            ("appName", .string(appName)),
            ("backing", .string(backing)),
            ("mountpoint", .string(mountpoint)),
            ("options", options.json),
            ("pid", .number(String(pid))),
            ("processStart", .number(String(processStart))),
            ("started", .string(started)),
        ]
        if let device { fields.append(("device", .number(String(device)))) }
        if let deviceState { fields.append(("deviceState", .string(deviceState))) }
        if let version { fields.append(("version", .string(version))) }
        fields.sort { $0.0 < $1.0 }
        var text = ""
        JSONText.object(fields).write(to: &text, indent: "")
        return text
    }
}

extension MountRecord.Options {
    fileprivate var json: JSONText {
        .object([
            ("bundle", bundle.map(JSONText.string) ?? .null),
            ("cacheTimeout", .number(cacheTimeout == cacheTimeout.rounded() && abs(cacheTimeout) < 1e15
                ? String(Int64(cacheTimeout)) : String(cacheTimeout))),
            ("capacity", capacity.map { .number(String($0)) } ?? .null),
            ("debug", .bool(debug)),
            ("denialLog", denialLog.map(JSONText.string) ?? .null),
            ("keepCache", .bool(keepCache)),
            ("keepTmp", .bool(keepTmp)),
            ("log", log.map(JSONText.string) ?? .null),
            ("mountOptions", .array(mountOptions.map(JSONText.string))),
            ("passthrough", passthrough.map(JSONText.bool) ?? .null),
            ("threads", .number(String(threads))),
            ("writeback", .bool(writeback)),
        ])
    }
}

/// A JSON value, for the record alone (its numbers come as text).
private indirect enum JSONText {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONText])
    /// Keys in the order given (sorted by the caller).
    case object([(String, JSONText)])

    func write(to text: inout String, indent: String) {
        switch self {
        case .null: text += "null"
        case .bool(let value): text += value ? "true" : "false"
        case .number(let value): text += value
        case .string(let value): Self.quote(value, to: &text)
        case .array(let values):
            guard !values.isEmpty else { text += "[\n\n\(indent)]"; return }
            text += "[\n"
            for (index, value) in values.enumerated() {
                text += indent + "  "
                value.write(to: &text, indent: indent + "  ")
                text += index == values.count - 1 ? "\n" : ",\n"
            }
            text += indent + "]"
        case .object(let fields):
            text += "{\n"
            for (index, (key, value)) in fields.enumerated() {
                text += indent + "  "
                Self.quote(key, to: &text)
                text += " : "
                value.write(to: &text, indent: indent + "  ")
                text += index == fields.count - 1 ? "\n" : ",\n"
            }
            text += indent + "}"
        }
    }

    /// RFC 8259 string: quote, backslash and control characters escaped,
    /// everything else (slashes, non-ASCII) as it is.
    private static func quote(_ value: String, to text: inout String) {
        var bytes: [UInt8] = [UInt8(ascii: "\"")]
        bytes.reserveCapacity(value.utf8.count + 2)
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case UInt8(ascii: "\n"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case UInt8(ascii: "\r"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case UInt8(ascii: "\t"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x08: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
            case 0x0C: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
        text += String(decoding: bytes, as: UTF8.self)
    }
}
