// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "llmspool",
    products: [
        .executable(name: "llmspool", targets: ["llmspool"]),
        .executable(name: "llmspool-bench", targets: ["llmspool-bench"]),
        .library(name: "LLMSpoolCore", targets: ["LLMSpoolCore"]),
    ],
    targets: [
        // One system-library target per C library; each carries a small shim header.
        .systemLibrary(name: "CInotifyTools", path: "Sources/CInotifyTools"),
        .systemLibrary(name: "CSystem", path: "Sources/CSystem"),
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CYAML", path: "Sources/CYAML", pkgConfig: "yaml-0.1",
                       providers: [.apt(["libyaml-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", path: "Sources/CMicroHTTPD", pkgConfig: "libmicrohttpd",
                       providers: [.apt(["libmicrohttpd-dev"])]),
        // The decisions: scheduler, retry policy, judges, recovery, parsers, assemblers,
        // validators. No Glibc and no C module, so the compiler keeps it pure: it imports
        // FoundationEssentials at most (Foundation itself would bring Glibc along).
        .target(
            name: "LLMSpoolModel",
            path: "Sources/LLMSpoolModel"
        ),
        // The edges: the one syscall wrapper, descriptors, the epoll loop's primitives, threads.
        .target(
            name: "LLMSpoolSystem",
            dependencies: ["CSystem"],
            path: "Sources/LLMSpoolSystem"
        ),
        // The daemon: threads and wiring around the model, curl, inotify, the spool's files.
        .target(
            name: "LLMSpoolCore",
            dependencies: ["LLMSpoolModel", "LLMSpoolSystem", "CInotifyTools", "CCurl", "CMicroHTTPD", "CSystem", "CYAML"],
            path: "Sources/LLMSpoolCore"
        ),
        // The bundled local endpoint: only the tests, the benchmark and `llmspool stub` link it.
        .target(
            name: "LLMSpoolStub",
            dependencies: ["LLMSpoolCore", "CMicroHTTPD"],
            path: "Sources/LLMSpoolStub"
        ),
        .executableTarget(
            name: "llmspool",
            dependencies: ["LLMSpoolCore", "LLMSpoolStub"],
            path: "Sources/llmspool"
        ),
        .executableTarget(
            name: "llmspool-bench",
            dependencies: ["LLMSpoolCore", "LLMSpoolStub", "CCurl"],
            path: "Sources/llmspool-bench"
        ),
        .testTarget(
            name: "LLMSpoolModelTests",
            dependencies: ["LLMSpoolModel"],
            path: "Tests/LLMSpoolModelTests"
        ),
        .testTarget(
            name: "LLMSpoolCoreTests",
            dependencies: ["LLMSpoolCore", "LLMSpoolStub"],
            path: "Tests/LLMSpoolCoreTests"
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["LLMSpoolCore", "LLMSpoolStub", "llmspool", "llmspool-bench"],
            path: "Tests/IntegrationTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
