import KioskCore


/// The pipeline's decisions as pure functions over plain values (tested without a disk).
extension CommandPipeline {
    /// The decision for one batch, as plain values (tested without a disk).
    public struct Decision: Equatable {
        /// One outcome per change, in order; `.changed` ones still need the commit.
        public var outcomes: [Outcome]
        /// The values to write: each changed key once, with its last value, in first-change order.
        public var writes: [(key: String, value: String)]
        /// The values known after the batch commits.
        public var known: [String: Int]

        public static func == (a: Decision, b: Decision) -> Bool {
            a.outcomes == b.outcomes && a.known == b.known
                && a.writes.map(\.key) == b.writes.map(\.key) && a.writes.map(\.value) == b.writes.map(\.value)
        }
    }

    /// Decides a batch in order against the values known before it: each change starts from
    /// the value the changes before it left (per counter in order); a refusal touches nothing.
    public static func decide(_ changes: [Change], known: [String: Int]) -> Decision {
        var values = known
        var outcomes: [Outcome] = []
        var writeOrder: [String] = []
        for c in changes {
            // A value known from an earlier batch, unless the counter's rules changed since
            // (a reload with other digits or minimum): then the value on screen.
            let old = values[c.key].flatMap { ($0 >= c.rules.minimum && $0 <= c.rules.maximum) ? $0 : nil } ?? c.shown
            if let gave = c.undoes, old != gave {
                outcomes.append(.refused(KioskError.outOfRange("counter '\(c.rules.counter)' changed since (it is \(old), the change to undo gave \(gave)); nothing was undone")))
                continue
            }
            do {
                let new = try c.rules.apply(c.edit, to: old)
                if new == old {
                    outcomes.append(.unchanged(old))
                    values[c.key] = old
                    continue
                }
                values[c.key] = new
                if !writeOrder.contains(c.key) { writeOrder.append(c.key) }
                outcomes.append(.changed(old: old, new: new))
            } catch let e as KioskError {
                outcomes.append(.refused(e))
            } catch {
                outcomes.append(.refused(KioskError.state("\(error)")))
            }
        }
        return Decision(outcomes: outcomes, writes: writeOrder.map { ($0, String(values[$0]!)) }, known: values)
    }

    /// The values a batch writes, from its writes in submission order: each key once (where it
    /// was first written) with the last value written to it.
    public static func merged(_ writes: [(key: String, value: String)]) -> [(key: String, value: String)] {
        var last: [String: String] = [:]
        var order: [String] = []
        for w in writes {
            if last.updateValue(w.value, forKey: w.key) == nil { order.append(w.key) }
        }
        return order.map { ($0, last[$0]!) }
    }
}
