import Testing

/// A wall clock that cannot know the time (RTC in 2001, no NTP client): the real kioskd starts at
/// once, shows the "time not synchronised" mark (screendump) and says so in status; when
/// systemd-timesyncd's flag file appears the mark goes (scripts/vm/scenarios_wall.py).
/// KIOSK_VM_TESTS=1. Backlight devices do not exist in the VM: brightness is tested against a
/// sysfs-shaped tree (Tests/KioskDaemonTests/WallTests.swift).
@Suite(.enabled(if: vmTestsEnabled), .serialized)
struct WallVMTests {
    @Test func unsynchronisedClockShowsTheMarkUntilTimesyncdSaysSo() throws {
        try VMScenario.check("kioskd-time-unsynced", needsKioskd: true)
    }
}
