import Foundation
import KioskAudio
import KioskCore
import Testing

/// WAV files for `[audio] horn`: 16-bit PCM mono or stereo read back as written; every other file
/// refused with what is wrong with it.
@Suite struct WAVFileTests {
    static let mono = PCMSound(rate: 22050, channels: 1, samples: [0, 1000, -1000, 32767, -32768, 5])
    static let stereo = PCMSound(rate: 48000, channels: 2, samples: [1, -1, 200, -200, 3000, -3000])

    func error(_ bytes: [UInt8]) -> String? {
        do { _ = try WAVFile.parse(bytes); return nil } catch let e as KioskError { return e.message } catch { return "\(error)" }
    }

    /// `bytes` with the little-endian 16-bit value at `offset` replaced.
    func patched(_ bytes: [UInt8], _ offset: Int, _ v: Int) -> [UInt8] {
        var b = bytes
        b[offset] = UInt8(v & 0xFF); b[offset + 1] = UInt8(v >> 8)
        return b
    }

    @Test func monoAndStereoRoundTrip() throws {
        #expect(try WAVFile.parse(WAVFile.encode(Self.mono)) == Self.mono)
        #expect(try WAVFile.parse(WAVFile.encode(Self.stereo)) == Self.stereo)
    }

    @Test func otherChunksAreSkipped() throws {
        var b = WAVFile.encode(Self.mono)
        // A LIST chunk of odd length (padded) between the header and fmt.
        b.insert(contentsOf: Array("LIST".utf8) + [3, 0, 0, 0, 65, 66, 67, 0], at: 12)
        #expect(try WAVFile.parse(b) == Self.mono)
    }

    @Test func badFilesSayWhatIsWrong() {
        let good = WAVFile.encode(Self.stereo)
        #expect(error(Array("not a wav file at all".utf8))?.contains("not a WAV file") == true)
        #expect(error([])?.contains("not a WAV file") == true)
        // fmt fields: format at 20, channels at 22, bits at 34.
        #expect(error(patched(good, 20, 3)) == "not PCM (format 3); save it as 16-bit PCM")
        #expect(error(patched(good, 34, 8)) == "8-bit samples; only 16-bit PCM is played")
        #expect(error(patched(good, 22, 6)) == "6 channels; only mono or stereo is played")
        #expect(error(Array(good[0..<36])) == "no data chunk")
        #expect(error(Array(good.dropLast(4)))?.contains("data chunk is cut short (8 of 12 bytes)") == true)
        var empty = WAVFile.encode(PCMSound(rate: 8000, channels: 1, samples: []))
        #expect(error(empty) == "no samples (an empty data chunk)")
        empty = Array(good[0..<12]) + Array("data".utf8) + [0, 0, 0, 0]
        #expect(error(empty) == "its data chunk comes before any fmt chunk")
    }

    @Test func fileErrorsNameTheFile() throws {
        let dir = NSTemporaryDirectory() + "wav-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let missing = "\(dir)/nope.wav"
        #expect(throws: KioskError.config("\(missing): no such file")) { try WAVFile.load(path: missing) }
        let text = "\(dir)/notes.wav"
        try "hello".write(toFile: text, atomically: false, encoding: .utf8)
        #expect(throws: KioskError.config("\(text): not a WAV file (no RIFF/WAVE header)")) { try WAVFile.load(path: text) }
        let good = "\(dir)/horn.wav"
        try Data(WAVFile.encode(Self.stereo)).write(to: URL(fileURLWithPath: good))
        #expect(try WAVFile.load(path: good) == Self.stereo)
    }
}
