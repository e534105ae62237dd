/// The rule for a painting's file name, shared by the paint scene (which saves) and the control
/// protocol (which refuses a bad name before the request reaches the render loop).
public enum PaintingFileName {
    /// Longest accepted name, in bytes.
    public static let maxBytes = 100

    /// A plain file name: letters, digits, '.', '_', '-', no leading dot, ending in ".png", at
    /// most `maxBytes` bytes. Throws a `.control` error saying what is wrong.
    public static func validate(_ name: String) throws {
        func refuse(_ why: String) -> KioskError {
            KioskError(.control, "painting name \"\(name)\" \(why); expected a file name such as drawing-1.png (letters, digits, '.', '_', '-'; ending in .png; at most \(maxBytes) bytes)")
        }
        guard name.utf8.count <= maxBytes else { throw refuse("is \(name.utf8.count) bytes long") }
        guard name.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D }) else {
            throw refuse(name.contains("/") ? "contains '/': paintings are saved in the paintings folder only" : "contains a character other than letters, digits, '.', '_' and '-'")
        }
        guard !name.hasPrefix(".") else { throw refuse("starts with a dot") }
        guard name.hasSuffix(".png"), name.count > 4 else { throw refuse("does not end in .png") }
    }
}
