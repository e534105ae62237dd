import Foundation
import KioskControl
import KioskCore
import KioskPosix
import KioskState
import KioskWeb
import Logging
import NIOConcurrencyHelpers

/// Pairing codes and paired devices, on the render loop's thread.
///
/// `kioskctl pair` opens a one-time code (one at a time; a new one replaces it), shown on the
/// kiosk's screen until it is used or expires (`pair_minutes`). Redeeming it gives the device a
/// random 256-bit token; only its SHA-256 is kept, with the device's name, role, when it was
/// paired and last used, in the state directory (key `web.devices`, written like every state
/// file: new file, fsync, rename). Wrong codes are limited per client address
/// (`maxWrongCodes` a minute, then 429) and, whatever the addresses, per open code: after
/// `maxWrongGuessesPerCode` wrong guesses the code is withdrawn (the screen says so) and a new
/// one must be opened on the kiosk. With 31⁶ codes that bounds a guess at 10 / 31⁶ ≈ 1.1 × 10⁻⁸.
public final class PairingBook {
    struct Record: Codable, Equatable {
        var name: String
        var role: WebRole
        var tokenHash: String
        /// Seconds since 1970.
        var created: Double
        var lastUse: Double?
    }
    struct OpenCode {
        var code: String
        var role: WebRole
        var expiresNs: Int64
        var timer: TimerID?
        /// Wrong guesses at this code, from any address.
        var wrongGuesses = 0
        /// Whether it is on the screen.
        var shown = false
        /// A device is being paired with it (its save is in flight): no second one.
        var redeeming = false
    }

    /// Hands a save of the book to the daemon's command pipeline (true), which calls `done` on
    /// the loop once it is on disk (nil) or refused; nil or false: saved at once.
    var commit: ((_ key: String, _ value: String, _ done: @escaping (Error?) -> Void) -> Bool)?

    static let stateKey = "web.devices"
    static let maxWrongCodes = 5
    static let wrongCodeWindowNs: Int64 = 60_000_000_000
    /// Wrong guesses an open code takes from all addresses together before it is withdrawn.
    static let maxWrongGuessesPerCode = 10
    /// Addresses whose recent wrong codes are remembered (the oldest is forgotten beyond it).
    static let maxTrackedClients = 1024
    /// How long the screen says that a code was withdrawn.
    static let withdrawnNoticeNs: Int64 = 60_000_000_000
    /// Letters and digits that cannot be mistaken for one another (no 0/O, 1/I/L).
    static let alphabet = Array("ABCDEFGHJKMNPQRSTUVWXYZ23456789")
    static let codeLength = 6

    public let settings: WebSettings
    private let state: StateStore
    private let scheduler: any Scheduler
    private let logger: Logger
    private(set) var records: [Record] = []
    private(set) var open: OpenCode?
    private var wrongCodes: [String: [Int64]] = [:]
    private var lastUseSavedNs: Int64?
    private var noticeTimer: TimerID?
    /// The port the web server listens on (known once it does; the page's URL uses it).
    public var boundPort: Int?

    /// The paired devices by token hash, readable from any thread: the web server checks a
    /// request's cookie without waiting for the render loop.
    let directory = DeviceDirectory()
    /// How long a code is valid (`pair_minutes`).
    var codeLifetimeNs: Int64
    /// Monotonic now in nanoseconds (tests move it).
    var monotonicNow: () -> Int64 = { nowNanos(.monotonic) }
    /// Wall clock in seconds since 1970.
    var wallNow: () -> Double = { Date().timeIntervalSince1970 }
    /// The code to show on the screen changed (nil: none).
    var onPrompt: ((PairingPrompt?) -> Void)?
    /// A device was revoked: its open live streams must end.
    var onRevoke: ((String) -> Void)?

    init(settings: WebSettings, state: StateStore, scheduler: any Scheduler, logger: Logger) {
        self.settings = settings
        self.state = state
        self.scheduler = scheduler
        self.logger = logger
        self.codeLifetimeNs = Int64(settings.pairSeconds) * 1_000_000_000
        if let text = state.load(PairingBook.stateKey) {
            do {
                records = try JSONDecoder().decode([Record].self, from: Data(text.utf8))
            } catch {
                logger.error("the paired devices cannot be read; no device is paired until one pairs again",
                             metadata: ["state.key": "\(PairingBook.stateKey)", "error": "\(error)"])
            }
        }
        directory.set(records)
    }

    // MARK: codes

    /// The page's address: `web.url`, or http://ADDRESS:PORT/ with the listening address (its
    /// first LAN address when it listens on all).
    public var pageURL: String {
        if let u = settings.url { return u }
        let port = boundPort ?? settings.port
        var host = settings.host
        if host == "0.0.0.0" || host == "::" { host = PairingBook.lanAddress() ?? WebAccess.machineName() }
        if host.contains(":") { host = "[\(host)]" }
        return "http://\(host):\(port)/"
    }

    /// The first non-loopback IPv4 address of an interface that is up.
    static func lanAddress() -> String? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(list) }
        var p: UnsafeMutablePointer<ifaddrs>? = first
        while let a = p {
            defer { p = a.pointee.ifa_next }
            guard let sa = a.pointee.ifa_addr, sa.pointee.sa_family == sa_family_t(AF_INET),
                  a.pointee.ifa_flags & UInt32(IFF_UP) != 0, a.pointee.ifa_flags & UInt32(IFF_LOOPBACK) == 0 else { continue }
            var buf = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            let sin = UnsafeRawPointer(sa).assumingMemoryBound(to: sockaddr_in.self)
            var addr = sin.pointee.sin_addr
            if inet_ntop(AF_INET, &addr, &buf, socklen_t(buf.count)) != nil {
                return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        }
        return nil
    }

    /// Opens a new code (replacing an open one) and, when `show`, puts it on the screen.
    func pair(role: WebRole, show: Bool) -> PairAnswer {
        closeCode()
        var rng = SystemRandomNumberGenerator()
        let code = String((0..<PairingBook.codeLength).map { _ in PairingBook.alphabet.randomElement(using: &rng)! })
        let lifetimeNs = codeLifetimeNs
        let expires = monotonicNow() + lifetimeNs
        var c = OpenCode(code: code, role: role, expiresNs: expires, shown: show)
        c.timer = try? scheduler.schedule(after: lifetimeNs) { [weak self] _ in
            guard let self, self.open?.code == code else { return }
            self.logger.info("pairing code expired unused")
            self.open?.timer = nil
            self.closeCode()
        }
        open = c
        let url = "\(pageURL)#pair=\(code)"
        if show { onPrompt?(PairingPrompt(url: url, code: code, expiresAtMonotonicNs: expires)) }
        logger.notice("pairing code opened", metadata: ["web.role": "\(role.rawValue)", "web.expires_in": "\(settings.pairSeconds) s"])
        return PairAnswer(code: code, url: url, role: role.rawValue, expires: PairingBook.iso(wallNow() + Double(settings.pairSeconds)),
                          expiresInSeconds: settings.pairSeconds, shown: show)
    }

    private func closeCode() {
        if let t = open?.timer { scheduler.cancel(t) }
        if let t = noticeTimer { scheduler.cancel(t); noticeTimer = nil; onPrompt?(nil) }
        if open != nil { onPrompt?(nil) }
        open = nil
    }

    /// Withdraws the open code after too many wrong guesses; a code that was on the screen
    /// leaves a notice there for a minute.
    private func withdrawCode() {
        guard let c = open else { return }
        closeCode()
        logger.error("pairing code withdrawn: \(c.wrongGuesses) wrong guesses; open a new one on the kiosk (kioskctl pair)",
                     metadata: ["web.limit": "\(PairingBook.maxWrongGuessesPerCode)"])
        guard c.shown else { return }
        onPrompt?(PairingPrompt(url: "", code: "", expiresAtMonotonicNs: monotonicNow() + PairingBook.withdrawnNoticeNs,
                                notice: "Pairing code withdrawn after \(c.wrongGuesses) wrong guesses. Open a new one on the kiosk."))
        noticeTimer = try? scheduler.schedule(after: PairingBook.withdrawnNoticeNs) { [weak self] _ in
            guard let self, self.noticeTimer != nil else { return }
            self.noticeTimer = nil
            self.onPrompt?(nil)
        }
    }

    /// Notes a wrong code from `client` at `now`, keeping at most `maxTrackedClients` addresses.
    private func noteWrongCode(client: String, recent: [Int64], now: Int64) {
        if wrongCodes[client] == nil, wrongCodes.count >= PairingBook.maxTrackedClients {
            wrongCodes = wrongCodes.filter { $0.value.contains { now - $0 < PairingBook.wrongCodeWindowNs } }
            if wrongCodes.count >= PairingBook.maxTrackedClients,
               let oldest = wrongCodes.min(by: { ($0.value.last ?? 0) < ($1.value.last ?? 0) })?.key {
                wrongCodes[oldest] = nil
            }
        }
        wrongCodes[client] = recent + [now]
    }

    /// How many addresses have recent wrong codes remembered (tests).
    var trackedClients: Int { wrongCodes.count }

    /// Redeems `code` for a device named `name`; `client` is the caller's address. `done` gets
    /// the answer: a pairing once it is saved.
    func redeem(code: String, name: String, client: String, done: @escaping (WebRedeemResult) -> Void) {
        if let refusal = check(code: code, name: name, client: client) { done(refusal); return }
        guard var c = open else { done(.refused(.error(403, "wrong pairing code", field: "code"))); return }
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        var unique = trimmed
        var n = 2
        while records.contains(where: { $0.name == unique }) { unique = "\(trimmed) (\(n))"; n += 1 }
        var bytes = [UInt8](repeating: 0, count: 32)
        var rng = SystemRandomNumberGenerator()
        for i in bytes.indices { bytes[i] = rng.next() }
        let token = PairingBook.base64url(bytes)
        let record = Record(name: unique, role: c.role, tokenHash: SHA256.hex(Array(token.utf8)), created: wallNow(), lastUse: wallNow())
        records.append(record)
        c.redeeming = true
        open = c
        persist { [weak self] error in
            guard let self else { done(.refused(.error(503, "kioskd is stopping; not paired"))); return }
            if self.open?.code == c.code { self.open?.redeeming = false }
            if let error {
                self.records.removeAll { $0.tokenHash == record.tokenHash }
                self.directory.set(self.records)
                self.logger.error("cannot save the paired device; not paired", metadata: ["error": "\(error)"])
                done(.refused(.error(500, "cannot save the paired device: \(error); not paired (the code stays valid)")))
                return
            }
            if self.open?.code == c.code { self.closeCode() }
            self.logger.notice("device paired", metadata: ["web.device": "\(unique)", "web.role": "\(c.role.rawValue)", "web.client": "\(client)"])
            done(.paired(token: token, device: WebDevice(name: unique, role: c.role)))
        }
    }

    /// Why a redeem is refused before anything is saved (nil: the code and name are right).
    private func check(code: String, name: String, client: String) -> WebRedeemResult? {
        let now = monotonicNow()
        var recent = (wrongCodes[client] ?? []).filter { now - $0 < PairingBook.wrongCodeWindowNs }
        wrongCodes[client] = recent.isEmpty ? nil : recent
        if recent.count >= PairingBook.maxWrongCodes {
            let wait = max(1, Int((recent[0] + PairingBook.wrongCodeWindowNs - now + 999_999_999) / 1_000_000_000))
            return .refused(.error(429, "too many wrong pairing codes from \(client): at most \(PairingBook.maxWrongCodes) a minute; try again in \(wait) s"))
        }
        func wrong(_ message: String) -> WebRedeemResult {
            noteWrongCode(client: client, recent: recent, now: now)
            logger.notice("pairing refused", metadata: ["web.client": "\(client)", "web.reason": "\(message)"])
            return .refused(.error(403, message, field: "code"))
        }
        let given = code.uppercased().filter { $0 != " " && $0 != "-" }
        guard let c = open else { return wrong("wrong pairing code (no code is open: run kioskctl pair on the kiosk)") }
        guard now < c.expiresNs else {
            closeCode()
            return wrong("the pairing code has expired (codes last \(settings.pairSeconds / 60) min); run kioskctl pair for a new one")
        }
        guard PairingBook.constantTimeEqual(given, c.code) else {
            open?.wrongGuesses += 1
            if c.wrongGuesses + 1 >= PairingBook.maxWrongGuessesPerCode {
                withdrawCode()
                return wrong("wrong pairing code; the code was withdrawn after \(PairingBook.maxWrongGuessesPerCode) wrong guesses: open a new one on the kiosk (kioskctl pair)")
            }
            return wrong("wrong pairing code")
        }
        if c.redeeming {
            return .refused(.error(409, "the pairing code is being used by another device right now; open a new one on the kiosk (kioskctl pair)", field: "code"))
        }
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        if let problem = PairingBook.nameProblem(trimmed) {
            return .refused(.error(400, "field 'name' \(problem), such as \"Anna's phone\"", field: "name"))
        }
        return nil
    }

    /// Why `name` cannot name a device (nil: it can): 1 to 64 characters and at most 128 UTF-8
    /// bytes (a character can hold any number of combining marks), without control or format
    /// characters (bidirectional overrides and isolates would reorder what `kioskctl devices` and
    /// the page show). The zero-width joiner of emoji sequences is allowed.
    static func nameProblem(_ name: String) -> String? {
        guard (1...64).contains(name.count) else { return "must be 1 to 64 characters (it has \(name.count))" }
        guard name.utf8.count <= 128 else { return "must be at most 128 bytes in UTF-8 (it has \(name.utf8.count))" }
        if let bad = name.unicodeScalars.first(where: {
            $0.value != 0x200D && [.control, .format].contains($0.properties.generalCategory)
        }) {
            return "must not contain control or format characters (such as bidirectional overrides); found U+\(String(format: "%04X", bad.value))"
        }
        return nil
    }

    // MARK: devices

    /// The device holding `token`; notes its last use (saved at most once a minute).
    func device(token: String) -> WebDevice? { noteUse(hash: SHA256.hex(Array(token.utf8))) }

    /// Notes the use of the device with this token hash; returns it (nil: none).
    @discardableResult
    func noteUse(hash: String) -> WebDevice? {
        guard let i = records.firstIndex(where: { $0.tokenHash == hash }) else { return nil }
        records[i].lastUse = wallNow()
        let now = monotonicNow()
        if lastUseSavedNs.map({ now - $0 > 60_000_000_000 }) ?? true {
            lastUseSavedNs = now
            persist { _ in }
        }
        return WebDevice(name: records[i].name, role: records[i].role)
    }

    var devicesAnswer: DevicesAnswer {
        DevicesAnswer(devices: records.map { .init(name: $0.name, role: $0.role.rawValue, created: PairingBook.iso($0.created),
                                                   lastUse: $0.lastUse.map(PairingBook.iso)) })
    }

    /// Revokes `name` at once (the device is refused from now on; its live streams end) and
    /// answers once that is saved (a failed save puts the device back).
    func revoke(_ name: String, done: @escaping (ControlResponse) -> Void) {
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
    /// the error: through the command pipeline (`commit`) off the loop, or at once without one.
    private func persist(_ done: @escaping (Error?) -> Void) {
        directory.set(records)
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        let text: String
        do { text = String(decoding: try e.encode(records), as: UTF8.self) } catch { done(error); return }
        if case .unavailable = state.durability { done(nil); return }  // kept in memory; status says state is not saved
        if let commit, commit(PairingBook.stateKey, text, done) { return }
        do { try state.save(PairingBook.stateKey, text); done(nil) } catch { done(error) }
    }

    // MARK: helpers

    static func iso(_ seconds: Double) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: Date(timeIntervalSince1970: seconds.rounded(.down)))
    }

    static func base64url(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
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
