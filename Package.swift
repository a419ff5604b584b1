// swift-tools-version: 6.0
import PackageDescription

// The driver (libfuse, Linux system calls) builds on Linux only. An iOS
// team's package can depend on ContainerFiles (its app code) and
// AppSandboxTesting (its tests) on every platform: neither needs a FUSE
// target, and the package sets no minimum platform versions, so a
// dependent package keeps its own. See docs/ci.md.
let package = Package(
    name: "appsandboxfs",
    products: [
        .executable(name: "appsandboxfs", targets: ["appsandboxfs"]),
        // For app code shared between iOS and Linux: the folders, the
        // "do not back up" flag and protection classes as on a device.
        .library(name: "ContainerFiles", targets: ["ContainerFiles"]),
        .library(name: "SandboxPolicy", targets: ["SandboxPolicy"]),
        .library(name: "FuseKit", targets: ["FuseKit"]),
        // For tests of code that uses a container: mount one, always unmount.
        .library(name: "AppSandboxTesting", targets: ["AppSandboxTesting"]),
        // The Foundation bridge (docs/foundation.md, F1): `run` preloads the
        // first, which loads the second into a program that uses Foundation.
        .library(name: "appsandboxfs-preload", type: .dynamic, targets: ["FoundationBridgePreload"]),
        .library(name: "AppSandboxFoundationBridge", type: .dynamic, targets: ["FoundationBridge"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
    ],
    targets: [
        // libfuse3's low-level API, seen through a small shim header.
        .systemLibrary(name: "CFuse", path: "CFuse", pkgConfig: "fuse3",
                       providers: [.apt(["libfuse3-dev"])]),
        // A value behind a pthread mutex (seen by ThreadSanitizer); builds
        // everywhere (the fixture uses it on macOS too).
        .target(name: "Locking"),
        // Small POSIX helpers with one copy each: error text (strerror),
        // folder checks, reading a file to its end, errno names, starting a
        // thread (Linux). Glibc or Darwin only: every target can use it, on
        // every platform.
        .target(name: "POSIXHelpers"),
        // The Swift face of libfuse: knows nothing of iOS.
        .target(name: "FuseKit", dependencies: [
            "CFuse", "CLinux", "Locking", "POSIXHelpers",
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        // Zones, rules, decisions: no FUSE, no I/O.
        .target(name: "SandboxPolicy"),
        // Linux calls that Swift's Glibc module hides (_GNU_SOURCE ones).
        .target(name: "CLinux"),
        // The one process spawner (posix_spawn, waitpid on one pid). Its
        // values (ExitStatus, ProcessOutput) build everywhere, for the
        // fixture; the spawner itself is Linux code, under #if os(Linux).
        .target(name: "Spawning", dependencies: [
            "POSIXHelpers", .target(name: "CLinux", condition: .when(platforms: [.linux])),
        ]),
        // The one /proc/self/mountinfo reader and stale-mount check.
        .target(name: "MountInfo", dependencies: ["POSIXHelpers"]),
        // Descriptor-relative I/O under the backing root.
        .target(name: "BackingStore", dependencies: [
            "CLinux",
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        // The file system that joins the three above.
        .target(name: "AppSandboxFS", dependencies: [
            "FuseKit", "SandboxPolicy", "BackingStore", "CLinux", "Locking", "Spawning", "MountInfo", "POSIXHelpers",
            .product(name: "SystemPackage", package: "swift-system"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // What a backup holds (K1), purging (K2), backup archives (K3).
        .target(name: "ContainerBackup", dependencies: [
            "SandboxPolicy", "BackingStore", "CLinux", "ContainerFiles", "Spawning", "POSIXHelpers", "MountInfo",
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        // One driver run to its end: checks, daemonising, logging, the
        // mount, the status record and the control socket's server. The
        // command line and the in-process fixture both go through it.
        .target(name: "DriverRuntime", dependencies: [
            "AppSandboxFS", "FuseKit", "SandboxPolicy", "BackingStore", "Spawning", "MountInfo", "CLinux", "Locking", "POSIXHelpers",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        .executableTarget(name: "appsandboxfs", dependencies: [
            "DriverRuntime", "AppSandboxFS", "FuseKit", "SandboxPolicy", "BackingStore", "ContainerBackup", "Spawning", "MountInfo",
            "CLinux", "Locking", "ContainerFiles", "POSIXHelpers",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        // iOS storage calls Foundation on Linux lacks, and the environment
        // under which it finds the container's folders. Foundation and
        // SandboxPolicy (the folders' one definition; pure Swift) only: it
        // builds for iOS, macOS and Linux.
        .target(name: "ContainerFiles", dependencies: ["SandboxPolicy"]),
        // A program's own Foundation calls for the backup mark and the
        // protection class act on a container (F1): hooks (Swift) and the
        // slots they are installed in (C). Linux only.
        .target(name: "CFoundationBridge"),
        .target(name: "FoundationBridge", dependencies: ["CFoundationBridge", "ContainerFiles", "POSIXHelpers"]),
        // What `run` preloads: C code only, which loads FoundationBridge
        // into a program that uses Foundation. Linked without Swift's
        // startup code and with its runtime static (none of it is used), so
        // that a program that is not Swift does not load the Swift runtime
        // (docs/foundation.md, the cost). swiftc names -lstdc++ and -lm in
        // every link; `stand-ins` holds empty archives of those names,
        // searched before the compiler's folders, so the library needs the
        // C library alone (loading libstdc++ cost each program 0.5 ms).
        .target(name: "FoundationBridgePreload", exclude: ["stand-ins"], linkerSettings: [.unsafeFlags([
            "-nostartfiles", "-static-stdlib",
            "-Xclang-linker", "-L\(Context.packageDirectory)/Sources/FoundationBridgePreload/stand-ins",
        ], .when(platforms: [.linux]))]),
        // The test fixture: a container mounted by the real driver (which
        // it runs as a program, so it needs no FUSE target; it mounts on
        // Linux only, and builds everywhere).
        // MountInfo is Linux code (Glibc), and so is Spawning's spawner:
        // on other platforms the fixture builds without them (with
        // Spawning's values only) and `mount` says so.
        .target(name: "AppSandboxTesting", dependencies: [
            // SandboxPolicy (pure Swift, builds everywhere): the one
            // definition of protection classes and device states.
            "ContainerFiles", "Locking", "SandboxPolicy", "POSIXHelpers", "Spawning",
            .target(name: "FoundationBridge", condition: .when(platforms: [.linux])),
            .target(name: "MountInfo", condition: .when(platforms: [.linux])),
            // `Options.inProcess`: the driver's own file system, served by
            // threads of the test process (needs libfuse3, as the driver).
            .target(name: "AppSandboxFS", condition: .when(platforms: [.linux])),
            .target(name: "DriverRuntime", condition: .when(platforms: [.linux])),
            .target(name: "BackingStore", condition: .when(platforms: [.linux])),
            .product(name: "Logging", package: "swift-log", condition: .when(platforms: [.linux])),
        ]),
        // A small program that runs scripted system calls, so tests can make
        // them as another user (setpriv) and compare two directories.
        .executableTarget(name: "fsprobe", dependencies: ["POSIXHelpers"], path: "Tests/fsprobe"),
        // A program that stores data as a typical iOS app does (or breaks
        // one storage guideline when asked), for tests that run it inside
        // a container with `appsandboxfs run`.
        .executableTarget(name: "typicalapp", dependencies: ["ContainerFiles"], path: "Tests/typicalapp"),
        .testTarget(name: "SandboxPolicyTests", dependencies: ["SandboxPolicy"]),
        // The node tree and the descriptor cache's slots, without FUSE.
        .testTarget(name: "AppSandboxFSTests", dependencies: [
            "AppSandboxFS", "BackingStore", "SandboxPolicy", "FuseKit", "POSIXHelpers",
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        .testTarget(name: "ContainerBackupTests", dependencies: [
            "ContainerBackup", "BackingStore", "Spawning", "POSIXHelpers",
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        .testTarget(name: "IntegrationTests", dependencies: [
            "appsandboxfs", "fsprobe", "typicalapp", "AppSandboxTesting", "Spawning", "MountInfo", "DriverRuntime", "POSIXHelpers",
        ]),
        // ContainerFiles on its own, in a mounted container, and the Swift
        // code the docs show, compiled against the built modules.
        .testTarget(name: "ContainerFilesTests", dependencies: [
            "ContainerFiles", "ContainerBackup", "SandboxPolicy", "AppSandboxTesting", "appsandboxfs",
        ]),
        // The program the confinement example runs confined: it tries to
        // write outside its container.
        .executableTarget(name: "outside-writer", path: "Tests/OutsideWriter"),
        // bench/runner.py's fixture rows through AppSandboxTesting (a driver
        // program, or `inProcess`), timed inside one process.
        .executableTarget(name: "fixture-bench", dependencies: ["AppSandboxTesting"], path: "bench/FixtureBench"),
        // How to use AppSandboxTesting: an example in Swift Testing, one in XCTest.
        .testTarget(name: "AppSandboxTestingExamples", dependencies: ["AppSandboxTesting", "ContainerFiles", "Locking", "MountInfo", "Spawning", "POSIXHelpers", "appsandboxfs", "outside-writer"]),
    ],
    swiftLanguageModes: [.v6]
)
