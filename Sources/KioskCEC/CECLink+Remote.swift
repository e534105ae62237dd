#if canImport(Glibc)
import Glibc
#endif
import KioskCore
import KioskPosix
import Logging

extension CECLink {
    /// Waits until monotonic `until` or a request, reading what the adapter receives meanwhile:
    /// remote keys go to `onKey`, questions are answered (`CECFollower`). False when the adapter
    /// failed (it is opened again at the next poll).
    func listen(_ a: CECAdapter, until: Double, follower: inout CECFollower, lit: Bool) -> Bool {
        while true {
            let left = until - Self.monotonic()
            if left <= 0 { return true }
            var fds = [pollfd(fd: wake.raw, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: a.pollDescriptor, events: Int16(POLLIN), revents: 0)]
            let r = poll(&fds, 2, Int32(min(left, 3600) * 1000) + 1)
            if r < 0 && errno == EINTR { continue }
            if r <= 0 { return r == 0 }
            if fds[1].revents & Int16(POLLIN) != 0 {
                do {
                    while let m = try a.receive(timeoutMs: 1) { handle(m, on: a, follower: &follower, lit: lit) }
                } catch {
                    logger.warning("HDMI-CEC: \(error)", metadata: ["cec.adapter": "\(a.path)"])
                    return false
                }
            } else if fds[1].revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                return false
            }
            // A request or the stop: the caller takes it (the signal is drained there).
            if fds[0].revents & Int16(POLLIN) != 0 { return true }
        }
    }

    /// One received message: a key to `onKey`, an answer sent back, or nothing.
    private func handle(_ m: CECMessage, on a: CECAdapter, follower: inout CECFollower, lit: Bool) {
        let own = (try? a.logicalAddresses())?.first
        deliver(follower.receive(m, own: own, lit: lit), on: a)
    }

    /// Carries out a follower's actions (a reply needs the adapter; none after it was lost).
    func deliver(_ actions: [CECFollowerAction], on a: CECAdapter? = nil) {
        for action in actions {
            switch action {
            case .key(let code, let state):
                onKey(code, state)
            case .unmappedKey(let ui):
                logger.debug("HDMI-CEC: remote key 0x\(String(ui, radix: 16)) is bound to nothing; ignored")
            case .reply(let message):
                guard let a else { continue }
                do {
                    let r = try a.transmit(message)
                    if let p = r.transmitProblem {
                        logger.debug("HDMI-CEC: reply 0x\(String(message.opcode ?? 0, radix: 16)) not delivered: \(p)")
                    }
                } catch {
                    logger.debug("HDMI-CEC: reply 0x\(String(message.opcode ?? 0, radix: 16)) failed: \(error)")
                }
            case .none:
                break
            }
        }
    }
}
