import KioskControl
import KioskCore

/// What a paired device may do: `viewer` reads and follows live updates; `operator` also changes;
/// `owner` also pairs and revokes devices, reads the log's recent errors and changes settings
/// (WebRoles.swift decides each).
public enum WebRole: String, Sendable, Codable, CaseIterable, Equatable {
    case viewer
    case `operator`
    case owner
}

/// A paired device as a request presents it (by its cookie).
public struct WebDevice: Sendable, Equatable {
    public var name: String
    public var role: WebRole
    public init(name: String, role: WebRole) { self.name = name; self.role = role }
}

/// The outcome of redeeming a pairing code.
public enum WebRedeemResult: Sendable, Equatable {
    /// Paired: the token to give the device (only its hash is kept) and the device.
    case paired(token: String, device: WebDevice)
    /// Refused: the answer to send (400, 403 wrong or expired code, 409, 429, 500 …).
    case refused(ControlResponse)
}

/// One live update for the open pages: an SSE event name and its JSON data.
public struct WebEvent: Sendable, Equatable {
    public var name: String
    public var json: [UInt8]
    public init(name: String, json: [UInt8]) { self.name = name; self.json = json }
}

/// What the web server needs from the daemon. Every call may come from any thread; the daemon
/// carries it out on its render loop.
public protocol WebBackend: Sendable {
    /// Carries out a control command and answers (the same answer the control socket gives).
    func run(_ command: ControlCommand) async -> ControlResponse
    /// The device whose token this is (its last use noted); nil: no such device.
    func device(token: String) async -> WebDevice?
    /// Redeems a pairing code for a device named `name`; `client` identifies the caller (its
    /// address) for the limit on wrong codes.
    func redeem(code: String, name: String, client: String) async -> WebRedeemResult
    /// Starts a live stream: `sink` is called (on the daemon's thread, so it must not block)
    /// first with the current `state` and `theme` events, then after every change; `closed`
    /// when the device was revoked (the stream must end). Returns the id for `closeStream`.
    func openStream(device: WebDevice, sink: @escaping @Sendable (WebEvent) -> Void,
                    closed: @escaping @Sendable () -> Void) async -> Int
    /// Stops a live stream's updates.
    func closeStream(_ id: Int)
}
