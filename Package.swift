// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "appsandboxfs",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "appsandboxfs", targets: ["appsandboxfs"]),
        .library(name: "SandboxPolicy", targets: ["SandboxPolicy"]),
        .library(name: "FuseKit", targets: ["FuseKit"]),
        // For tests of code that uses a container: mount one, always unmount.
        .library(name: "AppSandboxTesting", targets: ["AppSandboxTesting"]),
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
        // The Swift face of libfuse: knows nothing of iOS.
        .target(name: "FuseKit", dependencies: [
            "CFuse", "CLinux",
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        // Zones, rules, decisions: no FUSE, no I/O.
        .target(name: "SandboxPolicy"),
        // Linux calls that Swift's Glibc module hides (_GNU_SOURCE ones).
        .target(name: "CLinux"),
        // Descriptor-relative I/O under the backing root.
        .target(name: "BackingStore", dependencies: [
            "CLinux",
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        // The file system that joins the three above.
        .target(name: "AppSandboxFS", dependencies: [
            "FuseKit", "SandboxPolicy", "BackingStore", "CLinux",
            .product(name: "SystemPackage", package: "swift-system"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // What a backup holds (K1), purging (K2), backup archives (K3).
        .target(name: "ContainerBackup", dependencies: [
            "SandboxPolicy", "BackingStore", "CLinux",
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        .executableTarget(name: "appsandboxfs", dependencies: [
            "AppSandboxFS", "FuseKit", "SandboxPolicy", "BackingStore", "ContainerBackup", "CLinux",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        // The test fixture: a container mounted by the real driver.
        .target(name: "AppSandboxTesting"),
        // A small program that runs scripted system calls, so tests can make
        // them as another user (setpriv) and compare two directories.
        .executableTarget(name: "fsprobe", path: "Tests/fsprobe"),
        .testTarget(name: "SandboxPolicyTests", dependencies: ["SandboxPolicy"]),
        // The node tree and the descriptor cache's slots, without FUSE.
        .testTarget(name: "AppSandboxFSTests", dependencies: [
            "AppSandboxFS", "BackingStore", "SandboxPolicy", "FuseKit",
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        .testTarget(name: "ContainerBackupTests", dependencies: ["ContainerBackup", "BackingStore"]),
        .testTarget(name: "IntegrationTests", dependencies: [
            "appsandboxfs", "fsprobe",
        ]),
        // The program the confinement example runs confined: it tries to
        // write outside its container.
        .executableTarget(name: "outside-writer", path: "Tests/OutsideWriter"),
        // How to use AppSandboxTesting: an example in Swift Testing, one in XCTest.
        .testTarget(name: "AppSandboxTestingExamples", dependencies: ["AppSandboxTesting", "appsandboxfs", "outside-writer"]),
    ],
    swiftLanguageModes: [.v6]
)
