// A test fixture's container life through AppSandboxTesting, timed inside
// one process as a test suite lives it: `MountedContainer.mount` (lay out,
// mount), one write into tmp, `unmount()` (tmp emptied, driver gone,
// temporary folder removed). bench/runner.py's `fixture` workload runs it.
//
//   fixture-bench [--in-process] [--cycles N] [--warmup N] [--temporary-directory DIR]
//
// Prints one JSON object: the median seconds of `mount`, `write`, `unmount`
// and `life` (their sum) over the cycles after the warm-up ones.

import AppSandboxTesting
import Foundation

var inProcess = false, cycles = 20, warmup = 1, folder = "/tmp"
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--in-process": inProcess = true
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

var samples: [String: [Double]] = ["mount": [], "write": [], "unmount": [], "life": []]
do {
    for cycle in 0..<(warmup + cycles) {
        let start = now()
        let container = try MountedContainer.mount(MountedContainer.Options(temporaryDirectory: folder, inProcess: inProcess))
        let mounted = now()
        try Data("fixture".utf8).write(to: URL(fileURLWithPath: container.tmp + "/scratch"))
        let written = now()
        try container.unmount()
        let end = now()
        if cycle >= warmup {
            samples["mount"]!.append(mounted - start)
            samples["write"]!.append(written - mounted)
            samples["unmount"]!.append(end - written)
            samples["life"]!.append(end - start)
        }
    }
} catch {
    FileHandle.standardError.write(Data("fixture-bench: \(error)\n".utf8))
    exit(1)
}
let medians = samples.mapValues { values in values.sorted()[values.count / 2] }
let json = try JSONSerialization.data(withJSONObject: medians, options: [.sortedKeys])
print(String(decoding: json, as: UTF8.self))
