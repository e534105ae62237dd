import Testing
import Foundation
@testable import KioskCore

/// The tz database's named zones without Foundation: the file's table, its footer rule after the
/// table, and the errors.
@Suite struct ZoneRulesTests {
    @Test func berlinChangesAtOneUTCInSpringAndAutumn() throws {
        let berlin = try #require(LocalZone.named("Europe/Berlin"))
        // 2026-03-29 01:00 UTC: 02:00 CET → 03:00 CEST; 2026-10-25 01:00 UTC: back.
        #expect(berlin.offset(at: 1_774_745_999) == 3600)
        #expect(berlin.offset(at: 1_774_746_000) == 7200)
        #expect(berlin.offset(at: 1_792_889_999) == 7200)
        #expect(berlin.offset(at: 1_792_890_000) == 3600)
        #expect(berlin.secondsSinceMidnight(at: 1_774_746_000) == 3 * 3600)
    }

    @Test func fixedAndSouthernZones() throws {
        #expect(try #require(LocalZone.named("Asia/Kolkata")).offset(at: 1_774_746_000) == 19_800)
        #expect(try #require(LocalZone.named("UTC")).offset(at: 1_774_746_000) == 0)
        let sydney = try #require(LocalZone.named("Australia/Sydney"))
        #expect(sydney.offset(at: 1_768_003_200) == 11 * 3600)   // January: AEDT
        #expect(sydney.offset(at: 1_783_000_000) == 10 * 3600)   // July: AEST
    }

    /// After the file's last transition (2037 in Debian's files) the footer rule decides:
    /// 2040-03-25 01:00 UTC (the last Sunday of March) and 2040-10-28 01:00 UTC.
    @Test func theFooterRuleAfterTheTable() throws {
        let berlin = try #require(LocalZone.named("Europe/Berlin"))
        #expect(berlin.offset(at: 2_216_249_999) == 3600)
        #expect(berlin.offset(at: 2_216_250_000) == 7200)
        #expect(berlin.offset(at: 2_234_998_799) == 7200)
        #expect(berlin.offset(at: 2_234_998_800) == 3600)
        let rule = try #require(PosixZoneRule("CET-1CEST,M3.5.0,M10.5.0/3"))
        #expect(rule.offset(at: 2_216_249_999) == 3600)
        #expect(rule.offset(at: 2_216_250_000) == 7200)
        #expect(rule.offset(at: 2_234_998_800) == 3600)
        // New York 2040: 11 March 07:00 UTC, 4 November 06:00 UTC.
        let ny = try #require(PosixZoneRule("EST5EDT,M3.2.0,M11.1.0"))
        #expect(ny.offset(at: 2_215_061_999) == -5 * 3600)
        #expect(ny.offset(at: 2_215_062_000) == -4 * 3600)
        #expect(ny.offset(at: 2_235_621_599) == -4 * 3600)
        #expect(ny.offset(at: 2_235_621_600) == -5 * 3600)
        #expect(PosixZoneRule("<+0530>-5:30")?.offset(at: 0) == 19_800)
        #expect(PosixZoneRule("<-03>3<-02>,M3.5.0/-2,M10.5.0/-1") != nil)
        #expect(PosixZoneRule("CET-1CEST,M13.5.0,M10.5.0") == nil)
        #expect(PosixZoneRule("C-1") == nil)
    }

    /// The same offsets as Foundation's ICU zones (the test binary links full Foundation), every
    /// 7 hours 13 minutes over 2000–2036, in zones with daylight saving north and south, negative
    /// daylight saving (Dublin's winter time) and half hours.
    @Test func agreesWithFoundationsZones() throws {
        for id in ["Europe/Berlin", "America/New_York", "Australia/Sydney", "Europe/Dublin", "Australia/Adelaide", "Asia/Kolkata", "America/Sao_Paulo"] {
            let ours = try #require(LocalZone.named(id))
            let theirs = try #require(TimeZone(identifier: id))
            var t: Int64 = 946_684_800
            var mismatches: [Int64] = []
            while t < 2_082_758_400 {
                if ours.offset(at: t) != theirs.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(t))) { mismatches.append(t) }
                t += 7 * 3600 + 13 * 60
            }
            #expect(mismatches.isEmpty, "\(id): \(mismatches.prefix(5))")
        }
    }

    @Test func unknownOrUnsafeNamesAreNil() throws {
        #expect(LocalZone.named("Europe/Atlantis") == nil)
        #expect(LocalZone.named("Europe") == nil)   // a directory
        #expect(LocalZone.named("../../etc/passwd") == nil)
        #expect(LocalZone.named("/etc/localtime") == nil)
        #expect(LocalZone.named("") == nil)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("zonerules-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data("not a zone".utf8).write(to: URL(fileURLWithPath: dir + "/Bad"))
        #expect(LocalZone.named("Bad", database: dir) == nil)
        #expect(throws: KioskError.self) { try ZoneRules(identifier: "Bad", tzif: Array("TZif2".utf8)) }
    }
}
