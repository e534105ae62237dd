import KioskControl

extension OutputsAnswer.Output {
    /// "\n  screen: showing, connected, mode 1920x1080, backlight 80 %" or
    /// "\n  screen: not showing (blanked), connected, mode 1920x1080"; empty from an older kioskd.
    var truthText: String {
        guard let showing else { return "" }
        var parts = [showing ? "showing" : "not showing (\(notShowing ?? "?"))"]
        if let connected { parts.append(connected ? "connected" : "disconnected") }
        if let mode { parts.append("mode \(mode)") }
        if let backlightPercent { parts.append("backlight \(backlightPercent) %") }
        return "\n  screen: " + parts.joined(separator: ", ")
    }
}
