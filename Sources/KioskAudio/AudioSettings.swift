/// `[audio]`: the sound device and the horn it plays.
public struct AudioSettings: Sendable, Equatable {
    /// The horn's sound: the built-in two-tone horn or a WAV file (read and checked with the config).
    public enum Horn: Sendable, Equatable {
        case builtin
        case wav(path: String, sound: PCMSound)
    }
    /// The ALSA PCM device ("default", "hw:1,0", "plughw:CARD=Device", …).
    public var device = "default"
    public var horn = Horn.builtin
    /// How long the horn sounds (a WAV file that is longer is cut, with a short fade).
    public var hornSeconds = 1.5
    /// Percent of the horn's full level (amplitude), 0…100.
    public var volume = 80.0
    /// Nothing is played (ceremonies); a horn asked for is answered "muted".
    public var mute = false
    public init() {}

    public static let hornSecondsRange = 0.1...10.0

    /// The samples the horn plays, rendered once.
    public func hornSound() -> PCMSound {
        switch horn {
        case .builtin: return HornTone().render(seconds: hornSeconds, volume: volume)
        case .wav(_, let sound): return sound.scaled(volume: volume).trimmed(seconds: hornSeconds)
        }
    }

    /// "builtin" or the WAV file's path (status, logs).
    public var hornName: String {
        switch horn {
        case .builtin: return "builtin"
        case .wav(let path, _): return path
        }
    }
}
