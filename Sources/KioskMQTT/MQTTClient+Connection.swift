#if canImport(Glibc)
import Glibc
#endif
import CKioskLinux
import CMosquitto
import FoundationEssentials
import KioskCore
import KioskPosix
import Logging

/// The broker connection on the loop: connecting (on a resolver thread when needed), the socket's
/// reads and writes, keepalive, closing, and handing messages to libmosquitto.
extension MQTTClient {
    // MARK: - Connecting

    func connect(v5: Bool, full: Bool) {
        if full {
            // mosquitto_connect_bind_v5 stores the CONNECT's properties (MQTT 5: the maximum
            // packet size) for every later connect, or drops them (3.1.1); its TCP connect
            // blocks, so it runs on a thread, the handle left to it.
            connectInFlight = true
            let handle = self.handle, cfg = config, loop = self.loop
            let maxPacket = maximumPacketSize
            let me = WeakLoopBound(self, loop: loop)
            connectOnThread {
                var props: OpaquePointer?
                if v5 { _ = mosquitto_property_add_int32(&props, Int32(MQTT_PROP_MAXIMUM_PACKET_SIZE.rawValue), maxPacket) }
                let rc = mosquitto_connect_bind_v5(handle.mosq, cfg.host, Int32(cfg.port), Int32(cfg.keepalive), nil, props)
                let e = errno
                mosquitto_property_free_all(&props)
                loop.post {
                    guard let client = me.value else { return }
                    client.connectInFlight = false
                    // Stored unless the arguments themselves were refused (then try again in full).
                    let stored = rc != MOSQ_ERR_INVAL.rawValue && rc != MOSQ_ERR_NOMEM.rawValue && rc != MOSQ_ERR_NOT_SUPPORTED.rawValue
                    client.connectReturned(rc, errno: e, storedProperties: stored)
                }
            }
        } else if Self.isNumericAddress(config.host) {
            let rc = mosquitto_connect_async(handle.mosq, config.host, Int32(config.port), Int32(config.keepalive))
            connectReturned(rc, errno: errno)
        } else {
            // getaddrinfo may block for seconds: connect on a thread, the handle left to it.
            connectInFlight = true
            let handle = self.handle, cfg = config, loop = self.loop
            let me = WeakLoopBound(self, loop: loop)
            connectOnThread {
                let rc = mosquitto_connect_async(handle.mosq, cfg.host, Int32(cfg.port), Int32(cfg.keepalive))
                let e = errno
                loop.post {
                    guard let client = me.value else { return }
                    client.connectInFlight = false
                    client.connectReturned(rc, errno: e)
                }
            }
        }
    }

    /// Runs `body`, a connect that blocks, on a thread of its own (`kioskd-connect`); when none
    /// can be started the connect fails at once, with the error `pthread_create` gave.
    private func connectOnThread(_ body: @escaping @Sendable () -> Void) {
        do {
            try NamedThread.detach(name: "kioskd-connect", body)
        } catch {
            connectInFlight = false
            connectReturned(MOSQ_ERR_ERRNO.rawValue, errno: error.errno)
        }
    }

    func connectReturned(_ rc: Int32, errno e: Int32, storedProperties: Bool = false) {
        let failure = rc == MOSQ_ERR_SUCCESS.rawValue ? nil : describe(rc, errno: e)
        fire(.connectReturned(failure: failure, storedProperties: storedProperties, now: loop.now(.monotonic), jitter: jitter()))
        guard failure == nil, !session.stopping else { return }
        socketFD = mosquitto_socket(handle.mosq)
        guard socketFD >= 0 else { lost("libmosquitto returned no socket"); return }
        do {
            if let w = socketWatch { loop.unwatch(w); socketWatch = nil }
            wantsWrite = false
            interestPaused = readingPaused
            socketWatch = try loop.watch(fd: socketFD, events: readingPaused ? [] : .read) { [unowned self] ready in self.socketReady(ready) }
            updateInterest()
            guard socketFD >= 0 else { return } // the first write failed: already reported
            fire(.socketOpened)
            scheduleMisc()
        } catch {
            lost("\(error)")
        }
    }

    /// The socket is gone (`error`: why; nil when libmosquitto closed it after a clean exchange).
    func lost(_ error: String?) {
        fire(.closed(error: error, now: loop.now(.monotonic), jitter: jitter()))
    }

    /// The broker socket is readable or writable (or failed).
    func socketReady(_ ready: WatchEvents) {
        guard socketFD >= 0 else { return }
        // While reading is paused the socket is not watched for input: `.read` then comes only
        // with an error or hang-up, which the read reports.
        if ready.contains(.read) {
            // Every packet already in the socket's buffer (at most 256 per wake-up, so timers
            // and posted work stay on time): reading one per wake-up let a burst of QoS 1
            // commands pile up in the broker's queue for this client until it dropped them.
            var packets = 0
            repeat {
                let rc = mosquitto_loop_read(handle.mosq, 1)
                if !ioResult(rc, errno: errno) { return }
                packets += 1
            } while packets < Self.packetsPerWakeup && socketFD >= 0 && !readingPaused && Self.bytesWaiting(socketFD) > 0
        }
        if socketFD >= 0, ready.contains(.write) || mosquitto_want_write(handle.mosq) {
            let rc = mosquitto_loop_write(handle.mosq, 1)
            if !ioResult(rc, errno: errno) { return }
        }
        updateInterest()
    }

    /// The most packets read from the broker's socket in one wake-up of the loop.
    static let packetsPerWakeup = 256

    /// Bytes readable on `fd` now (`ioctl(FIONREAD)`); 0 when unknown.
    static func bytesWaiting(_ fd: Int32) -> Int32 {
        var n: Int32 = 0
        return ioctl(fd, UInt(FIONREAD), &n) == 0 ? n : 0
    }

    /// Handles a libmosquitto I/O result; false when the connection is gone.
    func ioResult(_ rc: Int32, errno e: Int32) -> Bool {
        if rc == MOSQ_ERR_SUCCESS.rawValue {
            // libmosquitto closed the socket itself: our DISCONNECT was written (a stop), or an
            // MQTT 5 broker sent DISCONNECT (the disconnect callback named its reason).
            if socketFD >= 0 && mosquitto_socket(handle.mosq) < 0 {
                if let w = socketWatch { loop.unwatch(w); socketWatch = nil }
                socketFD = -1
                wantsWrite = false
                lost(nil)
                return false
            }
            return true
        }
        // libmosquitto closed the socket (and called the disconnect callback) or will on the
        // next call: make sure it is closed, then report.
        lost(describe(rc, errno: e))
        return false
    }

    /// Registers write interest while libmosquitto has output pending.
    func updateInterest() {
        guard socketFD >= 0 else { return }
        // Flush what can go now (most writes complete at once on a local socket), unless inside a
        // libmosquitto callback: then at the end of this iteration.
        if callbackDepth > 0 {
            if !flushQueued {
                flushQueued = true
                loop.deferToEndOfIteration { [weak self] in
                    guard let self else { return }
                    self.flushQueued = false
                    self.updateInterest()
                }
            }
        } else if mosquitto_want_write(handle.mosq) {
            let rc = mosquitto_loop_write(handle.mosq, 1)
            if !ioResult(rc, errno: errno) { return }
            guard socketFD >= 0 else { return }
        }
        let want = mosquitto_want_write(handle.mosq)
        guard want != wantsWrite || readingPaused != interestPaused, let w = socketWatch else { return }
        var events: WatchEvents = readingPaused ? [] : .read
        if want { events.insert(.write) }
        if (try? loop.setInterest(w, events)) != nil {
            wantsWrite = want
            interestPaused = readingPaused
        }
    }

    func scheduleMisc() {
        if let t = miscTimer { loop.cancel(t) }
        // libmosquitto sends PINGREQ once `keepalive` seconds pass idle and drops the connection
        // when the PINGRESP does not come; a quarter of keepalive keeps both on time.
        let period = Int64(config.keepalive) * 250_000_000
        miscTimer = try? loop.schedule(after: period) { [unowned self] _ in
            self.miscTimer = nil
            guard self.socketFD >= 0 else { return }
            let rc = mosquitto_loop_misc(self.handle.mosq)
            if rc != MOSQ_ERR_SUCCESS.rawValue && rc != MOSQ_ERR_NO_CONN.rawValue {
                _ = self.ioResult(rc, errno: errno)
                return
            }
            self.updateInterest()
            if self.socketFD >= 0 { self.scheduleMisc() }
        }
    }

    func closeSocket() {
        if let t = connectTimer { loop.cancel(t); connectTimer = nil }
        if let t = miscTimer { loop.cancel(t); miscTimer = nil }
        if let w = socketWatch { loop.unwatch(w); socketWatch = nil }
        socketFD = -1
        wantsWrite = false
        interestPaused = false
        // Closes the socket if libmosquitto has not yet (no-op otherwise). The disconnect
        // callback this may run acts only on a clean stop, which finishes once.
        if mosquitto_socket(handle.mosq) >= 0 {
            _ = mosquitto_disconnect(handle.mosq)
            let s = mosquitto_socket(handle.mosq)
            if s >= 0 { shutdown(s, Int32(SHUT_RDWR)); _ = mosquitto_loop_read(handle.mosq, 1) }
        }
    }

    // MARK: - Helpers

    func send(_ p: MQTTSession.Outgoing) -> Bool {
        // libmosquitto may write a QoS 0 message, and report it, before mosquitto_publish returns:
        // the completion waits in `sending`, the message id in `midSlot` (set before the write).
        sending = completions[p.id].map { (p.qos, $0) }
        defer { sending = nil }
        midSlot.pointee = 0
        let rc = p.payload.withUnsafeBytes { buf in
            mosquitto_publish(handle.mosq, midSlot, p.topic, Int32(buf.count), buf.baseAddress, Int32(p.qos), p.retain)
        }
        guard rc == MOSQ_ERR_SUCCESS.rawValue else {
            fire(.sendReturned(id: p.id, failure: "mosquitto_publish \(p.topic) failed: \(Self.describe(rc, errno: errno))"))
            return false
        }
        completions[p.id] = nil
        if let s = sending { inFlight[midSlot.pointee] = (s.qos, s.completion) }
        fire(.sendReturned(id: p.id, failure: nil))
        updateInterest()
        return true
    }

    static func isNumericAddress(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// `describe`, with OpenSSL's reason (logged by libmosquitto) for a TLS failure.
    func describe(_ rc: Int32, errno e: Int32) -> String {
        let logged = handle.takeLastError()
        var text = Self.describe(rc, errno: e)
        if rc == MOSQ_ERR_TLS.rawValue, let tls = config.tls {
            text += ": \(logged ?? "TLS handshake failed") (ca_file \(tls.caFile))"
        }
        return text
    }

    static func describe(_ rc: Int32, errno e: Int32) -> String {
        if rc == MOSQ_ERR_ERRNO.rawValue {
            return "\(String(cString: strerror(e))) (errno \(e))"
        }
        return "\(String(cString: mosquitto_strerror(rc))) (mosquitto error \(rc))"
    }
}
