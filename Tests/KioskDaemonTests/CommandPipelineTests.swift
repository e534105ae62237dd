import Foundation
import KioskCore
@testable import KioskDaemon
import KioskScenes
import KioskState
import KioskTesting
import Logging
import Synchronization
import Testing

/// The command pipeline: decisions as plain values, group commit through a real
/// `FileStateStore` (faults injected with `StateFaults`), committed on a `ManualEventLoop` that
/// the test steps (each step: one batch of what was queued before it) or, for `stop`, on its
/// own `kioskd-commit` thread with explicit synchronisation — never timing.
@Suite struct CommandPipelineTests {
    let rules = CounterRules(counter: "HOME", digits: 2, minimum: 0)
    let awayRules = CounterRules(counter: "AWAY", digits: 2, minimum: 0)
    func change(_ key: String, _ edit: CounterEdit, shown: Int = 0, rules r: CounterRules? = nil) -> CommandPipeline.Change {
        .init(key: key, rules: r ?? (key == "home" ? rules : awayRules), edit: edit, shown: shown)
    }

    @Test func changesOfOneCounterAreDecidedInOrderFromTheValuesBeforeThem() {
        let d = CommandPipeline.decide([change("home", .increment), change("away", .set(7)), change("home", .increment),
                                        change("home", .set(50)), change("home", .decrement)], known: ["home": 3])
        #expect(d.outcomes == [.changed(old: 3, new: 4), .changed(old: 0, new: 7), .changed(old: 4, new: 5),
                               .changed(old: 5, new: 50), .changed(old: 50, new: 49)])
        #expect(d.writes.map(\.key) == ["home", "away"] && d.writes.map(\.value) == ["49", "7"])
        #expect(d.known == ["home": 49, "away": 7])
    }

    @Test func aRefusedChangeDoesNotFailItsNeighbours() {
        let d = CommandPipeline.decide([change("home", .increment), change("away", .decrement), change("home", .set(100)),
                                        change("home", .increment)], known: [:])
        #expect(d.outcomes[0] == .changed(old: 0, new: 1))
        guard case .refused(let e1) = d.outcomes[1], case .refused(let e2) = d.outcomes[2] else {
            Issue.record("expected refusals, got \(d.outcomes)"); return
        }
        #expect(e1.kind == .outOfRange && e1.message.contains("'AWAY' is at its minimum 0"))
        #expect(e2.kind == .outOfRange && e2.message.contains("above the largest value 99"))
        #expect(d.outcomes[3] == .changed(old: 1, new: 2))
        #expect(d.writes.map(\.key) == ["home"] && d.writes.map(\.value) == ["2"])
    }

    @Test func aKnownValueOutsideNewRulesGivesWayToTheValueShown() {
        // After a reload with fewer digits the scene starts from what it shows.
        let d = CommandPipeline.decide([change("home", .increment, shown: 5)], known: ["home": 500])
        #expect(d.outcomes == [.changed(old: 5, new: 6)])
    }

    /// A pipeline over a real store whose completions are collected in order.
    final class Harness: @unchecked Sendable {
        let dir: String
        let store: FileStateStore
        let pipeline: CommandPipeline
        /// The pipeline's commit loop: each step commits what was queued before it.
        let commits = ManualEventLoop()
        let outcomes = Mutex<[(Int, CommandPipeline.Outcome)]>([])
        init(syscalls: FileStateStore.Syscalls = .system, tag: String = #function) throws {
            dir = tempDir(tag)
            store = try FileStateStore(directory: dir, logger: Logger(label: "test"), syscalls: syscalls)
            pipeline = CommandPipeline(store: store, logger: Logger(label: "test")) { $0() }
            pipeline.start(on: commits)
        }
        func submit(_ n: Int, _ c: CommandPipeline.Change) {
            pipeline.submit(c) { [self] o in self.outcomes.withLock { $0.append((n, o)) } }
        }
        func file(_ key: String) -> String? {
            try? String(contentsOfFile: store.path(for: key), encoding: .utf8)
        }
    }

    @Test func aBatchIsOneJournalRecordWithOneFsyncAndIsAnsweredInOrder() throws {
        let h = try Harness()
        var steps: [String] = []
        h.store.trace = { steps.append($0) }
        let journal = "\(h.dir)/\(FileStateStore.journalName)"
        for i in 0..<5 { h.submit(i, change(i % 2 == 0 ? "home" : "away", .increment)) }
        #expect(h.commits.step() == 1)
        #expect(h.outcomes.withLock { $0.map(\.0) } == [0, 1, 2, 3, 4])
        #expect(h.outcomes.withLock { $0.map(\.1) } == [.changed(old: 0, new: 1), .changed(old: 0, new: 1), .changed(old: 1, new: 2),
                                                       .changed(old: 1, new: 2), .changed(old: 2, new: 3)])
        // The first batch makes the journal (its header synced, renamed into place, the directory
        // synced once for its name).
        #expect(steps == ["open \(journal)", "open \(journal).new", "fsync \(journal).new", "rename \(journal).new \(journal)",
                          "fsync-dir \(h.dir)", "append \(journal)", "fsync \(journal)"], "\(steps)")
        steps.removeAll()
        for i in 5..<9 { h.submit(i, change(i % 2 == 0 ? "home" : "away", .increment)) }
        #expect(h.commits.step() == 1)
        #expect(steps == ["append \(journal)", "fsync \(journal)"], "one fsync for a batch of two keys: \(steps)")
        #expect(h.store.load("home") == "5" && h.store.load("away") == "4")
        #expect(h.pipeline.stats.commits == 2 && h.pipeline.stats.changed == 9)
        // The state files are written at checkpoints, not by every batch.
        #expect(h.file("home") == nil && h.file("away") == nil)
        // What a restart reads (after a kill: the store is not closed, so no checkpoint ran).
        let reread = try FileStateStore(directory: h.dir, logger: Logger(label: "test"), access: .readOnly)
        #expect(reread.load("home") == "5" && reread.load("away") == "4")
    }

    @Test(arguments: ["fsync /", "append "])
    func aFailedStepRefusesTheWholeBatchAndARestartReadsTheValuesBefore(_ failing: String) throws {
        let faults = StateFaults()
        let h = try Harness(syscalls: faults.syscalls, tag: "batchFault\(failing)")
        h.submit(0, change("home", .set(10)))
        h.submit(1, change("away", .set(20)))
        h.commits.step()
        let journal = "\(h.dir)/\(FileStateStore.journalName)"
        let size = { (try? FileManager.default.attributesOfItem(atPath: journal)[.size] as? Int) ?? -1 }
        let before = size()
        #expect(before > 0)
        faults.failWhen = { $0.hasPrefix(failing) }
        h.store.trace = faults.trace
        h.submit(2, change("home", .increment))
        h.submit(3, change("away", .increment))
        h.submit(4, change("home", .decrement, rules: CounterRules(counter: "HOME", digits: 2, minimum: 11)))
        h.commits.step()
        let outcomes = h.outcomes.withLock { Array($0.suffix(3)) }
        for (n, o) in outcomes.prefix(2) {
            guard case .refused(let e) = o else { Issue.record("change \(n) was not refused: \(o)"); continue }
            #expect(e.kind == .state && e.message.contains("cannot save") && e.message.contains("the value stays"), "\(e.message)")
        }
        #expect(size() == before, "the record was taken back: \(faults.steps)")
        #expect(h.store.load("home") == "10" && h.store.load("away") == "20")
        let killed = try FileStateStore(directory: h.dir, logger: Logger(label: "test"), access: .readOnly)
        #expect(killed.load("home") == "10" && killed.load("away") == "20")
        // The pipeline did not take the refused values as known: the next batch starts from 10 and
        // 20 — after a failed write; a failed fsync is final, so every later change is refused.
        faults.failWhen = nil
        h.submit(5, change("home", .increment))
        h.commits.step()
        if failing.hasPrefix("fsync") {
            guard case .refused(let e) = h.outcomes.withLock({ $0.last?.1 }) else { Issue.record("a change after a failed fsync was not refused"); return }
            #expect(e.message.contains("state is not being saved") && e.message.contains("fsync"), "\(e.message)")
            #expect(h.store.durability != .durable)
        } else {
            #expect(h.outcomes.withLock { $0.last?.1 } == .changed(old: 10, new: 11))
        }
        h.store.close()
        let reread = try FileStateStore(directory: h.dir, logger: Logger(label: "test"))
        #expect(reread.load("home") == (failing.hasPrefix("fsync") ? "10" : "11") && reread.load("away") == "20")
    }

    /// While one commit is in its fsync, N more changes arrive; they are committed together, as
    /// the next batch, with one journal sync. On the test's commit loop: the changes are
    /// submitted from inside that fsync, so "during the commit" is a point, not a race.
    @Test func changesArrivingDuringACommitAreCommittedTogether() throws {
        let n = 50
        let later = (1..<n).map { i in change(i % 2 == 0 ? "home" : "away", .increment) }
        let results = Mutex<[Int: CommandPipeline.Outcome]>([:])
        let pipeline = Mutex<CommandPipeline?>(nil)
        let journalSyncs = Mutex(0)
        let submitted = Mutex(false)
        let sys = FileStateStore.Syscalls.system
        let store = try FileStateStore(directory: tempDir(), logger: Logger(label: "test"), syscalls: .init(
            openat: sys.openat, write: sys.write,
            fsync: { fd in
                // During the first commit's first fsync: the rest arrive. (Opening the store
                // fsyncs too: the state directory's version stamp, before there is a pipeline.)
                if let p = pipeline.withLock({ $0 }), !submitted.withLock({ s in defer { s = true }; return s }) {
                    for (i, c) in zip(1..., later) { p.submit(c) { o in results.withLock { $0[i] = o } } }
                    #expect(p.queued == n - 1)
                }
                return sys.fsync(fd)
            },
            renameat: sys.renameat, unlinkat: sys.unlinkat, mkdir: sys.mkdir))
        store.trace = { step in if step.hasSuffix("/\(FileStateStore.journalName)") && step.hasPrefix("fsync ") { journalSyncs.withLock { $0 += 1 } } }
        let commits = ManualEventLoop()
        let p = CommandPipeline(store: store, logger: Logger(label: "test")) { $0() }
        p.start(on: commits)
        pipeline.withLock { $0 = p }
        p.submit(change("home", .increment)) { o in results.withLock { $0[0] = o } }
        #expect(commits.step() == 1)
        #expect(results.withLock { $0.count } == 1 && p.queued == n - 1, "only the first change is answered after the first commit")
        #expect(commits.step() == 1, "the changes that arrived during the commit are one batch")
        #expect(commits.step() == 0)
        #expect(journalSyncs.withLock { $0 } == 2, "one journal sync per batch")
        #expect(p.stats.commits == 2 && p.stats.changed == n && p.stats.largestBatch == n - 1)
        #expect(results.withLock { $0.count } == n && results.withLock { $0[n - 1] } == .changed(old: 24, new: 25))
        #expect(store.load("home") == "25" && store.load("away") == "25")
    }

    /// A change submitted from elsewhere than the render loop (`.here`: the control server's
    /// thread) is answered on the pipeline's thread once committed; the loop is only sent the
    /// value to show, once per batch, before that answer.
    @Test func aChangeFromTheControlServerIsAnsweredWithoutTheLoopWhichIsSentTheValue() throws {
        let store = MemoryStateStore()
        let posted = Mutex<[@Sendable () -> Void]>([])
        let pipeline = CommandPipeline(store: store, logger: Logger(label: "test")) { work in posted.withLock { $0.append(work) } }
        let commits = ManualEventLoop()
        pipeline.start(on: commits)
        let shown = Mutex<[CommandPipeline.Shown]>([])
        pipeline.setOnShow { s in shown.withLock { $0 += s } }
        let answers = Mutex<[CommandPipeline.Outcome]>([])
        pipeline.submit(change("home", .set(7), shown: 2).withScene("score"), delivery: .here) { o in
            // The value is on its way to the loop before the answer.
            #expect(posted.withLock { $0.count } == 1)
            answers.withLock { $0.append(o) }
        }
        pipeline.submit(change("home", .decrement).withScene("score"), delivery: .here) { o in answers.withLock { $0.append(o) } }
        #expect(answers.withLock { $0 }.isEmpty, "answered before its commit")
        commits.step()
        #expect(answers.withLock { $0 } == [.changed(old: 2, new: 7), .changed(old: 7, new: 6)])
        #expect(store.load("home") == "6")
        #expect(shown.withLock { $0 }.isEmpty, "nothing shown until the loop runs what was posted")
        for work in posted.withLock({ $0 }) { work() }
        #expect(shown.withLock { $0 } == [.init(scene: "score", counter: "HOME", old: 2, new: 7, up: true),
                                          .init(scene: "score", counter: "HOME", old: 7, new: 6, up: false)])
    }

    // MARK: writes (`submitWrites`): the scene, theme and clock mode chosen

    /// A store that records each `saveBatch` (and refuses `save`: the pipeline only commits batches).
    final class BatchRecorder: StateStore, Sendable {
        let base = MemoryStateStore()
        let batches = Mutex<[[String]]>([])
        func load(_ key: String) -> String? { base.load(key) }
        func save(_ key: String, _ value: String) throws { throw KioskError.state("save called; the pipeline commits with saveBatch") }
        func saveBatch(_ changes: [(key: String, value: String)]) throws {
            batches.withLock { $0.append(changes.map { "\($0.key)=\($0.value)" }) }
            for c in changes { try base.save(c.key, c.value) }
        }
    }

    @Test func writesAreMergedInSubmissionOrderWithTheLastValueOfEachKey() {
        let m = CommandPipeline.merged([("a", "1"), ("b", "1"), ("a", "2"), ("c", "1"), ("b", "3")])
        #expect(m.map(\.key) == ["a", "b", "c"] && m.map(\.value) == ["2", "3", "1"])
    }

    /// Counter changes and writes submitted together are committed with one `saveBatch`; each
    /// key once with the last value submitted for it; completions in submission order.
    @Test func writesAndCounterChangesOfABatchAreCommittedTogether() throws {
        let store = BatchRecorder()
        let pipeline = CommandPipeline(store: store, logger: Logger(label: "test")) { $0() }
        let commits = ManualEventLoop()
        pipeline.start(on: commits)
        let order = Mutex<[String]>([])
        pipeline.submit(change("home", .increment)) { o in order.withLock { $0.append("home \(o)") } }
        pipeline.submitWrites([("daemon.scene", "clock")]) { o in order.withLock { $0.append("scene \(o)") } }
        pipeline.submit(change("home", .increment)) { o in order.withLock { $0.append("home \(o)") } }
        pipeline.submitWrites([("daemon.theme", "dark"), ("daemon.scene", "score")]) { o in order.withLock { $0.append("theme \(o)") } }
        #expect(commits.step() == 1)
        #expect(store.batches.withLock { $0 } == [["home=2", "daemon.scene=score", "daemon.theme=dark"]])
        #expect(order.withLock { $0 } == ["home changed(old: 0, new: 1)", "scene saved", "home changed(old: 1, new: 2)", "theme saved"])
        #expect(pipeline.stats.commits == 1 && pipeline.stats.changed == 2 && pipeline.stats.written == 2 && pipeline.stats.largestBatch == 4)
        // Writes alone are a batch too; a refused counter change does not keep them from disk.
        pipeline.submit(change("away", .decrement)) { _ in }
        pipeline.submitWrites([("daemon.scene", "clock")]) { o in order.withLock { $0.append("scene \(o)") } }
        commits.step()
        #expect(store.batches.withLock { $0.last } == ["daemon.scene=clock"])
        #expect(order.withLock { $0.last } == "scene saved")
        #expect(store.load("daemon.scene") == "clock")
    }

    /// A failed commit refuses the whole batch, writes included, and what a restart reads stays
    /// as it was (the batch's journal record is taken back).
    @Test(arguments: ["fsync /", "append "])
    func aFailedCommitRefusesWritesTooAndARestartReadsTheValuesBefore(_ failing: String) throws {
        let faults = StateFaults()
        faults.code = ENOSPC
        let h = try Harness(syscalls: faults.syscalls, tag: "writesFault\(failing)")
        let writes = Mutex<[CommandPipeline.WriteOutcome]>([])
        h.submit(0, change("home", .set(10)))
        h.pipeline.submitWrites([("daemon.scene", "clock")]) { o in writes.withLock { $0.append(o) } }
        h.commits.step()
        #expect(writes.withLock { $0 } == [.saved])
        faults.failWhen = { $0.hasPrefix(failing) }
        h.store.trace = faults.trace
        h.submit(1, change("home", .increment))
        h.pipeline.submitWrites([("daemon.scene", "score"), ("daemon.theme", "dark")]) { o in writes.withLock { $0.append(o) } }
        h.commits.step()
        guard case .refused(let e)? = writes.withLock({ $0.last }) else {
            Issue.record("the writes were not refused: \(writes.withLock { $0 })"); return
        }
        #expect(e.kind == .state && e.errno == ENOSPC, "\(e)")
        guard case .refused? = h.outcomes.withLock({ $0.last?.1 }) else { Issue.record("the counter change was not refused"); return }
        #expect(h.store.load("daemon.scene") == "clock" && h.store.load("home") == "10")
        #expect(h.pipeline.stats.writesRefused == 1)
        // Killed now: what a restart reads.
        let killed = try FileStateStore(directory: h.dir, logger: Logger(label: "test"), access: .readOnly)
        #expect(killed.load("daemon.scene") == "clock" && killed.load("daemon.theme") == nil && killed.load("home") == "10", "\(faults.steps)")
        h.store.close()
        let reread = try FileStateStore(directory: h.dir, logger: Logger(label: "test"))
        #expect(reread.load("daemon.scene") == "clock" && reread.load("daemon.theme") == nil && reread.load("home") == "10")
    }

    /// A pipeline started on its own `kioskd-commit` thread over a `HeldBatchStore` whose first
    /// batch waits for `release` once it has signalled `entered`.
    func startedWithFirstBatchHeld() -> (CommandPipeline, HeldBatchStore, entered: DispatchSemaphore, release: DispatchSemaphore) {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let held = Mutex(false)
        let store = HeldBatchStore { if held.withLock({ h in defer { h = true }; return !h }) { entered.signal(); release.wait() } }
        let pipeline = CommandPipeline(store: store, logger: Logger(label: "test")) { $0() }
        pipeline.start()
        return (pipeline, store, entered, release)
    }

    /// Writes of one key from several batches land in submission order: while one commit is in
    /// its `saveBatch`, later values queue (submitted from inside it, on the test's commit loop);
    /// the last one submitted is what a restart reads.
    @Test func writesOfOneKeyAreCommittedInSubmissionOrder() throws {
        let order = Mutex<[String]>([])
        let pipeline = Mutex<CommandPipeline?>(nil)
        let first = Mutex(true)
        let store = HeldBatchStore {
            guard first.withLock({ f in defer { f = false }; return f }), let p = pipeline.withLock({ $0 }) else { return }
            for v in ["b", "c", "d"] {
                p.submitWrites([("daemon.scene", v)], delivery: .here) { _ in order.withLock { $0.append(v) } }
            }
        }
        let commits = ManualEventLoop()
        let p = CommandPipeline(store: store, logger: Logger(label: "test")) { $0() }
        p.start(on: commits)
        pipeline.withLock { $0 = p }
        p.submitWrites([("daemon.scene", "a")], delivery: .here) { _ in order.withLock { $0.append("a") } }
        #expect(commits.runPending() == 2)
        #expect(order.withLock { $0 } == ["a", "b", "c", "d"])
        #expect(store.batches.withLock { $0 } == [["daemon.scene=a"], ["daemon.scene=d"]])
        #expect(store.load("daemon.scene") == "d")
    }

    /// On a test's commit loop, `stop` refuses later changes at once and leaves what was queued
    /// before it to the next step, which commits and answers it.
    @Test func stopOnATestsLoopRefusesLaterChangesAndTheNextStepCommitsTheRest() throws {
        let store = MemoryStateStore()
        let commits = ManualEventLoop()
        let pipeline = CommandPipeline(store: store, logger: Logger(label: "test")) { $0() }
        pipeline.start(on: commits)
        let answers = Mutex<[CommandPipeline.Outcome]>([])
        for _ in 0..<3 { pipeline.submit(change("home", .increment)) { o in answers.withLock { $0.append(o) } } }
        pipeline.stop()
        pipeline.submit(change("home", .increment)) { o in answers.withLock { $0.append(o) } }
        guard case .refused(let e)? = answers.withLock({ $0.first }) else {
            Issue.record("a change after stop was not refused at once: \(answers.withLock { $0 })"); return
        }
        #expect(e.message.contains("kioskd is stopping"))
        #expect(store.load("home") == nil)
        #expect(commits.step() == 1)
        #expect(answers.withLock { Array($0.dropFirst()) } == [.changed(old: 0, new: 1), .changed(old: 1, new: 2), .changed(old: 2, new: 3)])
        #expect(store.load("home") == "3")
    }

    /// `stop` returns once the thread committed and answered everything submitted before it;
    /// a change submitted afterwards is refused at once, and a second `stop` (from another
    /// thread too) returns without waiting.
    @Test func stopCommitsWhatWasSubmittedThenRefusesAndStopsAgainAtOnce() throws {
        let (pipeline, store, entered, release) = startedWithFirstBatchHeld()
        let answers = Mutex<[CommandPipeline.Outcome]>([])
        pipeline.submit(change("home", .increment)) { o in answers.withLock { $0.append(o) } }
        entered.wait()
        for _ in 1..<20 { pipeline.submit(change("home", .increment)) { o in answers.withLock { $0.append(o) } } }
        // Two stops at once while the first batch is held: both wait for the queued work.
        let stopped = DispatchSemaphore(value: 0)
        Thread { pipeline.stop(); stopped.signal() }.start()
        Thread { pipeline.stop(); stopped.signal() }.start()
        #expect(stopped.wait(timeout: .now() + 0.2) == .timedOut, "stop returned before the held batch was committed")
        release.signal()
        #expect(stopped.wait(timeout: .now() + 5) == .success && stopped.wait(timeout: .now() + 5) == .success)
        #expect(answers.withLock { $0.count } == 20 && answers.withLock { $0.last } == .changed(old: 19, new: 20))
        #expect(store.load("home") == "20")
        let late = Mutex<CommandPipeline.Outcome?>(nil)
        pipeline.submit(change("home", .increment)) { o in late.withLock { $0 = o } }
        guard case .refused(let e)? = late.withLock({ $0 }) else {
            Issue.record("a change after stop was not refused at once: \(String(describing: late.withLock { $0 }))")
            return
        }
        #expect(e.message.contains("kioskd is stopping"))
        let start = DispatchTime.now()
        pipeline.stop(timeout: 5)
        #expect(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds < 1_000_000_000)
        #expect(store.load("home") == "20")
    }

    /// Records batches; `before` runs at the start of each (to hold one).
    final class HeldBatchStore: StateStore, Sendable {
        let base = MemoryStateStore()
        let batches = Mutex<[[String]]>([])
        let before: @Sendable () -> Void
        init(before: @escaping @Sendable () -> Void) { self.before = before }
        func load(_ key: String) -> String? { base.load(key) }
        func save(_ key: String, _ value: String) throws { try saveBatch([(key, value)]) }
        func saveBatch(_ changes: [(key: String, value: String)]) throws {
            before()
            batches.withLock { $0.append(changes.map { "\($0.key)=\($0.value)" }) }
            for c in changes { try base.save(c.key, c.value) }
        }
    }

}

extension CommandPipeline.Change {
    func withScene(_ scene: String) -> Self { var c = self; c.scene = scene; return c }
}
