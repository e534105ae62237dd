import Testing
@testable import KioskCore

@Suite struct InputTransformTests {
    /// Where the viewer's corner `logical` (a logical pixel) shows on the physical framebuffer,
    /// found by drawing a marker there and turning the picture with `blit` — the same code
    /// that puts frames on the panel — so the expectation does not come from `Rotation`'s maths.
    static func physicalPixel(ofLogical lx: Int, _ ly: Int, rotation: Rotation, logical: Size) -> (Int, Int) {
        let physical = rotation.physicalSize(logical: logical)
        let src = UnsafeMutableRawPointer.allocate(byteCount: logical.area * 4, alignment: 4)
        let dst = UnsafeMutableRawPointer.allocate(byteCount: physical.area * 4, alignment: 4)
        defer { src.deallocate(); dst.deallocate() }
        src.initializeMemory(as: UInt32.self, repeating: 0, count: logical.area)
        dst.initializeMemory(as: UInt32.self, repeating: 0, count: physical.area)
        src.storeBytes(of: 0xFFFF_0000, toByteOffset: (ly * logical.width + lx) * 4, as: UInt32.self)
        let s = PixelBuffer(base: src, size: logical, stride: logical.width * 4)
        let d = PixelBuffer(base: dst, size: physical, stride: physical.width * 4)
        blit(s, into: d, rect: Rect(size: logical), rotation: rotation)
        for y in 0..<physical.height { for x in 0..<physical.width where d.pixel(x: x, y: y) == 0xFFFF_0000 { return (x, y) } }
        Issue.record("marker not found")
        return (-1, -1)
    }

    @Test(arguments: Rotation.allCases)
    func touchOnAViewerCornerLandsOnThatCornerOfTheScene(rotation: Rotation) throws {
        let logical = Size(width: 40, height: 30)
        let physical = rotation.physicalSize(logical: logical)
        let t = try InputTransform(rotation: rotation)
        // The viewer's four corners, as logical pixels and as normalised logical points.
        let corners: [((Int, Int), Point)] = [
            ((0, 0), Point(x: 0, y: 0)),
            ((logical.width - 1, 0), Point(x: 1, y: 0)),
            ((0, logical.height - 1), Point(x: 0, y: 1)),
            ((logical.width - 1, logical.height - 1), Point(x: 1, y: 1)),
        ]
        for ((lx, ly), expected) in corners {
            let (px, py) = Self.physicalPixel(ofLogical: lx, ly, rotation: rotation, logical: logical)
            // The touch panel reports that pixel's position in its native (physical) coordinates.
            let touch = Point(x: Double(px) / Double(physical.width - 1), y: Double(py) / Double(physical.height - 1))
            let got = try #require(t.map(physical: touch))
            #expect(abs(got.x - expected.x) < 1e-9 && abs(got.y - expected.y) < 1e-9,
                    "rotation \(rotation): physical \(touch) gave \(got), viewer corner is \(expected)")
        }
    }

    @Test func knownCornersForEachRotation() throws {
        // The panel's native top-left (0,0) as the viewer sees it after the picture turns clockwise.
        #expect(try InputTransform(rotation: .r0).map(physical: Point(x: 0, y: 0)) == Point(x: 0, y: 0))
        #expect(try InputTransform(rotation: .r90).map(physical: Point(x: 0, y: 0)) == Point(x: 0, y: 1))
        #expect(try InputTransform(rotation: .r180).map(physical: Point(x: 0, y: 0)) == Point(x: 1, y: 1))
        #expect(try InputTransform(rotation: .r270).map(physical: Point(x: 0, y: 0)) == Point(x: 1, y: 0))
        // And the native point that is the viewer's top-left.
        #expect(try InputTransform(rotation: .r90).map(physical: Point(x: 1, y: 0)) == Point(x: 0, y: 0))
        #expect(try InputTransform(rotation: .r270).map(physical: Point(x: 0, y: 1)) == Point(x: 0, y: 0))
        // A point off the diagonal distinguishes 90 from 270.
        let p = try #require(try InputTransform(rotation: .r90).map(physical: Point(x: 0.25, y: 0.5)))
        #expect(p == Point(x: 0.5, y: 0.75))
    }

    @Test func calibrationIsAppliedBeforeRotation() throws {
        // Swap axes and mirror x: x' = 1 - y, y' = x.
        let m: [Double] = [0, -1, 1, 1, 0, 0]
        let t0 = try InputTransform(calibration: m, rotation: .r0)
        #expect(t0.map(physical: Point(x: 0.2, y: 0.1)) == Point(x: 0.9, y: 0.2))
        let t180 = try InputTransform(calibration: m, rotation: .r180)
        let p = try #require(t180.map(physical: Point(x: 0.2, y: 0.1)))
        #expect(abs(p.x - 0.1) < 1e-12 && abs(p.y - 0.8) < 1e-12)
        // Scale-and-offset, as a touch panel whose active area is inset.
        let inset = try InputTransform(calibration: [1.25, 0, -0.125, 0, 1.25, -0.125])
        let q = try #require(inset.map(physical: Point(x: 0.5, y: 0.1)))
        #expect(abs(q.x - 0.5) < 1e-12 && abs(q.y - 0.0) < 1e-12)
    }

    @Test func garbageIsDroppedOrClamped() throws {
        let t = try InputTransform(rotation: .r90)
        #expect(t.map(physical: Point(x: .nan, y: 0.5)) == nil)
        #expect(t.map(physical: Point(x: 0.5, y: .infinity)) == nil)
        #expect(t.map(physical: Point(x: -.infinity, y: 0.5)) == nil)
        // Off the panel: clamped to the edge, then rotated.
        #expect(t.map(physical: Point(x: -3, y: 0.5)) == Point(x: 0.5, y: 1))
        #expect(t.map(physical: Point(x: 1.7, y: 9)) == Point(x: 1, y: 0))
        // Huge but finite numbers whose calibrated value overflows are dropped.
        let big = try InputTransform(calibration: [1e300, 0, 0, 0, 1, 0])
        #expect(big.map(physical: Point(x: 1e300, y: 0.5)) == nil)
    }

    @Test func invalidMatricesNameTheProblem() {
        #expect(throws: KioskError.config("calibration matrix needs 6 numbers (a b c d e f, as in LIBINPUT_CALIBRATION_MATRIX), got 4")) {
            try InputTransform(calibration: [1, 0, 0, 1])
        }
        #expect(throws: KioskError.config("calibration matrix number 5 (e) is nan, expected a finite number")) {
            try InputTransform(calibration: [1, 0, 0, 0, .nan, 0])
        }
        do {
            _ = try InputTransform(calibration: [1, 2, 0, 2, 4, 0])
            Issue.record("singular matrix accepted")
        } catch let e as KioskError {
            #expect(e.kind == .config)
            #expect(e.message.contains("singular"))
        } catch { Issue.record("unexpected \(error)") }
        #expect(throws: Never.self) { try InputTransform(calibration: [0, 1, 0, -1, 0, 1]) }
    }
}
