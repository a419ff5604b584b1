import BackingStore
import FuseKit
import Glibc
import SandboxPolicy
import SystemPackage

// The one path of every checked request: the checks its `CheckedRequest`
// lists (SandboxPolicy/RequestChecks.swift), in that order, then the
// backing call. A handler says what the request acts on (a `Subject`),
// gives the call, and answers the result:
//
//     send(checked(.mkdir, request, .name(name, in: parent, .makeDirectory(in: zone(of: parent)))) { (cleared) throws(Errno) in
//         try Backing.mkdir(in: cleared.folder, name, mode: mode)
//         ...
//     }, reply)
extension SandboxFileSystem {
    /// Where a change happens, for its denial line: a node, or a name in a folder.
    enum Place {
        case node(Node)
        case child(Node, UnsafePointer<CChar>)
    }

    /// What a request acts on: the inputs of its checks, and the nodes whose
    /// descriptors its call needs. Each check reads only its own fields.
    struct Subject {
        /// The zone question (`Check.zone`).
        var operation: FileOperation?
        /// Where the change happens, for a denial line.
        var place: Place
        /// The entry acted on: its class (`of: .entry`), and its descriptor
        /// held for the call (`Cleared.file`).
        var entry: Node?
        /// The folder a name is made in or goes from: its class (`of:
        /// .folder`), a link's target is resolved from it (E1), and its
        /// descriptor held for the call (`Cleared.folder`).
        var folder: Node?
        /// A rename's destination folder (`Cleared.destination`).
        var destination: Node?
        /// The name that goes (unlink, rmdir) or that a rename may replace.
        var name: UnsafePointer<CChar>?
        /// A new symbolic link's target (E1).
        var linkTarget: UnsafePointer<CChar>?
        /// An attribute's name, and whether the entry is a symbolic link.
        var attribute: (name: UnsafePointer<CChar>, onSymlink: Bool)?
        /// The open handle the request comes through, with its node.
        var handle: (fd: FileDescriptor, node: NodeID)?
        /// copy_file_range's source handle, with its node.
        var source: (fd: FileDescriptor, node: NodeID)?
        /// Whether the request writes (the operation of a `DataProtection:` line).
        var writing = false
        /// For a READ or WRITE: the caller's own call, or the page cache's.
        var path = DataPath.caller
        /// A write's or fallocate's range, and fallocate's mode.
        var offset: off_t = 0
        var length: off_t = 0
        var mode: Int32 = 0
        var renameFlags = RenameFlags()

        /// A name in a folder: made, removed, or moved.
        static func name(_ name: UnsafePointer<CChar>, in folder: Node, _ operation: FileOperation) -> Subject {
            Subject(operation: operation, place: .child(folder, name), folder: folder, name: name)
        }

        /// An entry, changed through its own descriptor.
        static func entry(_ node: Node, _ operation: FileOperation?, writing: Bool = false) -> Subject {
            Subject(operation: operation, place: .node(node), entry: node, writing: writing)
        }

        /// An attribute of `node`, set or removed. `holdingEntry`: whether
        /// the call needs the node's descriptor (a backing attribute; the
        /// class is none).
        static func attribute(_ name: UnsafePointer<CChar>, of node: Node, _ operation: FileOperation,
                              holdingEntry: Bool) -> Subject {
            Subject(operation: operation, place: .node(node), entry: holdingEntry ? node : nil,
                    attribute: (name, node.isSymlink))
        }

        /// An open handle of `node`, for I/O through it.
        static func handle(_ fd: FileDescriptor, of node: Node, _ operation: FileOperation?, writing: Bool,
                           path: DataPath = .caller) -> Subject {
            Subject(operation: operation, place: .node(node), handle: (fd, node.id), writing: writing, path: path)
        }
    }

    /// What passing the checks gives the call: the class data protection
    /// judged, the subject's descriptors (held until the call returns), and
    /// for a write the length that fits (Q2).
    struct Cleared {
        /// The class of the new file (`of: .folder`) or of the entry (`of:
        /// .entry`); `.none` where no class was judged.
        let protection: ProtectionClass
        fileprivate let entryFD: FileDescriptor?
        fileprivate let folderFD: FileDescriptor?
        fileprivate let destinationFD: FileDescriptor?
        /// The subject's length, or the prefix of a write that fits.
        fileprivate(set) var length: Int

        var file: FileDescriptor { entryFD! }
        var folder: FileDescriptor { folderFD! }
        var destination: FileDescriptor { destinationFD! }
        /// What a change may alter the allocation of (Q2): the folder, then the entry.
        fileprivate var tracked: [FileDescriptor] { [folderFD, entryFD].compactMap { $0 } }
    }

    /// The one path of a checked request: its checks in their order (the
    /// first refusal answers, logged, and nothing is touched), then its
    /// call, with the subject's descriptors held and the capacity reserved
    /// around it. The call's own errors come back as they are.
    @inline(__always)
    func checked<T>(_ kind: CheckedRequest, _ request: Request, _ subject: Subject,
                    _ call: (Cleared) throws(Errno) -> T) -> Result<T, Errno> {
        var protection = ProtectionClass.none
        if let refused = passChecks(kind, request, subject, protection: &protection) { return .failure(refused) }
        return Result { () throws(Errno) in
            try withDescriptors(of: subject, protection: protection) { (cleared) throws(Errno) in
                try reserve(kind.reservation, for: subject, cleared, call)
            }
        }
    }

    /// Runs `kind`'s checks before its call (all but the capacity, which
    /// surrounds the call): the errno of the first refusal, or nil. For a
    /// request with no call of its own to surround (read, fsync).
    @inline(__always)
    func passChecks(_ kind: CheckedRequest, _ request: Request, _ subject: Subject) -> Errno? {
        var protection = ProtectionClass.none
        return passChecks(kind, request, subject, protection: &protection)
    }

    @inline(__always)
    private func passChecks(_ kind: CheckedRequest, _ request: Request, _ subject: Subject,
                            protection: inout ProtectionClass) -> Errno? {
        for check in kind.checks {
            switch check {
            case .zone:
                if let refused = refusal(SandboxPolicy.decide(subject.operation!), request, at: subject.place) { return refused }
            case .escape:
                let verdict = escapeVerdict(target: nameBytes(subject.linkTarget!), inFolder: subject.folder!,
                                            denial: EscapeCheck.escapingSymlinkDenial)
                if let refused = refusal(verdict, request, at: subject.place) { return refused }
            case .attributeName:
                let (name, onSymlink) = subject.attribute!
                if let refused = attributeNameRefusal(name, onSymlink: onSymlink, request,
                                                      removing: kind == .removexattr || kind == .removeProtectionClass) {
                    return refused
                }
            case .protection(let operation, let whose):
                switch whose {
                case .folder, .entry:
                    protection = protectionClass(of: whose == .folder ? subject.folder! : subject.entry!)
                    if let refused = protectionDenial(operation, protection, request, at: subject.place, writing: subject.writing) {
                        return refused
                    }
                case .handle:
                    let (fd, node) = subject.handle!
                    if let refused = handleDenial(request, handle: fd, node: node, writing: subject.writing, path: subject.path) {
                        return refused
                    }
                case .sourceHandle:
                    let (fd, node) = subject.source!
                    if let refused = handleDenial(request, handle: fd, node: node, writing: false) { return refused }
                }
            case .clearSetIDBits:
                // The bits go before the data, as the kernel removes them
                // (file_remove_privs) before it writes; a failure fails the write.
                if mustClearSetIDBits(request) {
                    do throws(Errno) { try Self.dropSetIDBits(subject.handle!.fd) } catch { return error }
                }
            case .capacity:
                break
            }
        }
        return nil
    }

    /// A verdict's refusal: logs the `Sandbox:` line (the path is derived
    /// from the tree only then) and gives the rule's errno; nil for `.allow`.
    @inline(__always)
    func refusal(_ verdict: Verdict, _ request: Request, at place: Place) -> Errno? {
        guard case .deny(let denial, let operation) = verdict else { return nil }
        denials.record(pid: request.caller.pid, operation: operation, path: mountPath(place))
        return Errno(rawValue: denial.errno)
    }

    /// Holds the descriptors of the subject's entry, folder and destination
    /// (in that order) while `body` runs: one borrow each, no nesting.
    @inline(__always)
    private func withDescriptors<T>(of subject: Subject, protection: ProtectionClass,
                                    _ body: (Cleared) throws(Errno) -> T) throws(Errno) -> T {
        let entry = try subject.entry?.borrow()
        defer { if let entry { subject.entry!.giveBack(entry) } }
        let folder = try subject.folder?.borrow()
        defer { if let folder { subject.folder!.giveBack(folder) } }
        let destination = try subject.destination?.borrow()
        defer { if let destination { subject.destination!.giveBack(destination) } }
        return try body(Cleared(protection: protection, entryFD: entry?.fd, folderFD: folder?.fd,
                                destinationFD: destination?.fd, length: Int(truncatingIfNeeded: subject.length)))
    }

    /// The call, inside the capacity's reservation (Q2), if the mount has a
    /// capacity and the request reserves any.
    @inline(__always)
    private func reserve<T>(_ reservation: Reservation?, for subject: Subject, _ cleared: Cleared,
                            _ call: (Cleared) throws(Errno) -> T) throws(Errno) -> T {
        guard let reservation, capacity != nil else { return try call(cleared) }
        switch reservation {
        case .newEntry:
            return try charged(reserving: newEntrySpace, cleared.tracked) { () throws(Errno) in try call(cleared) }
        case .removal:
            return try charged(removing: subject.name, in: cleared.folder) { () throws(Errno) in try call(cleared) }
        case .rename:
            return try chargedRename(from: cleared.folder, to: cleared.destination, newName: subject.name!,
                                     sameFolder: subject.destination === subject.folder,
                                     flags: subject.renameFlags) { () throws(Errno) in try call(cleared) }
        case .write:
            return try chargedWrite(subject.handle!.fd, at: subject.offset, length: cleared.length,
                                    path: subject.path) { (allowed) throws(Errno) in
                var fitting = cleared
                fitting.length = allowed
                return try call(fitting)
            }
        case .allocate:
            return try chargedAllocate(subject.handle!.fd, mode: subject.mode, offset: subject.offset,
                                       length: subject.length) { () throws(Errno) in try call(cleared) }
        case .measure:
            return try charged(cleared.tracked) { () throws(Errno) in try call(cleared) }
        }
    }
}
