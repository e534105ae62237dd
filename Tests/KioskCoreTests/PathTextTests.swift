import Foundation
import KioskCore
import Testing

/// `PathText` gives what NSString's path methods give (the tests still link full Foundation, so
/// they compare with it directly), where Foundation gives an answer at all.
struct PathTextTests {
    /// Paths Foundation's `deletingLastPathComponent` answers (it traps on a one-character first
    /// and only component: "a", "a/"; see `parentWhereFoundationTraps`).
    static let parents = [
        "/", "/a/", "a/b/", "", "/a", "/a/b", "a/b", "//a", "a//b", "/a//", "ab", "ab/", "./a",
        "/a/b/../c", "a/./", "..", "a//b//", "/etc/kioskd/kioskd.toml", "config/kioskd.toml",
        "kioskd.toml", "/var/lib/kioskd/", "/run/kioskd/control.sock",
    ]

    @Test(arguments: parents)
    func parentMatchesFoundation(_ path: String) {
        #expect(PathText.parent(of: path) == (path as NSString).deletingLastPathComponent)
    }

    @Test func parentWhereFoundationTraps() {
        #expect(PathText.parent(of: "a") == "")
        #expect(PathText.parent(of: "a/") == "")
        #expect(PathText.parent(of: "a//") == "")
        #expect(PathText.parent(of: "é") == "")
        #expect(PathText.parent(of: "a/b") == "a")
    }

    /// Foundation's parent of "//" and "///" is ""; the root's parent is the root here.
    @Test func rootsParentIsTheRoot() {
        #expect(PathText.parent(of: "/") == "/")
        #expect(PathText.parent(of: "//") == "/")
        #expect(PathText.parent(of: "///") == "/")
    }

    /// The folder to create or watch: the parent, "." for a bare name.
    @Test func folderIsTheParentOrTheCurrentFolder() {
        #expect(PathText.folder(of: "a") == ".")
        #expect(PathText.folder(of: "a/") == ".")
        #expect(PathText.folder(of: "") == ".")
        #expect(PathText.folder(of: "a/b") == "a")
        #expect(PathText.folder(of: "/a") == "/")
        #expect(PathText.folder(of: "/run/kioskd/control.sock") == "/run/kioskd")
    }

    static let bases = ["/", "a", "/a/", "a/b/", "", "a//", "//", "/etc/kioskd"]
    static let components = ["b", "/b", "b/", "", "//b", "b//c", "/", "themes/dark.toml"]

    @Test(arguments: bases, components)
    func appendingMatchesFoundation(_ base: String, _ component: String) {
        #expect(PathText.appending(component, to: base) == (base as NSString).appendingPathComponent(component))
    }

    @Test func appendingExamples() {
        #expect(PathText.appending("horn.wav", to: "/etc/kioskd") == "/etc/kioskd/horn.wav")
        #expect(PathText.appending("a", to: "/") == "/a")
        #expect(PathText.appending("a", to: "") == "a")
        #expect(PathText.appending("", to: "a") == "a")
    }
}
