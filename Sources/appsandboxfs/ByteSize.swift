import ArgumentParser

/// A size on the command line: a byte count, or a number with K, M, G or T
/// (powers of 1024, as df -h and dd use them): `--capacity 64M`.
struct ByteSize: ExpressibleByArgument, Equatable {
    var bytes: Int64

    init(bytes: Int64) { self.bytes = bytes }

    init?(argument: String) {
        guard let parsed = Self.parse(argument) else { return nil }
        bytes = parsed
    }

    static func parse(_ text: String) -> Int64? {
        var digits = Substring(text)
        var unit: Int64 = 1
        if let last = digits.last, let power = "KMGT".firstIndex(of: Character(last.uppercased())) {
            unit = Int64(1) << (10 * ("KMGT".distance(from: "KMGT".startIndex, to: power) + 1))
            digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let count = Int64(digits), count > 0 else { return nil }
        let (product, overflow) = count.multipliedReportingOverflow(by: unit)
        return overflow ? nil : product
    }

    var defaultValueDescription: String { String(bytes) }
}
