#if canImport(Glibc)
import Glibc
#endif
import Foundation
import KioskConfig
import KioskControl
import KioskCore
import KioskDaemon
import KioskPosix
import KioskState
import KioskWeb
import Logging
import NIOConcurrencyHelpers

/// The phone page's costs, on a daemon built as kioskd builds it (headless display) with its web
/// server on loopback and a client on its own thread:
/// - tap → flip request: from an HTTP `POST /api/counter/HOME/inc` leaving the client to the
///   presentation of the frame that shows it (median, p99);
/// - 100 open live streams against none: the clock's frame time (a frame asked for on the loop
///   until it is presented, p99) and the process's idle CPU.
enum WebBench {
    struct Figures {
        var tapToFlip: Samples
        var clockP99: (none: Double, streams: Double)
        var idleCPUPerHour: (none: Double, streams: Double)
        var streams: Int
    }

    /// A daemon with `[web]` on its loop thread; `stop()` ends both.
    final class Kiosk: @unchecked Sendable {
        // @unchecked: set up in init, then only read; the daemon is reached through LoopBound.
        let daemon: LoopBound<KioskDaemon.Daemon>
        let server: WebServer
        let port: Int
        private let task: Task<Void, Error>
        private let done = DispatchSemaphore(value: 0)
        let frames = NIOLockedValueBox<[Int64]>([])

        init(kind: String, size: Size, dir: String) throws {
            let text = """
            state = "volatile"
            [display]
            backend = "headless"
            headless_size = "\(size.width)x\(size.height)"
            [scene.bench]
            kind = "\(kind)"
            \(kind == "counter" ? "digits = 3\n[[scene.bench.counter]]\nname = \"HOME\"" : "")
            [control]
            socket = "\(dir)/c.sock"
            [web]
            listen = "127.0.0.1:8080"
            """
            let path = "\(dir)/web-\(kind).toml"
            try text.write(toFile: path, atomically: false, encoding: .utf8)
            let config = try DaemonConfig.load(path: path, environment: [:])
            var logger = Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })
            logger.logLevel = .critical
            let loop = try EventLoop()
            let d = try DaemonRunner.makeDaemon(config: config, state: MemoryStateStore(durability: .volatile), loop: loop, logger: logger)
            var web = config.web!
            web.port = 0
            server = try WebService.make(settings: web, daemon: d, logger: logger)
            let bound = LoopBound(d, loop: loop)
            daemon = bound
            let frames = self.frames, done = self.done
            Thread {
                loop.post {
                    bound.value.onFrame = { frames.withLockedValue { $0.append(nowNanos(.monotonic)) } }
                    bound.value.start()
                    bound.value.startPipeline()  // as kioskd starts it: counter changes are kept by the pipeline
                    bound.value.startComponents()
                }
                try? loop.run()
                done.signal()
            }.start()
            let s = server
            task = Task { try await s.run() }
            let p = NIOLockedValueBox<Int?>(nil)
            let sem = DispatchSemaphore(value: 0)
            Task {
                let got = try? await s.port()
                p.withLockedValue { $0 = got }
                sem.signal()
            }
            sem.wait()
            guard let port = p.withLockedValue({ $0 }) else { throw SceneBenches.BenchError(description: "the web server did not start") }
            self.port = port
        }

        func onLoop<T: Sendable>(_ body: @escaping @Sendable (KioskDaemon.Daemon) -> T) -> T {
            let sem = DispatchSemaphore(value: 0)
            let out = NIOLockedValueBox<T?>(nil)
            daemon.post { d in out.withLockedValue { $0 = body(d) }; sem.signal() }
            sem.wait()
            return out.withLockedValue { $0 }!
        }

        /// A paired operator's cookie.
        func cookie() throws -> String {
            let code = onLoop { d in d.handle(.pair(role: "operator", show: false)) }
            let a = try code.decode(PairAnswer.self)
            let c = try Client(port: port)
            let r = try c.request("POST", "/api/pair", body: #"{"code":"\#(a.code)","name":"bench"}"#, cookie: nil)
            guard let set = r.setCookie else { throw SceneBenches.BenchError(description: "pairing failed: HTTP \(r.status)") }
            return String(set.split(separator: ";")[0])
        }

        func stop() {
            task.cancel()
            daemon.post { $0.shutdown(); $0.eventLoop?.stop() }
            _ = done.wait(timeout: .now() + 10)
        }
    }

    /// A keep-alive HTTP/1.1 client on a blocking socket.
    final class Client {
        let fd: Int32
        let port: Int
        init(port: Int) throws {
            self.port = port
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            var tv = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = in_port_t(UInt16(port).bigEndian)
            a.sin_addr.s_addr = inet_addr("127.0.0.1")
            let r = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard r == 0 else { let e = errno; close(fd); throw Posix.error("connect", path: "127.0.0.1:\(port)", errno: e) }
        }
        deinit { close(fd) }

        func send(_ s: String) {
            let b = Array(s.utf8)
            _ = b.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }

        func request(_ method: String, _ path: String, body: String?, cookie: String?) throws -> (status: Int, setCookie: String?) {
            var r = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
            if let cookie { r += "Cookie: \(cookie)\r\n" }
            r += "Content-Length: \(body?.utf8.count ?? 0)\r\n\r\n" + (body ?? "")
            send(r)
            var got: [UInt8] = []
            var buf = [UInt8](repeating: 0, count: 16384)
            while true {
                let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { throw SceneBenches.BenchError(description: "the web server closed the connection") }
                got += buf[0..<n]
                let text = String(decoding: got, as: UTF8.self)
                guard let end = text.range(of: "\r\n\r\n") else { continue }
                let head = text[..<end.lowerBound]
                let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                if text.utf8.count - text.utf8.distance(from: text.startIndex, to: end.upperBound) < length { continue }
                let status = Int(head.split(separator: " ")[1]) ?? 0
                let set = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("set-cookie:") }
                    .map { String($0.dropFirst("set-cookie:".count)).trimmingCharacters(in: .whitespaces) }
                return (status, set)
            }
        }
    }

    static func run(size: Size, runs: Int, idleSeconds: Double, streams: Int = 100) throws -> Figures {
        let dir = "/tmp/kb-web-\(getpid())"
        mkdir(dir, 0o700)
        defer { try? FileManager.default.removeItem(atPath: dir) }

        // Tap → flip request, on the counter.
        let counter = try Kiosk(kind: "counter", size: size, dir: dir)
        let cookie = try counter.cookie()
        let client = try Client(port: counter.port)
        var taps: [Double] = []
        for i in 0..<(runs + 3) {
            // Wait until the last roll has finished (no frame for 100 ms).
            var quietSince = nowNanos(.monotonic)
            var last = counter.frames.withLockedValue { $0.count }
            while nowNanos(.monotonic) - quietSince < 100_000_000 {
                usleep(5_000)
                let n = counter.frames.withLockedValue { $0.count }
                if n != last { last = n; quietSince = nowNanos(.monotonic) }
            }
            let t0 = nowNanos(.monotonic)
            let r = try client.request("POST", i % 2 == 0 ? "/api/counter/HOME/inc" : "/api/counter/HOME/dec", body: nil, cookie: cookie)
            guard r.status == 200 else { throw SceneBenches.BenchError(description: "tap answered HTTP \(r.status)") }
            var t1: Int64?
            let deadline = nowNanos(.monotonic) + 2_000_000_000
            while t1 == nil && nowNanos(.monotonic) < deadline {
                t1 = counter.frames.withLockedValue { $0.first { $0 > t0 } }
                if t1 == nil { usleep(200) }
            }
            guard let t1 else { throw SceneBenches.BenchError(description: "no frame after a tap") }
            if i >= 3 { taps.append(Double(t1 - t0) / 1e6) }
            counter.frames.withLockedValue { $0.removeAll() }
        }

        counter.stop()

        // Clock: frame time and idle CPU, without and with open live streams.
        let clock = try Kiosk(kind: "clock", size: size, dir: dir)
        defer { clock.stop() }
        let viewer = try clock.cookie()
        func frameP99() throws -> Double {
            var ms: [Double] = []
            // At least 100 frames, so that the p99 is not just the slowest of a few.
            for _ in 0..<max(runs, 100) {
                clock.frames.withLockedValue { $0.removeAll() }
                let t0 = nowNanos(.monotonic)
                clock.daemon.post { $0.manager.setNeedsFrame(full: true) }
                var t1: Int64?
                let deadline = t0 + 2_000_000_000
                while t1 == nil && nowNanos(.monotonic) < deadline {
                    t1 = clock.frames.withLockedValue { $0.first }
                    if t1 == nil { usleep(100) }
                }
                if let t1 { ms.append(Double(t1 - t0) / 1e6) }
                usleep(20_000)
            }
            return Samples(ms).p99
        }
        func idleCPU() -> Double {
            let c0 = processCPUSeconds(), w0 = nowNanos(.monotonic)
            usleep(UInt32(idleSeconds * 1e6))
            let c1 = processCPUSeconds(), w1 = nowNanos(.monotonic)
            return (c1 - c0) / (Double(w1 - w0) / 1e9) * 3600
        }
        let noneP99 = try frameP99()
        let noneCPU = idleCPU()
        var open: [Client] = []
        for _ in 0..<streams {
            let c = try Client(port: clock.port)
            c.send("GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:\(clock.port)\r\nCookie: \(viewer)\r\n\r\n")
            open.append(c)
        }
        // Wait until every stream is registered.
        let until = nowNanos(.monotonic) + 5_000_000_000
        while clock.server.streamCount < streams && nowNanos(.monotonic) < until { usleep(10_000) }
        let held = clock.server.streamCount
        let streamsP99 = try frameP99()
        let streamsCPU = idleCPU()
        open.removeAll()
        return Figures(tapToFlip: Samples(taps), clockP99: (noneP99, streamsP99), idleCPUPerHour: (noneCPU, streamsCPU), streams: held)
    }
}
