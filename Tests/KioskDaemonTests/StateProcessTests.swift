import Foundation
import KioskControl
import KioskCore
import KioskDaemon
import KioskTestTraits
import Testing
import KioskTesting

/// The state guarantees with the real `kioskd` binary (KIOSK_SLOW_TESTS=1, see ProcessTests).
@Suite(.ownThreads, .serialized, .enabled(if: slowTests, "set KIOSK_SLOW_TESTS=1 to run the kioskd process tests"))
struct StateProcessTests {
    func config(state: String, socket: String) -> String {
        """
        state_dir = "\(state)"
        [display]
        backend = "headless"
        headless_size = "320x180"
        [scene.score]
        kind = "counter"
        [[scene.score.counter]]
        name = "HOME"
        [control]
        socket = "\(socket)"
        """
    }

    func waitForSocket(_ socket: String, _ child: Child) -> Bool {
        for _ in 0..<1200 {
            if ControlClient.socketAnswers(socket) { return true }
            if !child.process.isRunning { break }
            usleep(25_000)
        }
        Issue.record("kioskd did not open \(socket); its log:\n\(child.log)")
        return false
    }

    func send(_ socket: String, _ post: Bool, _ path: String) throws -> ControlResponse {
        try ControlClient(socketPath: socket, timeout: 5).send(method: post ? .POST : .GET, path: path)
    }

    @Test func aSecondKioskdExitsAtOnceAndLeavesTheStateAlone() throws {
        let d = tempDir()
        let path = write(config(state: "\(d)/state", socket: "\(d)/c.sock"), d)
        let first = try Child(Binaries.kioskd, ["--config", path], log: "\(d)/log1")
        guard waitForSocket("\(d)/c.sock", first) else { return }
        #expect(try send("\(d)/c.sock", true, "/counter/HOME/inc").jsonObject?["value"] as? Int == 1)
        // A damaged file the second one would have moved aside (the first read it at its start).
        _ = FileManager.default.createFile(atPath: "\(d)/state/daemon.scene.state", contents: Data("junk".utf8))
        let before = directorySnapshot("\(d)/state")
        let second = try Child(Binaries.kioskd, ["--config", path], log: "\(d)/log2")
        #expect(second.wait(seconds: 20))
        #expect(second.process.exitStatus == 1)
        #expect(second.log.contains("kioskd: another kioskd (pid \(first.process.pid)) is using the state directory \(d)/state"), "\(second.log)")
        #expect(directorySnapshot("\(d)/state") == before)
        #expect(try send("\(d)/c.sock", false, "/counter/HOME").jsonObject?["value"] as? Int == 1)
        first.signal(SIGTERM)
        #expect(first.wait(seconds: 10))
    }

    /// As a user who may write and search the state directory but not read it (mode 0300): kioskd
    /// cannot sync the directory, so it says at start that state is not saved, and a refused
    /// change is not on disk after a restart.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
                   "needs root and /usr/bin/setpriv (util-linux) to run kioskd as another user"))
    func aDirectoryThatCannotBeReadIsNotUsedForSaving() throws {
        let setpriv = "/usr/bin/setpriv"
        let d = tempDir()
        let state = "\(d)/state", run = "\(d)/run"
        for (dir, mode) in [(state, 0o300), (run, 0o700)] {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            chown(dir, 65534, 65534)
            chmod(dir, mode_t(mode))
        }
        let path = write(config(state: state, socket: "\(run)/c.sock"), d)
        let args = ["--reuid=65534", "--regid=65534", "--clear-groups", Binaries.kioskd, "--config", path]
        for round in 0..<2 {
            let child = try Child(setpriv, args, log: "\(d)/log\(round)")
            guard waitForSocket("\(run)/c.sock", child) else { return }
            let status = try send("\(run)/c.sock", false, "/status").jsonObject?["state"] as? [String: Any]
            #expect(status?["durable"] as? Bool == false, "\(status ?? [:])")
            #expect((status?["reason"] as? String)?.contains("cannot open the state directory \(state)") == true, "\(status ?? [:])")
            #expect(try send("\(run)/c.sock", false, "/counter/HOME").jsonObject?["value"] as? Int == 0, "round \(round)")
            let r = try send("\(run)/c.sock", true, "/counter/HOME/inc")
            #expect(r.status == 500)
            #expect((r.jsonObject?["error"] as? String)?.contains("the value stays 0") == true, "\(r.jsonObject ?? [:])")
            #expect(child.log.contains("state is not being saved"), "\(child.log)")
            child.signal(SIGTERM)
            #expect(child.wait(seconds: 10))
            #expect(!directorySnapshot(state).keys.contains { $0.hasPrefix("counter.") }, "\(directorySnapshot(state).keys.sorted())")
        }
    }
}
