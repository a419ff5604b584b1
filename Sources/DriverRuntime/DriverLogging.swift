import AppSandboxFS
import ArgumentParser
import Glibc
import Logging

/// `--log-level`: swift-log's levels by name.
enum LogLevelName: String, CaseIterable, ExpressibleByArgument {
    case trace, debug, info, notice, warning, error, critical

    var level: Logger.Level { Logger.Level(rawValue: rawValue) ?? .info }
}

/// Where the driver's messages go, through swift-log: to standard error in
/// the foreground (and in the background with --log FILE, whose standard
/// error is that file), else to syslog (the journal on systemd machines),
/// so that a background or fstab mount loses nothing. The denial lines are
/// a stream of their own: the label `appsandboxfs.denials`, sent to syslog
/// under the name `appsandboxfs-denial` (journalctl -t appsandboxfs-denial),
/// and written bare (no level, no prefix) on standard error.
enum DriverLogging {
    static let label = "appsandboxfs"
    static let denialLabel = "appsandboxfs.denials"

    /// Once per process, before the first Logger is made.
    static func bootstrap(toSyslog: Bool, level: Logger.Level) {
        LoggingSystem.bootstrap { label in
            let isDenials = label == denialLabel
            var handler: any LogHandler
            if toSyslog {
                handler = SyslogLogHandler(identifier: isDenials ? "appsandboxfs-denial" : "appsandboxfs",
                                           socketPath: SyslogLogHandler.socketPath)
            } else {
                handler = LineLogHandler(descriptor: STDERR_FILENO, bare: isDenials)
            }
            // Denials are always reported: --log-level is for the rest.
            handler.logLevel = isDenials ? .trace : level
            return handler
        }
    }
}
