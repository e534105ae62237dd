#if canImport(Glibc)
import Glibc
#endif
import CKioskLinux
import KioskCore
import KioskDRM
import Logging
import KioskPosix

/// `kiosk-vmtool drm [options]`: drives a DRMDisplay from commands on stdin, one reply line each on
/// stdout ("ok key=value …" or "error …"). Used by the kernel tests to check pixels from the host.
///
/// Options: --device PATH, --output NAME, --mode WxH[@R], --rotation 0|90|180|270,
/// --api auto|atomic|legacy, --buffers 2|3.
/// Commands: status | fill RRGGBB | pattern | rect X Y W H RRGGBB | flips N | blank 0|1 |
/// wait-active SECONDS | wait-inactive SECONDS | release | acquire | quit.
/// SIGTERM shuts down (restoring the CRTC) and exits 0; SIGUSR1 releases DRM master, SIGUSR2 takes it back.
enum DRMProbe {
    static func main(_ args: [String]) -> Never {
        runProbe(label: "kiosk-vmtool.drm") { logger in try Probe(args: args, logger: logger).run() }
    }
}

/// Runs a probe with debug logs on standard error: exit 0 when `body` returns, else one
/// "error …" line on standard output (flushed before the log) and exit 1.
func runProbe(label: String, _ body: (Logger) throws -> Void) -> Never {
    LoggingSystem.bootstrap { label in
        var h = StreamLogHandler.standardError(label: label)
        h.logLevel = .debug
        return h
    }
    let logger = Logger(label: label)
    do {
        try body(logger)
        exit(0)
    } catch {
        print("error \(error)")
        fflush(nil)
        logger.error("\(error)")
        exit(1)
    }
}

private final class Probe {
    let loop: EventLoop
    let display: DRMDisplay
    let logger: Logger
    var frame: PixelBuffer?
    var frameSize: Size?
    /// Damage waiting to be presented (when the display could not take it yet).
    var queued: Damage?
    /// A present went out; the next .ready means it is on screen.
    var awaitingShown = false
    var onShown: (() -> Void)?
    var flipsLeft = 0
    var flipStart: Int64 = 0
    var flipStartCount: UInt64 = 0
    var events: [String: Int] = ["ready": 0, "needsFullRedraw": 0, "inactive": 0]
    var inputBuffer: [UInt8] = []
    var waiter: (cond: () -> Bool, reply: () -> String, timer: EventLoop.TimerID)?
    var lastColor: UInt32 = 0

    init(args: [String], logger: Logger) throws {
        var opts = DRMOptions()
        var i = 0
        func value() throws -> String {
            i += 1
            guard i < args.count else { throw KioskError.config("\(args[i - 1]) needs a value") }
            return args[i]
        }
        while i < args.count {
            switch args[i] {
            case "--device": opts.device = try value()
            case "--output": opts.output = try value()
            case "--mode": opts.mode = try value()
            case "--rotation":
                let v = try value()
                guard let d = Int(v), let r = Rotation(degrees: d) else { throw KioskError.config("--rotation \(v): use 0, 90, 180 or 270") }
                opts.rotation = r
            case "--api":
                let v = try value()
                guard let a = DRMOptions.API(rawValue: v) else { throw KioskError.config("--api \(v): use auto, atomic or legacy") }
                opts.api = a
            case "--buffers":
                let v = try value()
                guard let n = Int(v) else { throw KioskError.config("--buffers \(v): not a number") }
                opts.buffers = n
            case "--list":
                print(try DRMDisplay.listOutputs(device: opts.device), terminator: "")
                exit(0)
            default: throw KioskError.config("unknown option \(args[i])")
            }
            i += 1
        }
        self.logger = logger
        loop = try EventLoop()
        display = try DRMDisplay(options: opts, loop: loop, logger: logger)
        display.onEvent = { [unowned self] ev in self.event(ev) }
    }

    func run() throws {
        // Signals through a signalfd on the loop.
        var mask = sigset_t()
        sigemptyset(&mask)
        sigaddset(&mask, SIGTERM); sigaddset(&mask, SIGINT); sigaddset(&mask, SIGUSR1); sigaddset(&mask, SIGUSR2)
        pthread_sigmask(SIG_BLOCK, &mask, nil)
        let sfd = try Posix.call("signalfd") { signalfd(-1, &mask, Int32(SFD_CLOEXEC | SFD_NONBLOCK)) }
        try loop.watch(fd: sfd) { [unowned self] in
            var info = signalfd_siginfo()
            while read(sfd, &info, MemoryLayout<signalfd_siginfo>.size) == MemoryLayout<signalfd_siginfo>.size {
                switch Int32(info.ssi_signo) {
                case SIGUSR1: self.display.releaseMaster()
                case SIGUSR2:
                    do { try self.display.acquireMaster() } catch { self.logger.error("\(error)") }
                default:
                    self.logger.info("signal \(info.ssi_signo): shutting down")
                    self.display.shutdown()
                    exit(0)
                }
            }
        }
        _ = fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK)
        try loop.watch(fd: 0) { [unowned self] in self.readInput() }
        logger.info("probe ready", metadata: ["display": "\(display.displayDescription)"])
        try loop.run()
    }

    func reply(_ s: String) {
        print(s)
        fflushStdout()
    }

    func readInput() {
        var buf = [UInt8](repeating: 0, count: 4096)
        let n = read(0, &buf, buf.count)
        if n == 0 {
            display.shutdown()
            exit(0)
        }
        guard n > 0 else { return }
        inputBuffer += buf[0..<n]
        while let nl = inputBuffer.firstIndex(of: 10) {
            let line = String(decoding: inputBuffer[..<nl], as: UTF8.self)
            inputBuffer.removeSubrange(...nl)
            command(line.split(separator: " ").map(String.init))
        }
    }

    func status() -> String {
        let s = display.logicalSize.map(\.description) ?? "none"
        return "ok logical=\(s) flips=\(display.pageFlipCount) modesets=\(display.modesetCount) atomic=\(display.usesAtomic ? 1 : 0) "
            + "canPresent=\(display.canPresent ? 1 : 0) blanked=\(display.isBlanked ? 1 : 0) copied=\(display.lastCopiedPixels) "
            + "busy=\(display.busyRetries) ready=\(events["ready"]!) redraw=\(events["needsFullRedraw"]!) inactive=\(events["inactive"]!)"
    }

    func command(_ w: [String]) {
        guard let c = w.first else { return }
        switch c {
        case "status":
            reply(status())
        case "fill":
            guard w.count == 2, let color = UInt32(w[1], radix: 16), ensureFrame() else { return reply("error fill RRGGBB (needs an active output)") }
            paint(Rect(size: frameSize!), color)
            submit(Damage.full(frameSize!)) { [unowned self] in self.reply(self.status()) }
        case "pattern":
            guard ensureFrame() else { return reply("error no active output") }
            let s = frameSize!
            let hw = s.width / 2, hh = s.height / 2
            paint(Rect(x: 0, y: 0, width: hw, height: hh), 0xFF0000)
            paint(Rect(x: hw, y: 0, width: s.width - hw, height: hh), 0x00FF00)
            paint(Rect(x: 0, y: hh, width: hw, height: s.height - hh), 0x0000FF)
            paint(Rect(x: hw, y: hh, width: s.width - hw, height: s.height - hh), 0xFFFFFF)
            submit(Damage.full(s)) { [unowned self] in self.reply(self.status()) }
        case "rect":
            guard w.count == 6, let x = Int(w[1]), let y = Int(w[2]), let rw = Int(w[3]), let rh = Int(w[4]),
                  let color = UInt32(w[5], radix: 16), ensureFrame() else { return reply("error rect X Y W H RRGGBB") }
            let r = Rect(x: x, y: y, width: rw, height: rh)
            paint(r, color)
            submit(Damage([r])) { [unowned self] in self.reply(self.status()) }
        case "flips":
            guard w.count == 2, let n = Int(w[1]), n > 0, ensureFrame() else { return reply("error flips N") }
            flipsLeft = n
            flipStart = nowNanos()
            flipStartCount = display.pageFlipCount
            nextFlip()
        case "blank":
            guard w.count == 2, let v = Int(w[1]) else { return reply("error blank 0|1") }
            do { try display.setBlanked(v != 0); reply(status()) } catch { reply("error \(error)") }
        case "wait-active", "wait-inactive":
            guard w.count == 2, let t = Double(w[1]) else { return reply("error \(c) SECONDS") }
            let wantActive = c == "wait-active"
            waitFor(seconds: t, { [unowned self] in (self.display.logicalSize != nil) == wantActive }) { [unowned self] in self.status() }
        case "release":
            display.releaseMaster()
            reply(status())
        case "acquire":
            do { try display.acquireMaster(); reply(status()) } catch { reply("error \(error)") }
        case "describe":
            reply("ok \(display.displayDescription)")
        case "quit":
            display.shutdown()
            reply("ok bye")
            exit(0)
        default:
            reply("error unknown command \(c)")
        }
    }

    /// Paints a small changing square for each of N presents, each after the previous one is shown.
    func nextFlip() {
        guard flipsLeft > 0 else {
            let ms = Double(nowNanos() - flipStart) / 1e6
            reply(status() + " flipEvents=\(display.pageFlipCount - flipStartCount) ms=\(Int(ms))")
            return
        }
        flipsLeft -= 1
        let r = Rect(x: 0, y: 0, width: 16, height: 16)
        paint(r, flipsLeft % 2 == 0 ? 0x101010 : 0x202020)
        submit(Damage([r])) { [unowned self] in self.nextFlip() }
    }

    func waitFor(seconds: Double, _ cond: @escaping () -> Bool, reply r: @escaping () -> String) {
        if cond() { return reply(r()) }
        let t = try! loop.schedule(after: Int64(seconds * 1e9)) { [unowned self] _ in
            self.waiter = nil
            self.reply("error timeout " + r())
        }
        waiter = (cond, r, t)
    }

    func checkWaiter() {
        if let w = waiter, w.cond() {
            loop.cancel(w.timer)
            waiter = nil
            reply(w.reply())
        }
    }

    func ensureFrame() -> Bool {
        guard let s = display.logicalSize else { return false }
        if frameSize != s {
            if let f = frame { f.base.deallocate() }
            let p = UnsafeMutableRawPointer.allocate(byteCount: s.area * 4, alignment: 16)
            memset(p, 0, s.area * 4)
            frame = PixelBuffer(base: p, size: s, stride: s.width * 4)
            frameSize = s
        }
        return true
    }

    func paint(_ r: Rect, _ color: UInt32) {
        guard let f = frame else { return }
        let c = r.intersection(Rect(size: f.size))
        for y in c.y..<c.maxY {
            let row = (f.base + y * f.stride).assumingMemoryBound(to: UInt32.self)
            for x in c.x..<c.maxX { row[x] = 0xFF00_0000 | color }
        }
    }

    func submit(_ damage: Damage, then: @escaping () -> Void) {
        onShown = then
        if display.canPresent {
            presentNow(damage)
        } else {
            var q = queued ?? Damage()
            q.formUnion(damage)
            queued = q
        }
    }

    func presentNow(_ damage: Damage) {
        guard let f = frame else { return }
        do {
            try display.present(f, damage: damage)
            awaitingShown = true
        } catch {
            reply("error \(error)")
            onShown = nil
        }
    }

    func event(_ ev: DisplayEvent) {
        switch ev {
        case .ready:
            events["ready"]! += 1
            if awaitingShown {
                awaitingShown = false
                if let q = queued {
                    queued = nil
                    presentNow(q)
                } else if let s = onShown {
                    onShown = nil
                    s()
                }
            } else if let q = queued, display.canPresent {
                queued = nil
                presentNow(q)
            }
        case .needsFullRedraw:
            events["needsFullRedraw"]! += 1
            awaitingShown = false
            if let old = frameSize, let new = display.logicalSize, old != new {
                // Keep the picture: reallocate and mark the whole frame for the next present.
                let oldFrame = frame
                frame = nil
                frameSize = nil
                _ = ensureFrame()
                if let oldFrame { oldFrame.base.deallocate() }
            }
            if frame != nil, let s = frameSize {
                // Repaint the whole (remembered) frame on the new output.
                if display.canPresent { presentNow(Damage.full(s)) } else { queued = Damage.full(s) }
            }
        case .inactive:
            events["inactive"]! += 1
            awaitingShown = false
        }
        logger.debug("display event \(ev)")
        checkWaiter()
    }
}

private func fflushStdout() { fflush(nil) }
