import Foundation
import Logging
import Testing
import KioskCore
import KioskRender
import KioskTesting
@testable import KioskScenes

/// zbarimg (Debian's zbar-tools) decodes what the overlay draws: an oracle independent of libqrencode.
let zbarimgPath = ["/usr/bin/zbarimg", "/usr/local/bin/zbarimg"].first { FileManager.default.isExecutableFile(atPath: $0) }

/// Decodes every QR code in the PNG at `path` with zbarimg; returns the decoded texts.
func zbarDecode(_ path: String) throws -> [String] {
    // zbarimg exits 4 when it found no symbol.
    let (_, out, _) = try SpawnedProcess.run(zbarimgPath!, ["--quiet", "--raw", "-Sdisable", "-Sqrcode.enable", path])
    return out.split(separator: "\n").map(String.init)
}

func scratchPNG(_ tag: String) -> String {
    NSTemporaryDirectory() + "k-qr-\(tag)-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).png"
}

@Suite struct PairingOverlayTests {
    static let url = "http://192.168.1.20:8080/#pair=483920"

    @Test(.enabled(if: zbarimgPath != nil, "zbarimg is not installed (apt-get install zbar-tools): the QR code is not decoded"),
          arguments: [Size(width: 1920, height: 1080), Size(width: 1080, height: 1920), Size(width: 480, height: 320)])
    func qrCodeOnTheFrameDecodesToTheURL(size: Size) throws {
        let canvas = try Canvas(size: size)
        canvas.clear(.red)
        let overlay = PairingOverlay()
        let drawn = overlay.draw(url: Self.url, code: "483920", on: canvas, theme: .default)
        let r = try #require(drawn)
        #expect(r.width <= size.width && r.height <= size.height)
        let path = scratchPNG("\(size.width)x\(size.height)")
        defer { unlink(path) }
        try canvas.writePNG(to: path)
        #expect(try zbarDecode(path) == [Self.url])
    }

    @Test(.enabled(if: zbarimgPath != nil, "zbarimg is not installed (apt-get install zbar-tools): the QR code is not decoded"),
          arguments: ["default", "alternative", "dark", "light", "high-contrast"])
    func everyBuiltInThemeGivesADecodableCode(theme name: String) throws {
        let theme = try #require(Theme.builtIn[name])
        let canvas = try Canvas(size: Size(width: 800, height: 480))
        canvas.clear(theme.palette.primary)
        let overlay = PairingOverlay()
        let drawn = overlay.draw(url: Self.url, code: "483920", on: canvas, theme: theme)
        _ = try #require(drawn)
        let path = scratchPNG(name)
        defer { unlink(path) }
        try canvas.writePNG(to: path)
        #expect(try zbarDecode(path) == [Self.url])
        let (light, dark) = PairingOverlay.colors(theme.palette)
        #expect(light.contrastRatio(with: dark) >= 7, "\(name): \(light) on \(dark)")
        #expect(light.relativeLuminance > dark.relativeLuminance, "\(name): dark modules on a light card")
    }

    /// The symbol has at least four light modules of quiet zone on every side: found from the
    /// pixels (the outermost dark pixels of the card's symbol area), not from the overlay's layout.
    @Test func quietZoneIsFourModulesOfTheCardColour() throws {
        let canvas = try Canvas(size: Size(width: 1920, height: 1080))
        canvas.clear(.black)
        let overlay = PairingOverlay()
        let drawn = overlay.draw(url: Self.url, code: "483920", on: canvas, theme: .default)
        let r = try #require(drawn)
        let qr = try QRCode(encoding: Self.url)
        let dark = Color.black, light = Color.white
        // The finder pattern's top-left corner: scanning the card's inside (past its dark
        // outline) row by row below the title, the first dark run that is 7 modules wide.
        var found: (x: Int, y: Int, module: Int)?
        outer: for y in (r.y + r.height / 8)..<r.maxY {
            var x0 = r.x, x1 = r.maxX - 1
            while x0 < x1, canvas.color(x: x0, y: y) == dark { x0 += 1 }
            while x1 > x0, canvas.color(x: x1, y: y) == dark { x1 -= 1 }
            var x = x0
            while x <= x1 {
                guard canvas.color(x: x, y: y) == dark else { x += 1; continue }
                var run = 0
                while x + run <= x1, canvas.color(x: x + run, y: y) == dark { run += 1 }
                if run >= 7, run % 7 == 0 { found = (x, y, run / 7); break outer }
                x += run
            }
        }
        let f = try #require(found)
        let side = qr.width * f.module, q = 4 * f.module
        let zone = Rect(x: f.x - q, y: f.y - q, width: side + 2 * q, height: side + 2 * q)
        #expect(r.x <= zone.x && r.y <= zone.y && zone.maxX <= r.maxX && zone.maxY <= r.maxY, "quiet zone \(zone) inside the card \(r)")
        for y in zone.y..<zone.maxY {
            for x in zone.x..<zone.maxX where x < f.x || x >= f.x + side || y < f.y || y >= f.y + side {
                if canvas.color(x: x, y: y) != light { Issue.record("quiet zone pixel (\(x), \(y)) is \(canvas.color(x: x, y: y))"); return }
            }
        }
        // Modules are whole pixels: the symbol's pixels are exactly dark or light.
        #expect(Pixels.count(dark, in: canvas, rect: Rect(x: f.x, y: f.y, width: side, height: side))
                + Pixels.count(light, in: canvas, rect: Rect(x: f.x, y: f.y, width: side, height: side)) == side * side)
    }

    @Test func removingPutsBackEveryPixel() throws {
        let canvas = try Canvas(size: Size(width: 640, height: 480))
        canvas.clear(.red)
        canvas.fill(Rect(x: 100, y: 100, width: 300, height: 200), .blue)
        let before = try Canvas(size: canvas.size)
        before.draw(canvas)
        let overlay = PairingOverlay()
        let drawn = overlay.draw(url: Self.url, code: "483920", on: canvas, theme: .dark)
        let r = try #require(drawn)
        #expect(Pixels.differingPixels(canvas, before) > r.area / 2)
        let removed = overlay.remove(from: canvas)
        #expect(removed == r)
        #expect(Pixels.differingPixels(canvas, before) == 0)
        let again = overlay.remove(from: canvas)
        #expect(again == nil)
    }

    @Test func aTextTooLongForAQRCodeIsAnErrorNamingTheLimit() {
        #expect(throws: KioskError.self) { try QRCode(encoding: String(repeating: "x", count: 4000)) }
        do { _ = try QRCode(encoding: String(repeating: "x", count: 4000)); Issue.record("no error") } catch {
            #expect("\(error)".contains("4000 bytes"))
        }
    }
}

/// The scene manager draws the prompt over the scene on screen, and takes it off again without
/// the scene's help.
@Suite struct PairingPromptOnScreenTests {
    static let url = "http://kiosk.local:8080/#pair=Q7K2XM"

    struct Screen: Sendable, CustomStringConvertible {
        let size: Size
        let rotation: Rotation
        var description: String { "\(size.width)x\(size.height) \(rotation)" }
    }

    @Test(.enabled(if: zbarimgPath != nil, "zbarimg is not installed (apt-get install zbar-tools): the QR code is not decoded"),
          arguments: [Screen(size: Size(width: 1920, height: 1080), rotation: .r0), Screen(size: Size(width: 800, height: 480), rotation: .r90)])
    func promptIsDrawnOverTheSceneAndTakenOff(screen: Screen) throws {
        let scene = ProbeScene("a", .red)
        let loop = ManualEventLoop()
        let d = try HeadlessDisplay(size: screen.size, rotation: screen.rotation)
        let m = SceneManager(scenes: [scene], theme: .default, display: d, loop: loop, logger: Logger(label: "test"))
        m.start()
        loop.runDeferred()
        let area = screen.size.width * screen.size.height
        // The probe scene: red, with a 2 × 2 corner in the theme's primary colour.
        #expect(Pixels.count(.red, in: d.framebuffer) == area - 4)

        m.pairingPrompt = PairingPrompt(url: Self.url, code: "Q7K2XM", expiresAtMonotonicNs: 0)
        loop.runDeferred()
        #expect(d.presentCount == 2)
        let path = scratchPNG("manager")
        defer { unlink(path) }
        // What the panel scans out (rotated for a portrait panel).
        try d.framebuffer.writePNG(to: path)
        #expect(try zbarDecode(path) == [Self.url])
        #expect(Pixels.count(.red, in: d.framebuffer) < area - area / 10, "the prompt covers part of the scene")
        let drawsWithPrompt = scene.draws

        // The scene goes on drawing under the prompt (a square at the centre); the prompt stays on top.
        let logical = try #require(m.canvas).size
        let centre = Rect(x: logical.width / 2 - 2, y: logical.height / 2 - 2, width: 4, height: 4)
        scene.dirtyRect = centre
        m.sceneDidChange()
        loop.runDeferred()
        try d.framebuffer.writePNG(to: path)
        #expect(try zbarDecode(path) == [Self.url])

        m.pairingPrompt = nil
        loop.runDeferred()
        #expect(Pixels.count(.red, in: d.framebuffer) == area - 4 - 16, "every pixel of the prompt is gone")
        // What the scene drew under the prompt is there.
        #expect(try #require(m.canvas).color(x: centre.x + 1, y: centre.y + 1) == Theme.default.palette.highlight)
        #expect(scene.draws <= drawsWithPrompt + 2, "the scene was not made to redraw to take the prompt off")
        try d.framebuffer.writePNG(to: path)
        #expect(try zbarDecode(path) == [])
    }
}

/// A withdrawn code's notice: a card in the middle with the text in the dark colour and no QR
/// symbol, taken off again pixel for pixel.
@Suite struct PairingNoticeTests {
    @Test func noticeIsACardWithTextAndNoSymbolAndIsTakenOff() throws {
        let size = Size(width: 1280, height: 800)
        let canvas = try Canvas(size: size)
        canvas.clear(.red)
        let before = try Canvas(size: size)
        before.clear(.red)
        let overlay = PairingOverlay()
        let prompt = PairingPrompt(url: "", code: "", expiresAtMonotonicNs: 0,
                                   notice: "Pairing code withdrawn after 10 wrong guesses. Open a new one on the kiosk.")
        let drawn = overlay.draw(prompt, on: canvas, theme: .default)
        let r = try #require(drawn)
        // Centred, narrower than the screen, inside it.
        #expect(abs((r.x + r.width / 2) - size.width / 2) <= 1)
        #expect(r.width < size.width && r.height < size.height / 2)
        let (light, dark) = PairingOverlay.colors(Theme.default.palette)
        let area = r.width * r.height
        let lightCount = Pixels.count(light, in: canvas, rect: r, tolerance: 8)
        let darkCount = Pixels.count(dark, in: canvas, rect: r, tolerance: 40)
        #expect(lightCount > area / 2, "the card is the light colour")
        #expect(darkCount > 500, "text in the dark colour: \(darkCount) pixels")
        #expect(darkCount < area / 4, "no QR symbol (a symbol is about half dark): \(darkCount) of \(area)")
        #expect(Pixels.count(.red, in: canvas, rect: r) == 0)
        #expect(Pixels.differingPixels(canvas, before) > 0)
        _ = overlay.remove(from: canvas)
        #expect(Pixels.differingPixels(canvas, before) == 0)
    }

    @Test func wrapKeepsWordsAndWidth() {
        let lines = PairingOverlay.wrap("aaa bbb cc dddddddddd e", width: 7) { Double($0.count) }
        #expect(lines == ["aaa bbb", "cc", "dddddddddd", "e"])
    }
}
