import Foundation
import KioskCore
@testable import KioskDaemon
import KioskState
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Power cuts at random points of random work (batches, single saves, checkpoints, take-backs
/// after failed calls) on `PowerCutDisk`: what a restart reads is always what the answers said —
/// every acknowledged batch there, every refused one absent, the batch in flight when the power
/// went wholly there or wholly absent.
@Suite struct StatePowerCutTests {
    static let keys = ["a", "b", "c", "d"]

    /// One run: the work of `seed` cut at a random call. Nil when the restart read what the
    /// answers said; otherwise what went wrong, with the answers given.
    static func run(seed: UInt64, base: String, phases: inout [String: Int]) -> String? {
        let dir = "\(base)/s\(seed)"
        let stateDir = "\(dir)/state", after = "\(dir)/after"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try? FileManager.default.createDirectory(atPath: stateDir, withIntermediateDirectories: true)
        chmod(stateDir, 0o750)
        var script = SeededRandom(seed: seed &* 0x2545_F491_4F6C_DD1D)
        let disk = PowerCutDisk(directory: stateDir, seed: seed)
        disk.cutAt = Int.random(in: 1...300, using: &script)
        switch Int.random(in: 0..<4, using: &script) {
        case 0: break
        case 1: disk.fsyncFailure = 0.04
        case 2: disk.fsyncFailsFrom = Int.random(in: 10...250, using: &script)
        default: disk.fsyncFailure = 0.02; disk.writeFailure = 0.04; disk.renameFailure = 0.04
        }
        var expected: [String: String] = [:]
        var said: [String] = []
        var refused: [String: String] = [:]  // value → the answer that refused it
        var inFlight: [(key: String, value: String)] = []
        var lastStep = "start"
        let unanswered = Mutex(false)
        if let store = try? FileStateStore(directory: stateDir, logger: quietLogger, syscalls: disk.syscalls, checkpoints: .manual) {
            store.trace = { lastStep = $0 }
            store.checkpointBytes = 150
            // kioskd exits here: the change is never answered, as when the power goes.
            store.onUnknownOutcome = { _ in unanswered.withLock { $0 = true } }
            var over = false
            /// One batch (or single save) and its answer; false once the power is gone or kioskd exited.
            func change(_ op: Int, batchOnly: Bool = false) -> Bool {
                // (A single `save` writes its file, which waits for a checkpoint's files: only batches beside one.)
                let single = Int.random(in: 0..<7, using: &script) == 0 && !batchOnly
                var batch: [(key: String, value: String)] = []
                for _ in 0..<(single ? 1 : Int.random(in: 1...3, using: &script)) {
                    let k = keys.randomElement(using: &script)!
                    batch.append((k, "\(op)\(k)"))
                }
                let what = batch.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
                var ok = true
                do {
                    if single { try store.save(batch[0].key, batch[0].value) } else { try store.saveBatch(batch) }
                } catch { ok = false }
                if disk.dead || unanswered.withLock({ $0 }) {
                    inFlight = batch
                    said.append("\(what): \(unanswered.withLock({ $0 }) ? "unanswered (kioskd exits)" : "in flight at the cut")")
                    over = true
                    return false
                }
                said.append("\(what): \(ok ? "saved" : "refused")")
                if ok { for b in batch { expected[b.key] = b.value } } else { for b in batch { refused[b.value] = what } }
                return true
            }
            // A batch committed while a checkpoint writes its state files (kioskd's commit thread
            // beside the checkpoint's), in about half of the checkpoints.
            var extra = 1000
            store.duringCheckpointFiles = {
                guard !over, Bool.random(using: &script) else { return }
                extra += 1
                said.append("(during a checkpoint's files)")
                _ = change(extra, batchOnly: true)
            }
            for op in 0..<40 where !disk.dead && !over {
                guard change(op) else { break }
                // After the answer, when the pipeline's queue is empty: a checkpoint if one is due
                // (not always, so that the journal also grows past `checkpointBytes`).
                if Bool.random(using: &script) {
                    store.checkpointIfDue()
                    if !over && (disk.dead || unanswered.withLock({ $0 })) { inFlight = []; said.append("checkpoint: cut"); break }
                }
            }
            disk.cut()
            store.abandon()
        } else {
            lastStep = "opening the store"
        }
        phases[lastStep.split(separator: " ").first.map(String.init) ?? lastStep, default: 0] += 1
        disk.image(into: after)
        let restart: FileStateStore
        do {
            restart = try FileStateStore(directory: after, logger: quietLogger, checkpoints: .manual)
        } catch {
            return "seed \(seed), cut at call \(disk.calls) (after '\(lastStep)'): the restart failed: \(error)"
        }
        defer { restart.close() }
        var read: [String: String] = [:]
        for k in keys { read[k] = restart.load(k) }
        var flight: [String: String] = [:]
        for b in inFlight { flight[b.key] = b.value }
        let landed = flight.contains { read[$0.key] == $0.value }
        var wrong: [String] = []
        for k in keys {
            let want = landed ? (flight[k] ?? expected[k]) : expected[k]
            if read[k] != want {
                let got = read[k] ?? "nothing"
                let why = read[k].flatMap { refused[$0] }.map { " — a value of the refused batch [\($0)]" } ?? ""
                wrong.append("\(k) = \(got), answers said \(want ?? "nothing")\(why)")
            }
        }
        guard !wrong.isEmpty else { return nil }
        return "seed \(seed), cut at call \(disk.calls) (after '\(lastStep)'): the restart read \(wrong.joined(separator: "; ")). Answers: \(said.joined(separator: " | "))"
    }

    /// 10 000 cut points in ten parts of 1 000 seeds, run side by side (`KIOSKD_POWERCUT_SEED=n`
    /// runs seed n alone, in the first part).
    @Test(arguments: 0..<10)
    func whatARestartReadsIsWhatTheAnswersSaidWhereverThePowerGoes(part: UInt64) throws {
        let base = "/dev/shm/kioskd-powercut-\(getpid())-\(part)"
        defer { try? FileManager.default.removeItem(atPath: base) }
        let one = ProcessInfo.processInfo.environment["KIOSKD_POWERCUT_SEED"].flatMap { UInt64($0) }
        if one != nil && part != 0 { return }
        let seeds: [UInt64] = one.map { [$0] } ?? Array((part * 1000 + 1)...(part * 1000 + 1000))
        var phases: [String: Int] = [:]
        var failures: [String] = []
        let started = Date()
        var runs = 0
        for seed in seeds {
            runs += 1
            if let f = Self.run(seed: seed, base: base, phases: &phases) {
                failures.append(f)
                if failures.count >= 3 { break }
            }
        }
        print("power cuts, part \(part): \(runs) runs in \(String(format: "%.1f", Date().timeIntervalSince(started))) s; cut after: \(phases.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
        for f in failures { Issue.record(Comment(rawValue: f)) }
        #expect(failures.isEmpty)
    }
}
