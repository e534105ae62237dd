import KioskAudio
import KioskCore

extension AudioSettings {
    /// `[audio]`: `device` (default "default"), `horn` ("builtin" or a WAV file's path, relative
    /// to the config file), `horn_seconds`, `volume` (percent), `mute`. A WAV file is read and
    /// checked here, so that a missing or bad file is reported when the config is checked, with
    /// the key's file:line and what is wrong with the file.
    static func parse(_ t: ConfigTable, resolve: (String) -> String) throws -> AudioSettings {
        var a = AudioSettings()
        a.device = try t.string("device", default: "default")
        if a.device.isEmpty { throw t.error("device", "expected an ALSA device name like \"default\" or \"hw:1,0\", got an empty string") }
        a.hornSeconds = try t.double("horn_seconds", default: a.hornSeconds, range: AudioSettings.hornSecondsRange)
        a.volume = try t.double("volume", default: a.volume, range: 0...100)
        a.mute = try t.bool("mute", default: false)
        let horn = try t.string("horn", default: "builtin")
        if horn != "builtin" {
            if horn.isEmpty { throw t.error("horn", "expected \"builtin\" or the path of a WAV file, got an empty string") }
            let path = resolve(horn)
            do { a.horn = .wav(path: path, sound: try WAVFile.load(path: path)) } catch let e as KioskError {
                throw t.error("horn", "\(e.message) (expected \"builtin\" or a 16-bit PCM WAV file, mono or stereo)")
            }
        }
        try t.finish()
        return a
    }
}
