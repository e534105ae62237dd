import KioskCore
import KioskDRM

/// Value rules shared by several tables: `[display]` and `[[output]]` (mode, rotation, calibration),
/// `[scenes]` (key names).
extension DaemonConfig {
    /// The `calibration` key of `[input]` or an `[[output]]`: six numbers of an invertible matrix.
    static func calibration(_ t: ConfigTable) throws -> [Double]? {
        guard let m = try t.doubleArray("calibration") else { return nil }
        do { try InputTransform.validate(calibration: m) } catch let e as KioskError {
            throw t.error("calibration", e.message)
        }
        return m
    }

    /// The `mode` and `rotation` keys of `[display]` or an `[[output]]`, checked.
    /// `mode` and `rotation` of `t` (`[display]` or an `[[output]]`). The mode is checked by the
    /// parser the DRM backend uses (`ModeRequest`); with the `headless` backend it is the size of
    /// a framebuffer in memory, each side 16…8192 as `headless_size`.
    static func modeAndRotation(_ t: ConfigTable, headless: Bool) throws -> (mode: String?, rotation: Rotation) {
        var mode: String?
        if let m = try t.string("mode") {
            guard let request = try? ModeRequest(parsing: m) else {
                throw t.error("mode", "expected a mode like \"1920x1080\" or \"1920x1080@60\" (each side 1…\(ModeRequest.maxSide), "
                                      + "refresh under \(ModeRequest.maxRefresh) Hz), got \(ConfigTable.quoted(m))")
            }
            if headless, !(headlessSides.contains(request.width) && headlessSides.contains(request.height)) {
                throw t.error("mode", "with backend = \"headless\" the mode is the size of the output's frame in memory: "
                                      + "each side \(headlessSides.lowerBound)…\(headlessSides.upperBound), got \(ConfigTable.quoted(m))")
            }
            mode = m
        }
        let r = try t.int("rotation", default: 0)
        guard let rotation = Rotation(degrees: r) else { throw t.error("rotation", "expected 0, 90, 180 or 270, got \(r)") }
        return (mode, rotation)
    }

    /// "1920x1080" → Size.
    public static func parseSize(_ s: String) -> Size? {
        let p = s.lowercased().split(separator: "x")
        guard p.count == 2, let w = Int(p[0]), let h = Int(p[1]), w > 0, h > 0 else { return nil }
        return Size(width: w, height: h)
    }

    /// "1920x1080" or "1920x1080@60" → (size, refresh or nil), as the DRM backend reads it (`ModeRequest`).
    public static func parseMode(_ s: String) -> (Size, Int?)? {
        guard let r = try? ModeRequest(parsing: s) else { return nil }
        return (Size(width: r.width, height: r.height), r.refresh)
    }

    /// Each side of a headless framebuffer (`headless_size`, an output's `mode`).
    static let headlessSides = 16...8192

    /// With the headless backend each `[[output]]`'s mode is the size of a framebuffer in memory
    /// (each side 16…8192). Reading the config checks this for `backend = "headless"`; call it
    /// again when the backend is chosen afterwards (`kioskd --backend headless`). Errors name
    /// the output's table and key.
    public func checkHeadlessModes() throws {
        guard display.backend == .headless, let tables = outputTables else { return }
        for o in tables {
            guard let m = o.mode, let (size, _) = DaemonConfig.parseMode(m),
                  !(Self.headlessSides.contains(size.width) && Self.headlessSides.contains(size.height)) else { continue }
            throw KioskError.config("\(o.location.isEmpty ? file : o.location): key 'output[\(o.index)].mode': with the headless backend "
                + "the mode is the size of the output's frame in memory: each side \(Self.headlessSides.lowerBound)…"
                + "\(Self.headlessSides.upperBound), got \(ConfigTable.quoted(m))")
        }
    }

    /// A key name or a list of key names → evdev codes.
    static func keys(_ t: ConfigTable, _ key: String) throws -> [UInt16] {
        guard let n = t.node(key) else { return [] }
        let names: [(String, SourceLocation, String)]
        switch n.value {
        case .string(let s): names = [(s, n.location, t.fullKey(key))]
        case .array(let a):
            names = try a.enumerated().map { i, e in
                guard case .string(let s) = e.value else {
                    throw KioskError.config("\(e.location): key '\(t.fullKey(key))[\(i)]': expected a key name like \"KEY_RIGHT\", got \(e.value.typeName)")
                }
                return (s, e.location, "\(t.fullKey(key))[\(i)]")
            }
        default:
            throw t.error(key, "expected a key name like \"KEY_RIGHT\" or a list of them, got \(n.value.typeName)")
        }
        return try names.map { name, loc, full in
            guard let c = KeyCode.code(named: name) else {
                throw KioskError.config("\(loc): key '\(full)': unknown key name \"\(name)\" (evdev names like KEY_RIGHT, KEY_SPACE, KEY_KP_PLUS)")
            }
            return c
        }
    }
}
