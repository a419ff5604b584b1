// A test fixture's container life through AppSandboxTesting, timed inside
// one process as a test suite lives it: `MountedContainer.mount` (lay out,
// mount), one write into tmp (open, write, close: what bench/runner.py does
// in bindfs's mount), `unmount()` (tmp emptied, driver gone, temporary
// folder removed). bench/runner.py's `fixture` workload runs it.
//
//   fixture-bench [--in-process] [--cycles N] [--warmup N] [--temporary-directory DIR]
//   fixture-bench --serve [--temporary-directory DIR]
//
// The first form prints one JSON object: the median seconds of `mount`,
// `write`, `unmount`, `life` (their sum) and `cpu` (this process's CPU time,
// user + system, all threads), and under `phases` the median of each phase
// of the mount and the teardown (`FixtureTrace`), over the cycles after the
// warm-up ones. The second reads one word a line, `in-process` or
// `driver`, lives one container that way and prints its numbers as one JSON
// line (not medians): bench/runner.py interleaves these lives with bindfs's.

@_spi(Bench) import AppSandboxTesting
import Foundation

var inProcess = false, serve = false, cycles = 20, warmup = 1, folder = "/tmp"
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--in-process": inProcess = true
    case "--serve": serve = true
    case "--cycles": cycles = Int(arguments.next() ?? "") ?? cycles
    case "--warmup": warmup = Int(arguments.next() ?? "") ?? warmup
    case "--temporary-directory": folder = arguments.next() ?? folder
    default:
        FileHandle.standardError.write(Data("fixture-bench: unknown argument \(argument)\n".utf8))
        exit(2)
    }
}

func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// CPU seconds of this process so far (every thread, user + system).
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// One container's life; its numbers in seconds, phases included.
func life(inProcess: Bool, folder: String) throws -> [String: Double] {
    let trace = FixtureTrace()
    var options = MountedContainer.Options(temporaryDirectory: folder, inProcess: inProcess)
    options.trace = trace
    let cpu = cpuSeconds()
    let start = now()
    let container = try MountedContainer.mount(options)
    let mounted = now()
    let file = open(container.tmp + "/scratch", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard file >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    let bytes = Array("fixture".utf8)
    let written = write(file, bytes, bytes.count)
    close(file)
    guard written == bytes.count else { throw POSIXError(.EIO) }
    let wrote = now()
    let marks = trace.take()
    try container.unmount()
    let end = now()
    var result = ["mount": mounted - start, "write": wrote - mounted, "unmount": end - wrote, "life": end - start,
                  "cpu": cpuSeconds() - cpu]
    // Each phase: from the mark before it (or the start) to its own.
    // Numbered in the order they happen ("phase: 01 ..."), as JSON keeps no order.
    let ends = marks.map { ($0.phase, $0.time) } + [("write", wrote)] + trace.take().map { ($0.phase, $0.time) }
    var last = start
    for (index, (phase, time)) in ends.enumerated() {
        result["phase: " + (index < 9 ? "0" : "") + "\(index + 1) " + phase] = time - last
        last = time
    }
    return result
}

func printJSON(_ object: Any) {
    let json = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    FileHandle.standardOutput.write(json + Data("\n".utf8))
}

do {
    if serve {
        while let line = readLine() {
            printJSON(try life(inProcess: line == "in-process", folder: folder))
        }
        exit(0)
    }
    var samples: [String: [Double]] = [:]
    for cycle in 0..<(warmup + cycles) {
        let numbers = try life(inProcess: inProcess, folder: folder)
        if cycle >= warmup {
            for (key, value) in numbers { samples[key, default: []].append(value) }
        }
    }
    var medians: [String: Any] = [:]
    var phases: [String: Double] = [:]
    for (key, values) in samples {
        let median = values.sorted()[values.count / 2]
        if key.hasPrefix("phase: ") { phases[String(key.dropFirst(7))] = median } else { medians[key] = median }
    }
    medians["phases"] = phases
    printJSON(medians)
} catch {
    FileHandle.standardError.write(Data("fixture-bench: \(error)\n".utf8))
    exit(1)
}
