// swift-tools-version:6.1
import PackageDescription
import Foundation

// Release links of the static binaries name FoundationEssentials' archive before the libraries
// the compiler asks for (swift-autolink-extract lists Foundation's first): the Swift standard
// library's generic specialisations that both archives define are then taken from
// FoundationEssentials, not from swift-corelibs-foundation, whose members would drag in the rest
// of Foundation, CoreFoundation, FoundationInternationalization and ICU (~14 MB) though nothing
// of ours calls them (BENCHMARKS.md, "Package size"). The archive of the swift on PATH, or of
// KIOSKD_SWIFT_STATIC_DIR (a cross build's SDK: scripts/arm64/flags.sh).
let essentialsFirst: [String] = {
    var dirs: [String] = []
    if let d = Context.environment["KIOSKD_SWIFT_STATIC_DIR"] {
        dirs = [d]
    } else {
        for bin in (Context.environment["PATH"] ?? "").split(separator: ":")
        where FileManager.default.isExecutableFile(atPath: "\(bin)/swift") {
            dirs = ["\(bin)/../lib/swift_static/linux"]
            break
        }
    }
    return dirs.map { "\($0)/libFoundationEssentials.a" }.filter { FileManager.default.fileExists(atPath: $0) }
}()

// kioskd's cut-down ICU data (KIOSKD_ICU_DATA: the archive scripts/icu-data.py prints), named
// before the same list: lld takes icudtNN_dat from it, not the toolchain's 34 MB, while ICU is
// linked; once nothing references ICU nothing is taken from it. A wrong path fails the link.
let icuData: [String] = [Context.environment["KIOSKD_ICU_DATA"]].compactMap { $0 }

let package = Package(
    name: "kioskd",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "kioskd", targets: ["kioskd"]),
        .executable(name: "kioskctl", targets: ["kioskctl"]),
        .executable(name: "kioskd-bench", targets: ["kioskd-bench"]),
        .executable(name: "kiosk-vmtool", targets: ["kiosk-vmtool"]),
        .executable(name: "kiosk-fuzz", targets: ["kiosk-fuzz"]),
        .library(name: "KioskCore", targets: ["KioskCore"]),
        .library(name: "KioskRender", targets: ["KioskRender"]),
        .library(name: "KioskScenes", targets: ["KioskScenes"]),
        .library(name: "KioskTesting", targets: ["KioskTesting"]),
        // kioskd-bench's slow disk (LD_PRELOAD): every fsync waits KIOSK_BENCH_FSYNC_MS first.
        .library(name: "KioskSlowSync", type: .dynamic, targets: ["CKioskSlowSync"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        // No traits: kioskd uses neither URL-encoded forms (FullFoundation: full Foundation's
        // DateFormatter in the release link) nor swift-configuration (ConfigurationSupport).
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        // C libraries, one system module each.
        .systemLibrary(name: "CCairo", pkgConfig: "pangocairo", providers: [.apt(["libcairo2-dev", "libpango1.0-dev"])]),
        .systemLibrary(name: "CDRM", pkgConfig: "libdrm", providers: [.apt(["libdrm-dev"])]),
        // Headers only: libudev and libinput (DRM displays, input) are opened when first needed
        // (CKioskLazy/lazy_libs.c), as are CSdBus's libsystemd and the libraries below; systemd's
        // notifications (READY=1, the watchdog) are CKioskLazy's own (notify.c), without libsystemd.
        .systemLibrary(name: "CUdev", providers: [.apt(["libudev-dev"])]),
        .systemLibrary(name: "CLibInput", providers: [.apt(["libinput-dev"])]),
        // zlib's crc32: the state journal's record checksums.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // Headers only: these libraries are opened when a configuration first needs them
        // (CKioskLazy/lazy_libs.c), not linked. OpenSSL's libcrypto: SHA-256 of the phone
        // page's session tokens; libmosquitto: [mqtt]; libqrencode: the pairing code's QR symbol.
        .systemLibrary(name: "CCrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CMosquitto", providers: [.apt(["libmosquitto-dev"])]),
        .systemLibrary(name: "CQRencode", providers: [.apt(["libqrencode-dev"])]),
        // ALSA's libasound: [audio]'s horn (opened when first needed, as the three above).
        .systemLibrary(name: "CALSA", providers: [.apt(["libasound2-dev"])]),
        // Small C helpers, one target for what each serves:
        // Linux headers Swift's Glibc lacks (epoll, timerfd, eventfd, signalfd, VT and KD ioctls).
        .target(name: "CKioskLinux"),
        // libdrm's fourcc and object-type macros as functions (the display code).
        .target(name: "CKioskDRMFormats"),
        // uinput ioctls for test devices (kiosk-vmtool).
        .target(name: "CKioskUInput"),
        // HDMI-CEC ioctls on /dev/cecN (<linux/cec.h>): the CEC link.
        .target(name: "CKioskCEC"),
        // Swift concurrency's global-enqueue hook, reached at link time (the daemon's executor).
        .target(name: "CKioskExecutorHook"),
        // 32-bit pixel fills with wmemset (drawing).
        .target(name: "CKioskPixels"),
        // kioskd's version (VERSION) in one C file: another version rebuilds only that file.
        .target(name: "CKioskVersion"),
        // What KioskCore imports to read it: a Swift module is compiled again whenever an object
        // of a C module it depends on changes, a C module's dependencies are only linked.
        .target(name: "CKioskVersionShim", dependencies: ["CKioskVersion"]),
        // Stubs for the libraries opened when first needed (dlopen).
        .target(name: "CKioskLazy", linkerSettings: [.linkedLibrary("dl")]),
        // fsync, fdatasync and syncfs slowed down for the benchmark (`kioskd-bench slow-work`).
        .target(name: "CKioskSlowSync", linkerSettings: [.linkedLibrary("dl")]),
        // Transitional umbrella over CKioskLinux, CKioskDRMFormats, CKioskPixels and CKioskLazy for
        // the display, scene and drawing files that still import it.
        // libinput's va_list log handler, formatted in C (KioskInput links libinput anyway).
        .target(name: "CKioskInputShims", dependencies: ["CLibInput"]),
        // adjtimex and inotify headers (C library, nothing to link).
        .systemLibrary(name: "CTimex"),
        // sd-bus (libsystemd): the logind session's SetBrightness.
        .systemLibrary(name: "CSdBus", providers: [.apt(["libsystemd-dev"])]),

        // Pure Swift core: values and protocols (the Scheduler a loop offers). No C library imports.
        .target(name: "KioskCore", dependencies: ["CKioskVersionShim"]),
        // The operating system: the epoll event loop, the syscall wrapper.
        .target(name: "KioskPosix", dependencies: ["KioskCore", "CKioskLinux", "CTimex"]),
        // The backlight through the logind session (sd-bus), behind KioskPosix's BacklightWriter.
        .target(name: "KioskLogind", dependencies: ["KioskCore", "KioskPosix", "CSdBus", "CKioskLazy"]),
        // Drawing on cairo + pango.
        .target(name: "KioskRender", dependencies: ["KioskCore", "CCairo", "CKioskPixels"]),
        // What users entered, kept: the state store and its journal, the command pipeline that
        // decides and commits every change (kioskd-commit), the state migration. No scene, no config.
        .target(name: "KioskState", dependencies: ["KioskCore", "KioskPosix", "CZlib", .product(name: "Logging", package: "swift-log")]),
        // Scenes and the scene manager: see only KioskCore values and KioskRender canvases.
        .target(name: "KioskScenes", dependencies: ["KioskCore", "KioskRender", "CQRencode", "CKioskLazy", .product(name: "Logging", package: "swift-log")]),
        // Hardware.
        // Sound through ALSA: the horn (its tone, WAV files, the audio thread), a capture for tests.
        .target(name: "KioskAudio", dependencies: ["KioskCore", "CALSA", "CKioskLazy", .product(name: "Logging", package: "swift-log")]),
        // libudev for DRM and input: enumeration, the hotplug monitor, reference ownership.
        .target(name: "KioskUdev", dependencies: ["KioskCore", "KioskPosix", "CUdev", "CKioskLazy"]),
        .target(name: "KioskDRM", dependencies: ["KioskCore", "KioskPosix", "KioskUdev", "CDRM", "CKioskDRMFormats", "CKioskLinux", "CKioskLazy", .product(name: "Logging", package: "swift-log")]),
        // HDMI-CEC: a TV's standby and wake-up follow the panel's blanking, its power status is asked.
        .target(name: "KioskCEC", dependencies: ["KioskCore", "KioskPosix", "CKioskCEC", "CKioskLinux", .product(name: "Logging", package: "swift-log")]),
        .target(name: "KioskInput", dependencies: ["KioskCore", "KioskPosix", "KioskUdev", "CLibInput", "CKioskInputShims", "CKioskLazy", .product(name: "Logging", package: "swift-log")]),
        // The control protocol: commands, routes, JSON answers and the client. No hardware, no
        // drawing, no server: kioskctl links only this.
        .target(name: "KioskControl", dependencies: [
            "KioskCore",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
        ]),
        // The HTTP stack of every kioskd listener (the control socket, the phone page): Hummingbird's
        // HTTP/1.1 channel behind the limits, timers and connection cap of `ControlLimits`.
        .target(name: "KioskHTTP", dependencies: [
            "KioskCore", "KioskControl",
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The phone page's HTTP server (Hummingbird on SwiftNIO): the control routes under /api/,
        // pairing cookies, live events. Knows the daemon only through `WebBackend`.
        .target(name: "KioskWeb", dependencies: [
            "KioskCore", "KioskControl", "KioskHTTP", "CCrypto", "CKioskLazy",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], resources: [
            // The page's files (HTML, CSS, JavaScript), compiled into the binary as byte arrays.
            .embedInCode("Assets"),
        ]),
        // MQTT client on libmosquitto, driven by the epoll EventLoop.
        .target(name: "KioskMQTT", dependencies: ["KioskCore", "KioskPosix", "CMosquitto", "CKioskLinux", "CKioskLazy", .product(name: "Logging", package: "swift-log")]),
        // The fleet: counters shared by a group of kiosks through a transport (the daemon's is MQTT).
        .target(name: "KioskFleet", dependencies: ["KioskComponent", "KioskCore", "KioskState", "KioskControl", .product(name: "Logging", package: "swift-log")]),
        // The config file: TOMLKit's tree with each key's file:line, checked into `DaemonConfig`
        // (the settings types of the modules it configures); themes. No daemon, no hardware opened.
        .target(name: "KioskConfig", dependencies: [
            "KioskCore", "KioskPosix", "KioskWeb", "KioskMQTT", "KioskCEC", "KioskDRM", "KioskScenes", "KioskFleet",
            "KioskAudio",
            .product(name: "TOMLKit", package: "TOMLKit"),
        ]),
        // What a feature of the running daemon sees of it (`ComponentContext`), the
        // `DaemonComponent` it is, the state remote observers see (`ChangeFeed`), the corner
        // warning's one writer. No daemon, no hardware.
        .target(name: "KioskComponent", dependencies: ["KioskCore", "KioskControl", "KioskState", .product(name: "Logging", package: "swift-log")]),
        // The control socket's server (Hummingbird, KioskHTTP's stack) and the deadline rule of
        // every command a listener hands to the render loop (`ControlJob`).
        .target(name: "KioskControlServer", dependencies: [
            "KioskConfig", "KioskControl", "KioskCore", "KioskHTTP", "KioskPosix",
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The panel: schedule, idle and manual blanking, the backlight and its brightness.
        .target(name: "KioskPanel", dependencies: ["KioskConfig", "KioskCore", "KioskPosix", "KioskLogind", .product(name: "Logging", package: "swift-log")]),
        // The phone page as a daemon component: pairing codes and paired devices, the live
        // streams, the web server's way to the render loop.
        .target(name: "KioskWebComponent", dependencies: [
            "KioskComponent", "KioskControlServer", "KioskConfig", "KioskControl", "KioskCore", "KioskPosix", "KioskState", "KioskWeb", "KioskScenes", "KioskHTTP",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The kiosk on an MQTT broker as a daemon component: states and Home Assistant discovery
        // published, commands carried out; the fleet's transport over the same client.
        .target(name: "KioskMQTTComponent", dependencies: [
            "KioskComponent", "KioskConfig", "KioskControl", "KioskCore", "KioskFleet", "KioskMQTT", "KioskPosix", "KioskScenes",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The daemon: control, persistence, services; the only place hardware meets scenes.
        .target(name: "KioskDaemon", dependencies: [
            "KioskConfig", "KioskComponent", "KioskControlServer", "KioskPanel", "KioskWebComponent", "KioskMQTTComponent",
            "KioskCore", "KioskPosix", "KioskControl", "KioskHTTP", "KioskRender", "KioskScenes", "KioskDRM", "KioskInput", "KioskLogind", "CKioskLazy", "KioskWeb",
            "CKioskLinux", "CKioskExecutorHook",
            "KioskMQTT", "KioskCEC", "KioskState", "KioskFleet",
            "KioskAudio",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            // The control socket is served by Hummingbird, as the phone page (KioskHTTP's stack).
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
        ]),
        // Fakes shipped as a product: scripted input, manual clock, pixel helpers.
        .target(name: "KioskTesting", dependencies: ["KioskCore", "KioskPosix", "KioskRender", "KioskScenes",
                                                    .product(name: "Logging", package: "swift-log"),
                                                    .product(name: "InMemoryLogging", package: "swift-log")]),
        // The daemon as tests make and start it: as kioskd does, the command pipeline started, on
        // the epoll loop or on virtual time (imports Testing, so only test targets depend on it).
        .target(name: "KioskDaemonTesting", dependencies: ["KioskCore", "KioskPosix", "KioskControl", "KioskDaemon", "KioskConfig", "KioskState", "KioskTesting",
                                                          .product(name: "Logging", package: "swift-log")]),
        // Test traits (imports Testing, so only test targets depend on it).
        .target(name: "KioskTestTraits"),
        // A KMS device in memory (FakeKMS) for DRMDisplay tests; its own target so that
        // KioskTesting users do not link libdrm and libudev.
        .target(name: "KioskDRMTesting", dependencies: ["KioskCore", "KioskPosix", "KioskDRM", .product(name: "Logging", package: "swift-log")]),

        .executableTarget(name: "kioskd", dependencies: [
            "KioskDaemon", "KioskConfig", "KioskPosix", "KioskState", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            // kioskd called kioskctl is kioskctl: the package's /usr/bin/kioskctl is a link to it.
            "KioskctlCommand",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: [
            // Release: the Swift runtime and Foundation linked in, not loaded as ~15 shared
            // libraries at every start (BENCHMARKS.md, "Start-up and memory"). The compile flag
            // makes this module autolink Foundation's static dependencies.
            .unsafeFlags(["-static-stdlib"], .when(configuration: .release)),
        ], linkerSettings: [
            .unsafeFlags(["-static-stdlib"], .when(configuration: .release)),
            // Release: linked by lld with packed relative relocations (DT_RELR: ~110 000 of them
            // in 21 KB instead of 2.6 MB of RELA entries read at every start), without exporting
            // our own ~29 000 Swift symbols to the dynamic symbol table (nothing looks them up),
            // and with the functions that run at start-up and while idle first in .text, in the
            // order scripts/symbol-order.sh recorded (the kernel maps 64 KB around each page
            // fault, so they no longer share pages with code that never runs). Together about
            // 11 MB less peak RSS (BENCHMARKS.md, "Start-up and memory").
            .unsafeFlags(essentialsFirst + icuData + ["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                          "-Xlinker", "--no-export-dynamic",
                          "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/scripts/kioskd-symbol-order.txt",
                          "-Xlinker", "--no-warn-symbol-ordering"], .when(configuration: .release)),
        ]),
        // kioskctl's commands: its own executable (below), and kioskd's when called by that name.
        .target(name: "KioskctlCommand", dependencies: [
            "KioskControl", "KioskPosix", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
        ]),
        .executableTarget(name: "kioskctl", dependencies: ["KioskctlCommand"], swiftSettings: [
            // Release: the Swift runtime linked in, as kioskd's, so the installed tool needs no toolchain.
            .unsafeFlags(["-static-stdlib"], .when(configuration: .release)),
        ], linkerSettings: [
            .unsafeFlags(["-static-stdlib"] + essentialsFirst, .when(configuration: .release)),
        ]),
        .executableTarget(name: "kioskd-bench", dependencies: [
            "KioskCore", "KioskPosix", "KioskRender", "KioskScenes", "KioskTesting", "KioskDaemon", "KioskConfig", "CCairo", "KioskWeb", "KioskControl", "KioskState", "KioskFleet",
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            "KioskMQTT", .product(name: "Logging", package: "swift-log"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], path: "Benchmarks/kioskd-bench"),
        // Runs inside the test VM: uinput devices, DRM probes.
        .executableTarget(name: "kiosk-vmtool", dependencies: ["CKioskLinux", "CKioskUInput", "KioskCore", "KioskPosix", "KioskDRM", "KioskInput", "KioskAudio", .product(name: "Logging", package: "swift-log")]),
        // Fuzz targets for the config, theme and control-request parsers (scripts/fuzz.sh, docs/fuzzing.md).
        .executableTarget(name: "kiosk-fuzz", dependencies: [
            "KioskDaemon", "KioskConfig", "KioskControl",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
        ], path: "Fuzz/kiosk-fuzz"),

        .testTarget(name: "KioskCoreTests", dependencies: ["KioskCore", "KioskTesting"]),
        .testTarget(name: "KioskPosixTests", dependencies: ["KioskTestTraits", "KioskPosix", "KioskTesting"]),
        // The tests' own D-Bus peer and libinput path contexts call the libraries directly (kioskd opens them lazily).
        .testTarget(name: "KioskLogindTests", dependencies: ["KioskTestTraits", "KioskLogind", "KioskPosix", "KioskTesting", "CSdBus"],
                    linkerSettings: [.linkedLibrary("systemd")]),
        .testTarget(name: "KioskRenderTests", dependencies: ["KioskRender", "KioskTesting"]),
        .testTarget(name: "KioskScenesTests", dependencies: ["KioskScenes", "KioskState", "KioskPosix", "KioskTesting"]),
        .testTarget(name: "KioskDRMTests", dependencies: ["KioskDRM", "KioskDRMTesting", "CKioskLinux", "KioskPosix", "KioskTesting", "KioskRender", "KioskScenes"]),
        .testTarget(name: "KioskCECTests", dependencies: ["KioskCEC"]),
        .testTarget(name: "KioskAudioTests", dependencies: ["KioskAudio", "KioskConfig", "KioskCore", "KioskTesting"]),
        .testTarget(name: "KioskInputTests", dependencies: ["KioskTestTraits", "KioskInput", "KioskPosix", "CKioskInputShims"],
                    linkerSettings: [.linkedLibrary("input")]),
        .testTarget(name: "KioskDaemonTests", dependencies: ["KioskDRMTesting", "KioskTestTraits", "KioskDaemon", "KioskDaemonTesting", "KioskConfig", "KioskControl", "KioskHTTP", "KioskPosix", "KioskTesting", "KioskMQTT", "CKioskLazy", "KioskCEC", "KioskState", "KioskFleet",
                                                       "KioskComponent", "KioskControlServer", "KioskPanel", "KioskWebComponent", "KioskMQTTComponent", "kioskd"]),
        .testTarget(name: "KioskWebTests", dependencies: ["KioskTestTraits", "KioskWeb", "KioskWebComponent", "KioskDaemon", "KioskDaemonTesting", "KioskConfig", "KioskControl", "KioskCore", "KioskPosix", "KioskTesting",
                                                    .product(name: "NIOEmbedded", package: "swift-nio")]),
        .testTarget(name: "KioskMQTTTests", dependencies: ["KioskTestTraits", "KioskMQTT", "KioskPosix", "KioskTesting", .product(name: "Logging", package: "swift-log")],
                    exclude: ["golden"]),
        .testTarget(name: "VMTests", dependencies: ["KioskCore", "KioskTesting"]),
        .testTarget(name: "KioskBenchTests", dependencies: ["kioskd-bench"], path: "Benchmarks/Tests/KioskBenchTests"),
    ],
    swiftLanguageModes: [.v6]
)
