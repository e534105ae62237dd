import Foundation
import KioskCore
import TOMLKit

/// Reads TOML files into `ConfigTable` trees whose every key knows its file and line.
public enum ConfigFile {
    /// Reads and parses `path`. Errors name the file (and line:column for syntax errors).
    public static func load(path: String) throws -> ConfigTable {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw KioskError.config("\(path): cannot read the config file: \(Self.describe(error))")
        }
        return try parse(text, file: path)
    }

    /// Parses TOML `text` (with `TOMLTable(string:)`, toml++) into a `ConfigTable` named `file`.
    public static func parse(_ text: String, file: String) throws -> ConfigTable {
        let toml: TOMLTable
        do {
            toml = try TOMLTable(string: text)
        } catch let e as TOMLParseError {
            let p = e.source.begin
            throw KioskError.config("\(file):\(p.line):\(p.column): TOML syntax error: \(e.description)")
        }
        let locator = ConfigLocator(source: text)
        return try convert(toml, path: "", file: file, locator: locator, line: 0)
    }

    static func describe(_ error: Error) -> String {
        let ns = error as NSError
        if let u = ns.userInfo[NSUnderlyingErrorKey] as? NSError, u.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(u.code)))
        }
        if ns.domain == NSCocoaErrorDomain && ns.code == NSFileReadNoSuchFileError { return "no such file" }
        return ns.localizedDescription
    }

    private static func location(_ path: String, _ file: String, _ locator: ConfigLocator, fallback: Int) -> SourceLocation {
        SourceLocation(file: file, line: locator.line(of: path) ?? fallback)
    }

    private static func convert(_ t: TOMLTable, path: String, file: String, locator: ConfigLocator, line: Int) throws -> ConfigTable {
        let table = ConfigTable(path: path, location: SourceLocation(file: file, line: line))
        var items: [(String, ConfigNode)] = []
        for key in t.keys {
            guard let v = t[key] else { continue }
            let childPath = ConfigLocator.join(path, key)
            let loc = location(childPath, file, locator, fallback: line)
            items.append((key, try node(v, path: childPath, file: file, locator: locator, loc: loc)))
        }
        // toml++ keeps keys sorted; report them in the order they were written.
        items.sort { $0.1.location.line < $1.1.location.line }
        for (k, n) in items { table.set(k, n) }
        return table
    }

    private static func node(_ v: TOMLValueConvertible, path: String, file: String, locator: ConfigLocator,
                             loc: SourceLocation) throws -> ConfigNode {
        switch v.type {
        case .string: return ConfigNode(.string(v.string ?? ""), at: loc)
        case .int: return ConfigNode(.int(v.int ?? 0), at: loc)
        case .double: return ConfigNode(.double(v.double ?? 0), at: loc)
        case .bool: return ConfigNode(.bool(v.bool ?? false), at: loc)
        case .table:
            let t = try convert(v.table!, path: path, file: file, locator: locator, line: loc.line)
            return ConfigNode(.table(t), at: loc)
        case .array:
            var out: [ConfigNode] = []
            for (i, e) in v.array!.enumerated() {
                let p = "\(path)[\(i)]"
                out.append(try node(e, path: p, file: file, locator: locator, loc: location(p, file, locator, fallback: loc.line)))
            }
            return ConfigNode(.array(out), at: loc)
        case .date, .time, .dateTime:
            throw KioskError.config("\(loc): key '\(path)': dates and times are not used by kioskd; write the value as a string (e.g. \"23:00\")")
        }
    }
}
