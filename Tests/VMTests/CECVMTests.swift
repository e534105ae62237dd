import Testing

/// HDMI-CEC on a real kernel: vivid's emulated bus, /dev/cec0 playing the TV (cec-ctl --tv,
/// cec-follower) and kioskd on /dev/cec1 (scripts/vm/scenarios_cec.py says what it checks).
/// KIOSK_VM_TESTS=1.
@Suite(.enabled(if: vmTestsEnabled), .serialized)
struct CECVMTests {
    /// `kioskctl blank on/off` put the TV into standby and back (read with cec-ctl and in
    /// kioskd's status); a TV that does not answer is reported while the clock keeps its rate.
    @Test func tvFollowsBlankingOverCEC() throws {
        try VMScenario.check("kioskd-cec", needsKioskd: true)
    }

    /// The TV's remote keys (User Control Pressed/Released from /dev/cec0) reach the counter
    /// scene like keyboard keys; unbound keys change nothing; the TV's power-status question is
    /// answered "on" while lit and "standby" while blanked.
    @Test func remoteKeysReachTheCounter() throws {
        try VMScenario.check("kioskd-cec-keys", needsKioskd: true)
    }
}
