import FoundationEssentials
import KioskCore

/// A RIFF WAVE file of 16-bit PCM, mono or stereo (what `[audio] horn` takes besides "builtin").
public enum WAVFile {
    /// Reads and checks the file at `path`. Errors name the file and what is wrong with it.
    public static func load(path: String) throws -> PCMSound {
        guard let data = FileManager.default.contents(atPath: path) else {
            let why = FileManager.default.fileExists(atPath: path) ? "cannot be read (permissions?)" : "no such file"
            throw KioskError.config("\(path): \(why)")
        }
        do { return try parse([UInt8](data)) } catch let e as KioskError { throw KioskError.config("\(path): \(e.message)") }
    }

    /// Parses a WAV file's bytes: a `fmt ` chunk of PCM (format 1, or WAVE_FORMAT_EXTENSIBLE with
    /// the PCM sub-format), 16 bits, 1 or 2 channels, 8000…192000 Hz, and a non-empty `data` chunk.
    public static func parse(_ b: [UInt8]) throws -> PCMSound {
        func u16(_ o: Int) -> Int { Int(b[o]) | Int(b[o + 1]) << 8 }
        func u32(_ o: Int) -> Int { u16(o) | u16(o + 2) << 16 }
        func tag(_ o: Int) -> String { String(decoding: b[o..<o + 4], as: UTF8.self) }
        guard b.count >= 12, tag(0) == "RIFF", tag(8) == "WAVE" else {
            throw KioskError.config("not a WAV file (no RIFF/WAVE header)")
        }
        var fmt: (format: Int, channels: Int, rate: Int, bits: Int)?
        var offset = 12
        while offset + 8 <= b.count {
            let id = tag(offset), size = u32(offset + 4), body = offset + 8
            switch id {
            case "fmt ":
                guard size >= 16, body + 16 <= b.count else { throw KioskError.config("its fmt chunk is cut short (\(size) bytes)") }
                var format = u16(body)
                // WAVE_FORMAT_EXTENSIBLE: the real format is the sub-format GUID's first two bytes.
                if format == 0xFFFE, size >= 40, body + 26 <= b.count { format = u16(body + 24) }
                fmt = (format, u16(body + 2), u32(body + 4), u16(body + 14))
            case "data":
                guard let f = fmt else { throw KioskError.config("its data chunk comes before any fmt chunk") }
                guard f.format == 1 else { throw KioskError.config("not PCM (format \(f.format)); save it as 16-bit PCM") }
                guard f.bits == 16 else { throw KioskError.config("\(f.bits)-bit samples; only 16-bit PCM is played") }
                guard f.channels == 1 || f.channels == 2 else { throw KioskError.config("\(f.channels) channels; only mono or stereo is played") }
                guard (8000...192_000).contains(f.rate) else { throw KioskError.config("sample rate \(f.rate) Hz; expected 8000…192000 Hz") }
                let available = min(size, b.count - body)
                if available < size && size != 0xFFFF_FFFF {
                    throw KioskError.config("its data chunk is cut short (\(available) of \(size) bytes)")
                }
                let frames = available / (2 * f.channels)
                guard frames > 0 else { throw KioskError.config("no samples (an empty data chunk)") }
                var samples = [Int16](repeating: 0, count: frames * f.channels)
                for i in 0..<samples.count { samples[i] = Int16(bitPattern: UInt16(u16(body + 2 * i))) }
                return PCMSound(rate: f.rate, channels: f.channels, samples: samples)
            default:
                break
            }
            offset = body + size + (size & 1)
        }
        throw KioskError.config(fmt == nil ? "no fmt chunk" : "no data chunk")
    }

    /// The bytes of a 16-bit PCM WAV file holding `sound` (tests, examples).
    public static func encode(_ sound: PCMSound) -> [UInt8] {
        var out: [UInt8] = []
        func tag(_ s: String) { out += Array(s.utf8) }
        func u16(_ v: Int) { out += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
        func u32(_ v: Int) { u16(v & 0xFFFF); u16(v >> 16 & 0xFFFF) }
        let dataBytes = sound.samples.count * 2
        tag("RIFF"); u32(36 + dataBytes); tag("WAVE")
        tag("fmt "); u32(16); u16(1); u16(sound.channels); u32(sound.rate); u32(sound.rate * sound.channels * 2)
        u16(sound.channels * 2); u16(16)
        tag("data"); u32(dataBytes)
        for s in sound.samples { u16(Int(UInt16(bitPattern: s))) }
        return out
    }
}
