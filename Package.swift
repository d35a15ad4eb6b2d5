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
        .systemLibrary(name: "CMicroHTTPD", path: "Sources/CMicroHTTPD", pkgConfig: "libmicrohttpd",
                       providers: [.apt(["libmicrohttpd-dev"])]),
        .target(
            name: "LLMSpoolCore",
            dependencies: ["CInotifyTools", "CCurl", "CMicroHTTPD", "CSystem"],
            path: "Sources/LLMSpoolCore"
        ),
        .executableTarget(
            name: "llmspool",
            dependencies: ["LLMSpoolCore"],
            path: "Sources/llmspool"
        ),
        .executableTarget(
            name: "llmspool-bench",
            dependencies: ["LLMSpoolCore", "CCurl"],
            path: "Sources/llmspool-bench"
        ),
        .testTarget(
            name: "LLMSpoolCoreTests",
            dependencies: ["LLMSpoolCore"],
            path: "Tests/LLMSpoolCoreTests"
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["LLMSpoolCore", "llmspool", "llmspool-bench"],
            path: "Tests/IntegrationTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
