import Testing

/// Power cuts on a real kernel under a concurrent burst: kioskd's state on an ext4 file system on
/// a virtio-blk disk, concurrent clients incrementing two counters (so the command pipeline
/// commits their changes in batches of several), QEMU killed (SIGKILL or QMP quit) at random
/// moments meanwhile, each acknowledged value logged to the host over a virtio-serial port; every
/// following boot finds every acknowledged increment and none applied twice, and e2fsck finds the
/// file system clean (scripts/vm/scenarios_powercut.py). KIOSK_VM_TESTS=1; KIOSK_POWERCUT_CYCLES
/// sets the number of cuts (default 3), KIOSK_POWERCUT_CLIENTS the clients (default 8).
@Suite(.enabled(if: vmTestsEnabled), .serialized)
struct PowerCutVMTests {
    @Test func everyAcknowledgedIncrementSurvivesAPowerCut() throws {
        try VMScenario.check("kioskd-power-cut", needsKioskd: true)
    }
}
