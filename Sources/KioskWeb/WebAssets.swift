/// The phone page's files (`Assets/`: HTML, CSS, JavaScript, an icon), embedded in the binary at
/// build time (SwiftPM `embedInCode`): kioskd serves them itself, with no CDN and no build step.
public enum WebAssets {
    /// The file at `path` ("/" is the page, "/app.js" …): its content type and bytes; nil: no such file.
    public static func file(_ path: String) -> (contentType: String, body: [UInt8])? {
        var name = path
        if let q = name.firstIndex(where: { $0 == "?" || $0 == "#" }) { name = String(name[..<q]) }
        while name.hasPrefix("/") { name.removeFirst() }
        switch name {
        case "", "index.html": return ("text/html; charset=utf-8", PackageResources.index_html)
        case "app.js": return ("text/javascript; charset=utf-8", PackageResources.app_js)
        case "owner.js": return ("text/javascript; charset=utf-8", PackageResources.owner_js)
        case "settings.js": return ("text/javascript; charset=utf-8", PackageResources.settings_js)
        case "gameclock.js": return ("text/javascript; charset=utf-8", PackageResources.gameclock_js)
        case "style.css": return ("text/css; charset=utf-8", PackageResources.style_css)
        case "icon.svg": return ("image/svg+xml", PackageResources.icon_svg)
        default: return nil
        }
    }

    /// Every file served, by path.
    public static let paths = ["/", "/index.html", "/app.js", "/owner.js", "/settings.js", "/gameclock.js", "/style.css", "/icon.svg"]
}
