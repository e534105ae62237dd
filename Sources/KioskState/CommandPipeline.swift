import Dispatch
import FoundationEssentials
import Glibc
import KioskCore
import Logging
import Synchronization

/// The command pipeline: every counter change from the control socket, the web page, MQTT,
/// touch and keys, and every other value kept in the state directory by the render loop's side
/// (the scene, theme and clock mode chosen: `submitWrites`), is decided and made durable here,
/// on a loop of its own (the commit loop: an epoll `EventLoop` on the `kioskd-commit` thread, or
/// a test's `ManualEventLoop`, see CommitLoop.swift), never on the render loop. Work that arrives
/// while a commit is in flight waits and is committed together as the next batch, with one
/// `StateStore.saveBatch` (one directory sync); each is answered only after its batch is on disk
/// ("acknowledged = on disk"), and the render loop receives the resulting values as messages
/// (`deliver`) without ever waiting.
///
/// Invariants: work is decided in the order it was submitted (so per counter and per key in
/// order: within a batch the last value written to a key wins); a change refused by its
/// counter's rules does not affect the others of its batch; a batch whose commit fails is
/// refused as a whole, writes included, and what a restart reads stays as before.
public final class CommandPipeline: Sendable {

    /// One counter change asked of the pipeline.
    public struct Change: Sendable, Equatable {
        /// The state key of the counter's value.
        public var key: String
        public var rules: CounterRules
        public var edit: CounterEdit
        /// The value on screen when submitted: the starting point when the pipeline has not
        /// seen the key yet (the screen shows every committed value, so they agree).
        public var shown: Int
        /// The scene holding the counter (for showing a change made without the render loop).
        public var scene: String
        /// An undo (`edit` gives back the value before the change undone): the value that change
        /// gave, which the counter must still have when decided, else the undo is refused and
        /// nothing is written. Nil: an ordinary change.
        public var undoes: Int?
        public init(key: String, rules: CounterRules, edit: CounterEdit, shown: Int, scene: String = "", undoes: Int? = nil) {
            self.key = key; self.rules = rules; self.edit = edit; self.shown = shown; self.scene = scene; self.undoes = undoes
        }
    }

    /// Where a change's completion runs: through `deliver` (the render loop, for changes
    /// submitted there), or on the pipeline's thread as soon as its batch is decided (changes
    /// submitted from elsewhere, e.g. the control server's thread: the render loop is only sent
    /// the new values, once per batch, through `onShow`).
    public enum Delivery: Sendable, Equatable { case deliver, here }

    /// A value committed by a change, for the render loop to show (by scene and counter name,
    /// resolved when it arrives: a reload's new scenes show it).
    public struct Shown: Sendable, Equatable {
        public var scene: String
        public var counter: String
        public var old: Int
        public var new: Int
        /// The wheels turn upwards (an increment, or a set to a larger value).
        public var up: Bool
        /// The change was an undo (`Change.undoes`).
        public var undo: Bool
        package init(scene: String, counter: String, old: Int, new: Int, up: Bool, undo: Bool = false) {
            self.scene = scene; self.counter = counter; self.old = old; self.new = new; self.up = up; self.undo = undo
        }
    }

    /// A counter the pipeline may change without asking the render loop (control socket).
    public struct Entry: Sendable, Equatable {
        public var scene: String
        public var key: String
        public var rules: CounterRules
        /// Its value when the directory was made.
        public var shown: Int
        public init(scene: String, key: String, rules: CounterRules, shown: Int) {
            self.scene = scene; self.key = key; self.rules = rules; self.shown = shown
        }
    }

    /// What became of a group of writes (`submitWrites`).
    public enum WriteOutcome: Sendable, Equatable {
        /// On disk, with the rest of its batch.
        case saved
        /// Not on disk: its batch could not be made durable (kind `.state`, with the errno of
        /// the failed call); what a restart reads is as before.
        case refused(KioskError)
    }

    /// What became of a change.
    public enum Outcome: Sendable, Equatable {
        /// On disk: the value went from `old` to `new`.
        case changed(old: Int, new: Int)
        /// The edit gives the value the counter already has; nothing to write.
        case unchanged(Int)
        /// Not carried out: the counter's rules refused it, or its batch could not be made
        /// durable (kind `.state`, with the errno of the failed call).
        case refused(KioskError)
    }

    /// Figures for status and the benchmark.
    public struct Counters: Sendable, Equatable {
        /// Batches committed (each one `saveBatch`: one fsync round).
        public var commits = 0
        /// Changes carried out (on disk).
        public var changed = 0
        /// Changes refused (rules or a failed commit).
        public var refused = 0
        /// Groups of writes (`submitWrites`) on disk.
        public var written = 0
        /// Groups of writes refused (a failed commit).
        public var writesRefused = 0
        /// The largest batch committed (changes and groups of writes).
        public var largestBatch = 0
    }

    public typealias Completion = @Sendable (Outcome) -> Void
    public typealias WriteCompletion = @Sendable (WriteOutcome) -> Void
    fileprivate enum Work {
        case change(Change, Completion)
        case writes([(key: String, value: String)], WriteCompletion)
        case clock(ClockChange, ClockCompletion)

        /// Answers this work refused, naming what was not changed and `why`.
        func refuse(because why: String) {
            switch self {
            case .change(let c, let completion): completion(.refused(KioskError.state("\(why); counter '\(c.rules.counter)' was not changed")))
            case .writes(let w, let completion): completion(.refused(KioskError.state("\(why); \(w.map(\.key).joined(separator: ", ")) not saved")))
            case .clock(let c, let completion): completion(.refused(KioskError.state("\(why); the clock of scene '\(c.scene)' was not changed")))
            }
        }
    }
    fileprivate struct Item { var work: Work; var delivery: Delivery }

    /// What the commit loop and the pipeline's callers share, behind `shared`.
    struct Shared {
        /// Counters by name, and by scene and name (`setDirectory`).
        var directory: [String: Entry] = [:]
        var scoped: [String: Entry] = [:]
        /// Shows the values committed by a batch's changes; called inside `deliver`, once per
        /// batch, before the batch's completions.
        var onShow: (@Sendable ([Shown]) -> Void)?
        fileprivate var queue: [Item] = []
        var hasQueued: Bool { !queue.isEmpty }
        /// Why submissions are refused from now on (`stop`, or a commit loop that could not start).
        var refusal: String?
        /// The loop batches are committed on (`start`), and whether a commit of what is queued
        /// is posted to it and not begun yet (one post per batch, not per submission).
        var loop: (any KioskLoop)?
        var commitPosted = false
        /// The `kioskd-commit` thread runs the commit loop (`start()`) and has not ended.
        var ownThread = false
        /// A batch is being decided and committed (`commitQueued`).
        var running = false
        var counters = Counters()
        /// The values the committed batches left, by key (read and written by `commitQueued` only).
        var known: [String: Int] = [:]
        /// The game clocks the committed batches left, by key (as `known`).
        var knownClocks: [String: GameClock] = [:]
    }
    let shared = Mutex(Shared())
    /// Signalled when the `kioskd-commit` thread has ended (`stop`).
    let ended = DispatchSemaphore(value: 0)

    /// Sets what `onShow` does (before `start`).
    public func setOnShow(_ f: @escaping @Sendable ([Shown]) -> Void) {
        shared.withLock { $0.onShow = f }
    }

    /// The counters the pipeline decides, by name, and by `scopedName` (each counter scene's
    /// own, for its touch and keys); replaces the last ones.
    public func setDirectory(_ entries: [String: Entry], scoped: [String: Entry] = [:]) {
        shared.withLock { $0.directory = entries; $0.scoped = scoped }
    }

    /// The entry for `counter`: of `scene` when given, else the first scene holding the name.
    public func entry(for counter: String, scene: String? = nil) -> Entry? {
        shared.withLock { s in
            if let scene { return s.scoped[Self.scopedName(scene: scene, counter: counter)] }
            return s.directory[counter]
        }
    }

    /// The key of a counter of one scene in the scoped directory.
    public static func scopedName(scene: String, counter: String) -> String { scene + "\u{1F}" + counter }

    private let store: StateStore
    private let deliver: @Sendable (@escaping @Sendable () -> Void) -> Void
    let logger: Logger

    /// `deliver` runs the completions of each batch (in submission order) where they belong:
    /// the daemon posts them to the render loop; tests run them at once.
    public init(store: StateStore, logger: Logger, deliver: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
        self.store = store
        self.logger = logger
        self.deliver = deliver
    }

    /// Queues `change`; `completion` runs (through `deliver`) after its batch was committed or refused.
    public func submit(_ change: Change, delivery: Delivery = .deliver, completion: @escaping Completion) {
        enqueue(Item(work: .change(change, completion), delivery: delivery))
    }

    /// Queues a game clock change, decided in order with the rest of its batch; `completion`
    /// runs (as `delivery` says) after its batch was committed or refused.
    public func submit(_ change: ClockChange, delivery: Delivery = .deliver, completion: @escaping ClockCompletion) {
        enqueue(Item(work: .clock(change, completion), delivery: delivery))
    }

    /// Queues values to write (a key given twice keeps its last value): committed with the next
    /// batch, counter changes and other writes included, all or nothing. `completion` runs after
    /// that batch was committed or refused: through `deliver` (in submission order with the
    /// batch's other completions) or, with `.here`, on the pipeline's thread.
    public func submitWrites(_ writes: [(key: String, value: String)], delivery: Delivery = .deliver,
                             completion: @escaping WriteCompletion) {
        enqueue(Item(work: .writes(writes, completion), delivery: delivery))
    }

    /// Queues `item` and posts a commit of the queue, or, once submissions are refused
    /// (`refusal`), answers it refused at once.
    private func enqueue(_ item: Item) {
        let refusal = shared.withLock { s -> String? in
            if let r = s.refusal { return r }
            s.queue.append(item)
            postCommit(&s)
            return nil
        }
        if let refusal { item.work.refuse(because: refusal) }
    }

    /// Refuses what is queued and every later submission, with `why` (a commit loop that could
    /// not start).
    func refuseAll(because why: String) {
        let items = shared.withLock { s -> [Item] in
            s.refusal = why
            defer { s.queue.removeAll() }
            return s.queue
        }
        for item in items { item.work.refuse(because: why) }
    }

    /// The figures so far.
    public var stats: Counters { shared.withLock { $0.counters } }

    /// Changes waiting for the next batch.
    public var queued: Int { shared.withLock { $0.queue.count } }

    /// Takes everything queued as one batch, decides it, commits its counter changes and writes
    /// with one `saveBatch` and delivers the outcomes. Returns false when nothing was queued. Runs
    /// on the commit loop only (posted there by `postCommit`).
    @discardableResult
    func commitQueued() -> Bool {
        let (batch, known, knownClocks) = shared.withLock { s -> ([Item], [String: Int], [String: GameClock]) in
            precondition(!s.running, "CommandPipeline.commitQueued called while a batch is being committed")
            let batch = s.queue
            s.queue.removeAll(keepingCapacity: true)
            s.commitPosted = false
            s.running = !batch.isEmpty
            return (batch, s.known, s.knownClocks)
        }
        guard !batch.isEmpty else { return false }
        var changes: [Change] = []
        for item in batch { if case .change(let c, _) = item.work { changes.append(c) } }
        var decision = Self.decide(changes, known: known)
        // Everything the batch writes, in submission order: each changed counter's new value
        // and each group of writes.
        var sequence: [(key: String, value: String)] = []
        var n = 0
        var clocks = knownClocks
        var clockOutcomes: [ClockOutcome] = []
        for item in batch {
            switch item.work {
            case .change(let c, _):
                if case .changed(_, let new) = decision.outcomes[n] { sequence.append((c.key, String(new))) }
                n += 1
            case .writes(let w, _):
                sequence += w
            case .clock(let c, _):
                let (o, write) = Self.decideClock(c, known: &clocks)
                clockOutcomes.append(o)
                if let write { sequence.append(write) }
            }
        }
        let writes = Self.merged(sequence)
        var committed = true
        var failure: KioskError?
        if !writes.isEmpty {
            do {
                try store.saveBatch(writes)
            } catch {
                committed = false
                let e = error as? KioskError
                failure = e ?? KioskError.state("\(error)")
                logger.error("cannot save a batch of changes; all of them are refused", metadata: [
                    "changes": "\(batch.count)", "keys": "\(writes.map(\.key).joined(separator: ", "))", "error": "\(error)"])
                for (i, o) in decision.outcomes.enumerated() {
                    guard case .changed(let old, let new) = o else { continue }
                    let c = changes[i]
                    decision.outcomes[i] = .refused(KioskError(.state, "counter '\(c.rules.counter)': cannot save \(new) (state key \(c.key)): \(error); the value stays \(old)",
                                                               errno: e?.errno ?? 0))
                }
                var m = 0
                for item in batch {
                    guard case .clock(let c, _) = item.work else { continue }
                    clockOutcomes[m] = Self.refusedClock(clockOutcomes[m], c, error: error, errno: e?.errno ?? 0)
                    m += 1
                }
            }
        }
        let outcomes = decision.outcomes, decidedClocks = clockOutcomes
        let writeOutcome: WriteOutcome = failure.map { .refused($0) } ?? .saved
        let newKnown = committed ? decision.known : nil
        let show = shared.withLock { s -> (@Sendable ([Shown]) -> Void)? in
            if let newKnown { s.known = newKnown; s.knownClocks = clocks }
            if committed && !writes.isEmpty { s.counters.commits += 1 }
            for o in outcomes {
                switch o {
                case .changed: s.counters.changed += 1
                case .refused: s.counters.refused += 1
                case .unchanged: break
                }
            }
            for o in decidedClocks {
                if case .refused = o { s.counters.refused += 1 } else { s.counters.changed += 1 }
            }
            for item in batch {
                guard case .writes = item.work else { continue }
                if committed { s.counters.written += 1 } else { s.counters.writesRefused += 1 }
            }
            s.counters.largestBatch = max(s.counters.largestBatch, batch.count)
            s.running = false
            return s.onShow
        }
        var later: [@Sendable () -> Void] = []
        var shown: [Shown] = []
        var here: [@Sendable () -> Void] = []
        n = 0
        var m = 0
        for item in batch {
            let run: @Sendable () -> Void
            switch item.work {
            case .change(let change, let completion):
                let o = outcomes[n]
                n += 1
                run = { completion(o) }
                if case .changed(let old, let new) = o {
                    shown.append(Shown(scene: change.scene, counter: change.rules.counter, old: old, new: new,
                                       up: change.edit.rollsUp(from: old, to: new), undo: change.undoes != nil))
                }
            case .writes(_, let completion):
                run = { completion(writeOutcome) }
            case .clock(_, let completion):
                let o = decidedClocks[m]
                m += 1
                run = { completion(o) }
            }
            switch item.delivery {
            case .deliver: later.append(run)
            case .here: here.append(run)
            }
        }
        if !later.isEmpty || (!shown.isEmpty && show != nil) {
            let values = shown, completions = later
            deliver {
                if !values.isEmpty { show?(values) }
                for c in completions { c() }
            }
        }
        // After the values were sent to the render loop: a client that reads the counter after
        // this answer finds it shown (the loop runs what was posted in order).
        for c in here { c() }
        return true
    }
}
