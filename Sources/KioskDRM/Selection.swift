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

    /// Parses "WxH" or "WxH@R" (R in Hz, may have a fraction such as 59.94); errors name the text.
    public init(parsing text: String) throws {
        let t = trimmed(text)
        let bad = KioskError.config("mode \"\(text)\" is not WIDTHxHEIGHT or WIDTHxHEIGHT@REFRESH (e.g. \"1920x1080@60\")")
        let parts = t.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2 else { throw bad }
        let dims = parts[0].lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard dims.count == 2, let w = Int(dims[0]), let h = Int(dims[1]), w > 0, h > 0, w <= 16384, h <= 16384 else { throw bad }
        var r: Int? = nil
        if parts.count == 2 {
            guard let d = Double(parts[1]), d > 0, d < 1000 else { throw bad }
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

/// Pure choices of connector, mode, CRTC and plane from snapshot values.
public enum DRMSelection {
    /// The connector named `name` (exact kernel name, case-insensitive), or the first connected one.
    /// Returns nil when `name` is nil and nothing is connected; an unknown name throws, listing what exists.
    public static func connector(_ connectors: [DRMConnector], named name: String?, device: String) throws -> DRMConnector? {
        if let name {
            if let c = connectors.first(where: { $0.name.lowercased() == name.lowercased() }) { return c }
            let list = connectors.isEmpty ? "none" : connectors.map { "\($0.name) (\($0.status.rawValue))" }.joined(separator: ", ")
            throw KioskError.notFound("output \"\(name)\" does not exist on \(device); connectors: \(list)")
        }
        return connectors.first { $0.status == .connected }
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
        throw KioskError.notFound("mode \(request) is not offered by \(connector.name); modes: \(list)")
    }

    /// A CRTC for `connector`: the one its current encoder drives, otherwise the first CRTC one of its
    /// encoders can use that is not in `busy`.
    public static func crtc(for connector: DRMConnector, encoders: [DRMEncoder], crtcs: [DRMCrtc], busy: Set<UInt32> = []) throws -> DRMCrtc {
        if connector.encoderID != 0, let enc = encoders.first(where: { $0.id == connector.encoderID }), enc.crtcID != 0,
           let c = crtcs.first(where: { $0.id == enc.crtcID }) {
            return c
        }
        for eid in connector.encoderIDs {
            guard let enc = encoders.first(where: { $0.id == eid }) else { continue }
            for c in crtcs where enc.possibleCRTCs & (1 << UInt32(c.index)) != 0 && !busy.contains(c.id) {
                return c
            }
        }
        throw KioskError.display("no free CRTC can drive connector \(connector.name)")
    }

    /// The primary plane of CRTC `crtc` that scans out `format`, if any.
    public static func primaryPlane(_ planes: [DRMPlane], crtc: DRMCrtc, format: UInt32) -> DRMPlane? {
        planes.first { $0.kind == .primary && $0.possibleCRTCs & (1 << UInt32(crtc.index)) != 0 && $0.formats.contains(format) }
    }
}

