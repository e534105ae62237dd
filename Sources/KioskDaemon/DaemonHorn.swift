import KioskAudio
import KioskControl
import KioskCore
import Logging

/// The daemon's horn (`[audio]`): the player opened at start and at a reload that changes
/// `[audio]`, or why there is none. Without a working sound device the horn is unavailable (one
/// warning, and status says why); everything else keeps working.
final class DaemonHorn {
    let settings: AudioSettings
    let player: HornPlayer?
    let error: String?

    init(_ settings: AudioSettings, logger: Logger) {
        self.settings = settings
        do {
            player = try HornPlayer(device: settings.device, sound: settings.hornSound(), muted: settings.mute, logger: logger)
            error = nil
            logger.info("horn ready", metadata: ["device": "\(settings.device)", "horn": "\(settings.hornName)",
                                                 "buffer_frames": "\(player!.bufferFrames)", "period_frames": "\(player!.periodFrames)",
                                                 "muted": "\(settings.mute)"])
        } catch {
            player = nil
            self.error = "\(error)"
            logger.warning("the horn is unavailable; everything else keeps working",
                           metadata: ["device": "\(settings.device)", "error": "\(error)"])
        }
    }

    var status: AudioStatus {
        var s = AudioStatus(device: settings.device, available: player != nil, muted: settings.mute, horn: settings.hornName, error: error)
        if let p = player {
            let rate = Double(p.sound.rate)
            s.bufferMs = (Double(p.bufferFrames) * 1000 / rate * 100).rounded() / 100
            s.periodMs = (Double(p.periodFrames) * 1000 / rate * 100).rounded() / 100
            if let r = p.lastReport {
                s.lastHorn = .init(requestedNs: r.requestedNs, writeLatencyMs: (r.writeLatencyMs * 100).rounded() / 100,
                                   pcmDelayMs: (r.delayMs * 100).rounded() / 100, error: r.error, underruns: r.underruns)
            }
        }
        return s
    }
}

extension Daemon {
    /// Opens the horn's device when the config has `[audio]`.
    func startHorn() {
        if let a = config.audio { horn = DaemonHorn(a, logger: logger) }
    }

    func stopHorn() {
        horn?.player?.stop()
        horn = nil
    }

    /// A reload changed `[audio]`: the device is opened again with the new settings.
    func reloadHorn() {
        stopHorn()
        startHorn()
    }

    /// Sounds the horn now; `requestedNs` is the instant it is for on CLOCK_MONOTONIC (e.g. when
    /// the frame that shows 0.0 is presented), from which its delay is measured. Nil: no `[audio]`
    /// or no working device. Only wakes the audio thread: safe on the render loop.
    @discardableResult
    public func soundHorn(requestedNs: Int64 = nowNanos(.monotonic)) -> HornPlayer.Outcome? {
        horn?.player?.sound(requestedNs: requestedNs)
    }

    /// `POST /horn`.
    func hornAnswer() -> ControlResponse {
        let requested = nowNanos(.monotonic)
        guard let horn else {
            return .error(404, "no horn: add an [audio] table (device = \"default\") to the config (\(config.file))")
        }
        guard let player = horn.player else {
            return .error(503, "the horn is unavailable: \(horn.error ?? "no sound device")")
        }
        let result: String
        switch player.sound(requestedNs: requested) {
        case .sounding: result = "sounding"
        case .muted: result = "muted"
        case .alreadySounding: result = "already sounding"
        }
        return .json(200, HornAnswer(result: result, requestedNs: requested, device: horn.settings.device))
    }
}
