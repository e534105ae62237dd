import Foundation
import KioskDaemon
import KioskDaemonTesting
import Testing

/// A daemon that is dropped is freed, and with it what it holds open (its loop's descriptors,
/// the time-sync and time-zone inotify instances: 128 per user by default). Tests drop daemons
/// with and without a shutdown; both must be freed, or the user's instances run out.
@Suite(.ownThreads) struct DaemonReleaseTests {
    @Test(arguments: [true, false])
    func aStartedDaemonIsFreedOnceDropped(shutDown: Bool) throws {
        let dir = tempDir()
        weak var released: Daemon?
        do {
            let d = try makeDaemon(dir)
            d.startAsKioskd()
            try d.step()
            if shutDown { d.shutdown() }
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
