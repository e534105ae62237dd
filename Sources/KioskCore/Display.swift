#if canImport(Glibc)
import Glibc
#endif

/// What a display tells the scene manager.
public enum DisplayEvent: Sendable, Equatable {
    /// The previous frame is on screen (flip completed); a new one may be presented.
    case ready
    /// The output (re)appeared, changed size, or came back from another VT: lay out and repaint everything.
    case needsFullRedraw
    /// No output to show on (unplugged, VT taken away); keep running, present nothing.
    case inactive
}

/// A place frames go: the DRM/KMS output, or the headless backend.
/// All calls happen on the event loop's thread.
public protocol DisplayOutput: AnyObject {
    /// For logs and status, e.g. "headless 1920x1080" or "/dev/dri/card0 HDMI-A-1 1920x1080@60".
    var displayDescription: String { get }
    /// The connector driven now (e.g. "HDMI-A-1"); nil for a display without one (headless) or
    /// while nothing is connected.
    var connectorName: String? { get }
    /// The size scenes lay out for (the mode size turned by `rotation`); nil while nothing is connected.
    var logicalSize: Size? { get }
    var rotation: Rotation { get }
    /// False while a flip is pending, the output is blanked, or nothing is connected.
    var canPresent: Bool { get }
    /// Set by the scene manager; called on the event loop.
    var onEvent: ((DisplayEvent) -> Void)? { get set }
    /// Lends the place the next frame is drawn (see `FrameTarget`); nil when no frame can be
    /// taken now (a flip pending, blanked, nothing connected). Throws when the memory for it
    /// cannot be had.
    /// `repaintsEverything`: the frame writes every pixel without reading what was there, so the
    /// display may lend the buffer it shows next (no copy). The display chooses; each lent target
    /// must be given back by `presentLent(damage:)` before the next lend.
    func lendFrame(repaintsEverything: Bool) throws -> FrameTarget?
    /// Shows what was drawn into the lent target: only `damage` changed since the previous frame
    /// (all of it when the target missed anything). Empty damage shows nothing and takes the
    /// target back.
    func presentLent(damage: Damage) throws
    /// Turns the panel off (true) or on (false).
    func setBlanked(_ blanked: Bool) throws
    var isBlanked: Bool { get }
    /// Releases the output and restores what was shown before kioskd started.
    func shutdown()
    /// What reached the panel (nil: the display cannot tell, e.g. headless).
    var shownFrames: ShownFrames? { get }
}

/// A source of input events (libinput, or a script in tests).
public protocol InputSource: AnyObject {
    /// Set by the scene manager; called on the event loop.
    var onEvent: ((InputEvent) -> Void)? { get set }
    /// With several outputs: when set, every event comes here instead of `onEvent`, with the
    /// index of the output its device belongs to (touch screens, tablets, absolute pointers), or
    /// nil for keys, mice and device news.
    var onRoutedEvent: ((InputEvent, Int?) -> Void)? { get set }
    /// Devices currently open.
    var devices: [InputDeviceInfo] { get }
    /// The logical scene orientation to map touches into (set when the display's rotation or size changes).
    func setRotation(_ rotation: Rotation)
    func shutdown()
}

extension DisplayOutput {
    public var connectorName: String? { nil }
    public var shownFrames: ShownFrames? { nil }
}

/// What reached the panel of an output, as its display knows it: the latest frame the kernel
/// completed (a page flip's event, or a mode set) and how many in the last minute, and a flip
/// that never completed.
public struct ShownFrames: Sendable, Equatable {
    /// Wall-clock time (ns since the epoch) of the latest completed frame; nil: none yet.
    public var lastRealtimeNs: Int64?
    /// Frames completed in the last 60 s.
    public var lastMinute: Int
    /// The latest flip that never completed (its event did not come), until a frame completes again.
    public var error: String?
    /// Monotonic time (ns) of the oldest frame handed to the kernel that has not completed since
    /// (a flip queued, its event awaited or lost); nil: every frame handed over completed.
    public var pendingSinceNs: Int64?
    public init(lastRealtimeNs: Int64?, lastMinute: Int, error: String? = nil, pendingSinceNs: Int64? = nil) {
        self.lastRealtimeNs = lastRealtimeNs; self.lastMinute = lastMinute; self.error = error; self.pendingSinceNs = pendingSinceNs
    }

    /// "2026-11-28T10:39:00Z" for wall-clock `ns` (UTC, whole seconds).
    public static func utc(_ ns: Int64) -> String {
        var t = time_t(ns / 1_000_000_000)
        var tmv = tm()
        gmtime_r(&t, &tmv)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(tmv.tm_year + 1900)-\(two(tmv.tm_mon + 1))-\(two(tmv.tm_mday))T\(two(tmv.tm_hour)):\(two(tmv.tm_min)):\(two(tmv.tm_sec))Z"
    }
}

/// The times of frames shown over the last minute (monotonic ns), and the wall-clock time of the
/// latest: what `ShownFrames` reports.
public struct ShownFrameLog: Sendable {
    public static let windowNs: Int64 = 60_000_000_000
    private var times: [Int64] = []
    public private(set) var lastRealtimeNs: Int64?
    /// The oldest frame handed over and not completed since (`ShownFrames.pendingSinceNs`).
    public private(set) var pendingSinceNs: Int64?

    public init() {}

    /// A frame was handed to the kernel at monotonic `monotonicNs` (a flip queued).
    public mutating func submitted(monotonicNs: Int64) {
        if pendingSinceNs == nil { pendingSinceNs = monotonicNs }
    }

    /// A frame completed at monotonic `monotonicNs`, wall-clock `realtimeNs`.
    public mutating func record(monotonicNs: Int64, realtimeNs: Int64) {
        times.append(monotonicNs)
        lastRealtimeNs = realtimeNs
        pendingSinceNs = nil
        prune(now: monotonicNs)
    }

    /// Frames completed within the minute before monotonic `now`.
    public func lastMinute(now: Int64) -> Int {
        times.reduce(0) { $0 + (now - $1 < Self.windowNs ? 1 : 0) }
    }

    private mutating func prune(now: Int64) {
        if let k = times.firstIndex(where: { now - $0 < Self.windowNs }), k > 0 { times.removeFirst(k) }
    }
}
