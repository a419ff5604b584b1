import AppSandboxFS
import Glibc
import Logging

/// Where the driver's messages go, through swift-log: to standard error in
/// the foreground (and in the background with --log FILE, whose standard
/// error is that file), else to syslog (the journal on systemd machines),
/// so that a background or fstab mount loses nothing. The denial lines are
/// a stream of their own: the label `appsandboxfs.denials`, sent to syslog
/// under the name `appsandboxfs-denial` (journalctl -t appsandboxfs-denial),
/// and written bare (no level, no prefix) on standard error.
public enum DriverLogging {
    public static let label = "appsandboxfs"
    public static let denialLabel = "appsandboxfs.denials"

    /// Once per process, before the first Logger is made.
    public static func bootstrap(toSyslog: Bool, level: Logger.Level) {
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
