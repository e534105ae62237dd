import Foundation
import KioskCore
import Testing

/// A frame's pages are faulted in ahead, on a thread of their own, and stay black.
struct FrameMemoryTests {
    /// Waits (bounded) until `memory`'s pages are all in memory.
    static func resident(_ memory: FrameMemory, within seconds: Double) -> Double {
        let end = Date().addingTimeInterval(seconds)
        var f = memory.residentFraction
        while f < 1 && Date() < end {
            usleep(2_000)
            f = memory.residentFraction
        }
        return f
    }

    @Test func aFrameIsFaultedInAheadWithoutWritingIt() throws {
        let m = try FrameMemory(size: Size(width: 1920, height: 1080))
        // Nothing here touches the pixels: only the prefault thread can have brought them in.
        #expect(Self.resident(m, within: 5) == 1, "the frame's pages were not faulted in ahead")
        let b = m.buffer
        var nonZero = 0
        for y in stride(from: 0, to: b.size.height, by: 7) {
            for x in stride(from: 0, to: b.size.width, by: 13) where b.pixel(x: x, y: y) != 0 { nonZero += 1 }
        }
        #expect(nonZero == 0, "a prefaulted frame must stay black")
    }

    @Test func withoutThePrefaultThePagesComeWithTheFirstWrite() throws {
        let m = try FrameMemory(size: Size(width: 1920, height: 1080), prefault: false)
        usleep(50_000)
        #expect(m.residentFraction < 0.01, "pages were in memory before anything wrote them")
    }

    /// A frame freed while its pages are being faulted in: the thread keeps the mapping until it
    /// is done (no fault on unmapped memory), and frames keep coming.
    @Test func framesFreedAtOnceAreSafe() throws {
        for _ in 0..<50 {
            _ = try FrameMemory(size: Size(width: 1280, height: 720))
        }
        let m = try FrameMemory(size: Size(width: 1280, height: 720))
        #expect(Self.resident(m, within: 5) == 1)
    }
}
