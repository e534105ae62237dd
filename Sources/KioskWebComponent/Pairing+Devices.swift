import FoundationEssentials
import KioskControl
import KioskCore
import KioskState
import KioskWeb
import NIOConcurrencyHelpers

/// The pairing book's devices: their use, revocation, and saving the book.
extension PairingBook {
    // MARK: devices

    /// The device holding `token`; notes its last use (saved at most once a minute).
    func device(token: String) -> WebDevice? { noteUse(hash: SHA256.hex(Array(token.utf8))) }

    /// Last uses are saved at most this often.
    static let lastUseSaveIntervalNs: Int64 = 60_000_000_000

    /// Notes the use of the device with this token hash in memory (the device list shows it at
    /// once) and has it saved with the next save of the book; returns the device (nil: none).
    @discardableResult
    func noteUse(hash: String) -> WebDevice? {
        guard let i = records.firstIndex(where: { $0.tokenHash == hash }) else { return nil }
        records[i].lastUse = wallNow()
        scheduleLastUseSave()
        return WebDevice(name: records[i].name, role: records[i].role)
    }

    /// Requests never write: a use arms one timer (unless one is armed) for a minute after the
    /// book was last saved, and that one save keeps every use noted until then. So last uses cost
    /// at most one commit a minute however many requests come, and what is on disk is at most a
    /// minute old (a pairing or revocation saves them sooner).
    func scheduleLastUseSave() {
        guard lastUseTimer == nil else { return }
        let delay = lastUseSavedNs.map { max(0, $0 + PairingBook.lastUseSaveIntervalNs - monotonicNow()) } ?? 0
        lastUseTimer = try? scheduler.schedule(after: delay) { [weak self] _ in
            guard let self else { return }
            self.lastUseTimer = nil
            self.persist { _ in }
        }
    }

    public var devicesAnswer: DevicesAnswer {
        DevicesAnswer(devices: records.map { .init(name: $0.name, role: $0.role.rawValue, created: PairingBook.iso($0.created),
                                                   lastUse: $0.lastUse.map(PairingBook.iso)) })
    }

    /// Revokes `name` at once (the device is refused from now on; its live streams end) and
    /// answers once that is saved (a failed save puts the device back).
    public func revoke(_ name: String, done: @escaping (ControlResponse) -> Void) {
        guard let i = records.firstIndex(where: { $0.name == name }) else {
            let all = records.map(\.name)
            done(.error(404, "no paired device named '\(name)'; " + (all.isEmpty ? "no device is paired" : "devices: \(all.joined(separator: ", "))"), field: "name"))
            return
        }
        let removed = records.remove(at: i)
        onRevoke?(name)
        persist { [weak self] error in
            guard let self else { done(.error(503, "kioskd is stopping; the revocation of '\(name)' may not be saved")); return }
            if let error {
                if !self.records.contains(where: { $0.tokenHash == removed.tokenHash }) {
                    self.records.insert(removed, at: min(i, self.records.count))
                    self.directory.set(self.records)
                }
                done(.error(500, "cannot save the revocation of '\(name)': \(error); the device stays paired"))
                return
            }
            self.logger.notice("device revoked", metadata: ["web.device": "\(name)"])
            done(.json(200, RevokeAnswer(revoked: name)))
        }
    }

    /// Saves the book (the device directory is updated at once), then calls `done` with nil or
    /// the error: through the command pipeline (`commit`), off the loop.
    func persist(_ done: @escaping (Error?) -> Void) {
        directory.set(records)
        lastUseSavedNs = monotonicNow()
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        let text: String
        do { text = String(decoding: try e.encode(records), as: UTF8.self) } catch { done(error); return }
        if case .unavailable = state.durability { done(nil); return }  // kept in memory; status says state is not saved
        commit([(PairingBook.stateKey, text), (PairingBook.setupKey, setupText)], done)
    }

    // MARK: helpers

    public static func iso(_ seconds: Double) -> String {
        TextFormat.utc(Int64(seconds.rounded(.down)))
    }

    static func base64url(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacing("+", with: "-").replacing("/", with: "_")
            .replacing("=", with: "")
    }

    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var d: UInt8 = 0
        for i in x.indices { d |= x[i] ^ y[i] }
        return d == 0
    }
}

/// Token hash → device, behind a lock (written on the render loop, read by the web server).
final class DeviceDirectory: Sendable {
    private let devices = NIOLockedValueBox<[String: WebDevice]>([:])

    func set(_ records: [PairingBook.Record]) {
        var d: [String: WebDevice] = [:]
        for r in records { d[r.tokenHash] = WebDevice(name: r.name, role: r.role) }
        devices.withLockedValue { $0 = d }
    }

    func device(hash: String) -> WebDevice? { devices.withLockedValue { $0[hash] } }
}
