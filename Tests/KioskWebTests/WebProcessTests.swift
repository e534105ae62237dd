import Foundation
import KioskTesting
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskPosix
@testable import KioskWeb
import NIOCore
import NIOEmbedded
import Testing

/// Runs a program; returns (exit status, stdout, stderr).
func runProgram(_ path: String, _ args: [String]) async throws -> (Int32, String, String) {
    try await offPool { try SpawnedProcess.run(path, args) }
}

@Suite(.serialized) struct WebProcessTests {
    /// kioskd as installed: `[web]` in the config, `kioskctl pair --print`, a phone pairing, and a
    /// clean stop on SIGTERM with a live stream open.
    @Test func kioskdServesThePageAndKioskctlPairsAndRevokes() async throws {
        let kioskd = "\(Binaries.dir)/kioskd", ctl = "\(Binaries.dir)/kioskctl"
        try #require(FileManager.default.isExecutableFile(atPath: kioskd), "build kioskd first (\(kioskd))")
        let dir = shortDir()
        let port = try Loopback.freePort()
        let config = """
        state_dir = "\(dir)/state"
        [display]
        backend = "headless"
        headless_size = "320x180"
        [scene.score]
        kind = "counter"
        [[scene.score.counter]]
        name = "HOME"
        [control]
        socket = "\(dir)/c.sock"
        [web]
        listen = "127.0.0.1:\(port)"
        """
        try config.write(toFile: "\(dir)/k.toml", atomically: false, encoding: .utf8)
        let p = try SpawnedProcess(kioskd, ["--config", "\(dir)/k.toml"])
        #expect(await eventually(30) { (try? await http(port, "GET", "/")).map { $0.status == 200 } ?? false }, "the page is served")

        let (code, out, err) = try await runProgram(ctl, ["pair", "--print", "--role", "viewer", "--socket", "\(dir)/c.sock"])
        #expect(code == 0, "\(err)")
        let lines = out.split(separator: "\n")
        let pairCode = try #require(lines.first { $0.hasPrefix("code: ") }.map { String($0.dropFirst(6)) })
        #expect(lines.contains { $0 == "url:  http://127.0.0.1:\(port)/#pair=\(pairCode)" }, "\(out)")
        #expect(lines.contains("role: viewer"))
        let r = try await http(port, "POST", "/api/pair", body: #"{"code": "\#(pairCode)", "name": "Anna's phone"}"#)
        #expect(r.status == 200)
        let cookie = String(try #require(r.headers["set-cookie"]).split(separator: ";")[0])
        #expect(try await http(port, "GET", "/api/counter/HOME", cookie: cookie).status == 200)
        #expect(try await http(port, "POST", "/api/counter/HOME/inc", cookie: cookie).status == 403)

        let (_, list, _) = try await runProgram(ctl, ["devices", "--socket", "\(dir)/c.sock"])
        #expect(list.hasPrefix("Anna's phone\tviewer\tpaired "), "\(list)")
        // A live stream open while kioskd stops.
        let stream = try TCP(port)
        stream.send("GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nCookie: \(cookie)\r\n\r\n")
        _ = await stream.readAsync { String(decoding: $0, as: UTF8.self).contains("event: theme") }
        let (rc, revoked, _) = try await runProgram(ctl, ["devices", "revoke", "Anna's phone", "--socket", "\(dir)/c.sock"])
        #expect(rc == 0 && revoked == "revoked: Anna's phone\n")
        #expect(try await http(port, "GET", "/api/counter/HOME", cookie: cookie).status == 401)
        let (none, _, noneErr) = try await runProgram(ctl, ["devices", "revoke", "nobody", "--socket", "\(dir)/c.sock"])
        #expect(none == 1 && noneErr.contains("no paired device named 'nobody'"))
        // Guessing from eight addresses replaces the code; kioskctl status and the next pair say so.
        let (_, opened, _) = try await runProgram(ctl, ["pair", "--print", "--socket", "\(dir)/c.sock"])
        let open = opened.split(separator: "\n").first { $0.hasPrefix("code: ") }.map { String($0.dropFirst(6)) }
        for i in 1...8 {
            let guess = open == "AAAAAA" ? "BBBBBB" : "AAAAAA"
            _ = try await http(port, "POST", "/api/pair", body: #"{"code": "\#(guess)", "name": "x"}"#, from: "127.0.5.\(i)")
        }
        let (_, status, _) = try await runProgram(ctl, ["status", "--socket", "\(dir)/c.sock"])
        #expect(status.contains("pairing: a code is open; code replaced 1 time after 8 wrong guesses from 8 addresses"), "\(status)")
        let (_, again, _) = try await runProgram(ctl, ["pair", "--print", "--socket", "\(dir)/c.sock"])
        #expect(again.contains("previous code: code replaced 1 time after 8 wrong guesses from 8 addresses (someone on the network guessed at it)"), "\(again)")

        p.signal(SIGTERM)
        #expect(await eventually(10) { !p.isRunning }, "kioskd stops on SIGTERM")
        #expect(p.exitStatus == 0)
    }

    /// Phones connecting while kioskd stops: every stop is clean (exit 0). A connection accepted
    /// while the listener closes was never served, and NIO trapped when its writer was freed
    /// unfinished ("Deinited NIOAsyncWriter without calling finish()", exit 4).
    @Test func stopsCleanlyWhilePhonesConnect() async throws {
        let kioskd = "\(Binaries.dir)/kioskd"
        try #require(FileManager.default.isExecutableFile(atPath: kioskd), "build kioskd first (\(kioskd))")
        let rounds = Int(ProcessInfo.processInfo.environment["KIOSK_STOP_ROUNDS"] ?? "") ?? 6
        for round in 0..<rounds {
            let dir = shortDir()
            let port = try Loopback.freePort()
            try """
            state_dir = "\(dir)/state"
            [display]
            backend = "headless"
            headless_size = "160x90"
            [scene.clock]
            kind = "clock"
            [control]
            socket = "\(dir)/c.sock"
            [web]
            listen = "127.0.0.1:\(port)"
            """.write(toFile: "\(dir)/k.toml", atomically: false, encoding: .utf8)
            let p = try SpawnedProcess(kioskd, ["--config", "\(dir)/k.toml"], stderr: .pipe)
            #expect(await eventually(30) { (try? await http(port, "GET", "/")).map { $0.status == 200 } ?? false }, "round \(round): the page is served")
            let stop = NSLock()
            nonisolated(unsafe) var stopped = false
            let hammers = (0..<4).map { _ in
                Thread {
                    while !stop.withLock({ stopped }) {
                        guard let c = try? TCP(port, timeoutSeconds: 1) else { continue }
                        c.send("GET /api/session HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
                        _ = c.readReply()
                    }
                }
            }
            for h in hammers { h.start() }
            try await Task.sleep(nanoseconds: 200_000_000)
            p.signal(SIGTERM)
            let ended = await eventually(20) { !p.isRunning }
            stop.withLock { stopped = true }
            #expect(ended, "round \(round): kioskd did not stop on SIGTERM while phones connected")
            if ended {
                let tail = String(p.errors().suffix(800))
                #expect(p.exitStatus == 0, "round \(round): kioskd exited with \(p.exitStatus); log:\n\(tail)")
            }
        }
    }
}

@Suite struct WebStreamQueueTests {
    @Test func aReaderThatFallsBehindIsDroppedAndStreamsAreCapped() async throws {
        var limits = WebLimits()
        limits.streamQueue = 2
        limits.maxStreams = 1
        let streams = WebStreams(limits: limits)
        let ch = EmbeddedChannel()
        try await ch.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        let (id, events) = try #require(streams.add(device: "d", channel: ch))
        #expect(streams.add(device: "e", channel: ch) == nil, "at most maxStreams at once")
        for _ in 0..<3 { streams.send(ByteBuffer(string: "event: state\ndata: {}\n\n"), to: id) }
        #expect(streams.count == 0, "the third event overflowed the queue of 2: the reader is dropped")
        #expect(!ch.isActive, "its connection is closed")
        var got = 0
        for await _ in events { got += 1 }
        #expect(got == 2, "what was queued is still delivered, then the stream ends")
    }
}
