import Foundation
import KioskDaemon
import KioskDaemonTesting
import Testing

/// A daemon that is shut down and dropped is freed, and with it what it holds open (its loop's
/// descriptors, the time-sync and time-zone inotify instances: 128 per user by default).
@Suite(.ownThreads) struct DaemonReleaseTests {
    @Test func aStartedDaemonIsFreedOnceShutDownAndDropped() throws {
        let dir = tempDir()
        weak var released: Daemon?
        do {
            let d = try makeDaemon(dir)
            d.startAsKioskd()
            try d.step()
            d.shutdown()
            released = d
        }
        #expect(released == nil)
    }

    /// Tests drop daemons without a shutdown; those must be freed too, or the user's 128
    /// inotify instances run out.
    @Test func aStartedDaemonIsFreedWhenDroppedWithoutAShutdown() throws {
        let dir = tempDir()
        weak var released: Daemon?
        do {
            let d = try makeDaemon(dir)
            d.startAsKioskd()
            try d.step()
            released = d
        }
        #expect(released == nil)
    }

    @Test func aMadeDaemonIsFreed() throws {
        let dir = tempDir()
        weak var released: Daemon?
        do { let d = try makeDaemon(dir); released = d }
        #expect(released == nil)
    }

    @Test func aStartedOnlyDaemonIsFreed() throws {
        let dir = tempDir()
        weak var released: Daemon?
        do { let d = try makeDaemon(dir); d.start(); d.shutdown(); released = d }
        #expect(released == nil)
    }
}
