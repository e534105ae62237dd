import Testing
@testable import kioskd

/// `DaemonArguments.quick` reads a daemon's usual command line without ArgumentParser: what it
/// accepts must be what ArgumentParser makes of the same arguments, and it must leave everything
/// else (help, version, other options, errors) to ArgumentParser.
@Suite struct DaemonArgumentsTests {
    @Test(arguments: [
        [],
        ["--config", "/etc/kioskd/kioskd.toml"],
        ["--config=/tmp/a b.toml", "--log-level", "debug"],
        ["--backend", "headless", "--config", "c.toml"],
        ["--log-level=warning", "--backend=drm"],
        ["--config", ""],
    ])
    func theQuickReadingIsArgumentParsers(_ argv: [String]) throws {
        let quick = try #require(DaemonArguments.quick(argv), "\(argv) not read")
        let parsed = try Kioskd.parse(argv)
        #expect(quick == parsed.arguments, "\(argv)")
    }

    @Test func theQuickReadingTakesTheValues() throws {
        let a = try #require(DaemonArguments.quick(["--config=/x.toml", "--backend", "headless", "--log-level", "trace"]))
        #expect(a.config == "/x.toml" && a.backend == "headless" && a.logLevel == "trace")
        #expect(a.snapshot == nil && a.stroke.isEmpty && !a.listOutputs && !a.checkConfig && a.snapshotAfter == 0)
    }

    @Test(arguments: [
        ["--help"], ["-h"], ["--version"], ["--check-config"], ["--list-outputs"],
        ["--snapshot", "out.png"], ["--config", "a.toml", "--snapshot=out.png"],
        ["--backend", "vga"], ["--log-level", "loud"], ["--log-level=LOUD"],
        ["--config"], ["--config", "--backend", "drm"], ["--config", "a", "--config", "b"],
        ["config.toml"], ["--", "--config", "a"], ["--conf", "a"], ["-c", "a"],
    ])
    func everythingElseIsLeftToArgumentParser(_ argv: [String]) {
        #expect(DaemonArguments.quick(argv) == nil, "\(argv)")
    }
}
