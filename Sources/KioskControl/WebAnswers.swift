// The answers and request bodies of the phone page's routes (docs/web.md, docs/control.md):
// pairing, paired devices, themes and their colours, saved paintings.

/// `POST /pair`.
public struct PairRequest: Codable, Sendable, Equatable {
    public var role: String
    public var show: Bool
    public init(role: String, show: Bool) { self.role = role; self.show = show }
}

/// `POST /pair`: the one-time code, the page's address with it, the role it gives, when it
/// expires (UTC, ISO 8601) and in how many seconds.
public struct PairAnswer: Codable, Sendable, Equatable {
    public var ok: Bool?
    public var code: String
    public var url: String
    public var role: String
    public var expires: String
    public var expiresInSeconds: Int
    public var shown: Bool
    /// What happened to the code this one replaces, when it was guessed at.
    public var previous: PairingReport?
    public init(ok: Bool? = true, code: String, url: String, role: String, expires: String, expiresInSeconds: Int, shown: Bool,
                previous: PairingReport? = nil) {
        self.ok = ok; self.code = code; self.url = url; self.role = role; self.expires = expires
        self.expiresInSeconds = expiresInSeconds; self.shown = shown; self.previous = previous
    }
}

/// Wrong guesses at the codes of one `kioskctl pair` (that code and the codes that replaced it):
/// how many, from how many client addresses, and how many times the code was replaced because
/// its guess budget was spent (docs/web.md, "Guessing").
public struct PairingReport: Codable, Sendable, Equatable {
    /// Whether a code of this pairing is still open.
    public var open: Bool
    public var wrongGuesses: Int
    public var addresses: Int
    public var replaced: Int
    /// "code replaced 3 times after 30 wrong guesses from 9 addresses".
    public var summary: String
    public init(open: Bool, wrongGuesses: Int, addresses: Int, replaced: Int) {
        self.open = open; self.wrongGuesses = wrongGuesses; self.addresses = addresses; self.replaced = replaced
        func n(_ k: Int, _ one: String, _ many: String) -> String { "\(k) \(k == 1 ? one : many)" }
        let guesses = "\(n(wrongGuesses, "wrong guess", "wrong guesses")) from \(n(addresses, "address", "addresses"))"
        summary = replaced == 0 ? "code not replaced; \(guesses)" : "code replaced \(n(replaced, "time", "times")) after \(guesses)"
    }
}

/// `GET /devices`.
public struct DevicesAnswer: Codable, Sendable, Equatable {
    public struct Device: Codable, Sendable, Equatable {
        public var name: String
        public var role: String
        /// UTC, ISO 8601.
        public var created: String
        public var lastUse: String?
        public init(name: String, role: String, created: String, lastUse: String?) {
            self.name = name; self.role = role; self.created = created; self.lastUse = lastUse
        }
    }
    public var devices: [Device]
    public init(devices: [Device]) { self.devices = devices }
}

/// `POST /devices/{name}/revoke`.
public struct RevokeAnswer: Codable, Sendable, Equatable {
    public var ok: Bool?
    public var revoked: String
    public init(ok: Bool? = true, revoked: String) { self.ok = ok; self.revoked = revoked }
}

/// `GET /themes`.
public struct ThemesAnswer: Codable, Sendable, Equatable {
    public var themes: [String]
    /// The theme on screen and the one chosen.
    public var theme: String
    public var chosenTheme: String
    public init(themes: [String], theme: String, chosenTheme: String) { self.themes = themes; self.theme = theme; self.chosenTheme = chosenTheme }
}

/// `GET /theme`: the colours of the theme on screen as "#RRGGBB".
public struct PaletteAnswer: Codable, Sendable, Equatable {
    public var theme: String
    public var primary, secondary, highlight, neutral, background, text: String
    public init(theme: String, primary: String, secondary: String, highlight: String, neutral: String, background: String, text: String) {
        self.theme = theme; self.primary = primary; self.secondary = secondary; self.highlight = highlight
        self.neutral = neutral; self.background = background; self.text = text
    }
}

/// `GET /paintings`: saved paintings, newest first.
public struct PaintingsAnswer: Codable, Sendable, Equatable {
    public struct Painting: Codable, Sendable, Equatable {
        public var name: String
        public var bytes: Int
        /// UTC, ISO 8601.
        public var modified: String
        public init(name: String, bytes: Int, modified: String) { self.name = name; self.bytes = bytes; self.modified = modified }
    }
    public var paintings: [Painting]
    public init(paintings: [Painting]) { self.paintings = paintings }
}

/// `GET /status` `setup`: a kiosk never paired with an owner shows an owner code on its screen
/// ("scan to set up", docs/web.md) until one pairs.
public struct SetupStatus: Codable, Sendable, Equatable {
    /// "waiting" (no owner was ever paired; the code is offered), "done" (an owner was paired) or
    /// "off" (`[web] setup = false`).
    public var state: String
    /// Whether the setup code is on the screen now (another `kioskctl pair` code may stand in its place).
    public var shown: Bool
    /// The code on the screen and the page's address with it; only through the control socket
    /// (the web's status leaves them out).
    public var code: String?
    public var url: String?
    /// Who was paired as the first owner, and when (UTC, ISO 8601).
    public var owner: String?
    public var ownerPaired: String?
    public init(state: String, shown: Bool, code: String? = nil, url: String? = nil, owner: String? = nil, ownerPaired: String? = nil) {
        self.state = state; self.shown = shown; self.code = code; self.url = url; self.owner = owner; self.ownerPaired = ownerPaired
    }
}

/// `GET /errors`: the log's recent warnings and errors, oldest first (at most `capacity`).
public struct RecentErrorsAnswer: Codable, Sendable, Equatable {
    public struct Entry: Codable, Sendable, Equatable {
        /// UTC, ISO 8601.
        public var time: String
        /// "warning", "error" or "critical".
        public var level: String
        /// The message with its metadata, as the journal has it (at most 1 KiB).
        public var message: String
        public init(time: String, level: String, message: String) { self.time = time; self.level = level; self.message = message }
    }
    public var errors: [Entry]
    /// How many the ring holds at most; `dropped`: older ones it no longer holds.
    public var capacity: Int
    public var dropped: Int
    public init(errors: [Entry], capacity: Int, dropped: Int) { self.errors = errors; self.capacity = capacity; self.dropped = dropped }
}
