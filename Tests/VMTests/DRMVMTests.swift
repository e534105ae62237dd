import Testing

/// Kernel tests of the DRM/KMS display: QEMU boots Debian's kernel with bochs-drm (-device VGA) or
/// virtio-gpu, the display code draws through `kiosk-vmtool drm` (and the real kioskd), and the
/// host checks QMP screendump pixels. What each scenario proves and checks: scripts/vm/README.md
/// and scripts/vm/scenarios_drm.py. Enabled with KIOSK_VM_TESTS=1.
@Suite(.enabled(if: vmTestsEnabled), .serialized)
struct DRMVMTests {
    /// First frame by one mode set, the pattern, damage copied by buffer age, 30 flip events,
    /// blank (every pixel black) and unblank, SIGTERM gives the text console back as it was.
    @Test(arguments: ["drm-basic-bochs-atomic", "drm-basic-bochs-legacy", "drm-basic-virtio-atomic", "drm-basic-virtio-legacy"])
    func firstFrameDamageFlipsBlankAndRestore(_ scenario: String) throws {
        try VMScenario.check(scenario)
    }

    @Test func rotationTurnsThePicture() throws {
        try VMScenario.check("drm-rotation")
    }

    @Test func droppingAndRetakingDRMMasterHandsTheScreenOver() throws {
        try VMScenario.check("drm-master-handover")
    }

    @Test func virtioGPUUnplugAndReplugIsFollowed() throws {
        try VMScenario.check("drm-hotplug-virtio")
    }

    /// One DRMCard drives both outputs of a virtio GPU (max_outputs=2): both heads flip at once,
    /// each getting its own flip events, atomic and legacy; each head shows its own colour.
    @Test func twoHeadsOnOneCardFlipAtOnce() throws {
        try VMScenario.check("drm-two-heads-virtio")
    }

    /// The real kioskd: the clock background at the VM's RTC time (-rtc base=2026-03-14T13:35:16)
    /// equals red = round(h·255/24), green = round(m·255/60), blue = round(s·255/60) within one second.
    @Test func kioskdClockMatchesTheFormulaAtRTCTime() throws {
        try VMScenario.check("kioskd-clock-bochs", needsKioskd: true)
    }

    /// The real kioskd: counter first frame in the default theme, then rotated 90.
    @Test func kioskdCounterFirstFrameAndRotation() throws {
        try VMScenario.check("kioskd-counter-bochs", needsKioskd: true)
    }

    /// The real kioskd on virtio-gpu: the connector forced off and re-detected (udev change events);
    /// kioskd keeps running with no mode, then sets the mode again and repaints the same picture.
    @Test func kioskdFollowsConnectorHotplug() throws {
        try VMScenario.check("kioskd-connector-hotplug-virtio", needsKioskd: true)
    }
}
