#if canImport(Glibc)
import Glibc
#endif

extension DRMDisplay {
    /// The card number (`/dev/dri/cardN`, a by-path link resolved) and the object id of the
    /// connector this head drives: what a CEC adapter's CEC_ADAP_G_CONNECTOR_INFO names. Nil
    /// before a connector is driven or for a device that is not a `cardN` node.
    public var drmConnectorIdentity: (card: UInt32, connectorId: UInt32)? {
        guard let output, let path = card?.device?.path else { return nil }
        var resolved = path
        if let r = realpath(path, nil) {
            resolved = String(cString: r)
            free(r)
        }
        guard let name = resolved.split(separator: "/").last, name.hasPrefix("card"), let n = UInt32(name.dropFirst(4)) else { return nil }
        return (n, output.connector.id)
    }
}
