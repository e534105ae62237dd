import Foundation
import KioskCore
import Testing
@testable import kioskd_bench

@Suite struct StatisticsTests {
    @Test func medianAndPercentilesInterpolate() {
        let s = Samples([4, 1, 3, 2])
        #expect(s.min == 1)
        #expect(s.max == 4)
        #expect(s.median == 2.5)
        let h = Samples((1...100).map(Double.init))
        #expect(abs(h.percentile(0.99) - 99.01) < 1e-9)
        #expect(h.percentile(0) == 1)
        #expect(h.percentile(1) == 100)
    }

    @Test func emptySamplesAreNotANumber() {
        #expect(Samples([]).median.isNaN)
    }

    @Test func formatting() {
        #expect(fmtMs(0.1234) == "0.123")
        #expect(fmtMs(12.345) == "12.3")
        #expect(fmtMs(1480.4) == "1480")
        #expect(fmt(1.5, 2) == "1.50")
        #expect(fmt(2, 1) == "2.0")
        #expect(fmtMs(.nan) == "–")
    }
}

@Suite struct SizeParsingTests {
    @Test func parsesAList() throws {
        #expect(try parseSizes("1920x1080,3840x2160") == [Size(width: 1920, height: 1080), Size(width: 3840, height: 2160)])
    }

    @Test(arguments: ["1920x", "x1080", "0x100", "100x99999", "big"])
    func rejectsBadSizesNamingThem(_ bad: String) {
        do {
            _ = try parseSizes("640x480,\(bad)")
            Issue.record("\(bad) was accepted")
        } catch {
            #expect("\(error)".contains("'\(bad)'"))
        }
    }
}

@Suite struct TargetTests {
    func results(fill: Double, tick: Double, peerTick: Double?) -> Results {
        let size = Size(width: 1920, height: 1080)
        let r = Results()
        let fl = Samples([fill, fill, fill])
        r.floors[size] = FloorResult(size: size, cairoFill: fl, memsetFill: fl, copy: fl)
        r.add(Row(section: "clock", name: "tick", size: size, kioskd: .samples(Samples([tick, tick, tick])),
                  peer: peerTick.map { .samples(Samples([$0])) }, key: "clock.tick"))
        return r
    }

    @Test func tickWithinOneAndAHalfFloorsIsMet() throws {
        let report = Report(results: results(fill: 0.2, tick: 0.25, peerTick: 1.2), main: Size(width: 1920, height: 1080), quick: true, runs: 3)
        let t = report.targets()
        let floor = try #require(t.first { $0.target.hasPrefix("clock tick ≤ 1.5×") })
        #expect(floor.met == true)
        #expect(floor.measured.contains("1.25×"))
        let peer = try #require(t.first { $0.target.contains("cheaper than pygame") })
        #expect(peer.met == true)
        #expect(peer.measured.contains("4.8×"))
    }

    @Test func missedTargetsSayByHowMuch() throws {
        let report = Report(results: results(fill: 0.2, tick: 0.5, peerTick: nil), main: Size(width: 1920, height: 1080), quick: true, runs: 3)
        let t = report.targets()
        let floor = try #require(t.first { $0.target.hasPrefix("clock tick ≤ 1.5×") })
        #expect(floor.met == false)
        #expect(floor.margin == "missed by 67 %")
        let peer = try #require(t.first { $0.target.contains("cheaper than pygame") })
        #expect(peer.met == nil)
    }

    @Test func sideBySideRowsAndTheBigScreenAreJudged() throws {
        let r = results(fill: 0.2, tick: 0.25, peerTick: 1.2)
        let size = Size(width: 1920, height: 1080), big = Size(width: 3840, height: 2160)
        r.add(Row(section: "paint", name: "touch", size: size, kioskd: .samples(Samples([0.02])), peer: .samples(Samples([0.005])),
                  key: "paint.touch_to_flip"))
        r.add(Row(section: "counter", name: "roll", size: size, kioskd: .samples(Samples([0.1])), peer: .samples(Samples([0.2])),
                  key: "counter.roll1"))
        let fl = Samples([1.0])
        r.floors[big] = FloorResult(size: big, cairoFill: fl, memsetFill: fl, copy: fl)
        r.add(Row(section: "clock", name: "tick", size: big, kioskd: .samples(Samples([2.5])), peer: .samples(Samples([4.0])), key: "clock.tick"))
        let t = Report(results: r, main: size, quick: true, runs: 3).targets()
        let rows = try #require(t.first { $0.target.hasPrefix("counter, paint and touch rows") })
        #expect(rows.met == false)
        #expect(rows.measured == "worst paint.touch_to_flip k/peer 4.00")
        let floor4k = try #require(t.first { $0.target == "clock tick ≤ 2× fill floor at 3840x2160" })
        #expect(floor4k.met == false)
        #expect(floor4k.margin == "missed by 25 %")
        let peer4k = try #require(t.first { $0.target == "clock tick ≥ 2× cheaper than pygame at 3840x2160" })
        #expect(peer4k.met == false)
    }

    @Test func tableShowsRatiosToTheFloorAndThePeer() {
        let report = Report(results: results(fill: 0.2, tick: 0.5, peerTick: 1.0), main: Size(width: 1920, height: 1080), quick: true, runs: 3)
        let line = report.table().split(separator: "\n").first { $0.hasPrefix("clock: tick") }.map(String.init) ?? ""
        #expect(line.contains("2.50×"))
        #expect(line.contains("0.50"))
    }

    @Test func updateDocReplacesOnlyTheMarkedBlock() throws {
        let path = NSTemporaryDirectory() + "bench-doc-\(getpid()).md"
        defer { unlink(path) }
        try "# Title\nbefore\n<!-- kioskd-bench:start -->\nold table\n<!-- kioskd-bench:end -->\nafter\n".write(toFile: path, atomically: true, encoding: .utf8)
        let report = Report(results: results(fill: 0.2, tick: 0.5, peerTick: nil), main: Size(width: 1920, height: 1080), quick: true, runs: 3)
        try report.updateDoc(path, command: "--quick")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.hasPrefix("# Title\nbefore\n<!-- kioskd-bench:start -->\n"))
        #expect(text.hasSuffix("<!-- kioskd-bench:end -->\nafter\n"))
        #expect(!text.contains("old table"))
        #expect(text.contains("clock: tick"))
    }

    @Test func updateDocWithoutMarkersFailsNamingTheFile() throws {
        let path = NSTemporaryDirectory() + "bench-nodoc-\(getpid()).md"
        defer { unlink(path) }
        try "# nothing here\n".write(toFile: path, atomically: true, encoding: .utf8)
        let report = Report(results: Results(), main: Size(width: 1920, height: 1080), quick: true, runs: 3)
        #expect { try report.updateDoc(path, command: "") } throws: { "\($0)".contains(path) }
    }
}

@Suite struct ProcessTests {
    @Test func markerAndSelfReportedPeakAreRead() throws {
        let r = try Spawn.run(["/bin/sh", "-c", "echo hello; echo first-frame; echo peak-rss-kib 1234; exit 3"])
        #expect(r.markerMs != nil)
        #expect(r.peakRSSKiB == 1234)
        #expect(r.status == 3)
        #expect(r.output.contains("hello"))
    }

    @Test func noMarkerMeansNoMarkerTime() throws {
        let r = try Spawn.run(["/bin/sh", "-c", "echo first-frames"])
        #expect(r.markerMs == nil)
        #expect(r.succeeded)
    }

    @Test func aMissingProgramIsAnErrorNamingIt() {
        #expect { try Spawn.run(["/nonexistent/kioskd-peer"]) } throws: { "\($0)".contains("/nonexistent/kioskd-peer") }
    }

    @Test func statusFieldReadsKiB() throws {
        let path = NSTemporaryDirectory() + "bench-status-\(getpid())"
        defer { unlink(path) }
        try "Name:\tx\nVmPeak:\t  9999 kB\nVmHWM:\t   4321 kB\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(statusField(path, "VmHWM:") == 4321)
        #expect(statusField(path, "VmSwap:") == nil)
        #expect((statusField("/proc/self/status", "VmHWM:") ?? 0) > 1000)
    }
}

@Suite struct MeasurementTests {
    @Test func floorTimesEveryRun() {
        let f = Floor.run(size: Size(width: 64, height: 48), runs: 7)
        #expect(f.cairoFill.count == 7 && f.memsetFill.count == 7 && f.copy.count == 7)
        #expect(f.copy.min > 0)
    }

    @Test func benchStrokesStayInsideThePaintArea() {
        for i in [0, 1, 57, 9_999, 20_049] {
            let pts = benchStroke(i)
            #expect(pts.count == 8)
            #expect(pts.allSatisfy { $0.x > 0.15 && $0.x < 0.85 && $0.y > 0.15 && $0.y < 0.85 })
        }
        #expect(benchStroke(3) != benchStroke(4))
    }

    @Test func clockTickRedrawsTheWholeFrameEverySecond() throws {
        let c = try SceneBenches.clockTick(size: Size(width: 320, height: 240), runs: 5)
        #expect(c.tick.count == 5)
        #expect(c.damageFraction > 0.99)
    }

    @Test func counterRollFramesAreDamageLimited() throws {
        let c = try SceneBenches.counter(size: Size(width: 320, height: 240), runs: 5)
        #expect(c.roll1.count == 5 && c.roll6.count == 5 && c.full.count == 5)
        #expect(c.rollDamageFraction > 0 && c.rollDamageFraction < 0.5)
    }

    @Test func touchToFlipPresentsOneFramePerTouch() throws {
        let rig = try Rig(kind: "paint", size: Size(width: 320, height: 240), manualClock: true)
        try rig.start()
        let s = try SceneBenches.touchToFlip(rig, runs: 5)
        #expect(s.count == 5)
        #expect(s.min > 0)
    }

    @Test func unknownSceneKindIsNamed() {
        #expect { try Rig(kind: "aquarium", size: Size(width: 64, height: 64), manualClock: true) } throws: { "\($0)".contains("aquarium") }
    }
}

@Suite struct ClockTruthTests {
    // Started at 10.000 s with 21:00 left.
    let truth = ClockTruth(sinceNs: 10_000_000_000, remainingMs: 1_260_000)

    @Test func facesAndTheirInstants() {
        #expect(ClockTruth.faceUpperNs("20:59") == 1_259_000_000_000)
        #expect(ClockTruth.faceUpperNs("9.5") == 9_500_000_000)
        #expect(ClockTruth.faceUpperNs("1:5") == nil && ClockTruth.faceUpperNs("x") == nil)
        // 1:00 is shown from the instant exactly 1:00 is left: 1200 s after T.
        #expect(truth.lag(face: "1:00", frameNs: 1_210_004_000_000) == 4_000_000)
    }

    @Test func aStatusReadIsComparedOverItsBracket() {
        // Asked 600 s after T, answered 2 ms later, 660 000 ms shown: the truth then was 659.998…660 s.
        let e = truth.statusError(remainingMs: 660_000, askedNs: 610_000_000_000, answeredNs: 610_002_000_000)
        #expect(e == .init(low: 0, high: 2_000_000))
    }

    static func line(_ f: Int64, _ face: String, _ left: Int64, running: Bool = true) -> String {
        "<7>game clock shown [frame_ns=\(f) game=\(face) game_ns=\(left) running=\(running) scene=board]"
    }

    @Test func aFaceBeforeTheTruthAMinuteWithoutAPromptFaceAndADriftingFrameAreProblems() {
        let r = 1_260_000_000_000 as Int64
        let log = [
            Self.line(10_000_500_000, "21:00", r - 500_000),
            Self.line(11_001_000_000, "20:59", r - 1_001_000_000),  // 1 ms after the truth
            Self.line(12_030_000_000, "20:58", r - 2_030_000_000),  // 30 ms
            Self.line(12_500_000_000, "20:58", 1, running: false),  // not running: left out
            Self.line(12_990_000_000, "20:57", r - 2_990_000_000),  // 10 ms early
        ].joined(separator: "\n")
        #expect(ClockTruth.shown(log).map(\.face) == ["21:00", "20:59", "20:58", "20:57"])
        let ok = truth.report(frameLog: log, statusErrors: [], ranSeconds: 3)
        #expect(ok.problems == ["the face 20:57 came 10.000 ms before the truth reached it"], "\(ok.problems)")
        // A minute later the promptest face is 30 ms late, and a frame computed 2 ms too little.
        let late = log + "\n" + [
            Self.line(72_030_000_000, "19:58", r - 62_030_000_000),
            Self.line(73_030_000_000, "19:57", r - 63_032_000_000),
        ].joined(separator: "\n")
        let bad = truth.report(frameLog: late, statusErrors: [.init(low: 20_000_000, high: 21_000_000)], ranSeconds: 64)
        #expect(bad.problems.contains("a frame's time left differs from the truth's by 2000000 ns"), "\(bad.problems)")
        #expect(bad.problems.contains("minute 2: no face came within one frame of the truth (the promptest 30.000 ms after it)"), "\(bad.problems)")
        #expect(bad.problems.contains { $0.hasPrefix("status was off by 20.000…21.000 ms") }, "\(bad.problems)")
    }
}
