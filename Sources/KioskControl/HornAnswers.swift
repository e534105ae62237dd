/// `POST /horn`: whether the horn sounds now.
public struct HornAnswer: Codable, Sendable, Equatable {
    /// "sounding", "muted" (`[audio] mute = true`: nothing played) or "already sounding".
    public var result: String
    /// When the daemon took the request (CLOCK_MONOTONIC, nanoseconds): the instant the horn's
    /// delay is measured from.
    public var requestedNs: Int64
    public var device: String
    public init(result: String, requestedNs: Int64, device: String) {
        self.result = result; self.requestedNs = requestedNs; self.device = device
    }
}

/// The `audio` object of `GET /status`.
public struct AudioStatus: Codable, Sendable, Equatable {
    /// The last horn's figures, measured on the audio thread.
    public struct LastHorn: Codable, Sendable, Equatable {
        public var requestedNs: Int64
        /// Request → first samples written to the device.
        public var writeLatencyMs: Double
        /// The device's delay then: written but not yet played.
        public var pcmDelayMs: Double
        public var error: String?
        /// Times the device ran dry while it played (a gap in the horn).
        public var underruns: Int
        public init(requestedNs: Int64, writeLatencyMs: Double, pcmDelayMs: Double, error: String? = nil, underruns: Int = 0) {
            self.requestedNs = requestedNs; self.writeLatencyMs = writeLatencyMs; self.pcmDelayMs = pcmDelayMs; self.error = error
            self.underruns = underruns
        }
    }
    public var device: String
    /// False when the device could not be opened (`error` says why): the horn is silent.
    public var available: Bool
    public var muted: Bool
    /// "builtin" or the WAV file's path.
    public var horn: String
    public var error: String?
    /// The device's ring buffer and period, in milliseconds (as granted).
    public var bufferMs: Double?
    public var periodMs: Double?
    public var lastHorn: LastHorn?
    public init(device: String, available: Bool, muted: Bool, horn: String, error: String? = nil,
                bufferMs: Double? = nil, periodMs: Double? = nil, lastHorn: LastHorn? = nil) {
        self.device = device; self.available = available; self.muted = muted; self.horn = horn; self.error = error
        self.bufferMs = bufferMs; self.periodMs = periodMs; self.lastHorn = lastHorn
    }
}
