/// A command that could not do its job: printed as one line,
/// `Error: <path>: <problem>`, with exit status 1 (not the usage text that
/// argument errors get).
public struct Failure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
