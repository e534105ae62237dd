/// The colours a theme gives the scenes: four named colours plus background and text.
public struct Palette: Sendable, Equatable {
    public var primary: Color
    public var neutral: Color
    public var secondary: Color
    public var highlight: Color
    public var background: Color
    public var text: Color

    public init(primary: Color, neutral: Color, secondary: Color, highlight: Color, background: Color, text: Color) {
        self.primary = primary; self.neutral = neutral; self.secondary = secondary
        self.highlight = highlight; self.background = background; self.text = text
    }
    /// The palette's named colours in a fixed order (swatches, listings).
    public var swatches: [Color] { [primary, secondary, highlight, neutral, text] }

    /// The colour text is drawn in on `background`: the palette's text colour, or — when its
    /// WCAG contrast with `background` is below `minimumContrast` — the palette's background or
    /// highlight colour, whichever contrasts best, or black or white as a last resort (one of
    /// them always reaches 4.5:1).
    public func readableText(on background: Color, minimumContrast: Double = 4.5) -> Color {
        if text.contrastRatio(with: background) >= minimumContrast { return text }
        let themed = [self.background, highlight].max {
            $0.contrastRatio(with: background) < $1.contrastRatio(with: background)
        }!
        if themed.contrastRatio(with: background) >= minimumContrast { return themed }
        return Color.black.contrastRatio(with: background) >= Color.white.contrastRatio(with: background) ? .black : .white
    }
}

/// A font style: family, weight and size in points at 96 dpi (pango units are handled by the renderer).
public struct FontStyle: Sendable, Equatable {
    public enum Weight: String, Sendable, Equatable, CaseIterable {
        case light, normal, medium, semibold, bold, heavy
    }
    public enum Slant: String, Sendable, Equatable, CaseIterable { case normal, italic }
    public var family: String
    public var weight: Weight
    public var slant: Slant
    /// Size in pixels for a reference screen height of 1080 pixels; scenes scale it to their size.
    public var size: Double

    public init(family: String, weight: Weight = .normal, slant: Slant = .normal, size: Double) {
        self.family = family; self.weight = weight; self.slant = slant; self.size = size
    }
}

/// The four font styles a theme gives the scenes.
public struct FontStyles: Sendable, Equatable {
    public var heading: FontStyle
    public var body: FontStyle
    public var caption: FontStyle
    public var quote: FontStyle
    public init(heading: FontStyle, body: FontStyle, caption: FontStyle, quote: FontStyle) {
        self.heading = heading; self.body = body; self.caption = caption; self.quote = quote
    }
    /// DejaVu Sans (fonts-dejavu-core), the shipped default.
    public static let dejaVu = FontStyles(
        heading: FontStyle(family: "DejaVu Sans", weight: .bold, size: 64),
        body: FontStyle(family: "DejaVu Sans", size: 32),
        caption: FontStyle(family: "DejaVu Sans", slant: .italic, size: 24),
        quote: FontStyle(family: "DejaVu Sans", weight: .bold, slant: .italic, size: 24))
}

/// A named palette plus font styles. Scenes draw only with these.
public struct Theme: Sendable, Equatable {
    public var name: String
    public var palette: Palette
    public var fonts: FontStyles

    public init(name: String, palette: Palette, fonts: FontStyles = .dejaVu) {
        self.name = name; self.palette = palette; self.fonts = fonts
    }

    /// The default theme: cyan, magenta, yellow, black on white.
    public static let `default` = Theme(name: "default", palette: Palette(
        primary: .cyan, neutral: .magenta, secondary: .yellow, highlight: .black,
        background: .white, text: .black))
    /// The alternative theme: red, blue, green, white on black.
    public static let alternative = Theme(name: "alternative", palette: Palette(
        primary: .red, neutral: .blue, secondary: .green, highlight: .white,
        background: .black, text: .white))
    public static let dark = Theme(name: "dark", palette: Palette(
        primary: Color(hex: "#4FC3F7")!, neutral: Color(hex: "#37474F")!, secondary: Color(hex: "#FFB74D")!,
        highlight: Color(hex: "#E91E63")!, background: Color(hex: "#121212")!, text: Color(hex: "#ECEFF1")!))
    public static let light = Theme(name: "light", palette: Palette(
        primary: Color(hex: "#1565C0")!, neutral: Color(hex: "#B0BEC5")!, secondary: Color(hex: "#EF6C00")!,
        highlight: Color(hex: "#C2185B")!, background: Color(hex: "#FAFAFA")!, text: Color(hex: "#212121")!))
    public static let highContrast = Theme(name: "high-contrast", palette: Palette(
        primary: .yellow, neutral: Color(hex: "#808080")!, secondary: .cyan, highlight: .white,
        background: .black, text: .white),
        fonts: FontStyles(
            heading: FontStyle(family: "DejaVu Sans", weight: .heavy, size: 72),
            body: FontStyle(family: "DejaVu Sans", weight: .bold, size: 36),
            caption: FontStyle(family: "DejaVu Sans", weight: .bold, size: 28),
            quote: FontStyle(family: "DejaVu Sans", weight: .bold, slant: .italic, size: 28)))

    /// Every built-in theme, by name.
    public static let builtIn: [String: Theme] = [
        "default": .default, "alternative": .alternative, "dark": .dark, "light": .light, "high-contrast": .highContrast,
    ]
}
