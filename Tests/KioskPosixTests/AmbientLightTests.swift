import Testing
import Glibc
import Foundation

@testable import KioskPosix
import KioskCore
import KioskTesting

@Suite struct AmbientLightTests {
    @Test func processedInputIsLux() throws {
        let fs = FakeSysfs()
        defer { fs.remove() }
        fs.write("sys/bus/iio/devices/iio:device0/name", "als\n")
        fs.write("sys/bus/iio/devices/iio:device0/in_illuminance_input", "123.5\n")
        fs.write("sys/bus/iio/devices/iio:device0/in_illuminance_raw", "9999\n") // ignored: input wins
        let s = try AmbientLightSensor.find(root: fs.root)
        #expect(s.name == "als")
        #expect(try s.readLux() == 123.5)
    }

    @Test func rawIsScaledAndOffset() throws {
        let fs = FakeSysfs()
        defer { fs.remove() }
        // An accelerometer-only IIO device comes first and is skipped.
        fs.write("sys/bus/iio/devices/iio:device0/in_accel_x_raw", "12\n")
        fs.write("sys/bus/iio/devices/iio:device1/name", "tsl2563\n")
        fs.write("sys/bus/iio/devices/iio:device1/in_illuminance0_raw", "200\n")
        fs.write("sys/bus/iio/devices/iio:device1/in_illuminance_scale", "0.5\n")
        fs.write("sys/bus/iio/devices/iio:device1/in_illuminance0_offset", "-10\n")
        let s = try AmbientLightSensor.find(root: fs.root)
        #expect(s.path.hasSuffix("iio:device1"))
        #expect(try s.readLux() == 95) // (200 - 10) × 0.5
        fs.write("sys/bus/iio/devices/iio:device1/in_illuminance0_raw", "0\n")
        #expect(try s.readLux() == 0) // never negative
        #expect(try AmbientLightSensor.find(named: "tsl2563", root: fs.root) == s)
        #expect(try AmbientLightSensor.find(named: "iio:device1", root: fs.root) == s)
    }

    @Test func rawWithoutScaleIsTakenAsIs() throws {
        let fs = FakeSysfs()
        defer { fs.remove() }
        fs.write("sys/bus/iio/devices/iio:device3/in_illuminance_raw", "42\n")
        #expect(try AmbientLightSensor.find(root: fs.root).readLux() == 42)
    }

    @Test func errorsNameTheFileAndTheSensors() throws {
        let fs = FakeSysfs()
        defer { fs.remove() }
        #expect(throws: KioskError.notFound("no IIO illuminance sensor in \(fs.root)/sys/bus/iio/devices")) {
            _ = try AmbientLightSensor.find(root: fs.root)
        }
        fs.write("sys/bus/iio/devices/iio:device0/name", "als\n")
        fs.write("sys/bus/iio/devices/iio:device0/in_illuminance_raw", "bright\n")
        #expect(throws: KioskError.notFound("ambient light sensor \"other\" not found in \(fs.root)/sys/bus/iio/devices (available: als)")) {
            _ = try AmbientLightSensor.find(named: "other", root: fs.root)
        }
        let s = try AmbientLightSensor.find(root: fs.root)
        #expect(throws: KioskError(.system, "\(fs.root)/sys/bus/iio/devices/iio:device0/in_illuminance_raw: \"bright\" is not a number")) {
            _ = try s.readLux()
        }
    }

    @Test func sensorCurveAndHysteresisFollowTheRoom() throws {
        let fs = FakeSysfs()
        defer { fs.remove() }
        let raw = "sys/bus/iio/devices/iio:device0/in_illuminance_raw"
        fs.write(raw, "0\n")
        let sensor = try AmbientLightSensor.find(root: fs.root)
        var follower = try AmbientFollower(curve: try LuxCurve(pairs: [[0, 5], [50, 30], [400, 100]]), hysteresis: 0.2, minimumLuxChange: 2)
        var applied: [Double] = []
        for lux in ["0", "1", "40", "45", "100", "110", "400", "1000", "300"] {
            fs.write(raw, lux + "\n")
            if let p = follower.update(lux: try sensor.readLux()) { applied.append(p) }
        }
        // 0 → 5 %; 1 within the 2 lx floor; 40 → 25 %; 45 within 20 %; 100 → 40 %; 110 within;
        // 400 → 100 %; 1000 → 100 % (flat beyond the end); 300 within 20 % of 1000? no: 700 away → 80 %.
        #expect(applied == [5, 25, 40, 100, 100, 80])
    }
}

@Suite struct AmbientLightMonitorTests {
    @Test func pollsTheFakeSensorAndReportsOnlyMovesOutsideTheBand() throws {
        let fs = FakeSysfs()
        defer { fs.remove() }
        let raw = "sys/bus/iio/devices/iio:device0/in_illuminance_raw"
        fs.write(raw, "100\n")
        let sensor = try AmbientLightSensor.find(root: fs.root)
        let loop = ManualEventLoop()
        var levels: [Double] = []
        var errors: [String] = []
        let follower = try AmbientFollower(curve: try LuxCurve(pairs: [[0, 10], [200, 100]]), hysteresis: 0.2, minimumLuxChange: 2)
        let m = AmbientLightMonitor(scheduler: loop, follower: follower, intervalNanos: 2_000_000_000,
                                    read: { try sensor.readLux() }, onLevel: { levels.append($0) },
                                    onError: { errors.append("\($0)") })
        m.start()
        #expect(levels == [55])
        fs.write(raw, "110\n")                       // within 20 %
        loop.advance(by: 2_000_000_000)
        #expect(levels == [55])
        #expect(m.lastLux == 110)
        fs.write(raw, "0\n")                         // lights out
        loop.advance(by: 2_000_000_000)
        #expect(levels == [55, 10])
        // A read error is reported once, and polling goes on.
        try FileManager.default.removeItem(atPath: fs.root + "/" + raw)
        loop.advance(by: 6_000_000_000)
        #expect(errors == ["open \(fs.root)/\(raw) failed: No such file or directory (errno 2)"])
        fs.write(raw, "200\n")
        loop.advance(by: 2_000_000_000)
        #expect(levels == [55, 10, 100])
        m.stop()
        #expect(loop.pendingTimers == 0)
    }
}
