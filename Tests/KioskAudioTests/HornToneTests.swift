import KioskAudio
import Testing

/// The built-in horn's samples: its two tones at their frequencies, its level per volume, its
/// attack and release ramps, its length.
@Suite struct HornToneTests {
    static let full = HornTone.fullLevel * 32767

    @Test func bothTonesAndNothingElse() {
        let s = HornTone().render(seconds: 1, volume: 100)
        let a = ToneAnalysis(samples: s.channel(0), rate: s.rate)
        let steady = 4800..<43200
        // Each of the two tones carries half of the level.
        for f in [440.0, 554.37] {
            let amp = a.amplitude(of: f, in: steady)
            #expect(abs(amp - HornTone.fullLevel / 2) < 0.02, "\(f) Hz: amplitude \(amp)")
        }
        for f in [300.0, 494.0, 660.0, 880.0, 1000.0] {
            #expect(a.amplitude(of: f, in: steady) < 0.01, "\(f) Hz should be absent")
        }
        // One tone alone: its zero crossings give its frequency.
        let one = HornTone(frequencies: [440]).render(seconds: 0.5, volume: 100)
        let zc = ToneAnalysis(samples: one.channel(0), rate: one.rate).zeroCrossingFrequency()
        #expect(abs(zc - 440) < 1, "zero crossings: \(zc) Hz")
    }

    @Test func levelFollowsTheVolume() {
        for (volume, expected) in [(100.0, Self.full), (50.0, Self.full / 2), (10.0, Self.full / 10)] {
            let peak = ToneAnalysis(samples: HornTone().render(seconds: 0.5, volume: volume).samples, rate: 48000).peak
            // The two sines' sum reaches its crest only now and then: within 3 % of it.
            #expect(Double(peak) <= expected + 1 && Double(peak) > expected * 0.97, "volume \(volume): peak \(peak), expected ≈ \(expected)")
        }
        #expect(HornTone().render(seconds: 0.2, volume: 0).samples.allSatisfy { $0 == 0 })
        #expect(HornTone().render(seconds: 0.2, volume: 250).samples == HornTone().render(seconds: 0.2, volume: 100).samples, "clamped to 100 %")
    }

    @Test func rampsStartAndEndAtSilence() {
        let s = HornTone().render(seconds: 0.5, volume: 100)
        let left = s.channel(0)
        #expect(left.first == 0 && left.last == 0)
        // 10 ms ramps (480 frames): 1 ms in, at most a tenth of the level; no step between samples
        // larger than the tones' own slope at full level allows.
        #expect(left[0..<48].allSatisfy { Double(abs(Int($0))) <= Self.full * 0.1 + 1 })
        #expect(left[(left.count - 48)...].allSatisfy { Double(abs(Int($0))) <= Self.full * 0.1 + 1 })
        let maxStep = zip(left, left.dropFirst()).map { abs(Int($0) - Int($1)) }.max() ?? 0
        let slope = 2 * Double.pi * 554.37 / 48000 * Self.full  // the steepest a full-level 554 Hz sine gets
        #expect(Double(maxStep) < slope * 1.1, "largest step \(maxStep)")
        // Without ramps the first step would be a click: the tone at full level at once.
        let middle = ToneAnalysis(samples: Array(left[12000..<12480]), rate: 48000).peak
        #expect(Double(middle) > Self.full * 0.8, "the steady part is at full level (\(middle))")
    }

    @Test func lengthAndChannels() {
        let s = HornTone().render(seconds: 1.25, volume: 80)
        #expect(s.rate == 48000 && s.channels == 2 && s.frames == 60000)
        #expect(s.channel(0) == s.channel(1))
        let a = ToneAnalysis(samples: s.channel(0), rate: s.rate)
        #expect(abs(a.soundSeconds - 1.25) < 0.02, "\(a.soundSeconds) s")
    }

    @Test func wavSoundIsScaledAndCutWithAFade() {
        let tone = HornTone(frequencies: [440]).render(seconds: 2, volume: 100, rate: 16000, channels: 1)
        var settings = AudioSettings()
        settings.horn = .wav(path: "/x.wav", sound: tone)
        settings.hornSeconds = 0.5
        settings.volume = 50
        let s = settings.hornSound()
        #expect(s.frames == 8000 && s.rate == 16000 && s.channels == 1)
        let peak = ToneAnalysis(samples: s.samples, rate: 16000).peak
        #expect(abs(Double(peak) - Self.full / 2) < 100, "half level: \(peak)")
        #expect(s.samples.last == 0, "the cut fades out")
    }
}
