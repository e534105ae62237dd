/// An error that says what went wrong and where (file:line, key, device, field).
public struct KioskError: Error, Sendable, CustomStringConvertible, Equatable {
    public enum Kind: String, Sendable, Equatable {
        case config, system, display, input, render, control, state, scene, outOfRange, notFound
    }
    public let kind: Kind
    public let message: String
    /// errno for system errors, 0 otherwise.
    public let errno: Int32

    public init(_ kind: Kind, _ message: String, errno: Int32 = 0) {
        self.kind = kind
        self.message = message
        self.errno = errno
    }

    public var description: String { message }

    public static func config(_ message: String) -> KioskError { KioskError(.config, message) }
    public static func outOfRange(_ message: String) -> KioskError { KioskError(.outOfRange, message) }
    public static func notFound(_ message: String) -> KioskError { KioskError(.notFound, message) }
    public static func scene(_ message: String) -> KioskError { KioskError(.scene, message) }
    public static func display(_ message: String, errno: Int32 = 0) -> KioskError { KioskError(.display, message, errno: errno) }
    public static func input(_ message: String, errno: Int32 = 0) -> KioskError { KioskError(.input, message, errno: errno) }
    public static func control(_ message: String) -> KioskError { KioskError(.control, message) }
    public static func state(_ message: String) -> KioskError { KioskError(.state, message) }
}
