import CCrypto
import CKioskLazy
import KioskCore

/// SHA-256 through OpenSSL's libcrypto (`EVP_Digest`), for storing session tokens as hashes.
/// libcrypto is opened when the web server is set up (`requireLibrary`), not linked.
public enum SHA256 {
    /// Opens libcrypto, or says what is missing and which package has it.
    public static func requireLibrary() throws {
        if let e = kiosk_lazy_load(Int32(KIOSK_LIB_CRYPTO)) { throw KioskError(.system, String(cString: e)) }
    }

    public static func hash(_ message: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = message.withUnsafeBytes { m in
            digest.withUnsafeMutableBufferPointer { d in
                EVP_Digest(m.baseAddress, m.count, d.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        // EVP_Digest fails only when the library cannot allocate a context.
        precondition(ok == 1 && length == 32, "EVP_Digest(SHA-256) failed")
        return Array(digest.prefix(32))
    }

    public static func hex(_ message: [UInt8]) -> String {
        hash(message).map { byte in
            let s = String(byte, radix: 16)
            return byte < 16 ? "0" + s : s
        }.joined()
    }
}
