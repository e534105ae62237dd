import Foundation
import KioskCEC
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskDaemonTesting
import KioskState
import KioskTesting
import KioskTestTraits
import Testing

/// `undo` bound to a key (`[scene.NAME.keys]`): takes back exactly the scene's last counter
/// change, whatever made it, through the command pipeline (kept like any change).
@Suite(.ownThreads) struct CounterUndoKeyTests {
    static func config(_ d: String, keys: String = "KEY_BACKSPACE = \"undo\"") -> String {
        """
        state_dir = "\(d)/state"
        [display]
        backend = "headless"
        headless_size = "320x200"
        [scene.board]
        kind = "counter"
        digits = 2
        roll_ms = 0
        [[scene.board.counter]]
        name = "home"
        [[scene.board.counter]]
        name = "away"
        [scene.board.keys]
        KEY_UP = "increment home"
        KEY_A = "increment away"
        \(keys)
        """
    }

    func press(_ daemon: Daemon, _ key: String) throws {
        let code = try #require(KeyCode.code(named: key))
        daemon.manager.input(.key(code: code, state: .pressed, timeUsec: 1))
        daemon.manager.input(.key(code: code, state: .released, timeUsec: 2))
        for _ in 0..<4 { try daemon.step() }
    }

    func values(_ daemon: Daemon) throws -> [Int?] {
        [try daemon.counterValue("home"), try daemon.counterValue("away")]
    }

    @Test func anUndoKeyTakesBackExactlyTheLastChangeAndTheUndoIsKept() throws {
        let d = tempDir()
        let loop = ManualEventLoop()
        var daemon = try DaemonRig.start(Self.config(d), in: d, loop: loop, time: loop, logger: quietLogger)
        try press(daemon, "KEY_UP")
        try press(daemon, "KEY_UP")
        try press(daemon, "KEY_A")
        #expect(try values(daemon) == [2, 1])
        // A change from elsewhere (kioskctl) is a change like the keys': undone first.
        #expect(try daemon.answer(.counter(name: "home", op: .set, value: 7)).status == 200)
        #expect(try values(daemon) == [7, 1])
        try press(daemon, "KEY_BACKSPACE")
        #expect(try values(daemon) == [2, 1], "the set to 7 undone")
        try press(daemon, "KEY_BACKSPACE")
        #expect(try values(daemon) == [2, 0], "then AWAY's +1")
        try press(daemon, "KEY_BACKSPACE")
        #expect(try values(daemon) == [1, 0], "then HOME's second +1")
        // Kept: a restart shows the values the undos left.
        daemon.shutdown()
        let again = ManualEventLoop(monotonic: loop.monotonic + 1_000_000_000, realtime: loop.realtime + 1_000_000_000)
        daemon = try DaemonRig.start(Self.config(d), in: d, loop: again, time: again, logger: quietLogger)
        defer { daemon.shutdown() }
        #expect(try values(daemon) == [1, 0])
        // A fresh start has nothing to undo: the values stay.
        try press(daemon, "KEY_BACKSPACE")
        #expect(try values(daemon) == [1, 0])
        try press(daemon, "KEY_A")
        try press(daemon, "KEY_BACKSPACE")
        #expect(try values(daemon) == [1, 0])
    }

    /// A TV remote's button mapped to a key in `[display.cec.keys]` undoes as that key does: the
    /// key code the remote's yellow button stands for, arriving as the CEC link hands it on.
    @Test func aRemoteButtonMappedToTheUndoKeyUndoes() throws {
        let d = tempDir()
        let cec = try loadConfig("[display]\nbackend = \"headless\"\n[display.cec]\nadapter = \"/dev/cec1\"\n[display.cec.keys]\nyellow = \"KEY_BACKSPACE\"\n[scene.clock]\nkind = \"clock\"\n")
        let yellow = try #require(CECRemoteKeyName.uiCommand(named: "yellow"))
        let code = try #require(cec.outputs[0].cecKeys(cec.display).keyCode(uiCommand: yellow))
        #expect(code == KeyCode.code(named: "KEY_BACKSPACE"))
        let loop = ManualEventLoop()
        let daemon = try DaemonRig.start(Self.config(d), in: d, loop: loop, time: loop, logger: quietLogger)
        defer { daemon.shutdown() }
        try press(daemon, "KEY_A")
        try press(daemon, "KEY_UP")
        daemon.manager.input(.key(code: code, state: .pressed, timeUsec: 1))
        for _ in 0..<4 { try daemon.step() }
        #expect(try values(daemon) == [0, 1])
    }

    @Test func anUndoOfACounterChangedSinceIsRefusedAndWritesNothing() {
        let rules = CounterRules(counter: "home", digits: 2, minimum: 0)
        // The change to undo gave 4; the counter is 5 by now: refused, the value stays.
        let stale = CommandPipeline.Change(key: "k", rules: rules, edit: .set(3), shown: 0, undoes: 4)
        let refused = CommandPipeline.decide([stale], known: ["k": 5])
        guard case .refused(let e) = refused.outcomes.first else { Issue.record("not refused: \(refused.outcomes)"); return }
        #expect(e.message == "counter 'home' changed since (it is 5, the change to undo gave 4); nothing was undone")
        #expect(refused.writes.isEmpty && refused.known == ["k": 5])
        let fresh = CommandPipeline.decide([stale], known: ["k": 4])
        #expect(fresh.outcomes == [.changed(old: 4, new: 3)] && fresh.known == ["k": 3])
    }

    @Test func undoIsForKeysAloneAndTakesNoCounter() throws {
        let d = tempDir()
        let named = configError { _ = try DaemonRig.make(Self.config(d, keys: "KEY_U = \"undo home\""), in: d, logger: quietLogger) }
        #expect(named?.contains("key 'scene.board.keys.KEY_U': \"undo\" takes no counter: it takes back the scene's last counter change") == true, "\(named ?? "")")
        let gesture = configError {
            _ = try DaemonRig.make(Self.config(d).replacingOccurrences(of: "roll_ms = 0", with: "roll_ms = 0\nlong_press = \"undo\""), in: d, logger: quietLogger)
        }
        #expect(gesture?.contains("key 'scene.board.long_press': \"undo\" is for keys only") == true, "\(gesture ?? "")")
        let unknown = configError { _ = try DaemonRig.make(Self.config(d, keys: "KEY_U = \"undoo\""), in: d, logger: quietLogger) }
        #expect(unknown?.contains("\"none\", \"undo\"") == true, "the actions listed: \(unknown ?? "")")
    }
}
