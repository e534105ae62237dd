import CKioskLazy
import Foundation
import Testing
import KioskTesting

/// libmosquitto (with libssl and libcrypto), libcrypto, libqrencode, libasound, libudev, libinput and
/// libsystemd are opened when a configuration first needs them (CKioskLazy/lazy_libs.c), not
/// linked: a headless kioskd without `[mqtt]` or `[web]` neither loads nor maps them.
@Suite struct LazyLibraryTests {
    static let optional = ["libmosquitto", "libcrypto", "libssl", "libqrencode", "libasound", "libudev", "libinput", "libsystemd"]
    /// What libinput and libsystemd load in turn, not mapped either by a headless daemon.
    static let theirs = ["libevdev", "libmtdev", "libwacom", "libgudev", "libgcrypt", "libcap"]
    static let all = [KIOSK_LIB_MOSQUITTO, KIOSK_LIB_CRYPTO, KIOSK_LIB_QRENCODE, KIOSK_LIB_ASOUND, KIOSK_LIB_UDEV, KIOSK_LIB_INPUT, KIOSK_LIB_SYSTEMD]

    @Test func kioskdDoesNotLinkTheOptionalLibraries() throws {
        let built = [Binaries.kioskd, Binaries.releaseKioskd].compactMap({ $0 }).filter { FileManager.default.isExecutableFile(atPath: $0) }
        #expect(!built.isEmpty, "no kioskd is built (\(Binaries.kioskd)): nothing was checked")
        for binary in built {
            let needed = try runTool("/usr/bin/readelf", ["-d", binary]).1
                .split(separator: "\n").filter { $0.contains("(NEEDED)") }
            #expect(needed.count > 10, "readelf -d \(binary) lists no libraries")
            for lib in Self.optional {
                #expect(!needed.contains { $0.contains(lib) }, "\(binary) links \(lib): \(needed.filter { $0.contains(lib) })")
            }
        }
    }

    @Test func eachLibraryOpensWithEveryFunctionKioskdCalls() {
        for lib in Self.all {
            let soname = String(cString: kiosk_lazy_soname(Int32(lib)))
            let error = kiosk_lazy_check(Int32(lib), soname).map { String(cString: $0) }
            #expect(error == nil, "\(soname): \(error ?? "")")
        }
    }

    @Test func aMissingLibraryIsNamedWithWhatNeedsItAndItsPackage() throws {
        let missing = try #require(kiosk_lazy_check(Int32(KIOSK_LIB_MOSQUITTO), "libmosquitto.so.999").map { String(cString: $0) })
        #expect(missing.hasPrefix("[mqtt] needs libmosquitto (Debian package libmosquitto1): "), "\(missing)")
        #expect(missing.contains("libmosquitto.so.999: cannot open shared object file"), "\(missing)")
        let qr = try #require(kiosk_lazy_check(Int32(KIOSK_LIB_QRENCODE), "libqrencode.so.999").map { String(cString: $0) })
        #expect(qr.contains("QR symbol needs libqrencode (Debian package libqrencode4)"), "\(qr)")
        let alsa = try #require(kiosk_lazy_check(Int32(KIOSK_LIB_ASOUND), "libasound.so.999").map { String(cString: $0) })
        #expect(alsa.hasPrefix("[audio] needs ALSA's libasound (Debian package libasound2"), "\(alsa)")
        let udev = try #require(kiosk_lazy_check(Int32(KIOSK_LIB_UDEV), "libudev.so.999").map { String(cString: $0) })
        #expect(udev.hasPrefix("the DRM displays and input devices need libudev (Debian package libudev1): "), "\(udev)")
        let input = try #require(kiosk_lazy_check(Int32(KIOSK_LIB_INPUT), "libinput.so.999").map { String(cString: $0) })
        #expect(input.hasPrefix("input devices need libinput (Debian package libinput10): "), "\(input)")
        #expect(input.contains("libinput.so.999: cannot open shared object file"), "\(input)")
        let systemd = try #require(kiosk_lazy_check(Int32(KIOSK_LIB_SYSTEMD), "libsystemd.so.999").map { String(cString: $0) })
        #expect(systemd.hasPrefix("the logind session's backlight needs libsystemd's sd-bus (Debian package libsystemd0): "), "\(systemd)")
        // Another library under the expected name: the first function it lacks is named.
        let wrong = try #require(kiosk_lazy_check(Int32(KIOSK_LIB_CRYPTO), "libc.so.6").map { String(cString: $0) })
        #expect(wrong.contains("libc.so.6 has no function EVP_Digest"), "\(wrong)")
        #expect(kiosk_lazy_check(99, "libc.so.6").map { String(cString: $0) } == "no such library")
    }

    /// A clock without [mqtt] or [web]: none of them is mapped into the running daemon.
    @Test(.enabled(if: slowTests, "set KIOSK_SLOW_TESTS=1 to run the kioskd process tests"))
    func aClockDaemonDoesNotMapThem() throws {
        #expect(FileManager.default.isExecutableFile(atPath: Binaries.kioskd), "build kioskd first (\(Binaries.kioskd))")
        let d = tempDir()
        let child = try IdleWakeupTests.startClock(Binaries.kioskd, in: d)
        defer { child.signal(SIGTERM); _ = child.wait(seconds: 10) }
        try ProcessTests().waitForSocket(d, child)
        // Through cat: a single read of a /proc file returns one page of it.
        let maps = try runTool("/bin/cat", ["/proc/\(child.process.pid)/maps"]).1
        #expect(maps.contains("libcairo"), "the maps were read from the daemon")
        for lib in Self.optional + Self.theirs {
            #expect(!maps.contains(lib + "."), "the clock daemon mapped \(lib)")
        }
    }
}
