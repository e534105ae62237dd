#if canImport(Glibc)
import Glibc
#endif
import CKioskLinux
import Testing
import KioskCore
import KioskDRMTesting
import KioskTesting
import Logging
@testable import KioskDRM

extension NotifySocket {
    /// The next message and the descriptors passed with it (nil: none within the socket's timeout).
    func receive() -> (text: String, fds: [Int32])? {
        var buffer = [CChar](repeating: 0, count: 4096)
        var fds = [Int32](repeating: -1, count: 16)
        var count: Int32 = 0
        let n = kiosk_receive_with_fds(fd, &buffer, buffer.count, &fds, 16, &count)
        guard n >= 0 else { return nil }
        return (String(cString: buffer), Array(fds.prefix(Int(count))))
    }
}

/// The device number of the character device `fd` is open on.
private func rdev(_ fd: Int32) -> UInt64 {
    var st = stat()
    fstat(fd, &st)
    return UInt64(st.st_rdev)
}

private func isOpen(_ fd: Int32) -> Bool { fcntl(fd, F_GETFD) >= 0 }

@Suite struct HandoverTests {
    @Test func parsesTheDescriptorsSystemdPasses() {
        let env = ["LISTEN_PID": "42", "LISTEN_FDS": "3", "LISTEN_FDNAMES": "drm-226-0::drm-226-1"]
        let passed = DRMHandover.parse({ env[$0] }, pid: 42)
        #expect(passed == [.init(name: "drm-226-0", fd: 3), .init(name: "unknown", fd: 4), .init(name: "drm-226-1", fd: 5)])
        // Meant for another process (a child that inherited the environment): none.
        #expect(DRMHandover.parse({ env[$0] }, pid: 43).isEmpty)
        #expect(DRMHandover.parse({ ["LISTEN_PID": "42"][$0] }, pid: 42).isEmpty)
    }

    @Test func namesADeviceByItsNumbers() {
        #expect(DRMHandover.name(rdev: 226 << 8 | 0) == "drm-226-0")
        #expect(DRMHandover.name(rdev: 226 << 8 | 129) == "drm-226-129")
        // glibc's encoding of minor 300: low byte in bits 0-7, the rest from bit 20.
        #expect(DRMHandover.name(rdev: (226 << 8) | (300 & 0xff) | ((300 & ~0xff) << 12)) == "drm-226-300")
        let null = open("/dev/null", O_RDWR)
        defer { close(null) }
        #expect(DRMHandover.name(rdev: rdev(null)) == "drm-1-3")
    }

    @Test func storesTheOpenFileWithSystemd() throws {
        let notify = NotifySocket(timeoutMs: 200)
        let handover = DRMHandover(passed: [], notifySocket: notify.path)
        let log = CapturedLog()
        let null = open("/dev/null", O_RDWR)
        defer { close(null) }
        #expect(handover.store(fd: null, logger: log.logger))
        let message = try #require(notify.receive())
        #expect(message.text == "FDSTORE=1\nFDNAME=drm-1-3")
        #expect(message.fds.count == 1)
        let got = try #require(message.fds.first)
        defer { close(got) }
        // The same open file, not another open of the node: a status flag set on one shows on the other.
        _ = fcntl(null, F_SETFL, fcntl(null, F_GETFL) | O_APPEND)
        #expect(fcntl(got, F_GETFL) & O_APPEND != 0)

        // Not ending: the card gives its picture back. Ending: the stored card keeps it.
        #expect(!handover.keepsPicture(fd: null))
        handover.exiting()
        #expect(handover.keepsPicture(fd: null))
        // Given back (lost on hotplug, or a normal stop): out of the store.
        handover.forget(fd: null)
        #expect(notify.receive()?.text == "FDSTOREREMOVE=1\nFDNAME=drm-1-3")
        #expect(!handover.keepsPicture(fd: null))
    }

    @Test func storesNothingWithoutSystemd() {
        let handover = DRMHandover(passed: [], notifySocket: nil)
        let null = open("/dev/null", O_RDWR)
        defer { close(null) }
        #expect(!handover.store(fd: null, logger: CapturedLog().logger))
        handover.exiting()
        #expect(!handover.keepsPicture(fd: null))
    }

    @Test func takesOnlyTheConfiguredDevice() {
        let notify = NotifySocket(timeoutMs: 200)
        let zero = open("/dev/zero", O_RDWR | O_CLOEXEC)
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        let handover = DRMHandover(passed: [.init(name: "drm-1-5", fd: zero), .init(name: "drm-1-3", fd: null)], notifySocket: notify.path)
        let log = CapturedLog()
        #expect(handover.take(devicePath: "/dev/null", logger: log.logger) == null)
        #expect(log.count(containing: "took the DRM device kept by systemd") == 1)
        close(null)
        // Taken once only.
        #expect(handover.take(devicePath: "/dev/null", logger: log.logger) == nil)
        #expect(log.count(containing: "is not the configured card; opening the card") == 1)
        #expect(log.entries.last?.metadata["drm.kept"] == "drm-1-5 (drm-1-5)")
        // /dev/zero's file was not taken: given up, out of the store and closed.
        #expect(isOpen(zero))
        handover.releaseUntaken(logger: log.logger)
        #expect(notify.receive()?.text == "FDSTOREREMOVE=1\nFDNAME=drm-1-5")
        #expect(!isOpen(zero))
    }
}

/// A card on a fake device whose file is /dev/null (device 1:3) under a fake systemd.
@Suite struct CardHandoverTests {
    final class HandoverRig {
        let kms = FakeKMS(path: "/dev/null", resources: FakeKMS.outputs([FakeKMS.Output("Virtual-1", modes: [HandoverRig.mode])], crtcs: nil))
        let notify = NotifySocket(timeoutMs: 200)
        let loop = ManualEventLoop()
        let log = CapturedLog(level: .debug)
        let handover: DRMHandover
        var adopted: [Int32] = []
        var opened = 0
        var backend: KMSBackend
        static let mode = DRMMode(width: 8, height: 4, refresh: 60, isPreferred: true)

        init(passed: [DRMHandover.Passed]) {
            handover = DRMHandover(passed: passed, notifySocket: notify.path)
            let file = open("/dev/null", O_RDWR | O_CLOEXEC)
            kms.descriptor = file
            backend = kms.backend
            let open = backend.open
            backend.open = { [unowned self] path, api in self.opened += 1; return try open(path, api) }
            backend.adopt = { [unowned self] fd, _, _ in self.adopted.append(fd); close(fd); return self.kms }
            backend.handover = handover
        }

        deinit { if let fd = kms.descriptor { close(fd) } }

        func card() throws -> DRMCard {
            try DRMCard(device: kms.path, api: .auto, buffers: 2, heads: [DRMHeadOptions(output: "Virtual-1")], scheduler: loop,
                        backend: backend, logger: log.logger)
        }
    }

    @Test func aMismatchingKeptDeviceIsRefusedAndTheCardOpened() throws {
        let zero = open("/dev/zero", O_RDWR | O_CLOEXEC)
        let rig = HandoverRig(passed: [.init(name: "drm-1-5", fd: zero)])
        let card = try rig.card()
        #expect(rig.adopted.isEmpty)
        #expect(rig.opened == 1)
        #expect(rig.log.count(containing: "the DRM device kept by systemd over the restart is not the configured card; opening the card") == 1)
        // The card opened is stored for the next start.
        #expect(rig.notify.receive()?.text == "FDSTORE=1\nFDNAME=drm-1-3")
        // Not ending: shut down as before — the CRTC given back, master dropped, out of the store.
        card.shutdown()
        #expect(rig.kms.committed.contains { if case .restore = $0 { true } else { false } })
        #expect(!rig.kms.isMaster)
        #expect(!rig.kms.keptFramebuffers)
        #expect(rig.notify.receive()?.text == "FDSTOREREMOVE=1\nFDNAME=drm-1-3")
        close(zero)
    }

    @Test func aKeptDeviceIsTakenAndKeepsThePictureAtExit() throws {
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        let rig = HandoverRig(passed: [.init(name: "drm-1-3", fd: null)])
        let card = try rig.card()
        #expect(rig.adopted == [null])
        #expect(rig.opened == 0)
        #expect(rig.log.count(containing: "took the DRM device kept by systemd") == 1)
        #expect(rig.notify.receive()?.text == "FDSTORE=1\nFDNAME=drm-1-3")
        let painter = Painter()
        try painter.present(0xff00ff00, on: card.heads[0], damage: nil)
        rig.loop.runDeferred()
        let shown = try #require(rig.kms.onScreenFB)
        // Ending under systemd: nothing given back, master kept, the framebuffer left on screen.
        rig.handover.exiting()
        card.shutdown()
        #expect(!rig.kms.committed.contains { if case .restore = $0 { true } else { false } })
        #expect(rig.kms.isMaster)
        #expect(rig.kms.keptFramebuffers)
        #expect(rig.kms.onScreenFB == shown)
        #expect(rig.log.count(containing: "the picture stays on the screen") == 1)
        #expect(rig.notify.receive() == nil)
    }
}
