import Foundation
import KioskWeb
import Testing

/// The page's files as kioskd serves them: embedded, complete, self-contained.
@Suite struct WebAssetsTests {
    /// The files in Sources/KioskWeb/Assets, read from the source tree (an oracle independent of
    /// the embedding).
    static let assets = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Sources/KioskWeb/Assets").standardized

    @Test func everyFileIsServedWithItsBytesAndType() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.assets.path).sorted()
        #expect(names == ["app.js", "gameclock.js", "icon.svg", "index.html", "owner.js", "settings.js", "style.css"])
        let types = ["html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8",
                     "css": "text/css; charset=utf-8", "svg": "image/svg+xml"]
        for name in names {
            let f = try #require(WebAssets.file("/" + name), "\(name) is not served")
            #expect(f.body == Array(try Data(contentsOf: Self.assets.appendingPathComponent(name))), "\(name): the bytes on disk")
            #expect(f.contentType == types[(name as NSString).pathExtension], "\(name): \(f.contentType)")
        }
        #expect(WebAssets.file("/")?.body == WebAssets.file("/index.html")?.body)
        #expect(WebAssets.file("/app.js?v=2")?.body == WebAssets.file("/app.js")?.body)
        #expect(WebAssets.file("/nothing.js") == nil)
        #expect(WebAssets.file("/../Package.swift") == nil)
    }

    /// Everything the page loads comes from kioskd: every src/href of index.html is served, and
    /// no file names another host (no CDN, no font service).
    @Test func thePageLoadsNothingFromElsewhere() throws {
        let html = String(decoding: try #require(WebAssets.file("/")).body, as: UTF8.self)
        let refs = try NSRegularExpression(pattern: ##"(?:src|href)="([^"#]+)""##)
            .matches(in: html, range: NSRange(html.startIndex..., in: html))
            .map { String(html[Range($0.range(at: 1), in: html)!]) }
        #expect(Set(refs) == ["app.js", "owner.js", "settings.js", "gameclock.js", "style.css", "icon.svg"])
        for r in refs { #expect(WebAssets.file("/" + r) != nil, "\(r) is referenced but not served") }
        for path in WebAssets.paths {
            let text = String(decoding: try #require(WebAssets.file(path)).body, as: UTF8.self)
            for scheme in ["http://", "https://", "//cdn", "@import"] where path != "/icon.svg" {
                #expect(!text.contains(scheme), "\(path) names '\(scheme)'")
            }
        }
    }
}
