import FoundationEssentials
import Glibc
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
/// file: new file, fsync, rename). Every refused code gets the same answer (`refusal`), whether
/// a code is open, expired, replaced or wrong. Wrong codes are limited per client address
/// (`maxWrongCodes` a minute, then 429) and, whatever the addresses, per code: a code takes
/// `guessBudget(length:)` wrong guesses (31^length / 10⁸, so one code is guessed with a chance of
/// at most 10⁻⁸), then it is **replaced** by a new code of `replacementLength` characters, on the
/// screen where the old one was, so guessing neither pairs nor ends the owner's window.
/// Until an owner is paired, the screen offers an owner code (`[web] setup`, Pairing+Setup.swift).
public final class PairingBook {
    /// A paired device as kept (its coding: Pairing+Setup.swift).
    struct Record: Equatable {
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
        /// Spent when `wrongGuesses` reaches it: the code is replaced.
        var budget: Int
        /// Whether it is on the screen.
        var shown = false
        /// A device is being paired with it (its save is in flight): no second one.
        var redeeming = false
        /// The first-boot code ("scan to set up"), offered until an owner pairs.
        var setup = false
    }

    /// Hands a save of the book (and the setup record) to the daemon's command pipeline, which
    /// calls `done` on the loop once all are on disk (nil) or refused: kept as every other value is.
    let commit: (_ writes: [(key: String, value: String)], _ done: @escaping (Error?) -> Void) -> Void

    static let stateKey = "web.devices"
    static let maxWrongCodes = 5
    static let wrongCodeWindowNs: Int64 = 60_000_000_000
    /// Addresses whose recent wrong codes are remembered (the oldest is forgotten beyond it).
    static let maxTrackedClients = 1024
    /// Letters and digits that cannot be mistaken for one another (no 0/O, 1/I/L).
    static let alphabet = Array("ABCDEFGHJKMNPQRSTUVWXYZ23456789")
    static let codeLength = 6
    /// The length of a code that replaces one whose guess budget was spent: 31¹² ≈ 7.9 × 10¹⁷
    /// codes, a budget of 7.9 × 10⁹ guesses that no LAN client spends within `pair_minutes`.
    static let replacementLength = 12
    /// The largest chance that one code is guessed before it is replaced.
    static let guessChanceDenominator = 100_000_000
    /// The one answer to every refused code (none open, expired, replaced, wrong), so that an
    /// answer never tells whether a code is open.
    static let refusal = "wrong pairing code: enter the code the kiosk's screen shows now, or open one with kioskctl pair (a code is valid once, for [web] pair_minutes)"

    /// Wrong guesses a code of `length` characters takes before it is replaced: ⌊31^length / 10⁸⌋,
    /// so that the chance of guessing it, budget / 31^length, is at most 10⁻⁸ (8 for 6 characters:
    /// 8 / 31⁶ ≈ 9.0 × 10⁻⁹).
    static func guessBudget(length: Int) -> Int {
        var codes = 1
        for _ in 0..<length { codes *= alphabet.count }
        return codes / guessChanceDenominator
    }

    /// Wrong guesses at the codes of the last `pair` (the code and those that replaced it).
    struct Guessing {
        var wrongGuesses = 0
        /// The addresses they came from (at most `maxTrackedClients` kept; `moreAddresses` beyond).
        var addresses: Set<String> = []
        var moreAddresses = 0
        var replaced = 0
    }

    public let settings: WebSettings
    let state: StateStore
    let scheduler: any Scheduler
    let logger: Logger
    /// The paired devices (changed here and by Pairing+Devices.swift).
    var records: [Record] = []
    var open: OpenCode?
    private var wrongCodes: [String: [Int64]] = [:]
    var lastUseSavedNs: Int64?
    /// The save of last uses waiting for its minute (Pairing+Devices.swift).
    var lastUseTimer: TimerID?
    /// Whether an owner was ever paired (kept under `web.setup`; Pairing+Setup.swift).
    var setup = SetupRecord()
    /// Setup codes opened since kioskd started.
    var setupOffers = 0
    /// Guessing at the codes of the last `pair` (kept after they close, for status).
    var guessing: Guessing?
    /// The port the web server listens on (known once it does; the page's URL uses it, and a
    /// code on the screen is shown again with it).
    public var boundPort: Int? {
        didSet { if let c = open, c.shown, boundPort != oldValue { onPrompt?(prompt(for: c)) } }
    }

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

    init(settings: WebSettings, state: StateStore, scheduler: any Scheduler, logger: Logger,
         commit: @escaping (_ writes: [(key: String, value: String)], _ done: @escaping (Error?) -> Void) -> Void) {
        self.settings = settings
        self.commit = commit
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
        setup = PairingBook.loadSetup(state: state, records: records, logger: logger)
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
        if host.contains(Character(":")) { host = "[\(host)]" }
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

    /// Opens a new code (replacing an open one) and, when `show`, puts it on the screen. The
    /// answer reports the guessing at the previous `pair`'s codes, if any.
    public func pair(role: WebRole, show: Bool) -> PairAnswer {
        let previous = report.flatMap { $0.wrongGuesses > 0 ? $0 : nil }
        closeCode()
        guessing = Guessing()
        var answer = openCode(role: role, show: show, length: PairingBook.codeLength)
        answer.previous = previous
        return answer
    }

    /// Puts a new code of `length` characters in place of the open one (if any), valid for
    /// `codeLifetimeNs` from now; on the screen when `show`.
    func openCode(role: WebRole, show: Bool, length: Int, setup: Bool = false) -> PairAnswer {
        closeCode()
        var rng = SystemRandomNumberGenerator()
        let code = String((0..<length).map { _ in PairingBook.alphabet.randomElement(using: &rng)! })
        let lifetimeNs = codeLifetimeNs
        let expires = monotonicNow() + lifetimeNs
        var c = OpenCode(code: code, role: role, expiresNs: expires, budget: PairingBook.guessBudget(length: length), shown: show, setup: setup)
        c.timer = try? scheduler.schedule(after: lifetimeNs) { [weak self] _ in
            guard let self, self.open?.code == code else { return }
            self.logger.log(level: setup ? .debug : .info, "pairing code expired unused")
            self.open?.timer = nil
            self.closeCode()
            self.offerSetupIfNeeded()
        }
        open = c
        let url = "\(pageURL)#pair=\(code)"
        if show { onPrompt?(prompt(for: c)) }
        // A setup code is renewed every pair_minutes until an owner pairs: only the first is noted.
        logger.log(level: setup && setupOffers > 1 ? .debug : .notice, "pairing code opened",
                   metadata: ["web.role": "\(role.rawValue)", "web.expires_in": "\(settings.pairSeconds) s"])
        return PairAnswer(code: code, url: url, role: role.rawValue, expires: PairingBook.iso(wallNow() + Double(settings.pairSeconds)),
                          expiresInSeconds: settings.pairSeconds, shown: show)
    }

    /// What the screen shows for `c`: the page's address with the code, the code grouped; the
    /// setup code under "Scan to set up this kiosk".
    func prompt(for c: OpenCode) -> PairingPrompt {
        PairingPrompt(url: "\(pageURL)#pair=\(c.code)", code: PairingBook.grouped(c.code), expiresAtMonotonicNs: c.expiresNs,
                      title: c.setup ? PairingBook.setupTitle : nil)
    }

    /// A code as the screen shows it: up to 6 characters as they are, longer ones in groups of
    /// four ("4F7K-2Q9X-MA3C"; a redeem ignores the dashes).
    static func grouped(_ code: String) -> String {
        guard code.count > codeLength else { return code }
        var groups: [String] = []
        var rest = Substring(code)
        while !rest.isEmpty { groups.append(String(rest.prefix(4))); rest = rest.dropFirst(4) }
        return groups.joined(separator: "-")
    }

    func closeCode() {
        if let t = open?.timer { scheduler.cancel(t) }
        if open != nil { onPrompt?(nil) }
        open = nil
    }

    /// Replaces the open code, whose guess budget is spent, by a longer one with a fresh lifetime,
    /// on the screen if the old one was there: the owner's window goes on with the new code.
    private func replaceCode() {
        guard let c = open else { return }
        guessing?.replaced += 1
        _ = openCode(role: c.role, show: c.shown, length: PairingBook.replacementLength, setup: c.setup)
        let summary = report?.summary ?? ""
        let next = c.shown ? "the new code is on the screen" : "run kioskctl pair for a new one"
        logger.error("pairing code replaced: its budget of \(c.budget) wrong guesses is spent; someone on the network is guessing (\(summary)); \(next)")
    }

    /// The guessing at the last `pair`'s codes (nil: no code was opened since kioskd started).
    public var report: PairingReport? {
        guessing.map { PairingReport(open: open != nil, wrongGuesses: $0.wrongGuesses,
                                     addresses: $0.addresses.count + $0.moreAddresses, replaced: $0.replaced) }
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

    /// Counts a wrong guess at an open code from `client` for the report.
    private func noteGuess(client: String) {
        guard var g = guessing else { return }
        g.wrongGuesses += 1
        if !g.addresses.contains(client) {
            if g.addresses.count < PairingBook.maxTrackedClients { g.addresses.insert(client) } else { g.moreAddresses += 1 }
        }
        guessing = g
    }

    /// Compared with a code given while none is open.
    static let decoy = String(repeating: "A", count: codeLength)

    /// How many addresses have recent wrong codes remembered (tests).
    var trackedClients: Int { wrongCodes.count }

    /// Redeems `code` for a device named `name`; `client` is the caller's address. `done` gets
    /// the answer: a pairing once it is saved.
    public func redeem(code: String, name: String, client: String, done: @escaping (WebRedeemResult) -> Void) {
        if let refusal = check(code: code, name: name, client: client) { done(refusal); return }
        guard var c = open else { done(.refused(.error(403, PairingBook.refusal, field: "code"))); return }
        let trimmed = name.trimmingWhitespace()
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
        let setupBefore = setup
        if c.role == .owner && !setup.done { setup = SetupRecord(done: true, owner: unique, at: wallNow()) }
        persist { [weak self] error in
            guard let self else { done(.refused(.error(503, "kioskd is stopping; not paired"))); return }
            if self.open?.code == c.code { self.open?.redeeming = false }
            if let error {
                self.records.removeAll { $0.tokenHash == record.tokenHash }
                self.directory.set(self.records)
                self.setup = setupBefore
                self.logger.error("cannot save the paired device; not paired", metadata: ["error": "\(error)"])
                done(.refused(.error(500, "cannot save the paired device: \(error); not paired (the code stays valid)")))
                return
            }
            if self.open?.code == c.code { self.closeCode() }
            self.logger.notice("device paired", metadata: ["web.device": "\(unique)", "web.role": "\(c.role.rawValue)", "web.client": "\(client)"])
            self.offerSetupIfNeeded()
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
        // One answer for every refusal; the log keeps why.
        func wrong(_ reason: String) -> WebRedeemResult {
            noteWrongCode(client: client, recent: recent, now: now)
            logger.notice("pairing refused", metadata: ["web.client": "\(client)", "web.reason": "\(reason)"])
            return .refused(.error(403, PairingBook.refusal, field: "code"))
        }
        let given = code.uppercased().filter { $0 != " " && $0 != "-" }
        guard let c = open, now < c.expiresNs else {
            let reason = open == nil ? "no code is open" : "the code has expired"
            if open != nil { closeCode(); offerSetupIfNeeded() }
            _ = PairingBook.constantTimeEqual(given, PairingBook.decoy)  // the work of a comparison, as with a code open
            return wrong(reason)
        }
        guard PairingBook.constantTimeEqual(given, c.code) else {
            open?.wrongGuesses += 1
            noteGuess(client: client)
            if c.wrongGuesses + 1 >= c.budget { replaceCode() }
            return wrong("wrong code")
        }
        if c.redeeming {
            return .refused(.error(409, "the pairing code is being used by another device right now; open a new one on the kiosk (kioskctl pair)", field: "code"))
        }
        let trimmed = name.trimmingWhitespace()
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
            return "must not contain control or format characters (such as bidirectional overrides); found U+\(TextFormat.hex(bad.value, width: 4))"
        }
        return nil
    }
}
