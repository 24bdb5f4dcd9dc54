// swift-tools-version:6.0
// Seam: a local-first store broker for Linux. See ARCHITECTURE.md for the module map.
import PackageDescription

let package = Package(
    name: "Seam",
    products: [
        .library(name: "SeamSchema", targets: ["SeamSchema"]),
        .library(name: "SeamStore", targets: ["SeamStore"]),
        .library(name: "SeamQuery", targets: ["SeamQuery"]),
        .library(name: "SeamContext", targets: ["SeamContext"]),
        .library(name: "SeamTimers", targets: ["SeamTimers"]),
        .library(name: "SeamJSON", targets: ["SeamJSON"]),
        .library(name: "SeamProtocol", targets: ["SeamProtocol"]),
        .library(name: "SeamClient", targets: ["SeamClient"]),
        .executable(name: "seamd", targets: ["seamd"]),
        .executable(name: "seam", targets: ["seam"]),
        .executable(name: "seam-ticker", targets: ["seam-ticker"]),
        .executable(name: "seam-metrics", targets: ["seam-metrics"]),
    ],
    targets: [
        // MARK: - System libraries (Debian packages, found through pkg-config)
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CJSONC",
            pkgConfig: "json-c",
            providers: [.apt(["libjson-c-dev"])]
        ),
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .systemLibrary(
            name: "CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),

        // MARK: - The system edge: files, sockets, signals
        .target(name: "CSeamSystem"),
        .target(name: "SeamSystem", dependencies: ["CSeamSystem"]),

        // MARK: - Pure layers
        .target(name: "SeamSchema"),
        .target(name: "SeamQuery", dependencies: ["SeamSchema"]),

        // MARK: - Storage
        .target(name: "SeamStore", dependencies: ["SeamSchema", "SeamQuery", "SeamSystem", "SeamMetrics", "CSQLite"]),

        // MARK: - One context over every store
        .target(name: "SeamContext", dependencies: ["SeamSchema", "SeamStore", "SeamQuery", "SeamSystem"]),

        // MARK: - The broker, its protocol and its clients
        .target(name: "SeamJSON", dependencies: ["SeamSystem"]),
        .target(name: "SeamMetrics"),
        .target(name: "SeamJournal", dependencies: ["CSystemd"]),
        .target(name: "SeamProtocol", dependencies: ["SeamJSON", "SeamSchema", "SeamMetrics"]),
        .target(
            name: "SeamBroker",
            dependencies: ["SeamContext", "SeamProtocol", "SeamJSON", "SeamStore", "SeamQuery", "SeamSchema", "SeamSystem", "SeamMetrics", "SeamJournal"]
        ),
        .target(name: "SeamClient", dependencies: ["SeamProtocol", "SeamJSON", "SeamSystem"]),
        .executableTarget(
            name: "seam",
            dependencies: ["SeamClient", "SeamProtocol", "SeamJSON", "SeamCommandLine", "SeamTimers", "SeamSchema", "SeamSystem", "SeamWatch",
                           "SeamSyncSetup", "SeamStore", "SeamMetrics"]
        ),
        .executableTarget(name: "seamd", dependencies: ["SeamBroker", "SeamTimers", "SeamTimerService", "SeamStore", "SeamSystem", "SeamCommandLine"]),

        // MARK: - The timer application's models
        .target(name: "SeamTimers", dependencies: ["SeamSchema"]),
        .target(name: "SeamTicker", dependencies: ["SeamJSON", "SeamProtocol", "SeamSystem"]),
        .target(name: "SeamWatch", dependencies: ["SeamJSON", "SeamProtocol", "SeamSchema", "SeamTimers", "SeamCommandLine"]),
        .executableTarget(name: "seam-metrics", dependencies: ["SeamClient", "SeamMetrics", "SeamProtocol", "SeamCommandLine", "SeamSystem"],
                          path: "Plugins/seam-metrics"),
        .executableTarget(name: "seam-ticker", dependencies: ["SeamTicker", "SeamCommandLine", "SeamSystem"], path: "Plugins/seam-ticker"),
        .target(name: "SeamTimerService", dependencies: ["SeamBroker", "SeamContext", "SeamJSON", "SeamProtocol", "SeamSchema", "SeamTimers"]),

        // MARK: - Sync
        .target(name: "SeamPostgres", dependencies: ["CLibPQ"]),
        .target(name: "SeamSyncSetup", dependencies: ["SeamJSON", "SeamSchema", "SeamSystem"]),
        .target(name: "SeamSync", dependencies: ["SeamPostgres", "SeamSyncSetup", "SeamClient", "SeamJSON", "SeamProtocol", "SeamSchema", "SeamSystem", "CSodium"]),
        .executableTarget(name: "seam-sync", dependencies: ["SeamSync", "SeamSyncSetup", "SeamPostgres", "SeamClient", "SeamCommandLine", "SeamSystem"], path: "Plugins/seam-sync"),

        // MARK: - Command-line plumbing
        .target(name: "SeamCommandLine", dependencies: ["SeamSystem"]),

        // MARK: - Executables
        .executableTarget(name: "seam-fixture", dependencies: ["SeamStore", "SeamTimers", "SeamCommandLine"]),
        .executableTarget(
            name: "seam-migrate",
            dependencies: ["SeamStore", "SeamTimers", "SeamSystem", "SeamCommandLine", "SeamClient", "SeamJSON"],
            path: "Plugins/seam-migrate"
        ),
        .executableTarget(
            name: "seam-bench",
            dependencies: [
                "SeamSchema", "SeamStore", "SeamQuery", "SeamContext", "SeamTimers", "SeamClient", "SeamJSON", "SeamProtocol", "SeamSystem", "CSQLite", "CJSONC",
                "CLibPQ", "SeamPostgres", "SeamSync", "SeamTicker", "SeamCommandLine",
            ]
        ),

        // MARK: - Tests
        .target(
            name: "SeamTestSupport", dependencies: ["SeamClient", "SeamSystem", "SeamBroker", "SeamTimers", "SeamTimerService"],
            path: "Tests/SeamTestSupport"
        ),
        .executableTarget(
            name: "seam-save-crasher",
            dependencies: ["SeamContext", "SeamStore", "SeamSchema", "SeamTimers"],
            path: "Tests/SaveCrasher"
        ),
        .testTarget(name: "SeamSchemaTests", dependencies: ["SeamSchema", "SeamTestSupport"]),
        .testTarget(name: "SeamTimersTests", dependencies: ["SeamTimers", "SeamSchema", "SeamTestSupport"]),
        .testTarget(
            name: "SeamStoreTests",
            dependencies: ["SeamStore", "SeamSchema", "SeamTimers", "SeamSystem", "SeamTestSupport", "SeamClient", "SeamJSON", "SeamProtocol"]
        ),
        .testTarget(
            name: "SeamContextTests",
            dependencies: ["SeamContext", "SeamStore", "SeamSchema", "SeamTimers", "SeamTestSupport"]
        ),
        .testTarget(name: "SeamProtocolTests", dependencies: ["SeamProtocol", "SeamJSON", "SeamSchema"]),
        .testTarget(
            name: "SeamBrokerTests",
            dependencies: ["SeamBroker", "SeamSystem", "SeamClient", "SeamProtocol", "SeamJSON", "SeamSchema", "SeamStore", "SeamContext", "SeamTestSupport"]
        ),
        .testTarget(
            name: "SeamTimerServiceTests",
            dependencies: ["SeamTimerService", "SeamTicker", "SeamWatch", "SeamCommandLine", "SeamBroker", "SeamContext", "SeamSystem", "SeamClient", "SeamProtocol", "SeamJSON", "SeamSchema", "SeamTimers", "SeamTestSupport"]
        ),
        .testTarget(name: "SeamQueryTests", dependencies: ["SeamQuery", "SeamSchema", "SeamStore"]),
        .testTarget(name: "SeamJSONTests", dependencies: ["SeamJSON"]),
        .testTarget(name: "SeamMetricsTests", dependencies: ["SeamMetrics", "SeamProtocol", "SeamJSON"]),
        .testTarget(name: "SeamCommandLineTests", dependencies: ["SeamCommandLine", "SeamTestSupport"]),
        .testTarget(name: "SeamSystemTests", dependencies: ["SeamSystem", "SeamSchema", "SeamTestSupport"]),
        .testTarget(name: "SeamSyncTests", dependencies: ["SeamSync", "SeamSyncSetup", "SeamPostgres", "SeamClient", "SeamJSON", "SeamSchema", "SeamStore", "SeamTestSupport", "SeamTimers"]),
    ]
)
