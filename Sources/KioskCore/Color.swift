#if canImport(Glibc)
import Glibc
#endif

/// A colour in sRGB with components in 0…1.
public struct Color: Sendable, Equatable, Hashable, CustomStringConvertible {
    public var red: Double
    public var green: Double
    public var blue: Double
    public var alpha: Double

    public init(red: Double, green: Double, blue: Double, alpha: Double = 1) {
        self.red = red; self.green = green; self.blue = blue; self.alpha = alpha
    }
    /// A colour from 8-bit channels.
    public init(r8: Int, g8: Int, b8: Int, a8: Int = 255) {
        self.init(red: Double(r8) / 255, green: Double(g8) / 255, blue: Double(b8) / 255, alpha: Double(a8) / 255)
    }
    /// Parses `#rgb`, `#rrggbb` or `#rrggbbaa` (the `#` is optional). Returns nil for anything else.
    public init?(hex: String) {
        var s = Substring(hex)
        if s.hasPrefix("#") { s = s.dropFirst() }
        guard s.allSatisfy(\.isHexDigit) else { return nil }
        func byte(_ str: Substring) -> Int { Int(str, radix: 16)! }
        switch s.count {
        case 3:
            let c = Array(s)
            self.init(r8: byte(Substring(String([c[0], c[0]]))), g8: byte(Substring(String([c[1], c[1]]))), b8: byte(Substring(String([c[2], c[2]]))))
        case 6, 8:
            let i = s.startIndex
            let r = byte(s[i..<s.index(i, offsetBy: 2)])
            let g = byte(s[s.index(i, offsetBy: 2)..<s.index(i, offsetBy: 4)])
            let b = byte(s[s.index(i, offsetBy: 4)..<s.index(i, offsetBy: 6)])
            let a = s.count == 8 ? byte(s[s.index(i, offsetBy: 6)..<s.index(i, offsetBy: 8)]) : 255
            self.init(r8: r, g8: g, b8: b, a8: a)
        default:
            return nil
        }
    }

    /// 8-bit channels, each rounded to the nearest integer (0.5 away from zero).
    public var rgb8: (r: Int, g: Int, b: Int) {
        (Int((red * 255).rounded()), Int((green * 255).rounded()), Int((blue * 255).rounded()))
    }
    /// `#RRGGBB` in upper case.
    public var hexString: String {
        let c = rgb8
        return "#" + [c.r, c.g, c.b].map { hex2($0) }.joined()
    }
    public var description: String { alpha < 1 ? "\(hexString)@\(alpha)" : hexString }

    /// WCAG 2 relative luminance.
    public var relativeLuminance: Double {
        func lin(_ c: Double) -> Double { c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4) }
        return 0.2126 * lin(red) + 0.7152 * lin(green) + 0.0722 * lin(blue)
    }
    /// WCAG 2 contrast ratio between two colours (1…21).
    public func contrastRatio(with other: Color) -> Double {
        let a = relativeLuminance, b = other.relativeLuminance
        return (max(a, b) + 0.05) / (min(a, b) + 0.05)
    }
    public func withAlpha(_ a: Double) -> Color { Color(red: red, green: green, blue: blue, alpha: a) }
    /// Linear mix: t = 0 gives self, t = 1 gives other.
    public func mixed(with other: Color, _ t: Double) -> Color {
        Color(red: red + (other.red - red) * t, green: green + (other.green - green) * t,
              blue: blue + (other.blue - blue) * t, alpha: alpha + (other.alpha - alpha) * t)
    }

    /// A colour from hue (degrees, any value, wrapped to 0…360), saturation and brightness (0…1).
    public init(hue: Double, saturation: Double, brightness: Double, alpha: Double = 1) {
        let h = ((hue.truncatingRemainder(dividingBy: 360)) + 360).truncatingRemainder(dividingBy: 360) / 60
        let s = min(max(saturation, 0), 1), v = min(max(brightness, 0), 1)
        let i = Int(h.rounded(.down)) % 6
        let f = h - h.rounded(.down)
        let p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f))
        switch i {
        case 0: self.init(red: v, green: t, blue: p, alpha: alpha)
        case 1: self.init(red: q, green: v, blue: p, alpha: alpha)
        case 2: self.init(red: p, green: v, blue: t, alpha: alpha)
        case 3: self.init(red: p, green: q, blue: v, alpha: alpha)
        case 4: self.init(red: t, green: p, blue: v, alpha: alpha)
        default: self.init(red: v, green: p, blue: q, alpha: alpha)
        }
    }
    /// Hue (0…360), saturation and brightness (0…1).
    public var hsb: (hue: Double, saturation: Double, brightness: Double) {
        let mx = max(red, green, blue), mn = min(red, green, blue)
        let d = mx - mn
        var h = 0.0
        if d > 0 {
            if mx == red { h = 60 * (((green - blue) / d).truncatingRemainder(dividingBy: 6)) }
            else if mx == green { h = 60 * ((blue - red) / d + 2) }
            else { h = 60 * ((red - green) / d + 4) }
        }
        if h < 0 { h += 360 }
        return (h, mx == 0 ? 0 : d / mx, mx)
    }

    public static let black = Color(red: 0, green: 0, blue: 0)
    public static let white = Color(red: 1, green: 1, blue: 1)
    public static let red = Color(red: 1, green: 0, blue: 0)
    public static let green = Color(red: 0, green: 1, blue: 0)
    public static let blue = Color(red: 0, green: 0, blue: 1)
    public static let cyan = Color(red: 0, green: 1, blue: 1)
    public static let magenta = Color(red: 1, green: 0, blue: 1)
    public static let yellow = Color(red: 1, green: 1, blue: 0)
}

/// Two upper-case hex digits for 0…255.
@inlinable public func hex2(_ v: Int) -> String {
    let digits = Array("0123456789ABCDEF")
    let c = min(max(v, 0), 255)
    return String([digits[c >> 4], digits[c & 15]])
}
