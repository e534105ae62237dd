import FoundationEssentials
import KioskControl
import KioskCore
import KioskState
import KioskWeb
import Logging

/// First boot: until an owner is paired, the screen offers an owner code ("Scan to set up this
/// kiosk"), renewed every `pair_minutes`; `[web] setup = false` turns it off. Whether an owner
/// was ever paired is kept under `web.setup`, saved with the book in one commit.
extension PairingBook {
    /// Kept under `web.setup`: whether an owner was ever paired, who and when (seconds since 1970).
    struct SetupRecord: Codable, Equatable {
        var done = false
        var owner: String?
        var at: Double?
        /// Why it is done without an owner: devices were paired by a version without owners.
        var note: String?
    }

    static let setupKey = "web.setup"
    static let setupTitle = "Scan to set up this kiosk"

    /// The setup record kept, or for a book written before owners existed (a `web.devices` without
    /// a `web.setup`): done, so an upgraded kiosk in use never shows an owner code to its audience.
    static func loadSetup(state: StateStore, records: [Record], logger: Logger) -> SetupRecord {
        if let text = state.load(setupKey) {
            if let r = try? JSONDecoder().decode(SetupRecord.self, from: Data(text.utf8)) { return r }
            logger.error("the setup record cannot be read; the setup code is not offered (kioskctl pair --role owner makes an owner code)",
                         metadata: ["state.key": "\(setupKey)"])
            return SetupRecord(done: true, note: "unreadable")
        }
        if let owner = records.first(where: { $0.role == .owner }) { return SetupRecord(done: true, owner: owner.name, at: owner.created) }
        if state.contains(stateKey) { return SetupRecord(done: true, note: "devices were paired before owners existed") }
        return SetupRecord()
    }

    /// Whether the setup code is offered: `[web] setup` on and no owner ever paired.
    var offersSetup: Bool { settings.setup && !setup.done }

    /// Opens the setup code on the screen when it is offered and no other code is open (at start,
    /// when a code closes); a code from `kioskctl pair` stands in its place until it closes.
    public func offerSetupIfNeeded() {
        guard offersSetup, open == nil else { return }
        if guessing == nil { guessing = Guessing() }
        setupOffers += 1
        _ = openCode(role: .owner, show: true, length: PairingBook.codeLength, setup: true)
    }

    /// `GET /status` `setup` (the code and URL only while the setup code is on the screen).
    public var setupStatus: SetupStatus {
        let state = !settings.setup ? "off" : setup.done ? "done" : "waiting"
        var s = SetupStatus(state: state, shown: false, owner: setup.owner, ownerPaired: setup.at.map(PairingBook.iso))
        if let c = open, c.setup, c.shown {
            s.shown = true
            s.code = c.code
            s.url = "\(pageURL)#pair=\(c.code)"
        }
        return s
    }

    /// The setup record as kept.
    var setupText: String {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return (try? String(decoding: e.encode(setup), as: UTF8.self)) ?? "{}"
    }
}

/// A device's record as kept in `web.devices`. An owner is kept as `"role": "operator"` with
/// `"owner": true`: a version without owners reads it as an operator instead of failing to read
/// the whole book. A role this version does not know is read as a viewer (the least it may do).
extension PairingBook.Record: Codable {
    enum CodingKeys: String, CodingKey { case name, role, owner, tokenHash, created, lastUse }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        let stored = try c.decode(String.self, forKey: .role)
        role = try c.decodeIfPresent(Bool.self, forKey: .owner) == true ? .owner : WebRole(rawValue: stored) ?? .viewer
        tokenHash = try c.decode(String.self, forKey: .tokenHash)
        created = try c.decode(Double.self, forKey: .created)
        lastUse = try c.decodeIfPresent(Double.self, forKey: .lastUse)
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(role == .owner ? WebRole.operator.rawValue : role.rawValue, forKey: .role)
        if role == .owner { try c.encode(true, forKey: .owner) }
        try c.encode(tokenHash, forKey: .tokenHash)
        try c.encode(created, forKey: .created)
        try c.encodeIfPresent(lastUse, forKey: .lastUse)
    }
}
