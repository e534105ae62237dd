/// What the kiosk's screen shows while a pairing code is open: the page's address with the
/// one-time code (for a QR code), the code in large text, and when it stops being valid; or,
/// with a `notice`, only that text (a code was withdrawn).
public struct PairingPrompt: Sendable, Equatable {
    /// The page's address with the code, e.g. "http://kiosk.local:8080/#pair=4F7K2Q".
    public var url: String
    /// The one-time code.
    public var code: String
    /// When the code expires (CLOCK_MONOTONIC, nanoseconds).
    public var expiresAtMonotonicNs: Int64
    /// Shown instead of a code, such as "Pairing code withdrawn after 10 wrong guesses…"; nil: a code.
    public var notice: String?
    /// The card's title above the QR code (nil: "Scan to pair a phone"); the first-boot code's is
    /// "Scan to set up this kiosk".
    public var title: String?

    public init(url: String, code: String, expiresAtMonotonicNs: Int64, notice: String? = nil, title: String? = nil) {
        self.url = url; self.code = code; self.expiresAtMonotonicNs = expiresAtMonotonicNs; self.notice = notice; self.title = title
    }
}
