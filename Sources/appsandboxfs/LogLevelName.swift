import ArgumentParser
import Logging

/// `--log-level`: swift-log's levels by name.
enum LogLevelName: String, CaseIterable, ExpressibleByArgument {
    case trace, debug, info, notice, warning, error, critical

    var level: Logger.Level { Logger.Level(rawValue: rawValue) ?? .info }
}
