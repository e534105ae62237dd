import Testing

/// The horn through ALSA on a real kernel: snd-aloop, kioskd playing on hw:Loopback,0,0 and a
/// capture on hw:Loopback,1,0 (scripts/vm/scenarios_audio.py says what it checks). KIOSK_VM_TESTS=1.
@Suite(.enabled(if: vmTestsEnabled), .serialized)
struct AudioVMTests {
    /// `kioskctl horn`: the tones measured in the recording, its length, ≤ 50 ms from the request
    /// to the first sound; `mute = true` is silent; a missing device leaves the horn unavailable.
    @Test func hornOnTheLoopbackCard() throws {
        try VMScenario.check("kioskd-horn", needsKioskd: true)
    }

    /// A 3 s game clock running out: the horn's tones begin ≤ 50 ms after the frame that shows
    /// 0.0; `mute = true` is silent; a restart after the period ended sounds nothing.
    @Test func hornWhenTheClockRunsOut() throws {
        try VMScenario.check("kioskd-horn-clock", needsKioskd: true)
    }

    /// A 3 s shot clock running out under a running game clock: the horn's tones begin ≤ 50 ms
    /// after the frame that shows the shot clock at 0.0; the game clock runs on, each face on
    /// time; stopping the game clock stops the shot clock.
    @Test func hornWhenTheShotClockRunsOut() throws {
        try VMScenario.check("kioskd-horn-shot", needsKioskd: true)
    }
}
