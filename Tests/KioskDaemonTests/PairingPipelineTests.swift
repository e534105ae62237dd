import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
@testable import KioskWebComponent
import KioskPosix
import KioskTestTraits
import KioskWeb
import Synchronization
import Testing

/// Pairing a phone and revoking it with the command pipeline running, as in kioskd: the paired
/// devices are saved on the pipeline's thread; the pairing or revocation is answered once on
/// disk, and the render loop keeps drawing meanwhile.
@Suite(.ownThreads, .serialized) struct PairingPipelineTests {
    static func start(_ store: HeldStore) throws -> LoopThread {
        let t = try ChoicePipelineTests.start(store)
        var web = WebSettings(host: "127.0.0.1", port: 0)
        web.setup = false  // the first-boot code would stand in for the codes these tests open
        let settings = web
        t.run { $0.enableWeb(settings) }
        return t
    }

    /// The result of a redeem, set when it comes.
    final class Redeemed: Sendable {
        let result = Mutex<WebRedeemResult?>(nil)
        var status: Int? {
            switch result.withLock({ $0 }) {
            case .paired?: return 200
            case .refused(let r)?: return r.status
            case nil: return nil
            }
        }
    }

    @Test func aPairingIsAnsweredOnceSavedWhileTheLoopDrawsAndTheCodeServesOneDevice() throws {
        let store = HeldStore([Daemon.sceneKey: "clock"])
        let t = try Self.start(store)
        defer { store.release(); t.stop() }
        let code = t.run { $0.pairing!.pair(role: .operator, show: false).code }
        store.hold()
        let first = Redeemed(), second = Redeemed()
        t.daemon.post { d in d.pairing!.redeem(code: code, name: "Anna's phone", client: "10.0.0.1") { r in first.result.withLock { $0 = r } } }
        #expect(store.entered.wait(timeout: .now() + 5) == .success, "the pairing's save did not begin")
        let before = ChoicePipelineTests.within(t, 2) { $0.manager.frameCount }
        #expect(before != nil, "the render loop ran nothing while the save was held")
        if let before {
            #expect(waitFor(5) { (ChoicePipelineTests.within(t, 1) { $0.manager.frameCount } ?? 0) > before }, "no frame while the save was held")
        }
        #expect(first.status == nil, "answered before the save was done")
        // The same code from another phone meanwhile: refused, it serves one device.
        t.daemon.post { d in d.pairing!.redeem(code: code, name: "Ben's phone", client: "10.0.0.2") { r in second.result.withLock { $0 = r } } }
        #expect(waitFor(5) { second.status != nil })
        #expect(second.status == 409)
        store.release()
        #expect(waitFor(5) { first.status != nil })
        #expect(first.status == 200)
        #expect(store.values[PairingBook.stateKey]?.contains("Anna's phone") == true)
        #expect(t.run { $0.pairing!.open == nil }, "the code is used up")
    }

    @Test func aPairingWhoseSaveFailsIsRefusedAndTheCodeStaysValid() throws {
        let store = HeldStore([Daemon.sceneKey: "clock"])
        let t = try Self.start(store)
        defer { t.stop() }
        let code = t.run { $0.pairing!.pair(role: .operator, show: false).code }
        store.fail(ENOSPC)
        let r = Redeemed()
        t.daemon.post { d in d.pairing!.redeem(code: code, name: "Anna's phone", client: "10.0.0.1") { x in r.result.withLock { $0 = x } } }
        #expect(waitFor(5) { r.status != nil })
        #expect(r.status == 500)
        #expect(t.run { $0.pairing!.devicesAnswer.devices.isEmpty })
        store.fail(nil)
        let again = Redeemed()
        t.daemon.post { d in d.pairing!.redeem(code: code, name: "Anna's phone", client: "10.0.0.1") { x in again.result.withLock { $0 = x } } }
        #expect(waitFor(5) { again.status != nil })
        #expect(again.status == 200, "the code stays valid after a failed save")
    }

    @Test func aRevocationTakesEffectAtOnceAndIsAnsweredOnceSaved() throws {
        let store = HeldStore([Daemon.sceneKey: "clock"])
        let t = try Self.start(store)
        defer { store.release(); t.stop() }
        let code = t.run { $0.pairing!.pair(role: .operator, show: false).code }
        let paired = Redeemed()
        t.daemon.post { d in d.pairing!.redeem(code: code, name: "Anna's phone", client: "10.0.0.1") { x in paired.result.withLock { $0 = x } } }
        #expect(waitFor(5) { paired.status != nil })
        guard case .paired(let token, _)? = paired.result.withLock({ $0 }) else { Issue.record("not paired"); return }
        let hash = SHA256.hex(Array(token.utf8))
        #expect(t.run { $0.pairing!.directory.device(hash: hash) != nil })
        store.hold()
        let answer = Mutex<ControlResponse?>(nil)
        t.daemon.post { d in d.handle(.revokeDevice(name: "Anna's phone")) { r in answer.withLock { $0 = r } } }
        #expect(store.entered.wait(timeout: .now() + 5) == .success)
        #expect(t.run { $0.pairing!.directory.device(hash: hash) == nil }, "the device is refused from the moment it is revoked")
        #expect(answer.withLock { $0 } == nil, "answered before the save was done")
        store.release()
        #expect(waitFor(5) { answer.withLock { $0 } != nil })
        #expect(answer.withLock { $0 }?.status == 200)
        #expect(store.values[PairingBook.stateKey]?.contains("Anna's phone") == false)
    }
}
