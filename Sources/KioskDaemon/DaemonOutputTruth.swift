import KioskControl
import KioskCore
import KioskMQTT

extension Daemon {
    /// The truth about each output's screen, read now: connected, mode, blanked, backlight, the
    /// TV's power, the frames that reached the panel, and whether it shows (`ScreenShowing`).
    /// When a frame waits for the kernel, a timer is armed for the moment the answer turns by
    /// itself (the frame still not completed `ScreenShowing.staleNs` later), so observers (MQTT,
    /// Home Assistant) hear of a dark screen without polling.
    func outputTruths() -> [OutputTruth] {
        let now = loop.now(.monotonic)
        return heads.map { h in
            let d = h.display, shown = d.shownFrames
            let (problem, recheck) = ScreenShowing.evaluate(connected: d.logicalSize != nil, blanked: d.isBlanked, shown: shown, nowNs: now)
            if let at = recheck { armShowingRecheck(h, at: at) }
            return OutputTruth(name: h.name, connected: d.logicalSize != nil, mode: Self.mode(d),
                               blanked: d.isBlanked, backlightPercent: h.blanking.backlight.map { Int((h.blanking.level ?? $0.percent).rounded()) },
                               cecPower: h.cec?.status.power.rawValue,
                               lastFrameShown: shown?.lastRealtimeNs.map(ShownFrames.utc), framesShownLastMinute: shown?.lastMinute,
                               notShowing: problem)
        }
    }

    /// The mode driven, as the panel has it ("1920x1080"; the logical size turned back).
    static func mode(_ d: DisplayOutput) -> String? {
        guard let s = d.logicalSize else { return nil }
        let turned = d.rotation == .r90 || d.rotation == .r270
        return turned ? "\(s.height)x\(s.width)" : "\(s.width)x\(s.height)"
    }

    private func armShowingRecheck(_ h: OutputHead, at: Int64) {
        if let r = h.showingRecheck, r.atNs <= at { return }
        if let r = h.showingRecheck { loop.cancel(r.timer) }
        guard let timer = try? loop.schedule(at: at, clock: .monotonic, { [weak self, weak h] _ in
            h?.showingRecheck = nil
            self?.changes.noteChange()
        }) else { return }
        h.showingRecheck = (at, timer)
    }

    /// Each output's "showing", for observers (`KioskState.screens`).
    func screenStates() -> [KioskState.Screen] {
        outputTruths().map { .init(name: $0.name, showing: $0.showing, notShowing: $0.notShowing) }
    }

    /// `outputs` with each output's truth (`kioskctl outputs`, status).
    func withTruth(_ outputs: [OutputsAnswer.Output]) -> [OutputsAnswer.Output] {
        var outputs = outputs
        for (i, t) in outputTruths().enumerated() where i < outputs.count {
            outputs[i].connected = t.connected
            outputs[i].mode = t.mode
            outputs[i].backlightPercent = t.backlightPercent
            outputs[i].showing = t.showing
            outputs[i].notShowing = t.notShowing
        }
        return outputs
    }
}
