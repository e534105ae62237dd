import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskPosix
@testable import KioskWeb
import Testing

/// A client on the LAN that guesses pairing codes from ever new addresses (each under the limit
/// per address) while the owner pairs: it learns nothing from the answers, never pairs, and
/// never ends the owner's window (docs/web.md, "Guessing").
@Suite(.serialized) struct PairingGuessTests {
    /// A guess that is not `code` (the attacker's guesses are all wrong here, so that the test
    /// is about the answers and the owner's window, not about luck).
    static func wrongGuess(_ n: Int, not code: String?) -> String {
        let alphabet = Array("ABCDEFGHJKMNPQRSTUVWXYZ23456789")
        var g = String((0..<6).map { i in alphabet[(n * 7 + i * 13) % alphabet.count] })
        if g == code { g = g == "AAAAAA" ? "BBBBBB" : "AAAAAA" }
        return g
    }

    /// Five rounds of: the attacker asks with no code open, the owner opens one on the kiosk
    /// (`kioskctl pair`), the attacker spends twelve wrong guesses at it from twelve addresses,
    /// then the owner enters the code it read off the screen, and if refused, the one the
    /// screen shows now. The owner pairs every round; the attacker never does; every answer the
    /// attacker gets is the same status and the same bytes, code open or not.
    @Test func anAttackerWithManyAddressesNeitherPairsNorLocksTheOwnerOut() async throws {
        let k = WebKiosk()
        try await k.start()
        var answers: [(what: String, status: Int, body: [UInt8])] = []
        var paired = 0
        var guess = 0
        for round in 1...5 {
            func attack(_ what: String, not code: String?) async throws {
                guess += 1
                let r = try await http(k.port, "POST", "/api/pair", body: #"{"code": "\#(Self.wrongGuess(guess, not: code))", "name": "intruder"}"#,
                                       from: "127.1.\(guess / 200).\(1 + guess % 200)")
                answers.append((what, r.status, r.body))
            }
            try await attack("round \(round), no code open", not: nil)
            _ = try await k.ctl(.pair(role: "operator", show: true)).decode(PairAnswer.self)
            let read = try #require(k.onLoop { $0.manager.pairingPrompt?.code }, "round \(round): no code on the screen")
            for i in 1...12 { try await attack("round \(round), guess \(i) with a code open", not: read.filter { $0 != "-" }) }
            // The owner: the code it read, else the one on the screen now (from its own address).
            var ok = false
            for attempt in 1...2 {
                let code = attempt == 1 ? read : (k.onLoop { $0.manager.pairingPrompt?.code } ?? "")
                guard !code.isEmpty else { break }
                let r = try await http(k.port, "POST", "/api/pair", body: #"{"code": "\#(code)", "name": "owner \#(round)"}"#,
                                       from: "127.2.\(round).\(attempt)")
                if r.status == 200 { ok = true; break }
            }
            if ok { paired += 1 }
        }
        #expect(paired == 5, "the owner paired \(paired) of 5 times")
        let devices = try await k.ctl(.devices).decode(DevicesAnswer.self).devices.map(\.name)
        #expect(devices == (1...5).map { "owner \($0)" }, "only the owner pairs: \(devices)")
        let first = try #require(answers.first)
        #expect(first.status == 403)
        for a in answers {
            #expect(a.status == first.status && a.body == first.body,
                    "\(a.what): \(a.status) \(String(decoding: a.body, as: UTF8.self)) differs from \(first.what): \(String(decoding: first.body, as: UTF8.self))")
        }
        await k.stop()
    }
}
