/// Whether an output's screen shows kioskd's frames, as far as kioskd can tell: it is connected,
/// not blanked, a frame has reached the panel, and no frame handed to the kernel has waited
/// `staleNs` or more to complete. A display that cannot tell what reached the panel (headless)
/// shows what it is given while connected and lit.
public enum ScreenShowing {
    /// How long a frame may wait for the kernel before the screen counts as not showing.
    public static let staleNs: Int64 = 3_000_000_000

    /// Why the screen shows nothing (nil: it shows), and when the answer changes by itself if
    /// nothing else happens (monotonic ns; nil: only an event changes it).
    public static func evaluate(connected: Bool, blanked: Bool, shown: ShownFrames?, nowNs: Int64) -> (problem: String?, recheckAtNs: Int64?) {
        if !connected { return ("disconnected", nil) }
        if blanked { return ("blanked", nil) }
        guard let shown else { return (nil, nil) }
        if shown.lastRealtimeNs == nil && shown.pendingSinceNs == nil { return ("no frame shown yet", nil) }
        if let p = shown.pendingSinceNs {
            if nowNs - p >= staleNs { return ("no page flip completed within \(staleNs / 1_000_000_000) s", nil) }
            if shown.lastRealtimeNs == nil { return ("no frame shown yet", p + staleNs) }
            return (nil, p + staleNs)
        }
        return (nil, nil)
    }
}

/// The truth about one output's screen, for `kioskctl outputs`, status, MQTT and Home Assistant.
public struct OutputTruth: Sendable, Equatable {
    public var name: String
    public var connected: Bool
    /// The mode driven ("1920x1080"); nil while nothing is connected.
    public var mode: String?
    public var blanked: Bool
    /// The backlight's level in percent (the first output's backlight); nil: none.
    public var backlightPercent: Int?
    /// The TV's power status over HDMI-CEC ("on", "standby", …); nil without CEC.
    public var cecPower: String?
    /// The latest frame the kernel completed (UTC) and how many in the last minute; nil: the
    /// display cannot tell (headless).
    public var lastFrameShown: String?
    public var framesShownLastMinute: Int?
    /// Why the screen shows nothing (`ScreenShowing`); nil: it shows.
    public var notShowing: String?

    public init(name: String, connected: Bool, mode: String?, blanked: Bool, backlightPercent: Int? = nil, cecPower: String? = nil,
                lastFrameShown: String? = nil, framesShownLastMinute: Int? = nil, notShowing: String? = nil) {
        self.name = name; self.connected = connected; self.mode = mode; self.blanked = blanked
        self.backlightPercent = backlightPercent; self.cecPower = cecPower
        self.lastFrameShown = lastFrameShown; self.framesShownLastMinute = framesShownLastMinute; self.notShowing = notShowing
    }

    public var showing: Bool { notShowing == nil }

    /// As a JSON object (MQTT's status): absent values are left out.
    public var jsonObject: [String: Any] {
        var o: [String: Any] = ["name": name, "connected": connected, "blanked": blanked, "showing": showing]
        if let mode { o["mode"] = mode }
        if let backlightPercent { o["backlight_percent"] = backlightPercent }
        if let cecPower { o["cec_power"] = cecPower }
        if let framesShownLastMinute {
            o["frames_shown_last_minute"] = framesShownLastMinute
            if let lastFrameShown { o["last_frame_shown"] = lastFrameShown }
        }
        if let notShowing { o["not_showing"] = notShowing }
        return o
    }
}
