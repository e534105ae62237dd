import FoundationEssentials
import KioskCore

/// Finds themes by name: the built-ins (`Theme.builtIn`) or a file `<directory>/<name>.toml`.
///
/// A theme file may start from a built-in (`base = "dark"`) and override palette colours
/// (`[palette]`, "#RRGGBB") and font styles (`[fonts.heading]` family/weight/slant/size).
/// Without `base` every palette colour must be given.
public enum ThemeLoader {
    /// Names of the theme files in `directory` (without `.toml`), sorted.
    public static func fileThemes(in directory: String) -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return files.filter { $0.hasSuffix(".toml") }.map { String($0.dropLast(5)) }.sorted()
    }

    /// Every theme name that can be chosen (built-ins and files).
    public static func available(in directory: String) -> [String] {
        Array(Set(Theme.builtIn.keys).union(fileThemes(in: directory))).sorted()
    }

    /// The theme `name`; errors name `table.key` (where the name was written) and list what exists.
    public static func load(named name: String, directory: String, table: ConfigTable? = nil, key: String = "theme") throws -> Theme {
        func fail(_ message: String) -> KioskError {
            table?.error(key, message) ?? KioskError.notFound(message)
        }
        if let t = Theme.builtIn[name] { return t }
        guard isThemeName(name) else {
            throw fail("\(ConfigTable.quoted(name)) is not a theme name (1…64 characters, no / or control characters, not starting with .); themes: \(available(in: directory).joined(separator: ", "))")
        }
        let path = "\(directory)/\(name).toml"
        guard FileManager.default.fileExists(atPath: path) else {
            throw fail("unknown theme \"\(name)\" (no built-in theme and no file \(path)); themes: \(available(in: directory).joined(separator: ", "))")
        }
        return try loadFile(path: path, name: name)
    }

    /// A name that can be a theme file's name: 1…64 characters, no `/`, no control characters,
    /// not starting with `.`.
    public static func isThemeName(_ name: String) -> Bool {
        !name.isEmpty && name.unicodeScalars.count <= 64 && !name.hasPrefix(".")
            && !name.unicodeScalars.contains { $0 == "/" || $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
    }

    /// Reads one theme file.
    public static func loadFile(path: String, name: String) throws -> Theme {
        let root = try ConfigFile.load(path: path)
        var theme: Theme
        if let base = try root.string("base") {
            guard let b = Theme.builtIn[base] else {
                throw root.error("base", "unknown built-in theme \"\(base)\"; built-ins: \(Theme.builtIn.keys.sorted().joined(separator: ", "))")
            }
            theme = b
        } else {
            theme = .default
        }
        let hasBase = root.has("base")
        theme.name = try root.text("name", default: name, maxCharacters: 64, what: "a theme name")
        if let p = try root.table("palette") {
            func color(_ k: String, _ current: Color) throws -> Color {
                if let c = try p.color(k) { return c }
                if !hasBase { throw p.error(k, "missing (expected a colour like \"#RRGGBB\"; or set base = \"…\" to start from a built-in theme)") }
                return current
            }
            theme.palette = Palette(
                primary: try color("primary", theme.palette.primary), neutral: try color("neutral", theme.palette.neutral),
                secondary: try color("secondary", theme.palette.secondary), highlight: try color("highlight", theme.palette.highlight),
                background: try color("background", theme.palette.background), text: try color("text", theme.palette.text))
            try p.finish()
        } else if !hasBase {
            throw KioskError.config("\(path): missing table [palette] (or base = \"…\" to start from a built-in theme)")
        }
        if let f = try root.table("fonts") {
            func style(_ k: String, _ current: FontStyle) throws -> FontStyle {
                guard let t = try f.table(k) else { return current }
                var s = current
                s.family = try t.text("family", default: s.family, maxCharacters: 128, what: "a font family")
                if s.family.isEmpty { throw t.error("family", "expected a font family like \"Sans\", got an empty string") }
                s.weight = try t.choice("weight", default: s.weight)
                s.slant = try t.choice("slant", default: s.slant)
                s.size = try t.double("size", default: s.size, range: 4...1000)
                try t.finish()
                return s
            }
            theme.fonts = FontStyles(heading: try style("heading", theme.fonts.heading), body: try style("body", theme.fonts.body),
                                     caption: try style("caption", theme.fonts.caption), quote: try style("quote", theme.fonts.quote))
            try f.finish()
        }
        try root.finish()
        return theme
    }
}
