#if canImport(Glibc)
import Glibc
#endif
import CKioskCEC
import KioskCore
import KioskPosix

/// Which CEC adapter an output's TV is reached through (`[output.cec] adapter`).
public enum CECAdapterChoice: Sendable, Equatable, CustomStringConvertible {
    /// No CEC.
    case none
    /// The adapter linked to the output's DRM connector (none found: no CEC, silently).
    case auto
    /// This device (`/dev/cec0`).
    case path(String)

    /// From the config's words: "none", "auto" or a `/dev/cecN` path; nil for anything else.
    public init?(configValue s: String) {
        switch s {
        case "none": self = .none
        case "auto": self = .auto
        default:
            guard s.hasPrefix("/"), !s.hasSuffix("/"), !s.contains("\0") else { return nil }
            self = .path(s)
        }
    }

    public var description: String {
        switch self {
        case .none: return "none"
        case .auto: return "auto"
        case .path(let p): return p
        }
    }
}

/// An open CEC adapter (`/dev/cecN`), opened blocking: every call here may wait (a transmit for
/// its acknowledgement and reply, a claim for the bus), bounded by the kernel's timeouts, so it is
/// used only on the CEC link's own thread. Each call wraps one ioctl of <linux/cec.h>
/// (`CKioskCEC`).
final class CECAdapter {
    let path: String
    private let fd: Descriptor

    /// `open(path, O_RDWR)`; errors name the path.
    init(path: String) throws {
        self.path = path
        fd = try Descriptor.open(path, O_RDWR)
    }

    /// The `/dev/cecN` devices present, in number order.
    static func devicePaths(directory: String = "/dev") -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var paths: [String] = []
        while let e = readdir(dir) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasPrefix("cec"), name.count > 3, name.dropFirst(3).allSatisfy(\.isNumber) { paths.append("\(directory)/\(name)") }
        }
        return paths.sorted { CECAutoMatch.cecOrder($0, $1) }
    }

    /// CEC_ADAP_G_CAPS: "driver name" (`vivid vivid-000-vid-out0`).
    func name() throws -> String {
        var driver = [CChar](repeating: 0, count: 32), name = [CChar](repeating: 0, count: 32)
        var caps: UInt32 = 0
        try Posix.call("CEC_ADAP_G_CAPS", path: path) { kiosk_cec_caps(fd.raw, &driver, 32, &name, 32, &caps) }
        func text(_ c: [CChar]) -> String { String(decoding: c.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        return "\(text(driver)) \(text(name))"
    }

    /// CEC_ADAP_G_CONNECTOR_INFO; `.none` when the adapter or kernel does not have it.
    func connector() -> CECConnector {
        var type: UInt32 = 0, card: UInt32 = 0, id: UInt32 = 0
        guard kiosk_cec_connector(fd.raw, &type, &card, &id) == 0 else { return .none }
        return CECConnector(type: type, card: card, connectorId: id)
    }

    /// CEC_ADAP_G_PHYS_ADDR.
    func physicalAddress() throws -> CECPhysicalAddress {
        var pa: UInt16 = 0xFFFF
        try Posix.call("CEC_ADAP_G_PHYS_ADDR", path: path) { kiosk_cec_phys_addr(fd.raw, &pa) }
        return CECPhysicalAddress(pa)
    }

    /// CEC_ADAP_G_LOG_ADDRS: how many logical addresses are configured, and the first one once
    /// it is claimed (nil: none yet, or still being claimed).
    func logicalAddresses() throws -> (count: Int, first: CECLogicalAddress?) {
        var count: UInt8 = 0, first: UInt8 = 0xFF, type: UInt8 = 0
        try Posix.call("CEC_ADAP_G_LOG_ADDRS", path: path) { kiosk_cec_log_addrs(fd.raw, &count, &first, &type) }
        return (Int(count), first < 16 ? CECLogicalAddress(first) : nil)
    }

    /// CEC_ADAP_S_LOG_ADDRS: claims a Playback logical address under `osdName`.
    func claimPlayback(osdName: String) throws {
        try Posix.call("CEC_ADAP_S_LOG_ADDRS", path: path) { kiosk_cec_claim_playback(fd.raw, osdName) }
    }

    /// The descriptor, to poll for received messages (POLLIN).
    var pollDescriptor: Int32 { fd.raw }

    /// CEC_S_MODE: initiator and follower, so that messages to this device reach `receive`.
    func follow() throws {
        try Posix.call("CEC_S_MODE", path: path) { kiosk_cec_set_follower(fd.raw) }
    }

    /// CEC_RECEIVE: the next message received, waiting at most `timeoutMs` (nil: none in time).
    func receive(timeoutMs: UInt32) throws -> CECMessage? {
        var bytes = [UInt8](repeating: 0, count: 16), len: UInt32 = 0
        if kiosk_cec_receive(fd.raw, timeoutMs, &bytes, &len) < 0 {
            let e = errno
            if e == ETIMEDOUT || e == EAGAIN || e == EINTR { return nil }
            throw Posix.error("CEC_RECEIVE", path: path, errno: e)
        }
        return CECMessage(bytes: Array(bytes.prefix(Int(len))))
    }

    /// CEC_TRANSMIT of `message`, waiting for `reply` (nil: none) at most `timeoutMs`.
    func transmit(_ message: CECMessage, reply: CECOpcode? = nil, timeoutMs: UInt32 = 1000) throws -> CECTransmitResult {
        var tx: UInt8 = 0, rx: UInt8 = 0, len: UInt32 = 0
        var replyBytes = [UInt8](repeating: 0, count: 16)
        try Posix.call("CEC_TRANSMIT", path: path) {
            kiosk_cec_transmit(fd.raw, message.bytes, UInt32(message.bytes.count), reply?.rawValue ?? 0, timeoutMs,
                               &tx, &rx, &replyBytes, &len)
        }
        return CECTransmitResult(txStatus: tx, rxStatus: rx, reply: len > 0 ? CECMessage(bytes: Array(replyBytes.prefix(Int(len)))) : nil)
    }
}
