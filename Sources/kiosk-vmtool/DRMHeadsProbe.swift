#if canImport(Glibc)
import Glibc
#endif
import KioskCore
import KioskDRM
import Logging
import KioskPosix

/// `kiosk-vmtool drm-heads [--device PATH] [--api auto|atomic|legacy] [--mode WxH[@R]] [--flips N] OUTPUT=RRGGBB …`:
/// one `DRMCard` with a head per OUTPUT (each in `--mode`, else its preferred mode). Each head is filled with its colour (its mode set), then
/// N frames (a small square changing in the top-left corner) go out on every head at once, each
/// head presenting its next frame when its own flip completed. Prints one line per head,
/// "ok head=NAME logical=WxH modesets=M flipEvents=F firstMs=A lastMs=B" (times of its first and
/// last flip event from the start of the flips), then "ok done switches=S" (how often the flip
/// events changed head), waits for a line on stdin, shuts the card down (every CRTC given back)
/// and prints "ok bye". Errors: one "error …" line, exit 1; everything must be done within 60 s.
enum DRMHeadsProbe {
    static func main(_ args: [String]) -> Never {
        runProbe(label: "kiosk-vmtool.drm-heads") { logger in try HeadsProbe(args: args, logger: logger).run() }
    }
}

private final class HeadsProbe {
    let loop: EventLoop
    let card: DRMCard
    let names: [String]
    let colors: [UInt32]
    var frames: [PixelBuffer] = []
    /// Flips still to present on each head; nil while its first frame (the mode set) is not shown.
    var left: [Int?]
    let flips: Int
    var start: Int64 = 0
    var firstEvent: [Int64?], lastEvent: [Int64?]
    var flipEvents: [UInt64]
    var order: [Int] = []
    var finished = false

    init(args: [String], logger: Logger) throws {
        var device: String?
        var api = DRMOptions.API.auto
        var flips = 60
        var mode: String?
        var heads: [(String, UInt32)] = []
        var i = 0
        func value() throws -> String {
            i += 1
            guard i < args.count else { throw KioskError.config("\(args[i - 1]) needs a value") }
            return args[i]
        }
        while i < args.count {
            switch args[i] {
            case "--device": device = try value()
            case "--api":
                let v = try value()
                guard let a = DRMOptions.API(rawValue: v) else { throw KioskError.config("--api \(v): use auto, atomic or legacy") }
                api = a
            case "--mode": mode = try value()
            case "--flips":
                let v = try value()
                guard let n = Int(v), n > 0 else { throw KioskError.config("--flips \(v): not a positive number") }
                flips = n
            default:
                let parts = args[i].split(separator: "=")
                guard parts.count == 2, let c = UInt32(parts[1], radix: 16) else {
                    throw KioskError.config("\(args[i]): use OUTPUT=RRGGBB")
                }
                heads.append((String(parts[0]), c))
            }
            i += 1
        }
        names = heads.map(\.0)
        colors = heads.map(\.1)
        self.flips = flips
        left = Array(repeating: nil, count: heads.count)
        firstEvent = Array(repeating: nil, count: heads.count)
        lastEvent = firstEvent
        flipEvents = Array(repeating: 0, count: heads.count)
        loop = try EventLoop()
        card = try DRMCard(device: device, api: api, buffers: 2, heads: names.map { DRMHeadOptions(output: $0, mode: mode) }, loop: loop,
                           logger: logger)
    }

    func run() throws {
        for (i, h) in card.heads.enumerated() {
            guard let size = h.logicalSize else { throw KioskError.display("head \(names[i]) is not active: \(h.displayDescription)") }
            let p = UnsafeMutableRawPointer.allocate(byteCount: size.area * 4, alignment: 16)
            frames.append(PixelBuffer(base: p, size: size, stride: size.width * 4))
            paint(i, Rect(size: size), colors[i])
            h.onEvent = { [unowned self] ev in self.event(i, ev) }
        }
        try loop.schedule(after: 60_000_000_000) { [unowned self] _ in
            self.fail("timed out: " + self.card.heads.enumerated().map { self.line($0.offset) }.joined(separator: "; "))
        }
        for (i, h) in card.heads.enumerated() { try h.present(frames[i], damage: Damage.full(frames[i].size)) }
        try loop.run()
    }

    func event(_ i: Int, _ ev: DisplayEvent) {
        guard !finished else { return }
        guard ev == .ready else { return fail("head \(names[i]): \(ev)") }
        if left[i] == nil {
            // The mode set's frame is on screen; once every head's is, the flips start together.
            left[i] = flips
            guard left.allSatisfy({ $0 != nil }) else { return }
            start = nowNanos()
            for k in card.heads.indices {
                flipEvents[k] = card.heads[k].pageFlipCount
                next(k)
            }
            return
        }
        let t = (nowNanos() - start) / 1_000_000
        if firstEvent[i] == nil { firstEvent[i] = t }
        lastEvent[i] = t
        order.append(i)
        next(i)
    }

    /// Presents head `i`'s next frame, or notes that it is done.
    func next(_ i: Int) {
        guard let n = left[i], n > 0 else {
            if left.allSatisfy({ $0 == 0 }) && !finished { done() }
            return
        }
        left[i] = n - 1
        let r = Rect(x: 0, y: 0, width: 16, height: 16)
        paint(i, r, n % 2 == 0 ? 0x101010 : 0x202020)
        do { try card.heads[i].present(frames[i], damage: Damage([r])) } catch { fail("head \(names[i]): \(error)") }
    }

    func line(_ i: Int) -> String {
        let h = card.heads[i]
        return "ok head=\(names[i]) logical=\(h.logicalSize.map(\.description) ?? "none") modesets=\(h.modesetCount) "
            + "flipEvents=\(h.pageFlipCount - flipEvents[i]) firstMs=\(firstEvent[i] ?? -1) lastMs=\(lastEvent[i] ?? -1)"
    }

    func done() {
        // The last frames' events are in: wait until every head's last flip completed.
        guard card.heads.allSatisfy({ $0.canPresent }) else { return }
        finished = true
        for i in card.heads.indices { print(line(i)) }
        let switches = zip(order, order.dropFirst()).filter { $0 != $1 }.count
        print("ok done switches=\(switches)")
        fflush(nil)
        _ = fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK)
        _ = try? loop.watch(fd: 0) { [unowned self] in
            var b = [UInt8](repeating: 0, count: 64)
            guard read(0, &b, b.count) != -1 || errno != EAGAIN else { return }
            self.card.shutdown()
            print("ok bye")
            fflush(nil)
            exit(0)
        }
    }

    func fail(_ message: String) {
        print("error \(message)")
        fflush(nil)
        card.shutdown()
        exit(1)
    }

    func paint(_ i: Int, _ r: Rect, _ color: UInt32) {
        let f = frames[i]
        let c = r.intersection(Rect(size: f.size))
        for y in c.y..<c.maxY {
            let row = (f.base + y * f.stride).assumingMemoryBound(to: UInt32.self)
            for x in c.x..<c.maxX { row[x] = 0xFF00_0000 | color }
        }
    }
}
