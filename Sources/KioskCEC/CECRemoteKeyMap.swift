/// The names a config gives a TV remote's keys (`[output.cec.keys]`), as `cec-ctl`'s
/// `--user-control-pressed ui-cmd=NAME` spells them where it is short: the keys `CECKeyMap` maps,
/// and a few playback and menu keys that map to nothing until the config binds them.
public enum CECRemoteKeyName {
    public static let all: [(name: String, uiCommand: UInt8)] = [
        ("select", 0x00), ("up", 0x01), ("down", 0x02), ("left", 0x03), ("right", 0x04),
        ("root-menu", 0x09), ("setup-menu", 0x0A), ("contents-menu", 0x0B), ("exit", 0x0D),
        ("0", 0x20), ("1", 0x21), ("2", 0x22), ("3", 0x23), ("4", 0x24),
        ("5", 0x25), ("6", 0x26), ("7", 0x27), ("8", 0x28), ("9", 0x29),
        ("channel-up", 0x30), ("channel-down", 0x31),
        ("play", 0x44), ("stop", 0x45), ("pause", 0x46), ("rewind", 0x48), ("fast-forward", 0x49),
        ("blue", 0x71), ("red", 0x72), ("green", 0x73), ("yellow", 0x74),
    ]

    /// The UI command code of a key name (any case, `_` as `-`); nil for a name not in `all`.
    public static func uiCommand(named name: String) -> UInt8? {
        let n = name.lowercased().replacing("_", with: "-")
        return all.first { $0.name == n }?.uiCommand
    }

    /// "select, up, down, …" for error messages.
    public static var known: String { all.map(\.name).joined(separator: ", ") }
}

/// Which keyboard key each remote key stands for on one output: `CECKeyMap`'s unless the
/// config's `[output.cec.keys]` binds it to another key (or to none); nothing at all with
/// `remote_keys = false` (kioskd does not then listen on the adapter).
public struct CECRemoteKeyMap: Sendable, Equatable {
    /// False: the remote's keys are not read.
    public var enabled: Bool
    /// UI command → evdev key code (nil: the key does nothing), replacing `CECKeyMap`'s.
    public var overrides: [UInt8: UInt16?]

    public init(enabled: Bool = true, overrides: [UInt8: UInt16?] = [:]) {
        self.enabled = enabled; self.overrides = overrides
    }

    /// The evdev key code a UI command stands for; nil: it does nothing here.
    public func keyCode(uiCommand: UInt8) -> UInt16? {
        guard enabled else { return nil }
        if let o = overrides[uiCommand] { return o }
        return CECKeyMap.keyCode(uiCommand: uiCommand)
    }
}
