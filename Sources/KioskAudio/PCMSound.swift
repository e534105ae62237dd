import FoundationEssentials
import Glibc

/// Sound as ALSA plays it: 16-bit signed samples, interleaved (left, right, left, … for stereo),
/// at `rate` frames per second.
public struct PCMSound: Sendable, Equatable {
    public var rate: Int
    public var channels: Int
    public var samples: [Int16]

    public init(rate: Int, channels: Int, samples: [Int16]) {
        self.rate = rate; self.channels = channels; self.samples = samples
    }

    /// Frames (one sample per channel each).
    public var frames: Int { channels > 0 ? samples.count / channels : 0 }
    public var seconds: Double { rate > 0 ? Double(frames) / Double(rate) : 0 }

    /// Channel `c` alone.
    public func channel(_ c: Int) -> [Int16] {
        guard c < channels else { return [] }
        return stride(from: c, to: samples.count, by: channels).map { samples[$0] }
    }

    /// Every sample scaled by `volume` percent (0…100) of its level.
    public func scaled(volume: Double) -> PCMSound {
        let g = max(0, min(100, volume)) / 100
        var out = self
        out.samples = samples.map { Int16((Double($0) * g).rounded()) }
        return out
    }

    /// At most `seconds` long; when cut, the last `ramp` seconds fade out (no click at the cut).
    public func trimmed(seconds: Double, ramp: Double = HornTone.defaultRamp) -> PCMSound {
        let keep = Int((seconds * Double(rate)).rounded())
        guard keep < frames else { return self }
        var out = self
        out.samples = Array(samples[0..<(keep * channels)])
        let rampFrames = max(1, Int(ramp * Double(rate)))
        for f in max(0, keep - rampFrames)..<keep {
            let g = Double(keep - 1 - f) / Double(rampFrames)
            for c in 0..<channels { out.samples[f * channels + c] = Int16((Double(out.samples[f * channels + c]) * g).rounded()) }
        }
        return out
    }
}

/// The built-in horn: two tones sounding together (a major third, as many stadium horns), each
/// a sine, with short linear attack and release ramps so that it starts and ends without a click.
public struct HornTone: Sendable, Equatable {
    /// The tones, in hertz.
    public var frequencies: [Double] = [440, 554.37]
    /// Attack and release, in seconds.
    public var ramp: Double = HornTone.defaultRamp
    public static let defaultRamp = 0.01
    /// The built-in horn's format: what a loopback or a USB card takes without conversion.
    public static let rate = 48_000
    public static let channels = 2
    /// The highest sample at volume 100 %, as a fraction of full scale (a little headroom).
    public static let fullLevel = 0.9

    public init(frequencies: [Double] = [440, 554.37], ramp: Double = HornTone.defaultRamp) {
        self.frequencies = frequencies; self.ramp = ramp
    }

    /// `seconds` of the horn at `volume` percent (0…100): the sum of the tones peaks at
    /// `fullLevel × volume / 100` of full scale; the same samples on every channel.
    public func render(seconds: Double, volume: Double, rate: Int = HornTone.rate, channels: Int = HornTone.channels) -> PCMSound {
        let frames = max(0, Int((seconds * Double(rate)).rounded()))
        let rampFrames = max(1, Int(ramp * Double(rate)))
        let amplitude = HornTone.fullLevel * 32767 * max(0, min(100, volume)) / 100 / Double(max(1, frequencies.count))
        let steps = frequencies.map { 2 * Double.pi * $0 / Double(rate) }
        var samples = [Int16](repeating: 0, count: frames * channels)
        for f in 0..<frames {
            let envelope = min(1, Double(f) / Double(rampFrames), Double(frames - 1 - f) / Double(rampFrames))
            var v = 0.0
            for s in steps { v += sin(s * Double(f)) }
            let sample = Int16((v * amplitude * envelope).rounded())
            for c in 0..<channels { samples[f * channels + c] = sample }
        }
        return PCMSound(rate: rate, channels: channels, samples: samples)
    }
}
