import Testing
import Glibc
import Foundation

@testable import KioskPosix
import KioskCore
import KioskTesting

/// A sysfs-shaped tree: root/sys/class/backlight/NAME/{type,max_brightness,brightness,actual_brightness}.
struct FakeSysfs {
    let root: String

    init() {
        var template = Array("/tmp/k-wall-XXXXXX".utf8CString)
        let p = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        root = String(cString: p!)
    }

    func remove() { try? FileManager.default.removeItem(atPath: root) }

    func write(_ relative: String, _ text: String) {
        let path = root + "/" + relative
        try! FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try! text.write(toFile: path, atomically: false, encoding: .utf8)
    }

    func read(_ relative: String) -> String {
        (try? String(contentsOfFile: root + "/" + relative, encoding: .utf8)) ?? "<missing>"
    }

    @discardableResult
    func backlight(_ name: String, type: String, max: Int, brightness: Int = 0) -> String {
        let d = "sys/class/backlight/" + name
        write(d + "/type", type + "\n")
        write(d + "/max_brightness", "\(max)\n")
        write(d + "/brightness", "\(brightness)\n")
        write(d + "/actual_brightness", "\(brightness)\n")
        return root + "/" + d
    }
}

@Suite struct BacklightTests {
    @Test(arguments: [
        // (max_brightness, percent, allowOff, raw)
        (1, 100.0, false, 1), (1, 40.0, false, 1), (1, 1.0, false, 1), (1, 0.0, false, 1), (1, 0.0, true, 0),
        (7, 1.0, false, 1), (7, 40.0, false, 3), (7, 50.0, false, 4), (7, 100.0, false, 7), (7, 0.0, true, 0),
        (255, 1.0, false, 3), (255, 0.1, false, 1), (255, 40.0, false, 102), (255, 100.0, false, 255), (255, 0.0, false, 1),
        (120000, 0.0001, false, 1), (120000, 1.0, false, 1200), (120000, 40.0, false, 48000), (120000, 100.0, false, 120000),
        (255, 150.0, false, 255), (255, -5.0, false, 1), (255, -5.0, true, 0),
    ])
    func percentToRaw(_ max: Int, _ percent: Double, _ allowOff: Bool, _ raw: Int) {
        #expect(BacklightLevel.raw(percent: percent, max: max, allowOff: allowOff) == raw)
    }

    @Test func positivePercentNeverGivesZero() {
        for max in [1, 2, 7, 10, 255, 1023, 120000] {
            for tenth in 1...1000 {
                #expect(BacklightLevel.raw(percent: Double(tenth) / 10, max: max) >= 1)
            }
        }
        #expect(BacklightLevel.percent(raw: 102, max: 255) == 40)
        #expect(BacklightLevel.percent(raw: 3, max: 7) == 42.9)
    }

    @Test(arguments: [(1, "1\n"), (7, "3\n"), (255, "102\n"), (120000, "48000\n")])
    func fortyPercentWritesTheRightRawValue(_ max: Int, _ expected: String) throws {
        let fs = FakeSysfs()
        defer { fs.remove() }
        fs.backlight("panel", type: "raw", max: max, brightness: max)
        let device = try #require(try BacklightDevice.select(.auto, root: fs.root))
        #expect(device.maxBrightness == max)
        let b = Backlight(device: device, writer: SysfsBacklightWriter(device: device))
        try b.set(percent: 40)
        #expect(fs.read("sys/class/backlight/panel/brightness") == expected)
        #expect(b.lastWritten == Int(expected.dropLast()))
        #expect(b.summary == "panel (raw, max \(max)) via sysfs")
    }

    @Test func autoPrefersFirmwareThenPlatformThenRaw() throws {
        let fs = FakeSysfs()
        defer { fs.remove() }
        fs.backlight("a_raw", type: "raw", max: 255)
        fs.backlight("z_platform", type: "platform", max: 100)
        fs.backlight("m_firmware", type: "firmware", max: 15)
        #expect(try BacklightDevice.select(.auto, root: fs.root)?.name == "m_firmware")
        try FileManager.default.removeItem(atPath: fs.root + "/sys/class/backlight/m_firmware")
        #expect(try BacklightDevice.select(.auto, root: fs.root)?.name == "z_platform")
        try FileManager.default.removeItem(atPath: fs.root + "/sys/class/backlight/z_platform")
        #expect(try BacklightDevice.select(.auto, root: fs.root)?.name == "a_raw")
        #expect(try BacklightDevice.select(.none, root: fs.root) == nil)
        #expect(try BacklightDevice.select(.named("a_raw"), root: fs.root)?.type == .raw)
    }

    @Test func missingDevicesAreNamed() throws {
        let fs = FakeSysfs()
        defer { fs.remove() }
        #expect(throws: KioskError.notFound("no backlight device in \(fs.root)/sys/class/backlight (set [display] backlight = \"none\" on panels without one)")) {
            _ = try BacklightDevice.select(.auto, root: fs.root)
        }
        fs.backlight("intel_backlight", type: "raw", max: 255)
        fs.backlight("acpi_video0", type: "firmware", max: 15)
        #expect(throws: KioskError.notFound("backlight \"dsi\" not found in \(fs.root)/sys/class/backlight (available: acpi_video0, intel_backlight)")) {
            _ = try BacklightDevice.select(.named("dsi"), root: fs.root)
        }
        fs.write("sys/class/backlight/broken/max_brightness", "0\n")
        #expect {
            _ = try BacklightDevice.select(.named("broken"), root: fs.root)
        } throws: { e in
            (e as? KioskError)?.message == "\(fs.root)/sys/class/backlight/broken/max_brightness is 0: the device cannot be dimmed"
        }
    }

    @Test func sysfsRootComesFromTheEnvironmentValue() {
        #expect(SysfsRoot.current(environment: nil) == "")
        #expect(SysfsRoot.current(environment: "") == "")
        #expect(SysfsRoot.current(environment: "/") == "")
        #expect(SysfsRoot.current(environment: "/tmp/fake/") == "/tmp/fake")
    }

    @Test func readOnlyBrightnessFileNamesTheFileAndTheFix() throws {
        let fs = FakeSysfs()
        defer { fs.remove() }
        let dir = fs.backlight("panel", type: "raw", max: 255)
        let file = dir + "/brightness"
        if getuid() == 0 {
            // Root writes any regular file; a read-only sysfs attribute refuses even root (EACCES).
            try FileManager.default.removeItem(atPath: file)
            #expect(symlink("/sys/devices/system/cpu/online", file) == 0)
        } else {
            #expect(chmod(file, 0o444) == 0)
        }
        let device = try BacklightDevice(path: dir)
        let b = Backlight(device: device, writer: SysfsBacklightWriter(device: device))
        #expect {
            try b.set(percent: 40)
        } throws: { e in
            guard let k = e as? KioskError else { return false }
            return k.errno == EACCES
                && k.message.hasPrefix("open \(file) failed: Permission denied (errno 13): ")
                && k.message.contains("install the udev rule")
                && k.message.contains("group video")
                && k.message.contains("logind session")
        }
        #expect(b.lastWritten == nil)
    }

    @Test func readOnlyMountErrorSaysSo() {
        let e = SysfsBacklightWriter.error("open", path: "/sys/class/backlight/x/brightness", errno: EROFS)
        #expect(e.errno == EROFS)
        #expect(e.message.hasPrefix("open /sys/class/backlight/x/brightness failed: Read-only file system (errno 30): the file is on a read-only mount"))
        #expect(SysfsBacklightWriter.error("write", path: "/p", errno: EIO).message == "write /p failed: Input/output error (errno 5)")
    }

    @Test func actualBrightnessIsRead() throws {
        let fs = FakeSysfs()
        defer { fs.remove() }
        let dir = fs.backlight("panel", type: "raw", max: 255, brightness: 77)
        let device = try BacklightDevice(path: dir)
        #expect(try Backlight(device: device, writer: SysfsBacklightWriter(device: device)).actualRaw() == 77)
    }
}

/// Records every raw value written.
final class RecordingWriter: BacklightWriter {
    var method: String { "test" }
    var values: [Int] = []
    var failAfter: Int?
    func write(raw: Int) throws {
        if let f = failAfter, values.count >= f { throw KioskError(.system, "write failed") }
        values.append(raw)
    }
}

@Suite struct BacklightFadeTests {
    @Test func fadeValueIsMonotoneAndPassesThroughEveryValue() {
        for (from, to) in [(0, 255), (255, 10), (1, 7), (7, 1), (0, 120000)] {
            let f = BrightnessFade(from: from, to: to, durationNanos: 2_000_000_000)
            #expect(f.value(atElapsed: 0) == from)
            #expect(f.value(atElapsed: -5) == from)
            #expect(f.value(atElapsed: 2_000_000_000) == to)
            #expect(f.value(atElapsed: 9_000_000_000) == to)
            var t: Int64 = 0
            var seen = [f.value(atElapsed: 0)]
            while let next = f.nextChange(afterElapsed: t) {
                #expect(next > t)
                #expect(f.value(atElapsed: next - 1) == seen.last!, "changes exactly at \(next)")
                seen.append(f.value(atElapsed: next))
                t = next
            }
            #expect(seen.last == to)
            // Monotone, one raw step at a time: every value between passes.
            let step = to > from ? 1 : -1
            #expect(seen == Array(stride(from: from, through: to, by: step)), "\(from)→\(to)")
        }
        #expect(BrightnessFade(from: 10, to: 10, durationNanos: 1_000).nextChange(afterElapsed: 0) == nil)
        #expect(BrightnessFade(from: 3, to: 9, durationNanos: 0).value(atElapsed: 0) == 9)
    }

    @Test func faderWritesIntermediateValuesOnTheManualLoop() {
        let loop = ManualEventLoop()
        let w = RecordingWriter()
        let fader = BacklightFader(scheduler: loop, initial: 0, minimumStepNanos: 10_000_000) { try w.write(raw: $0) }
        fader.fade(to: 255, durationNanos: 1_000_000_000)
        #expect(fader.isFading)
        loop.advance(by: 500_000_000)
        let half = w.values.last ?? -1
        #expect((120...135).contains(half), "half-way: \(half)")
        loop.advance(by: 600_000_000)
        #expect(w.values.last == 255)
        #expect(!fader.isFading)
        #expect(w.values == w.values.sorted(), "monotone")
        #expect(Set(w.values).count == w.values.count, "each value written once")
        // Rate-limited to one write per 10 ms: at most ~100 writes over one second.
        #expect(w.values.count >= 50 && w.values.count <= 101, "\(w.values.count) writes")
        #expect(loop.pendingTimers == 0)
    }

    @Test func newFadeStartsFromWhereTheLastStopped() {
        let loop = ManualEventLoop()
        let w = RecordingWriter()
        let fader = BacklightFader(scheduler: loop, initial: 100) { try w.write(raw: $0) }
        fader.fade(to: 0, durationNanos: 1_000_000_000)
        loop.advance(by: 250_000_000)
        let mid = fader.current
        #expect((70...80).contains(mid))
        fader.fade(to: 100, durationNanos: 1_000_000_000)
        loop.advance(by: 2_000_000_000)
        #expect(fader.current == 100)
        let afterTurn = w.values.drop { $0 != mid }.dropFirst()
        #expect(afterTurn.first == mid + 1, "the second fade continues from \(mid)")
        #expect(loop.pendingTimers == 0)
    }

    @Test func writeErrorStopsTheFadeAndIsReported() {
        let loop = ManualEventLoop()
        let w = RecordingWriter()
        w.failAfter = 3
        var errors: [String] = []
        let fader = BacklightFader(scheduler: loop, initial: 0, apply: { try w.write(raw: $0) },
                                   onError: { errors.append("\($0)") })
        fader.fade(to: 50, durationNanos: 1_000_000_000)
        loop.advance(by: 2_000_000_000)
        #expect(w.values == [1, 2, 3])
        #expect(errors == ["write failed"])
        #expect(!fader.isFading)
        #expect(loop.pendingTimers == 0)
    }

    @Test func zeroDurationSetsAtOnce() {
        let loop = ManualEventLoop()
        let w = RecordingWriter()
        let fader = BacklightFader(scheduler: loop, initial: 10) { try w.write(raw: $0) }
        fader.fade(to: 200, durationNanos: 0)
        #expect(w.values == [200])
        #expect(loop.pendingTimers == 0)
    }
}
