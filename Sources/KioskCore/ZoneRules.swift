#if canImport(Glibc)
import Glibc
#endif

/// A named time zone's offsets from the system's tz database (`/usr/share/zoneinfo/ID`, the TZif
/// format of RFC 8536): the table of transitions, and after its last one the POSIX TZ rule in
/// the file's footer (what glibc's `localtime_r` does with the same file). The clock's
/// configured `time_zone` uses it; kioskd links no ICU, so Foundation's `TimeZone` knows only
/// fixed offsets (BENCHMARKS.md, "Package size").
public struct ZoneRules: Sendable, Equatable {
    /// The zone's name ("Europe/Berlin").
    public let identifier: String
    /// Transition instants (seconds since the epoch, ascending) and the offset from each on.
    let transitions: [Int64]
    let offsets: [Int32]
    /// The offset before the first transition.
    let initial: Int32
    /// After the last transition (or with none).
    let rule: PosixZoneRule?

    /// Reads `database/identifier`; nil when the name is not a zone there (or not a plain relative
    /// name: no "..", no leading "/").
    public static func named(_ identifier: String, database: String = "/usr/share/zoneinfo") -> ZoneRules? {
        guard !identifier.isEmpty, !identifier.hasPrefix("/"),
              !identifier.split(separator: "/").contains(where: { $0 == ".." || $0 == "." }),
              let bytes = readSmallFile(database + "/" + identifier, limit: 1 << 20) else { return nil }
        return try? ZoneRules(identifier: identifier, tzif: bytes)
    }

    /// Parses a TZif file (version 1 or later; the 64-bit block of version 2+ when present).
    public init(identifier: String, tzif b: [UInt8]) throws {
        func bad(_ why: String) -> KioskError { .config("time zone \(identifier): \(why)") }
        func u32(_ at: Int) -> UInt32 {
            UInt32(b[at]) << 24 | UInt32(b[at + 1]) << 16 | UInt32(b[at + 2]) << 8 | UInt32(b[at + 3])
        }
        guard b.count >= 44, b[0] == 0x54, b[1] == 0x5A, b[2] == 0x69, b[3] == 0x66 else { throw bad("not a TZif file") }
        var header = 0
        var timeSize = 4
        func counts(_ h: Int) -> (ut: Int, std: Int, leap: Int, time: Int, type: Int, char: Int) {
            (Int(u32(h + 20)), Int(u32(h + 24)), Int(u32(h + 28)), Int(u32(h + 32)), Int(u32(h + 36)), Int(u32(h + 40)))
        }
        func blockSize(_ c: (ut: Int, std: Int, leap: Int, time: Int, type: Int, char: Int), _ ts: Int) -> Int {
            c.time * (ts + 1) + c.type * 6 + c.char + c.leap * (ts + 4) + c.std + c.ut
        }
        var c = counts(0)
        if b[4] >= 0x32 {   // version '2' or later: skip the 32-bit block
            header = 44 + blockSize(c, 4)
            guard b.count >= header + 44 else { throw bad("truncated") }
            c = counts(header)
            timeSize = 8
        }
        let data = header + 44
        let end = data + blockSize(c, timeSize)
        guard c.type > 0, end <= b.count else { throw bad("truncated") }
        var times: [Int64] = []
        for i in 0..<c.time {
            let at = data + i * timeSize
            times.append(timeSize == 8 ? Int64(bitPattern: UInt64(u32(at)) << 32 | UInt64(u32(at + 4))) : Int64(Int32(bitPattern: u32(at))))
        }
        let indices = data + c.time * timeSize
        let types = indices + c.time
        var typeOffsets: [Int32] = []
        for t in 0..<c.type { typeOffsets.append(Int32(bitPattern: u32(types + t * 6))) }
        var offsets: [Int32] = []
        for i in 0..<c.time {
            let t = Int(b[indices + i])
            guard t < c.type else { throw bad("transition \(i) names type \(t) of \(c.type)") }
            offsets.append(typeOffsets[t])
        }
        var rule: PosixZoneRule?
        if timeSize == 8, end < b.count, b[end] == 0x0A, let close = b[(end + 1)...].firstIndex(of: 0x0A), close > end + 1 {
            rule = PosixZoneRule(String(decoding: b[(end + 1)..<close], as: UTF8.self))
        }
        self.identifier = identifier
        self.transitions = times
        self.offsets = offsets
        self.initial = typeOffsets[0]
        self.rule = rule
    }

    /// Seconds east of UTC at `unixSeconds`.
    public func offset(at unixSeconds: Int64) -> Int {
        guard let last = transitions.last, unixSeconds >= transitions[0] else {
            return rule.map { $0.offset(at: unixSeconds) } ?? Int(initial)
        }
        if unixSeconds >= last, let rule { return rule.offset(at: unixSeconds) }
        var lo = 0, hi = transitions.count - 1   // the last transition at or before unixSeconds
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if transitions[mid] <= unixSeconds { lo = mid } else { hi = mid - 1 }
        }
        return Int(offsets[lo])
    }
}

/// A POSIX TZ rule as in a TZif footer ("CET-1CEST,M3.5.0,M10.5.0/3", "<+0530>-5:30"):
/// standard offset, and when a daylight-saving name follows, its offset and the two yearly
/// changes (`Mm.w.d`, `Jn` or `n`, each at a local time, default 02:00).
public struct PosixZoneRule: Sendable, Equatable {
    /// Seconds east of UTC (POSIX writes them west: "CET-1" is UTC+1).
    let standard: Int
    let daylight: Int?
    let start: Change?, end: Change?

    enum Day: Sendable, Equatable {
        case monthWeekDay(month: Int, week: Int, weekday: Int)
        case julianNoLeap(Int)   // 1…365, 29 February never counted
        case zeroBased(Int)      // 0…365
    }
    struct Change: Sendable, Equatable {
        let day: Day
        let seconds: Int   // local time of day, may be negative or past 24 h
    }

    /// Nil when the text is not a rule this reads.
    public init?(_ text: String) {
        var s = Substring(text)
        guard PosixZoneRule.name(&s), let std = PosixZoneRule.time(&s) else { return nil }
        standard = -std
        guard !s.isEmpty else { daylight = nil; start = nil; end = nil; return }
        guard PosixZoneRule.name(&s) else { return nil }
        daylight = s.first == "," ? standard + 3600 : PosixZoneRule.time(&s).map { -$0 }
        guard daylight != nil, s.first == "," else { return nil }
        s.removeFirst()
        guard let a = PosixZoneRule.change(&s), s.first == "," else { return nil }
        s.removeFirst()
        guard let b = PosixZoneRule.change(&s), s.isEmpty else { return nil }
        start = a
        end = b
    }

    /// Seconds east of UTC at `unixSeconds`.
    public func offset(at unixSeconds: Int64) -> Int {
        guard let daylight, let start, let end else { return standard }
        let year = CivilDate.year(ofDay: floorDiv(unixSeconds + Int64(standard), 86_400))
        // The change to daylight saving is given in standard time, the change back in daylight time.
        let on = start.instant(year: year, offset: standard)
        let off = end.instant(year: year, offset: daylight)
        let inDaylight = on < off ? (unixSeconds >= on && unixSeconds < off) : (unixSeconds < off || unixSeconds >= on)
        return inDaylight ? daylight : standard
    }

    private static func name(_ s: inout Substring) -> Bool {
        if s.first == "<" {
            guard let close = s.firstIndex(of: ">") else { return false }
            s = s[s.index(after: close)...]
            return true
        }
        let n = s.prefix { $0.isLetter }
        guard n.count >= 3 else { return false }
        s = s.dropFirst(n.count)
        return true
    }

    /// [+-]hh[:mm[:ss]] in seconds.
    private static func time(_ s: inout Substring) -> Int? {
        var sign = 1
        if s.first == "+" || s.first == "-" { sign = s.removeFirst() == "-" ? -1 : 1 }
        var total = 0
        for (i, scale) in [3600, 60, 1].enumerated() {
            if i > 0 { guard s.first == ":" else { break }; s.removeFirst() }
            let digits = s.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count <= 3, let v = Int(digits) else { return nil }
            s = s.dropFirst(digits.count)
            total += v * scale
        }
        return sign * total
    }

    private static func change(_ s: inout Substring) -> Change? {
        func number() -> Int? {
            let d = s.prefix { $0.isASCII && $0.isNumber }
            s = s.dropFirst(d.count)
            return d.isEmpty ? nil : Int(d)
        }
        let day: Day
        if s.first == "M" {
            s.removeFirst()
            guard let m = number(), s.first == "." else { return nil }
            s.removeFirst()
            guard let w = number(), s.first == "." else { return nil }
            s.removeFirst()
            guard let d = number(), (1...12).contains(m), (1...5).contains(w), (0...6).contains(d) else { return nil }
            day = .monthWeekDay(month: m, week: w, weekday: d)
        } else if s.first == "J" {
            s.removeFirst()
            guard let n = number(), (1...365).contains(n) else { return nil }
            day = .julianNoLeap(n)
        } else {
            guard let n = number(), (0...365).contains(n) else { return nil }
            day = .zeroBased(n)
        }
        var seconds = 7200
        if s.first == "/" {
            s.removeFirst()
            guard let t = time(&s) else { return nil }
            seconds = t
        }
        return Change(day: day, seconds: seconds)
    }
}

extension PosixZoneRule.Change {
    /// The instant (seconds since the epoch) of this change in `year`, its local time read with `offset`.
    func instant(year: Int, offset: Int) -> Int64 {
        let leap = CivilDate.isLeap(year)
        let jan1 = CivilDate.days(year: year, month: 1, day: 1)
        let dayNumber: Int64
        switch day {
        case .zeroBased(let n): dayNumber = jan1 + Int64(n)
        case .julianNoLeap(let n): dayNumber = jan1 + Int64(n - 1) + (leap && n >= 60 ? 1 : 0)
        case .monthWeekDay(let month, let week, let weekday):
            let first = CivilDate.days(year: year, month: month, day: 1)
            let firstWeekday = Int(floorMod(first + 4, 7))   // 1970-01-01 was a Thursday
            var d = 1 + (weekday - firstWeekday + 7) % 7 + (week - 1) * 7
            let length = CivilDate.monthLength(year: year, month: month)
            while d > length { d -= 7 }
            dayNumber = first + Int64(d - 1)
        }
        return dayNumber * 86_400 + Int64(seconds) - Int64(offset)
    }
}

/// Days since 1970-01-01 of proleptic Gregorian dates, and back (H. Hinnant's civil algorithms).
enum CivilDate {
    static func isLeap(_ y: Int) -> Bool { y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) }

    static func monthLength(year: Int, month: Int) -> Int {
        month == 2 ? (isLeap(year) ? 29 : 28) : [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    }

    static func days(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = floorDiv(y, 400)
        let yoe = y - era * 400
        let mp = Int64((month + 9) % 12)
        let doy = (153 * mp + 2) / 5 + Int64(day) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func year(ofDay z0: Int64) -> Int {
        let z = z0 + 719_468
        let era = floorDiv(z, 146_097)
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        return Int(yoe + era * 400 + (mp >= 10 ? 1 : 0))
    }
}

private func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
    let q = a / b
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
}
private func floorMod(_ a: Int64, _ b: Int64) -> Int64 { a - floorDiv(a, b) * b }

/// A regular file's bytes, nil when it cannot be read or is larger than `limit`.
private func readSmallFile(_ path: String, limit: Int) -> [UInt8]? {
    guard let f = fopen(path, "rb") else { return nil }
    defer { fclose(f) }
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 16_384)
    while true {
        let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, f) }
        if n > 0 { out.append(contentsOf: chunk[0..<n]) }
        guard out.count <= limit else { return nil }
        if n < chunk.count { return ferror(f) != 0 ? nil : out }
    }
}
