import ContainerBackup
import Foundation
import SandboxPolicy

/// The report for people: a few aligned tables.
struct BackupReportTable {
    let report: BackupReport
    let top: Int

    var text: String {
        var lines: [String] = []
        lines.append("Backup report for \(report.container) (app \(report.appName))")
        lines.append("")
        lines.append("A backup holds \(report.backup.described).")
        lines.append("")

        lines.append("By zone")
        var rows = [["zone", "backed up", "entries", "bytes", "in backup", "bytes"]]
        for zone in report.zones {
            rows.append([zone.path == "." ? "(other root entries)" : zone.path,
                         zone.backupClass == "backedUp" ? "yes" : "no (\(zone.backupClass))",
                         "\(zone.total.entries)", ByteCount.text(zone.total.bytes),
                         "\(zone.backup.entries)", ByteCount.text(zone.backup.bytes)])
        }
        lines += table(rows, right: [2, 3, 4, 5])
        lines.append("")

        let largest = report.topEntries.sorted {
            ($0.total.bytes, $0.total.entries, $1.path) > ($1.total.bytes, $1.total.entries, $0.path)
        }.prefix(top)
        if !largest.isEmpty {
            lines.append("Largest top entries (\(largest.count) of \(report.topEntries.count))")
            rows = [["path", "kind", "entries", "bytes", "in backup"]]
            for entry in largest {
                rows.append([entry.path, entry.kind.rawValue, "\(entry.total.entries)",
                             ByteCount.text(entry.total.bytes), ByteCount.text(entry.backup.bytes)])
            }
            lines += table(rows, right: [2, 3, 4])
            lines.append("")
        }

        lines.append("Left out of a backup: \(report.excluded.all.described)")
        if !report.exclusions.isEmpty {
            rows = [["path", "why", "entries", "bytes"]]
            for exclusion in report.exclusions {
                rows.append([exclusion.path, why(exclusion), "\(exclusion.tally.entries)",
                             ByteCount.text(exclusion.tally.bytes)])
            }
            lines += table(rows, right: [2, 3])
        }
        lines.append("")

        lines += protectionLines()
        if report.findings.isEmpty {
            lines.append("No findings.")
        } else {
            lines.append("Findings (\(report.findings.count)):")
            for finding in report.findings {
                lines.append("  \(finding.kind.rawValue): \(finding.path): \(finding.message)")
            }
        }
        if !report.problems.isEmpty {
            lines.append("")
            lines.append("Could not read:")
            for problem in report.problems { lines.append("  \(problem.path): \(problem.error)") }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Data protection: entries per class, then each entry whose class is
    /// not the container's default (every entry's class is in --json).
    func protectionLines() -> [String] {
        let summary = report.protection
        var lines = ["Protection classes (container default \(summary.defaultClass))"]
        var rows = [["class", "entries"]]
        for protection in ProtectionClass.allCases {
            let count = summary.entries.filter { $0.protection == protection.rawValue }.count
            if count > 0 { rows.append([protection.rawValue, "\(count)"]) }
        }
        lines += table(rows, right: [1])
        let others = summary.entries.filter {
            $0.protection != summary.defaultClass && !$0.path.hasPrefix(report.appName + ".app")
        }
        if !others.isEmpty {
            lines.append("Not in the default class (\(others.count))")
            rows = [["path", "class", "set"]]
            for entry in others { rows.append([entry.path, entry.protection, entry.explicit ? "explicitly" : "from its folder"]) }
            lines += table(rows, right: [])
        }
        lines.append("")
        return lines
    }

    func why(_ exclusion: BackupReport.Exclusion) -> String {
        switch exclusion.reason {
        case .zone: "zone: never backed up"
        case .flag: "flag: " + exclusion.flags.map(\.name).joined(separator: ", ")
        case .folder: "below a flagged folder"
        case .socket: "a socket"
        }
    }

    /// Rows as aligned columns, indented by two; the first row is the header.
    func table(_ rows: [[String]], right: Set<Int>) -> [String] {
        var widths = [Int](repeating: 0, count: rows[0].count)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        return rows.map { row in
            let cells = row.enumerated().map { column, cell in
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                return right.contains(column) ? padding + cell : cell + padding
            }
            return "  " + cells.joined(separator: "  ").replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }
    }
}

extension Tally {
    /// "7 files, 6 folders, 1 symlink, 2.3 MiB", or "nothing".
    var described: String {
        var parts: [String] = []
        func add(_ count: Int, _ one: String, _ many: String) {
            if count > 0 { parts.append("\(count) \(count == 1 ? one : many)") }
        }
        add(files, "file", "files")
        add(folders, "folder", "folders")
        add(symlinks, "symlink", "symlinks")
        add(others, "other entry", "other entries")
        if parts.isEmpty { return "nothing" }
        return parts.joined(separator: ", ") + ", " + ByteCount.text(bytes)
    }
}
