import Foundation
import Testing
import KioskTesting

/// The release kioskd as Package.swift links it: packed relative relocations (DT_RELR), none of
/// our Swift symbols in the dynamic symbol table, and the functions that run at start-up first
/// in .text (scripts/kioskd-symbol-order.txt). Runs only against a release build:
/// `Binaries.releaseKioskd` (`.build-bench/release/kioskd` or `$KIOSKD_RELEASE_BIN`, which
/// scripts/test.sh builds), or `KIOSKD_BIN_DIR` pointing at one. Debug builds, which the other
/// tests use, are linked as before.
@Suite(.enabled(if: ReleaseBinary.exists, "build the release kioskd (swift build -c release --scratch-path .build-bench --product kioskd) or set KIOSKD_RELEASE_BIN"))
struct ReleaseLinkTests {
    /// The property the suite is about is checked, not assumed: a release kioskd that links the
    /// Swift runtime dynamically fails here instead of skipping the suite.
    @Test func theReleaseKioskdLinksTheSwiftRuntimeStatically() throws {
        let d = try ReleaseBinary.run("/usr/bin/readelf", ["-d", ReleaseBinary.path])
        #expect(d.contains("(NEEDED)"), "readelf -d \(ReleaseBinary.path) lists no libraries")
        #expect(!d.contains("libswiftCore.so"), "\(ReleaseBinary.path) needs libswiftCore.so: not linked with -static-stdlib")
    }
}

enum ReleaseBinary {
    /// The release kioskd: the one CI builds, else the one the other process tests start.
    static var path: String { Binaries.releaseKioskd ?? Binaries.kioskd }

    /// A release kioskd is there to check: `$KIOSKD_RELEASE_BIN` or `.build-bench/release/kioskd`.
    static var exists: Bool {
        Binaries.releaseKioskd.map { FileManager.default.isExecutableFile(atPath: $0) } ?? false
    }

    /// What `tool` prints (`runTool`).
    static func run(_ tool: String, _ args: [String]) throws -> String {
        try runTool(tool, args).1
    }
}

extension ReleaseLinkTests {
    @Test func relativeRelocationsArePacked() throws {
        let dynamic = try ReleaseBinary.run("/usr/bin/readelf", ["-d", ReleaseBinary.path])
        #expect(dynamic.contains("(RELR)"), "\(ReleaseBinary.path) has no DT_RELR entry: linked without -z pack-relative-relocs")
        // What is left as RELA: the few relocations against symbols (a few hundred entries).
        let relasz = dynamic.split(separator: "\n").first { $0.contains("(RELASZ)") }
            .flatMap { $0.split(separator: " ").dropLast().last }.flatMap { Int($0) } ?? 0
        #expect(relasz < 200_000, "RELASZ is \(relasz) bytes in \(ReleaseBinary.path)")
    }

    @Test func ourSwiftSymbolsAreNotExported() throws {
        let exported = try ReleaseBinary.run("/usr/bin/nm", ["-D", "--defined-only", ReleaseBinary.path])
            .split(separator: "\n").filter { $0.split(separator: " ").last?.hasPrefix("$s") ?? false }
        #expect(exported.count < 10, "\(exported.count) Swift symbols in the dynamic symbol table of \(ReleaseBinary.path), e.g. \(exported.prefix(3))")
    }

    @Test func startUpFunctionsComeFirstInText() throws {
        let here = URL(fileURLWithPath: #filePath)
        let orderFile = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/kioskd-symbol-order.txt").path
        let order = try String(contentsOfFile: orderFile, encoding: .utf8).split(separator: "\n").map(String.init)
        var address: [String: UInt64] = [:]
        for line in try ReleaseBinary.run("/usr/bin/nm", [ReleaseBinary.path]).split(separator: "\n") {
            let f = line.split(separator: " ")
            if f.count == 3, f[1] == "t" || f[1] == "T", let a = UInt64(f[0], radix: 16) { address[String(f[2])] = a }
        }
        let text = try ReleaseBinary.run("/usr/bin/readelf", ["-S", "-W", ReleaseBinary.path]).split(separator: "\n")
            .first { $0.contains(" .text ") }.map { $0.split(separator: " ").map(String.init) }
        let fields = try #require(text, "no .text section in \(ReleaseBinary.path)")
        let i = try #require(fields.firstIndex(of: ".text"))
        let start = try #require(UInt64(fields[i + 2], radix: 16)), size = try #require(UInt64(fields[i + 4], radix: 16))
        // The first 200 listed functions (that this build has) lie in the first quarter of .text;
        // in a build linked without the list they are spread over all of it.
        let listed = order.compactMap { address[$0] }.prefix(200)
        let early = listed.filter { $0 < start + size / 4 }
        #expect(listed.count == 200, "only \(listed.count) of the listed functions are in \(ReleaseBinary.path)")
        #expect(early.count == listed.count, "\(listed.count - early.count) of the first \(listed.count) listed functions lie beyond the first quarter of .text in \(ReleaseBinary.path)")
    }
}
