import KioskCore

/// A mode asked for in config: "1920x1080@60" or "1920x1080".
public struct ModeRequest: Sendable, Equatable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    /// Whole Hz; nil = any refresh.
    public var refresh: Int?

    public init(width: Int, height: Int, refresh: Int? = nil) {
        self.width = width; self.height = height; self.refresh = refresh
    }

    /// The widest and tallest mode asked for (beyond what any KMS driver scans out).
    public static let maxSide = 16384
    /// Refresh rates are below this many Hz.
    public static let maxRefresh = 1000

    /// Parses "WxH" or "WxH@R" (R in Hz, may have a fraction such as 59.94); errors name the text.
    public init(parsing text: String) throws {
        let t = trimmed(text)
        let bad = KioskError.config("mode \"\(text)\" is not WIDTHxHEIGHT or WIDTHxHEIGHT@REFRESH (e.g. \"1920x1080@60\")")
        let parts = t.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2 else { throw bad }
        let dims = parts[0].lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard dims.count == 2, let w = Int(dims[0]), let h = Int(dims[1]), w > 0, h > 0, w <= Self.maxSide, h <= Self.maxSide else { throw bad }
        var r: Int? = nil
        if parts.count == 2 {
            guard let d = Double(parts[1]), d > 0, d < Double(Self.maxRefresh) else { throw bad }
            r = Int(d.rounded())
        }
        self.init(width: w, height: h, refresh: r)
    }

    public var description: String { refresh.map { "\(width)x\(height)@\($0)" } ?? "\(width)x\(height)" }
}

/// `text` without leading and trailing spaces and tabs.
private func trimmed(_ text: String) -> String {
    var s = Substring(text)
    while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
    while let l = s.last, l == " " || l == "\t" { s.removeLast() }
    return String(s)
}

/// A connector or mode an output asked for that the card does not have. `asked` says which, so
/// the caller can name the configuration key that asked for it; `description` lists what exists.
public struct MissingOutputPart: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Asked: Sendable, Equatable {
        case connector(String)
        /// A mode the named connector does not offer.
        case mode(ModeRequest, connector: String)
    }
    public let asked: Asked
    public let description: String
}

/// Pure choices of connector, mode, CRTC and plane from snapshot values.
public enum DRMSelection {
    /// The connector named `name` (exact kernel name, case-insensitive), or the first connected one
    /// not in `taken` (ids). Returns nil when `name` is nil and nothing is left connected; an unknown
    /// name throws, listing what exists.
    public static func connector(_ connectors: [DRMConnector], named name: String?, device: String,
                                 taken: Set<UInt32> = []) throws -> DRMConnector? {
        if let name {
            if let c = connectors.first(where: { $0.name.lowercased() == name.lowercased() }) { return c }
            let list = connectors.isEmpty ? "none" : connectors.map { "\($0.name) (\($0.status.rawValue))" }.joined(separator: ", ")
            throw MissingOutputPart(asked: .connector(name), description: "output \"\(name)\" does not exist on \(device); connectors: \(list)")
        }
        return connectors.first { $0.status == .connected && !taken.contains($0.id) }
    }

    /// The mode matching `request` on `connector`, or its preferred mode (else its first) when `request` is nil.
    /// Among several matches the preferred one wins, then the highest refresh. Unknown modes throw, listing what exists.
    public static func mode(_ connector: DRMConnector, request: ModeRequest?) throws -> DRMMode {
        guard !connector.modes.isEmpty else {
            throw KioskError.display("connector \(connector.name) reports no modes")
        }
        guard let request else {
            return connector.modes.first(where: \.isPreferred) ?? connector.modes[0]
        }
        let matches = connector.modes.filter { m in
            guard m.width == request.width && m.height == request.height else { return false }
            guard let r = request.refresh else { return true }
            return m.refresh == r || (m.refreshMilliHz + 500) / 1000 == r
        }
        if let best = matches.max(by: { a, b in
            if a.isPreferred != b.isPreferred { return !a.isPreferred }
            return a.refreshMilliHz < b.refreshMilliHz
        }) {
            return best
        }
        var seen = Set<String>()
        let list = connector.modes.map(\.description).filter { seen.insert($0).inserted }.joined(separator: ", ")
        throw MissingOutputPart(asked: .mode(request, connector: connector.name),
                                description: "mode \(request) is not offered by \(connector.name); modes: \(list)")
    }

    /// A distinct CRTC for every connector in `connectors` (connector id → CRTC), each reached
    /// through one of the connector's encoders (its `possibleCRTCs`), no encoder used twice. A
    /// connector keeps the CRTC its current encoder drives when all still fit that way (earlier
    /// connectors first); otherwise the assignment is searched (a greedy pick fails for masks
    /// such as A: {0, 1}, B: {0}). Throws naming `device`, the connectors that cannot be driven
    /// and the CRTCs that exist when the card cannot drive them all at once.
    public static func assignCRTCs(connectors: [DRMConnector], encoders: [DRMEncoder], crtcs: [DRMCrtc],
                                   device: String) throws -> [UInt32: DRMCrtc] {
        let found = matchCRTCs(connectors: connectors, encoders: encoders, crtcs: crtcs)
        guard found.unassigned.isEmpty else {
            let names = found.unassigned.map(\.name).joined(separator: ", ")
            let all = crtcs.isEmpty ? "none" : crtcs.map { "\($0.id)" }.joined(separator: ", ")
            throw KioskError.display("\(device) cannot drive \(connectors.map(\.name).joined(separator: ", ")) at once: "
                                     + "no CRTC left for \(names) (every output needs a CRTC of its own that one of its encoders can use; "
                                     + "CRTCs: \(all))")
        }
        return found.assigned
    }

    /// The largest assignment `assignCRTCs` can make: the CRTC of each connector it could drive,
    /// and the connectors left without one (later connectors are the ones left out).
    static func matchCRTCs(connectors: [DRMConnector], encoders: [DRMEncoder], crtcs: [DRMCrtc])
        -> (assigned: [UInt32: DRMCrtc], unassigned: [DRMConnector]) {
        // Each connector's ways to be driven, its current (encoder, CRTC) first.
        let choices: [[(encoder: UInt32, crtc: Int)]] = connectors.map { c in
            var out: [(encoder: UInt32, crtc: Int)] = []
            for eid in c.encoderIDs {
                guard let enc = encoders.first(where: { $0.id == eid }) else { continue }
                for (i, k) in crtcs.enumerated() where enc.possibleCRTCs & (1 << UInt32(k.index)) != 0 {
                    out.append((eid, i))
                }
            }
            if let cur = encoders.first(where: { $0.id == c.encoderID && $0.crtcID != 0 }),
               let at = out.firstIndex(where: { $0.encoder == cur.id && crtcs[$0.crtc].id == cur.crtcID }) {
                out.insert(out.remove(at: at), at: 0)
            }
            return out
        }
        // Depth-first in that order, skipping a connector only as the last resort: the first
        // complete assignment found wins; otherwise the one driving the most connectors.
        var best: [Int?] = Array(repeating: nil, count: connectors.count)
        var bestCount = -1
        var pick: [Int?] = best
        var usedEncoders = Set<UInt32>(), usedCRTCs = Set<Int>()
        func search(_ n: Int, _ count: Int) -> Bool {
            if count + (connectors.count - n) <= bestCount { return false }
            if n == connectors.count {
                best = pick
                bestCount = count
                return count == connectors.count
            }
            for (k, way) in choices[n].enumerated() where !usedEncoders.contains(way.encoder) && !usedCRTCs.contains(way.crtc) {
                usedEncoders.insert(way.encoder); usedCRTCs.insert(way.crtc); pick[n] = k
                defer { usedEncoders.remove(way.encoder); usedCRTCs.remove(way.crtc); pick[n] = nil }
                if search(n + 1, count + 1) { return true }
            }
            return search(n + 1, count)
        }
        _ = search(0, 0)
        var assigned: [UInt32: DRMCrtc] = [:]
        var unassigned: [DRMConnector] = []
        for (n, c) in connectors.enumerated() {
            if let k = best[n] { assigned[c.id] = crtcs[choices[n][k].crtc] } else { unassigned.append(c) }
        }
        return (assigned, unassigned)
    }

    /// The primary plane of CRTC `crtc` that scans out `format`, if any (not one in `taken`).
    public static func primaryPlane(_ planes: [DRMPlane], crtc: DRMCrtc, format: UInt32, taken: Set<UInt32> = []) -> DRMPlane? {
        planes.first { $0.kind == .primary && $0.possibleCRTCs & (1 << UInt32(crtc.index)) != 0 && $0.formats.contains(format)
            && !taken.contains($0.id) }
    }
}

