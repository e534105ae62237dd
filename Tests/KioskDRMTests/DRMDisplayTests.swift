import Foundation
import Testing
import KioskCore
import Logging
import KioskPosix
@testable import KioskDRM

/// DRMDisplay behaviour that needs no GPU: option checks and device errors. Frames, flips,
/// hotplug and blanking on real drivers are covered by the kernel tests (Tests/VMTests).
@Suite struct DRMDisplayTests {
    let logger = Logger(label: "test.drm")

    private func message(_ body: () throws -> Void) -> String? {
        do { try body(); return nil } catch { return (error as? KioskError)?.message ?? "\(error)" }
    }

    @Test func missingDeviceIsNamed() throws {
        let loop = try EventLoop()
        let m = message { _ = try DRMDisplay(options: DRMOptions(device: "/nonexistent/card7"), loop: loop, logger: logger) }
        #expect(m?.contains("/nonexistent/card7") == true && m?.contains("no such DRM device") == true, "\(m ?? "no error")")
    }

    @Test func nonDRMFileIsRefused() throws {
        let loop = try EventLoop()
        let m = message { _ = try DRMDisplay(options: DRMOptions(device: "/dev/null"), loop: loop, logger: logger) }
        #expect(m?.contains("/dev/null is not a DRM device") == true, "\(m ?? "no error")")
    }

    @Test(arguments: [0, 1, 4])
    func bufferCountMustBeTwoOrThree(_ n: Int) throws {
        let loop = try EventLoop()
        let m = message { _ = try DRMDisplay(options: DRMOptions(device: "/dev/null", buffers: n), loop: loop, logger: logger) }
        #expect(m == "display buffers = \(n): must be 2 or 3")
    }

    @Test func badModeIsAConfigError() throws {
        let loop = try EventLoop()
        let m = message { _ = try DRMDisplay(options: DRMOptions(device: "/dev/null", mode: "1920by1080"), loop: loop, logger: logger) }
        #expect(m?.contains("mode \"1920by1080\"") == true, "\(m ?? "no error")")
    }

    /// Without any GPU the display starts inactive and waits for one (hotplug), never throwing.
    @Test(.enabled(if: !FileManager.default.fileExists(atPath: "/dev/dri/card0")))
    func noDeviceStaysInactive() throws {
        let loop = try EventLoop()
        let d = try DRMDisplay(options: DRMOptions(), loop: loop, logger: logger)
        defer { d.shutdown() }
        #expect(d.logicalSize == nil)
        #expect(!d.canPresent)
        #expect(d.displayDescription == "drm (no device)")
        // Presenting while inactive is not an error: the damage waits for an output.
        let p = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 16)
        defer { p.deallocate() }
        try d.present(PixelBuffer(base: p, size: Size(width: 2, height: 2), stride: 8), damage: Damage.full(Size(width: 2, height: 2)))
        #expect(d.pageFlipCount == 0 && d.modesetCount == 0)
    }

    @Test(.enabled(if: !FileManager.default.fileExists(atPath: "/dev/dri/card0")))
    func listOutputsWithoutDevicesSaysSo() {
        let m = message { _ = try DRMDisplay.listOutputs(device: nil) }
        #expect(m?.contains("no DRM devices found") == true, "\(m ?? "no error")")
    }
}
