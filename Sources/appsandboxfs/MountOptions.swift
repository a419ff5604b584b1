import ArgumentParser
import DriverRuntime
import FuseKit

/// The `-o` options of a mount, parsed in one place for both ways in:
/// `appsandboxfs mount -o app_name=MyApp,ro` and `mount -t fuse.appsandboxfs
/// -o app_name=MyApp,ro` (fstab), whose helper hands its -o to `mount -o`
/// unchanged. Each appsandboxfs name stands for the flag of the same
/// meaning (app_name=NAME is --app-name NAME); mount(8)'s own names are
/// dropped; every other one is a FUSE or kernel mount option (ro,
/// allow_other, noexec, noatime, max_read=N ...) for libfuse.
struct MountOptions: Equatable {
    /// Settings by name (`app_name` -> "MyApp", `keep_tmp` -> nil).
    var settings: [String: String?] = [:]
    /// What goes to libfuse, in the order given.
    var kernelOptions: [String] = []

    /// The names that take a value, and what each is on the command line.
    static let valued: [String: String] = [
        "app_name": "--app-name", "bundle": "--bundle", "denial_log": "--denial-log", "log": "--log",
        "log_level": "--log-level", "cache_timeout": "--cache-timeout", "threads": "--threads",
        "capacity": "--capacity", "device_state": "--device-state",
    ]
    /// The names without a value.
    static let switches: Set<String> = [
        "keep_tmp", "create", "recover", "debug", "writeback", "nowriteback", "no_writeback", "passthrough",
        "nopassthrough", "no_passthrough", "io_uring", "keep_cache", "nokeep_cache", "no_keep_cache",
    ]
    /// mount(8)'s own options and the defaults a FUSE mount has anyway.
    /// suid and dev are dropped on purpose: a container never honours
    /// set-user-ID bits or device files (the mount stays nosuid,nodev).
    static let mountOwn: Set<String> = [
        "defaults", "rw", "auto", "noauto", "user", "users", "nouser", "owner", "group", "_netdev", "nofail",
        "exec", "suid", "dev", "async",
    ]
    /// FUSE options the driver sets itself: the mount table's source (the
    /// backing folder) and type (fuse.appsandboxfs). Another value would
    /// make the table lie about what is mounted, so they are refused.
    static let driverOwn: Set<String> = ["fsname", "subtype"]

    /// Parses `-o` values (each may hold several, comma-separated). A bad
    /// value is a command-line error (exit 64; the mount helper's 1).
    /// Every name is judged as libfuse will read it (`split`): `su\id` is
    /// `suid`, `fs\name=...` is `fsname=...`.
    static func parse(_ values: [String]) throws -> MountOptions {
        var result = MountOptions()
        for option in try split(values) {
            let name = option.split(separator: "=", maxSplits: 1).first.map(String.init) ?? option
            let value = option.contains("=") ? String(option.drop { $0 != "=" }.dropFirst()) : nil
            if mountOwn.contains(option) || option.hasPrefix("x-") || option.hasPrefix("comment=") { continue }
            if driverOwn.contains(name) {
                throw ValidationError("-o \(name): set by appsandboxfs itself (the mount table's \(name == "fsname" ? "source" : "type")), not an option")
            }
            if valued[name] != nil {
                guard let value, !value.isEmpty else { throw ValidationError("-o \(name) needs a value (\(name)=...)") }
                try check(name, value)
                result.settings[name] = value
            } else if switches.contains(name) {
                guard value == nil else { throw ValidationError("-o \(name) takes no value") }
                result.settings[name] = .some(nil)
            } else {
                result.kernelOptions.append(option)
            }
        }
        return result
    }

    /// The values a flag would refuse, refused here too (so that the
    /// helper's --fake, which parses and mounts nothing, checks them).
    private static func check(_ name: String, _ value: String) throws {
        switch name {
        case "cache_timeout":
            guard let seconds = Double(value), seconds >= 0, seconds.isFinite else {
                throw ValidationError("-o cache_timeout=\(value): not a number of seconds")
            }
        case "threads":
            guard let count = Int(value), count > 0 else { throw ValidationError("-o threads=\(value): not a positive number") }
        case "capacity":
            guard ByteSize(argument: value) != nil else { throw ValidationError("-o capacity=\(value): not a size (bytes, or with K, M, G or T)") }
        case "device_state":
            _ = try ProtectionArguments.deviceState(value)
        case "log_level":
            guard LogLevelName(rawValue: value) != nil else {
                throw ValidationError("-o log_level=\(value): one of \(LogLevelName.allCases.map(\.rawValue).joined(separator: ", "))")
            }
        default: break
        }
    }

    /// The options in `-o` values as libfuse reads them (fuse_opt.c,
    /// process_real_option_group): a backslash takes the next character
    /// as it is (`\,` is a comma inside an option, `\\` a backslash), or
    /// with three octal digits from \000 to \377 the byte they spell; a
    /// comma not so taken ends an option; empty options are left out.
    /// A NUL byte (`\000`) would end the option's C string early, so that
    /// libfuse would see a name other than the one judged here: refused.
    static func split(_ values: [String]) throws -> [String] {
        var options: [String] = []
        for value in values {
            let bytes = Array(value.utf8)
            var option: [UInt8] = []
            var index = 0
            func isOctal(_ at: Int, upTo highest: UInt8) -> Bool {
                at < bytes.count && bytes[at] >= UInt8(ascii: "0") && bytes[at] <= highest
            }
            while index <= bytes.count {
                if index == bytes.count || bytes[index] == UInt8(ascii: ",") {
                    if option.contains(0) {
                        throw ValidationError("-o \(value): an option holds a NUL byte (\\000)")
                    }
                    guard let text = String(validating: option, as: UTF8.self) else {
                        throw ValidationError("-o \(value): an option is not UTF-8 once its escapes are read")
                    }
                    if !text.isEmpty { options.append(text) }
                    option = []
                } else if bytes[index] == UInt8(ascii: "\\") && index + 1 < bytes.count {
                    index += 1
                    if isOctal(index, upTo: UInt8(ascii: "3")) && isOctal(index + 1, upTo: UInt8(ascii: "7"))
                        && isOctal(index + 2, upTo: UInt8(ascii: "7")) {
                        option.append(bytes[index...index + 2].reduce(0) { $0 &* 8 &+ ($1 - UInt8(ascii: "0")) })
                        index += 2
                    } else {
                        option.append(bytes[index])
                    }
                } else {
                    option.append(bytes[index])
                }
                index += 1
            }
        }
        return options
    }

    func value(_ name: String) -> String? { settings[name] ?? nil }
    func has(_ name: String) -> Bool { settings[name] != nil }
}

extension MountCommand {
    /// Takes the appsandboxfs names of `-o` as the flags they stand for (a
    /// flag given as well wins for names with a value), and keeps the rest
    /// for libfuse.
    mutating func applyMountOptions() throws {
        let parsed = try MountOptions.parse(options)
        appName = appName ?? parsed.value("app_name")
        bundle = bundle ?? parsed.value("bundle")
        denialLog = denialLog ?? parsed.value("denial_log")
        log = log ?? parsed.value("log")
        if let level = parsed.value("log_level") { logLevel = logLevel ?? LogLevelName(rawValue: level) }
        if let seconds = parsed.value("cache_timeout").flatMap(Double.init) { cacheTimeout = seconds }
        if let count = parsed.value("threads").flatMap(Int.init) { threads = count }
        capacity = capacity ?? parsed.value("capacity").flatMap(ByteSize.init(argument:))
        if let state = parsed.value("device_state"), deviceState == "unlocked" { deviceState = state }
        if parsed.has("keep_tmp") { keepTmp = true }
        if parsed.has("create") { create = true }
        if parsed.has("recover") { recover = true }
        if parsed.has("debug") { debug = true }
        if parsed.has("writeback") { writeback = true }
        if parsed.has("nowriteback") || parsed.has("no_writeback") { writeback = false }
        if parsed.has("passthrough") { passthrough = true }
        if parsed.has("nopassthrough") || parsed.has("no_passthrough") { passthrough = false }
        if parsed.has("io_uring") { ioUring = true }
        if parsed.has("keep_cache") { keepCache = true }
        if parsed.has("nokeep_cache") || parsed.has("no_keep_cache") { keepCache = false }
        // Written back escaped: read again with `split`, they are these.
        options = parsed.kernelOptions.isEmpty ? [] : [parsed.kernelOptions.map(FuseSession.escapedOption).joined(separator: ",")]
    }

    /// The settings as the flags they stand for, then `-o` with what goes
    /// to libfuse: what `mount --fake` prints (mount -f -v shows it).
    var effectiveArguments: [String] {
        var words: [String] = []
        if let appName { words += ["--app-name", appName] }
        if let bundle { words += ["--bundle", bundle] }
        if let denialLog { words += ["--denial-log", denialLog] }
        if let log { words += ["--log", log] }
        if let logLevel { words += ["--log-level", logLevel.rawValue] }
        if cacheTimeout != 86400 { words += ["--cache-timeout", formatSeconds(cacheTimeout)] }
        if threads != 10 { words += ["--threads", String(threads)] }
        if let capacity { words += ["--capacity", String(capacity.bytes)] }
        if deviceState != "unlocked" { words += ["--device-state", deviceState] }
        if keepTmp { words.append("--keep-tmp") }
        if create { words.append("--create") }
        if recover { words.append("--recover") }
        if debug { words.append("--debug") }
        if writeback { words.append("--writeback") }
        if !passthrough { words.append("--no-passthrough") }
        if ioUring { words.append("--io-uring") }
        if !keepCache { words.append("--no-keep-cache") }
        if !options.isEmpty { words += ["-o", options.joined(separator: ",")] }
        return words
    }
}
