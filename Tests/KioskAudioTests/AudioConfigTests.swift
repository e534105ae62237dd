import Foundation
import KioskAudio
import KioskConfig
import KioskCore
import Testing

/// `[audio]` in the config file: defaults, the horn's WAV file read at check time, and errors that
/// name file:line, the key and what is wrong.
@Suite struct AudioConfigTests {
    let dir: String = {
        let d = NSTemporaryDirectory() + "audio-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try! FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }()

    func load(_ audio: String) throws -> DaemonConfig {
        let path = "\(dir)/kioskd.toml"
        try "[scene.clock]\nkind = \"clock\"\n\(audio)".write(toFile: path, atomically: false, encoding: .utf8)
        return try DaemonConfig.load(path: path, kinds: ["clock"])
    }

    func error(_ audio: String) -> String? {
        do { _ = try load(audio); return nil } catch let e as KioskError { return e.message } catch { return "\(error)" }
    }

    @Test func noTableNoAudioAndDefaults() throws {
        #expect(try load("").audio == nil)
        let a = try #require(try load("[audio]\n").audio)
        #expect(a == AudioSettings())
        #expect(a.device == "default" && a.horn == .builtin && a.hornSeconds == 1.5 && a.volume == 80 && !a.mute)
        let b = try #require(try load("[audio]\ndevice = \"hw:Loopback,0,0\"\nhorn_seconds = 2\nvolume = 35.5\nmute = true\n").audio)
        #expect(b.device == "hw:Loopback,0,0" && b.hornSeconds == 2 && b.volume == 35.5 && b.mute)
    }

    @Test func hornWAVRelativeToTheConfigFile() throws {
        let sound = PCMSound(rate: 44100, channels: 1, samples: [0, 100, -100])
        try Data(WAVFile.encode(sound)).write(to: URL(fileURLWithPath: "\(dir)/buzzer.wav"))
        let a = try #require(try load("[audio]\nhorn = \"buzzer.wav\"\n").audio)
        #expect(a.horn == .wav(path: "\(dir)/buzzer.wav", sound: sound))
    }

    @Test func errorsNameFileLineKeyAndWhatIsWrong() throws {
        let f = "\(dir)/kioskd.toml"
        #expect(error("[audio]\nhorn = \"missing.wav\"\n")
                == "\(f):4: key 'audio.horn': \(dir)/missing.wav: no such file (expected \"builtin\" or a 16-bit PCM WAV file, mono or stereo)")
        try "RIFF....WAVE".write(toFile: "\(dir)/bad.wav", atomically: false, encoding: .utf8)
        #expect(error("[audio]\nhorn = \"bad.wav\"\n")?.hasPrefix("\(f):4: key 'audio.horn': \(dir)/bad.wav: no fmt chunk") == true)
        #expect(error("[audio]\nvolume = 120\n") == "\(f):4: key 'audio.volume': 120.0 is out of range, expected 0.0…100.0")
        #expect(error("[audio]\nhorn_seconds = 0\n") == "\(f):4: key 'audio.horn_seconds': 0.0 is out of range, expected 0.1…10.0")
        #expect(error("[audio]\nmute = \"yes\"\n")?.hasPrefix("\(f):4: key 'audio.mute': expected true or false") == true)
        #expect(error("[audio]\ndevice = \"\"\n")?.hasPrefix("\(f):4: key 'audio.device': expected an ALSA device name") == true)
        #expect(error("[audio]\nvolum = 50\n")?.contains("audio.volum") == true)
    }
}
