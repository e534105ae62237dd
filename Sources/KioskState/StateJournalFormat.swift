import CZlib
import FoundationEssentials
import Glibc

/// The state journal's bytes (`journal.log`), as pure values: written by `encodeHeader` and
/// `encodeRecord`, read by `read`.
///
/// A journal starts with a 20-byte header: the magic `kioskdJ2`, the journal's generation
/// (UInt64, little-endian; a new journal takes the previous one's plus one, or a random one) and
/// the CRC-32 of those 16 bytes. Then records, each a batch of whole values: a 24-byte header —
/// body length (UInt32), entry count (UInt32), generation (UInt64), record number (UInt32, 1, 2, …
/// in this journal), CRC-32 (zlib's `crc32`) of the header's first 20 bytes and the body — then the
/// body: for each entry the key's and the value's UTF-8 lengths (UInt32 each) and their bytes.
///
/// What `read` tells apart: records that verify (the right generation, number and checksum);
/// a **torn tail** — an incomplete or unverifiable last record with nothing verifiable after it,
/// or records of an earlier generation left by an emptying that never reached the disk — which
/// can only be a batch that was never acknowledged (a record is acknowledged once synced, and
/// nothing is appended after a record that was not); and **damage** — an unverifiable stretch
/// followed by verifiable records of this journal, which only a damaged disk or a hand can make.
/// A journal in the first format (text headers `kioskd-journal 1 …`) is read as before, for its
/// one migration at start.
package enum StateJournal {
    package static let magic = Array("kioskdJ2".utf8)
    package static let headerSize = 20
    package static let recordHeaderSize = 24

    package static func crc(_ bytes: ArraySlice<UInt8>, _ start: UInt = 0) -> UInt32 {
        bytes.withUnsafeBufferPointer { UInt32(truncatingIfNeeded: CZlib.crc32(start, $0.baseAddress, UInt32($0.count))) }
    }

    package static func put32(_ v: UInt32, _ out: inout [UInt8]) { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
    package static func put64(_ v: UInt64, _ out: inout [UInt8]) { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
    package static func get32(_ b: [UInt8], _ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(b[at + $1]) << (8 * $1) } }
    package static func get64(_ b: [UInt8], _ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(b[at + $1]) << (8 * $1) } }

    package static func encodeHeader(generation: UInt64) -> [UInt8] {
        var out = magic
        put64(generation, &out)
        put32(crc(out[...]), &out)
        return out
    }

    package static func encodeRecord(_ entries: [(key: String, value: String)], generation: UInt64, number: UInt32) -> [UInt8] {
        var body: [UInt8] = []
        for e in entries {
            let k = Array(e.key.utf8), v = Array(e.value.utf8)
            put32(UInt32(k.count), &body); put32(UInt32(v.count), &body)
            body += k; body += v
        }
        var out: [UInt8] = []
        out.reserveCapacity(recordHeaderSize + body.count)
        put32(UInt32(body.count), &out); put32(UInt32(entries.count), &out)
        put64(generation, &out); put32(number, &out)
        put32(crc(body[...], UInt(crc(out[...]))), &out)
        return out + body
    }

    package struct Record { package var number: UInt32; package var entries: [(key: String, value: String)]; package var start: Int; package var end: Int }
    package struct Damage {
        /// The record numbers that could not be read (first...last), where the stretch starts and ends.
        package var first: UInt32, last: UInt32, start: Int, end: Int
        /// The keys that could still be read in the stretch (best effort: the stretch is damaged).
        package var keys: [String]
    }
    package struct Read {
        package enum Format: Equatable { case empty, current, legacy }
        package var format: Format = .empty
        package var generation: UInt64?
        package var records: [Record] = []
        package var damage: [Damage] = []
        /// Where the verified journal ends (appends continue here once the tail is cut off).
        package var length = 0
        /// What the torn tail holds, when there is one.
        package var tail: String?
        package var entries: [(key: String, value: String)] { records.flatMap(\.entries) }
    }

    /// The body's entries, or nil when it does not parse.
    package static func entries(_ b: [UInt8], _ start: Int, _ end: Int, count: Int) -> [(key: String, value: String)]? {
        var out: [(key: String, value: String)] = []
        var p = start
        for _ in 0..<count {
            guard end - p >= 8 else { return nil }
            let kl = Int(get32(b, p)), vl = Int(get32(b, p + 4))
            p += 8
            guard kl > 0, end - p >= kl, end - p - kl >= vl,
                  let k = String(validating: b[p..<(p + kl)], as: UTF8.self),
                  let v = String(validating: b[(p + kl)..<(p + kl + vl)], as: UTF8.self) else { return nil }
            out.append((k, v))
            p += kl + vl
        }
        return p == end ? out : nil
    }

    /// The record at `at` if it verifies for `generation` (any generation when nil) and a number ≥ `minNumber`.
    package static func record(_ b: [UInt8], at: Int, generation: UInt64?, minNumber: UInt32) -> Record? {
        guard b.count - at >= recordHeaderSize else { return nil }
        let len = Int(get32(b, at)), count = Int(get32(b, at + 4)), gen = get64(b, at + 8), number = get32(b, at + 16)
        guard generation.map({ $0 == gen }) ?? true, number >= minNumber, count > 0, len >= 8 * count,
              b.count - at - recordHeaderSize >= len else { return nil }
        let end = at + recordHeaderSize + len
        guard crc(b[(at + recordHeaderSize)..<end], UInt(crc(b[at..<(at + 20)]))) == get32(b, at + 20),
              let e = entries(b, at + recordHeaderSize, end, count: count) else { return nil }
        return Record(number: number, entries: e, start: at, end: end)
    }

    /// Keys readable in a damaged stretch starting with a record header (best effort).
    package static func keys(in b: [UInt8], _ start: Int, _ end: Int) -> [String] {
        var out: [String] = []
        var p = start + recordHeaderSize
        while end - p >= 8 {
            let kl = Int(get32(b, p)), vl = Int(get32(b, p + 4))
            guard kl > 0, kl < 4096, end - p - 8 >= kl, let k = String(validating: b[(p + 8)..<(p + 8 + kl)], as: UTF8.self),
                  k.unicodeScalars.allSatisfy({ $0.value >= 0x20 }) else { break }
            out.append(k)
            p += 8 + kl + vl
        }
        return out
    }

    package static func read(_ b: [UInt8]) -> Read {
        var r = Read()
        guard !b.isEmpty else { return r }
        if b.starts(with: Array("kioskd-journal 1 ".utf8)) {
            let old = readLegacy(b)
            r.format = .legacy
            r.records = old.entries.isEmpty ? [] : [Record(number: 1, entries: old.entries, start: 0, end: old.length)]
            r.length = old.length
            r.tail = old.problem
            return r
        }
        r.format = .current
        var at = headerSize
        var next: UInt32 = 1
        if b.count >= headerSize, Array(b.prefix(8)) == magic, crc(b[0..<16]) == get32(b, 16) {
            r.generation = get64(b, 8)
        } else if let first = (headerSize..<max(headerSize, b.count)).lazy.compactMap({ record(b, at: $0, generation: nil, minNumber: 1) }).first {
            // A damaged header: the generation of the first record that verifies.
            r.generation = get64(b, first.start + 8)
            r.damage.append(Damage(first: 0, last: first.number - 1, start: 0, end: first.start, keys: []))
            at = first.start
            next = first.number
        } else {
            // Nothing verifiable: a header torn while the journal was made (nothing acknowledged yet) —
            // or a journal damaged beyond reading, which the caller keeps aside.
            r.tail = (b.count < headerSize && magic.starts(with: b.prefix(8))) || b.allSatisfy({ $0 == 0 }) ? "an incomplete journal header" : nil
            if r.tail == nil { r.damage.append(Damage(first: 1, last: 0, start: 0, end: b.count, keys: [])) }
            return r
        }
        r.length = at
        while at < b.count {
            if let rec = record(b, at: at, generation: r.generation, minNumber: next), rec.number == next {
                r.records.append(rec); at = rec.end; next += 1; r.length = at
                continue
            }
            // The next verifiable record of this journal after `at`, if any.
            var later: Record?
            var p = at + 1
            while p + recordHeaderSize <= b.count {
                if get64(b, p + 8) == r.generation, let rec = record(b, at: p, generation: r.generation, minNumber: next) { later = rec; break }
                p += 1
            }
            guard let later else {
                let stale = b.count - at >= recordHeaderSize && get64(b, at + 8) != r.generation
                r.tail = stale ? "records of an earlier journal (\(b.count - at) bytes) that its emptying had not yet removed"
                               : "an incomplete last record (\(b.count - at) bytes)"
                break
            }
            r.damage.append(Damage(first: next, last: later.number - 1, start: at, end: later.start, keys: keys(in: b, at, later.start)))
            next = later.number
            at = later.start
        }
        return r
    }

    /// The first format's records (`kioskd-journal 1 <entries> <body length> <fnv1a64 of the body>\n`,
    /// then `<key length> <value length>\n<key><value>` per entry): every whole, intact record
    /// from the start, the length they take, and what is wrong with the rest.
    package static func readLegacy(_ bytes: [UInt8]) -> (entries: [(key: String, value: String)], length: Int, problem: String?) {
        var entries: [(key: String, value: String)] = []
        var at = 0
        func fail(_ why: String) -> (entries: [(key: String, value: String)], length: Int, problem: String?) {
            (entries, at, "\(why) at byte \(at) of \(bytes.count)")
        }
        while at < bytes.count {
            guard let nl = bytes[at...].prefix(200).firstIndex(of: 0x0A) else { return fail("an incomplete record header") }
            let header = String(decoding: bytes[at..<nl], as: UTF8.self).split(separator: " ")
            guard header.count == 5, header[0] == "kioskd-journal", header[1] == "1", let n = Int(header[2]), n > 0,
                  let len = Int(header[3]), len >= 0, let sum = UInt64(header[4], radix: 16) else { return fail("a damaged record header") }
            let start = nl + 1
            guard bytes.count - start >= len else { return fail("an incomplete record (\(bytes.count - start) of \(len) bytes)") }
            let body = Array(bytes[start..<(start + len)])
            guard FileStateStore.checksum(body) == sum else { return fail("a record whose checksum does not match") }
            var record: [(key: String, value: String)] = []
            var p = 0
            for _ in 0..<n {
                guard let enl = body[p...].prefix(40).firstIndex(of: 0x0A) else { return fail("a damaged record") }
                let lens = String(decoding: body[p..<enl], as: UTF8.self).split(separator: " ")
                guard lens.count == 2, let kl = Int(lens[0]), let vl = Int(lens[1]), kl > 0, vl >= 0,
                      body.count - (enl + 1) >= kl + vl else { return fail("a damaged record") }
                let k = enl + 1
                guard let key = String(validating: body[k..<(k + kl)], as: UTF8.self),
                      let value = String(validating: body[(k + kl)..<(k + kl + vl)], as: UTF8.self) else { return fail("a record that is not UTF-8") }
                record.append((key, value))
                p = k + kl + vl
            }
            guard p == body.count else { return fail("a damaged record") }
            entries += record
            at = start + len
        }
        return (entries, at, nil)
    }
}
