import CMosquitto
import Synchronization

/// The libmosquitto handle and what its callbacks reach through their user data (the handle
/// itself), destroyed when the last owner lets go (the client, or a resolver thread still
/// connecting).
final class Handle: @unchecked Sendable {
    // @unchecked: `mosq` and `client` are used by one thread at a time: the loop's, or the
    // resolver thread during a connect while the client leaves them alone (`connectInFlight`);
    // `lastError`, written by the log callback on either thread, is a Mutex.
    let mosq: OpaquePointer
    /// The client, for the callbacks run inside mosquitto_loop_* on the loop's thread.
    weak var client: MQTTClient?
    private let lastError = Mutex<String?>(nil)
    init(_ mosq: OpaquePointer) { self.mosq = mosq }
    deinit { mosquitto_destroy(mosq) }

    /// libmosquitto's last error line (an OpenSSL reason for a TLS failure), for the next report.
    func setLastError(_ s: String) { lastError.withLock { $0 = s } }
    func takeLastError() -> String? { lastError.withLock { e in defer { e = nil }; return e } }
}
