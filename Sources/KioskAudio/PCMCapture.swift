import CALSA
import CKioskLazy
import FoundationEssentials
import KioskCore

/// Records from an ALSA capture device for a while (the kernel test's ear on snd-aloop), and says
/// when each recorded frame was captured on CLOCK_MONOTONIC.
public enum PCMCapture {
    public struct Recording: Sendable {
        public var sound: PCMSound
        /// CLOCK_MONOTONIC of frame 0: the smallest `now − (frames read + avail) / rate` over every
        /// read. The device's position can only lag the truth, so this is never earlier than the
        /// real instant.
        public var startNs: Int64
        /// After each read: (CLOCK_MONOTONIC, frames captured so far = read + avail).
        public var marks: [(ns: Int64, frames: Int)]

        /// The CLOCK_MONOTONIC instant frame `i` was captured: the smallest `now − (frames − i) /
        /// rate` over the reads of the half second after it. Near the frame, so that a device clock
        /// that runs a little fast or slow against CLOCK_MONOTONIC (snd-aloop's jiffies under
        /// emulation) adds little; never early, as `startNs`.
        public func instant(ofFrame i: Int) -> Int64 {
            let rate = Double(sound.rate)
            let near = marks.filter { $0.frames >= i && $0.frames <= i + sound.rate / 2 }
            let candidates = near.isEmpty ? marks.filter { $0.frames >= i } : near
            return candidates.map { $0.ns - Int64(Double($0.frames - i) * 1e9 / rate) }.min()
                ?? startNs + Int64(Double(i) * 1e9 / rate)
        }

        /// The device's frames per second of CLOCK_MONOTONIC over the whole recording.
        public var measuredRate: Double {
            guard let a = marks.first, let b = marks.last, b.ns > a.ns else { return 0 }
            return Double(b.frames - a.frames) * 1e9 / Double(b.ns - a.ns)
        }
        /// Times the device's buffer overflowed (samples lost: later samples' instants are off).
        public var overruns: Int
    }

    /// The capture's buffer: long enough that a slow reader (an emulated machine) does not
    /// overflow it. Each frame's instant comes from the device's position, not from the reads.
    public static let latencyUs: UInt32 = 250_000

    /// Records `seconds` of 16-bit `channels` × `rate` from `device`; `started` is called once
    /// the stream runs (e.g. to tell another process to make the sound).
    public static func record(device: String, seconds: Double, rate: Int = HornTone.rate, channels: Int = HornTone.channels,
                              started: () -> Void = {}) throws -> Recording {
        if let e = kiosk_lazy_load(Int32(KIOSK_LIB_ASOUND)) { throw KioskError(.config, String(cString: e)) }
        var handle: OpaquePointer?
        var rc = snd_pcm_open(&handle, device, SND_PCM_STREAM_CAPTURE, 0)
        guard rc >= 0, let pcm = handle else {
            throw KioskError(.config, "cannot open \"\(device)\" for capture: \(String(cString: snd_strerror(rc)))")
        }
        defer { snd_pcm_close(pcm) }
        rc = snd_pcm_set_params(pcm, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, UInt32(channels), UInt32(rate), 0, latencyUs)
        guard rc >= 0 else { throw KioskError(.config, "\(device): \(String(cString: snd_strerror(rc)))") }
        var buffer: snd_pcm_uframes_t = 0, period: snd_pcm_uframes_t = 0
        _ = snd_pcm_get_params(pcm, &buffer, &period)
        let total = Int(seconds * Double(rate))
        var samples = [Int16](repeating: 0, count: total * channels)
        var read = 0
        var startNs = Int64.max
        rc = snd_pcm_start(pcm)
        guard rc >= 0 else { throw KioskError(.config, "\(device): cannot start: \(String(cString: snd_strerror(rc)))") }
        var told = false, overruns = 0
        var marks: [(ns: Int64, frames: Int)] = []
        while read < total {
            let chunk = min(Int(max(period, 64)), total - read)
            let n = samples.withUnsafeMutableBufferPointer { snd_pcm_readi(pcm, $0.baseAddress! + read * channels, snd_pcm_uframes_t(chunk)) }
            if n < 0 {
                // An overrun: prepared again, and started again (a capture does not start by itself).
                overruns += 1
                guard snd_pcm_recover(pcm, Int32(n), 1) >= 0, snd_pcm_start(pcm) >= 0 else {
                    throw KioskError(.config, "\(device): \(String(cString: snd_strerror(Int32(n))))")
                }
                continue
            }
            read += Int(n)
            let avail = max(0, Int(snd_pcm_avail(pcm)))
            let now = nowNanos(.monotonic)
            startNs = min(startNs, now - Int64(Double(read + avail) * 1e9 / Double(rate)))
            marks.append((now, read + avail))
            if !told { told = true; started() }
        }
        return Recording(sound: PCMSound(rate: rate, channels: channels, samples: samples), startNs: startNs, marks: marks, overruns: overruns)
    }
}
