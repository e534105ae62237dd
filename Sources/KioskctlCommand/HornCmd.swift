import ArgumentParser
import KioskControl

struct Horn: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Sound the horn ([audio]) now; muted kiosks answer \"muted\".")
    @OptionGroup var c: Connection
    func run() throws {
        try c.call(.horn, as: HornAnswer.self) { a in
            a.result == "muted" ? "muted: [audio] mute = true, nothing played" : "horn: \(a.result) on \(a.device)"
        }
    }
}

extension AudioStatus {
    /// "horn builtin on hw:Loopback,0,0, buffer 100 ms; last: written 0.3 ms after the request, 100 ms in the device".
    var text: String {
        guard available else { return "horn UNAVAILABLE on \(device): \(error ?? "no sound device")" }
        var s = "horn \(horn) on \(device)\(muted ? " (muted)" : "")"
        if let b = bufferMs { s += ", buffer \(b) ms" }
        if let l = lastHorn {
            s += "; last: written \(l.writeLatencyMs) ms after the request, \(l.pcmDelayMs) ms in the device"
                + (l.underruns > 0 ? ", \(l.underruns) gap(s)" : "") + (l.error.map { ", error: \($0)" } ?? "")
        }
        return s
    }
}
