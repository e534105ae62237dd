#if canImport(Glibc)
import Glibc
#endif
import KioskCore

/// Making a changed system time zone effective in this process.
///
/// glibc reads the zone once; `localtime_r` never looks again. `tzset()` re-reads
/// `/etc/localtime` when TZ is unset (it compares the file's identity), but when TZ is set it
/// returns early as long as the TZ string is unchanged, even if the file TZ names was replaced.
/// `reload()` gets past that. kioskd reads local time only through glibc (`LocalZone.system`)
/// and the tz database's files (`LocalZone.named`), not Foundation's `TimeZone` (kioskd links
/// no ICU: there it knows only fixed offsets).
public enum SystemTimeZone {
    /// Re-reads the zone for glibc (`localtime_r`, `LocalZone.system`). Call on the loop's
    /// thread: when TZ is set it is briefly changed and restored (setenv), which other threads
    /// must not race with getenv.
    public static func reload() {
        if let tz = getenv("TZ").map({ String(cString: $0) }) {
            // Force glibc past its "TZ unchanged" shortcut, then read the real value again.
            setenv("TZ", "UTC0", 1)
            tzset()
            setenv("TZ", tz, 1)
        }
        tzset()
    }

    /// The zone's identifier ("Europe/Berlin"): from TZ when set (an identifier, ":identifier" or
    /// ":/…/zoneinfo/ID"), else from the `localtimePath` symlink's target after "zoneinfo/".
    /// nil when neither names a zone (a copied file: use `LocalZone.system` after `reload()`).
    public static func identifier(localtimePath: String = "/etc/localtime",
                                  tz: String? = getenv("TZ").map { String(cString: $0) }) -> String? {
        if var tz, !tz.isEmpty {
            if tz.hasPrefix(":") { tz.removeFirst() }
            if tz.hasPrefix("/") { return zoneName(inPath: resolvedTarget(tz) ?? tz) }
            return tz
        }
        return resolvedTarget(localtimePath).flatMap(zoneName(inPath:))
    }

    /// The zone resolved now (not cached): the tz database's zone `identifier(...)` names, else
    /// glibc's (`LocalZone.system`; call `reload()` first).
    public static func current(localtimePath: String = "/etc/localtime",
                               tz: String? = getenv("TZ").map { String(cString: $0) }) -> LocalZone {
        identifier(localtimePath: localtimePath, tz: tz).flatMap { LocalZone.named($0) } ?? .system
    }

    /// glibc's abbreviation of the zone in effect at `unixSeconds` ("CET"), "" when it has none.
    public static func abbreviation(at unixSeconds: Int64) -> String {
        var t = time_t(unixSeconds)
        var v = tm()
        guard localtime_r(&t, &v) != nil, let z = v.tm_zone else { return "" }
        return String(cString: z)
    }

    /// The symlink chain's final target (absolute), or nil when `path` is not a symlink.
    static func resolvedTarget(_ path: String) -> String? {
        var current = path
        var followed = false
        for _ in 0..<16 {
            var buf = [CChar](repeating: 0, count: 4096)
            let n = readlink(current, &buf, buf.count - 1)
            guard n > 0 else { break }
            let target = String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if target.hasPrefix("/") {
                current = target
            } else {
                current = PathText.folder(of: current) + "/" + target
            }
            followed = true
        }
        return followed ? current : nil
    }

    /// "…/zoneinfo/Europe/Berlin" → "Europe/Berlin" (also "zoneinfo/posix/…", "zoneinfo/right/…").
    static func zoneName(inPath path: String) -> String? {
        guard let r = path.ranges(of: "zoneinfo/").last else { return nil }
        var name = String(path[r.upperBound...])
        for prefix in ["posix/", "right/"] where name.hasPrefix(prefix) { name.removeFirst(prefix.count) }
        return name.isEmpty ? nil : name
    }
}
