import CALSA
import CKioskLazy
import Dispatch
import FoundationEssentials
import Glibc
import KioskCore
import Logging
import Synchronization

/// The horn on an ALSA PCM device. The device is opened and prepared when the player is made
/// (at start or reload), the sound is rendered already, and a thread of its own (`kioskd-horn`)
/// writes it when asked: asking (`sound`) only wakes that thread, so it never waits on the
/// device and the render loop may ask. The first write fills the device's whole buffer at once,
/// which starts the stream: its first sample is played then, so the buffer's length adds nothing
/// to the horn's start; it only has to outlast a late wake-up of the thread (`latencyUs`).
public final class HornPlayer: Sendable {
    /// The answer to a request.
    public enum Outcome: Sendable, Equatable {
        /// The audio thread was woken to write the horn.
        case sounding
        /// `mute = true`: nothing is played.
        case muted
        /// The horn is still sounding from an earlier request (this one is not queued).
        case alreadySounding
    }

    /// How the last horn went, measured on the audio thread.
    public struct Report: Sendable, Equatable {
        /// When the horn was asked for (CLOCK_MONOTONIC, nanoseconds).
        public var requestedNs: Int64
        /// When its first samples were written to the PCM (the stream started then).
        public var firstWrittenNs: Int64
        /// The PCM's delay just after that first write: frames written but not yet played.
        public var delayFrames: Int
        public var rate: Int
        /// Request → first samples written, in milliseconds.
        public var writeLatencyMs: Double { Double(firstWrittenNs - requestedNs) / 1e6 }
        /// The PCM's delay in milliseconds.
        public var delayMs: Double { Double(delayFrames) * 1000 / Double(rate) }
        /// An error the write met, if any (the horn was cut short).
        public var error: String?
        /// Times the device ran dry while the horn played (the thread was late): a gap in the sound.
        public var underruns = 0
    }

    public let device: String
    public let muted: Bool
    public let sound: PCMSound
    /// The PCM's ring buffer and period, in frames (as the device granted them).
    public let bufferFrames: Int
    public let periodFrames: Int
    /// The buffer asked of the device (ALSA makes its period a quarter of it): 100 ms, so that
    /// the audio thread may be late by most of that without a gap in the horn (seen under
    /// emulation with 20 ms).
    public static let latencyUs: UInt32 = 100_000

    private struct State {
        var pending: Int64?
        var sounding = false
        var stopping = false
        var last: Report?
    }
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    private let logger: Logger

    /// Opens `device` for `sound` and starts the audio thread. Throws when libasound cannot be
    /// loaded or the device cannot be opened with the sound's format (the error names the device).
    public init(device: String, sound: PCMSound, muted: Bool, logger: Logger) throws {
        if let e = kiosk_lazy_load(Int32(KIOSK_LIB_ASOUND)) { throw KioskError(.config, String(cString: e)) }
        self.device = device
        self.sound = sound
        self.muted = muted
        self.logger = logger
        let (pcm, buffer, period) = try HornPlayer.openPCM(device: device, sound: sound).get()
        bufferFrames = buffer
        periodFrames = period
        // The handle goes to the audio thread, which alone uses it from now on.
        let address = UInt(bitPattern: pcm)
        do {
            try NamedThread.detach(name: "kioskd-horn") { [self] in
                let pcm = OpaquePointer(bitPattern: address)!
                run(pcm)
                snd_pcm_close(pcm)
                ended.signal()
            }
        } catch {
            snd_pcm_close(pcm)
            throw error
        }
    }

    /// Sounds the horn now (`requestedNs`: when it was asked for, for the report; default now).
    public func sound(requestedNs: Int64 = nowNanos(.monotonic)) -> Outcome {
        if muted { return .muted }
        let outcome: Outcome = state.withLock { s in
            if s.sounding || s.pending != nil { return .alreadySounding }
            s.pending = requestedNs
            return .sounding
        }
        if outcome == .sounding { wake.signal() }
        return outcome
    }

    /// The last horn's figures (nil before the first).
    public var lastReport: Report? { state.withLock { $0.last } }
    /// Whether a horn is being written or played now.
    public var isSounding: Bool { state.withLock { $0.sounding || $0.pending != nil } }

    /// Ends the audio thread (a horn under way stops at its next period) and closes the device.
    public func stop(timeout: Double = 2) {
        state.withLock { $0.stopping = true }
        wake.signal()
        _ = ended.wait(timeout: .now() + timeout)
    }

    private static func openPCM(device: String, sound: PCMSound) -> Result<(OpaquePointer, Int, Int), KioskError> {
        var handle: OpaquePointer?
        var rc = snd_pcm_open(&handle, device, SND_PCM_STREAM_PLAYBACK, 0)
        guard rc >= 0, let pcm = handle else {
            return .failure(KioskError(.config, "cannot open the sound device \"\(device)\": \(String(cString: snd_strerror(rc)))"))
        }
        rc = snd_pcm_set_params(pcm, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, UInt32(sound.channels),
                                UInt32(sound.rate), 1, latencyUs)
        guard rc >= 0 else {
            snd_pcm_close(pcm)
            return .failure(KioskError(.config, "the sound device \"\(device)\" does not take \(sound.rate) Hz, \(sound.channels) channel(s), "
                                       + "16 bits: \(String(cString: snd_strerror(rc)))"))
        }
        var buffer: snd_pcm_uframes_t = 0, period: snd_pcm_uframes_t = 0
        _ = snd_pcm_get_params(pcm, &buffer, &period)
        return .success((pcm, Int(buffer), Int(period)))
    }

    /// The audio thread: waits for a request, writes the sound, drains, prepares for the next.
    private func run(_ pcm: OpaquePointer) {
        while true {
            wake.wait()
            let requested: Int64? = state.withLock { s in
                if s.stopping { return nil }
                guard let r = s.pending else { return -1 }
                s.pending = nil
                s.sounding = true
                return r
            }
            guard let requested else { return }
            if requested < 0 { continue }
            let report = play(pcm, requestedNs: requested)
            state.withLock { s in s.sounding = false; s.last = report }
            if let e = report.error {
                logger.warning("the horn was cut short", metadata: ["device": "\(device)", "error": "\(e)"])
            } else {
                logger.info("horn sounded", metadata: [
                    "requested_ns": "\(report.requestedNs)", "first_written_ns": "\(report.firstWrittenNs)",
                    "write_latency_ms": "\(TextFormat.fixed(report.writeLatencyMs, digits: 2))",
                    "pcm_delay_ms": "\(TextFormat.fixed(report.delayMs, digits: 2))", "underruns": "\(report.underruns)",
                ])
            }
            if state.withLock({ $0.stopping }) { return }
        }
    }

    /// Writes the whole sound: the first write fills the device's buffer (which starts the
    /// stream), then one period at a time; then waits for it to be played and prepares again.
    private func play(_ pcm: OpaquePointer, requestedNs: Int64) -> Report {
        var report = Report(requestedNs: requestedNs, firstWrittenNs: 0, delayFrames: 0, rate: sound.rate)
        let channels = sound.channels, frames = sound.frames
        var offset = 0
        sound.samples.withUnsafeBufferPointer { samples in
            while offset < frames {
                if offset > 0, state.withLock({ $0.stopping }) { break }
                let chunk = min(offset == 0 ? max(bufferFrames, 1) : max(periodFrames, 1), frames - offset)
                let n = snd_pcm_writei(pcm, samples.baseAddress! + offset * channels, snd_pcm_uframes_t(chunk))
                if n < 0 {
                    if n == -snd_pcm_sframes_t(EPIPE) { report.underruns += 1 }
                    let rc = snd_pcm_recover(pcm, Int32(n), 1)
                    if rc < 0 { report.error = String(cString: snd_strerror(rc)); break }
                    continue
                }
                if report.firstWrittenNs == 0 {
                    report.firstWrittenNs = nowNanos(.monotonic)
                    var delay: snd_pcm_sframes_t = 0
                    if snd_pcm_delay(pcm, &delay) >= 0 { report.delayFrames = Int(delay) }
                }
                offset += Int(n)
            }
        }
        if state.withLock({ $0.stopping }) { snd_pcm_drop(pcm) } else { snd_pcm_drain(pcm) }
        snd_pcm_prepare(pcm)
        return report
    }
}
