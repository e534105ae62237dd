import Testing

/// Power cuts on a real kernel: kioskd's state on an ext4 file system on a virtio-blk disk, QEMU
/// killed (SIGKILL or QMP quit) at random moments while increments are acknowledged, each
/// acknowledged value logged to the host over a virtio-serial port; every following boot finds
/// every acknowledged increment and e2fsck finds the file system clean
/// (scripts/vm/scenarios_powercut.py). KIOSK_VM_TESTS=1; KIOSK_POWERCUT_CYCLES sets the number of
/// cuts (default 3).
@Suite(.enabled(if: vmTestsEnabled), .serialized)
struct PowerCutVMTests {
    @Test func everyAcknowledgedIncrementSurvivesAPowerCut() throws {
        try VMScenario.check("kioskd-power-cut", needsKioskd: true)
    }
}
