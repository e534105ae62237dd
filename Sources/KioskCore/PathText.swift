/// File paths as text, in place of NSString's `deletingLastPathComponent` and
/// `appendingPathComponent`, which only full Foundation has (kioskd links FoundationEssentials
/// alone; BENCHMARKS.md, "Package size"). Same results as swift-corelibs-foundation's, except that
/// the parent of "//" is "/" here ("" there), and that no input crashes (there, a path whose last
/// component is one character with nothing before it, "a" or "a/", traps).
public enum PathText {
    /// The path without its last component and the slashes before and after it:
    /// "/a/b/" → "/a", "a/b" → "a", "/a" → "/", "/" → "/", "a" → "", "" → "".
    public static func parent(of path: String) -> String {
        var s = Substring(path)
        while s.count > 1 && s.last == "/" { s.removeLast() }
        if s == "/" { return "/" }
        guard let slash = s.lastIndex(of: "/") else { return "" }
        var head = s[..<slash]
        while head.last == "/" { head.removeLast() }
        return head.isEmpty ? "/" : String(head)
    }

    /// The folder holding `path`: its parent, "." for a bare name ("a" → ".", "/a/b" → "/a"):
    /// a directory to create, stat or watch.
    public static func folder(of path: String) -> String {
        let p = parent(of: path)
        return p.isEmpty ? "." : p
    }

    /// `component` after `base` with one slash between them, unless `base` ends with one already:
    /// ("/etc/kioskd", "theme.toml") → "/etc/kioskd/theme.toml", ("/", "a") → "/a",
    /// ("", "a") → "a", ("a", "") → "a". Nothing else is changed (no slash is removed).
    public static func appending(_ component: String, to base: String) -> String {
        if base.isEmpty { return component }
        if component.isEmpty { return base }
        return base.hasSuffix("/") ? base + component : base + "/" + component
    }
}
