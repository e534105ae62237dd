import Foundation
import KioskAudio
import KioskCore

/// `kiosk-vmtool audio-capture`: records from an ALSA capture device (snd-aloop's second
/// subdevice hears what is played on the first) and prints what it heard as one JSON line:
/// `vmtool: capture {…}`. Times are CLOCK_MONOTONIC nanoseconds, the clock kioskd's horn
/// request is stamped with, so the two line up in one VM without any conversion.
func runAudioCapture(_ args: ArraySlice<String>) throws {
    let o = Options(args, known: ["device", "seconds", "started-file"])
    let device = o.string("device") ?? "hw:Loopback,1,0"
    guard let seconds = Double(o.string("seconds") ?? "3"), seconds > 0, seconds <= 30 else { fail("--seconds needs 0…30", code: 2) }
    let recording = try PCMCapture.record(device: device, seconds: seconds) {
        say("capturing \(device)")
        if let f = o.string("started-file") { _ = FileManager.default.createFile(atPath: f, contents: Data("started\n".utf8)) }
    }
    let rate = recording.sound.rate
    let a = ToneAnalysis(samples: recording.sound.channel(0), rate: rate)
    var out: [String: Any] = ["start_ns": recording.startNs, "rate": rate, "frames": recording.sound.frames,
                              "peak": a.peak, "rms": a.rms(), "overruns": recording.overruns,
                              "device_rate": recording.measuredRate]
    if let onset = a.onset, let end = a.end {
        out["onset_ns"] = recording.instant(ofFrame: onset)
        // From frame 0's instant instead: off by the device clock's drift since the start.
        out["onset_from_start_ns"] = recording.startNs + Int64(Double(onset) * 1e9 / Double(rate))
        out["sound_seconds"] = a.soundSeconds
        // The steady part (ramps left out): its strongest frequencies, scanned every 2 Hz over
        // 200…1200 Hz on a quarter of a second, the two best peaks at least 30 Hz apart.
        let from = onset + rate / 20, to = min(end - rate / 20, from + rate / 4)
        if to > from {
            let window = from..<to
            var scan: [(Double, Double)] = []
            for f in stride(from: 200.0, through: 1200.0, by: 2.0) { scan.append((f, a.amplitude(of: f, in: window))) }
            scan.sort { $0.1 > $1.1 }
            var peaks: [(Double, Double)] = []
            for s in scan where peaks.count < 2 && peaks.allSatisfy({ abs($0.0 - s.0) >= 30 }) { peaks.append(s) }
            out["peaks_hz"] = peaks.map(\.0).sorted()
            out["peak_amplitudes"] = peaks.map(\.1)
            out["rms_steady"] = a.rms(window)
        }
    }
    let json = try JSONSerialization.data(withJSONObject: out, options: [.sortedKeys])
    say("capture \(String(decoding: json, as: UTF8.self))")
}
