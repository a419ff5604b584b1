extension String {
    /// Whether two names are the same file name: the same bytes. Swift's `==`
    /// also calls equal different Unicode spellings of one text ("é" as one
    /// code point or as "e" plus an accent), which the kernel keeps apart.
    func hasSameBytes(as other: String) -> Bool {
        utf8.count == other.utf8.count && utf8.elementsEqual(other.utf8)
    }
}
