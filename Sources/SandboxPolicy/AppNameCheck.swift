extension ContainerLayout {
    /// The longest app name, in bytes: a file name holds 255 bytes (NAME_MAX)
    /// and the bundle's name adds ".app".
    public static let maximumAppNameBytes = 255 - ".app".utf8.count

    /// Why `name` cannot be an app name, or nil if it can (L1: "the app name
    /// is a plain name"). The name becomes one file name, `<name>.app`, at the
    /// container root, and appears in denial log lines; so it must be one
    /// visible path component that is neither hidden nor special.
    public static func problemWithAppName(_ name: String) -> String? {
        if name.isEmpty {
            return "the app name is empty"
        }
        if name.utf8.contains(0) {
            return "the app name contains a NUL byte"
        }
        if name.utf8.contains(UInt8(ascii: "/")) {
            return "the app name contains \"/\": it must be a single name, not a path"
        }
        if name == "." || name == ".." {
            return "the app name cannot be \"\(name)\""
        }
        if name.utf8.first == UInt8(ascii: ".") {
            return "the app name starts with \".\": the bundle would be a hidden file"
        }
        // Control characters (newline, tab, escape...) would break the one-line
        // denial log and the terminal that shows it.
        if name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            return "the app name contains a control character"
        }
        if name.utf8.count > maximumAppNameBytes {
            return "the app name is \(name.utf8.count) bytes long; at most \(maximumAppNameBytes) fit, since \"<name>.app\" must fit in 255"
        }
        // A common slip: passing the bundle's name. The bundle would then be
        // "X.app.app", which is legal but surely not what was meant.
        if name.hasSuffix(".app") {
            return "the app name ends with \".app\": give it without (the bundle is named <name>.app)"
        }
        return nil
    }
}
