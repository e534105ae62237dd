#if canImport(Glibc)
import Glibc
#endif
import CKioskLinux
import FoundationEssentials
import KioskCore
import KioskPosix
import Logging
import Synchronization

/// What a CEC link knows of its TV, for status: the adapter it uses, the TV's power status as the
/// TV last reported it, and the last problem.
public struct CECLinkStatus: Sendable, Equatable {
    /// The adapter's path; nil: none (`"auto"` found no adapter linked to the output).
    public var adapter: String?
    public var power: CECPowerStatus
    /// Nil while the TV answers ("cec: no answer from the TV (…)", "cec: open /dev/cec0 failed: …").
    public var error: String?
    public init(adapter: String?, power: CECPowerStatus, error: String?) {
        self.adapter = adapter; self.power = power; self.error = error
    }
}

/// One output's TV over HDMI-CEC: puts it into standby when the panel blanks and wakes it (Image
/// View On, then Active Source) when the panel is lit, and asks for its power status. Every
/// CEC call runs on the link's own thread (`kioskd-cec`), since a transmit waits for the bus and
/// for the TV's reply (the kernel bounds both): the render loop only hands over what the panel
/// should be (`request`), which never blocks, and hears of status changes through `onStatus`
/// (called on the link's thread; the daemon posts it to the loop). A newer request replaces one
/// not yet carried out. Unless `keys` is disabled the link is also a follower on its adapter: the
/// TV remote's keys reach `onKey` (on the link's thread) as keyboard keys (`CECFollower`).
public final class CECLink: Sendable {
    /// What the panel became.
    public enum Panel: Sendable, Equatable { case blanked, lit }

    private struct Shared {
        var pending: Panel?
        var connector: (card: UInt32, connectorId: UInt32)?
        var stopping = false
        var threadDone = true
        var status: CECLinkStatus
    }

    public let choice: CECAdapterChoice
    private let osdName: String
    private let shared: Mutex<Shared>
    /// Wakes the link's thread (eventfd): a request or the stop.
    let wake: Descriptor
    private let onStatus: @Sendable (CECLinkStatus) -> Void
    /// Which keyboard key each remote key stands for, and where the keys go.
    let keys: CECRemoteKeyMap
    let onKey: @Sendable (UInt16, KeyState) -> Void
    /// `"auto"` without the output's connector yet (no connected output at start): asks for it
    /// (`setConnector`).
    private let askConnector: @Sendable () -> Void
    let logger: Logger
    /// How often the TV's power status is asked while nothing changes, and how soon after a
    /// standby or wake-up (a TV takes a few seconds to change: asked five times at this pace).
    private let pollSeconds: Double
    private let followUpSeconds: Double
    /// How long a wake-up waits for the TV to give the adapter a physical address (a TV that
    /// dropped hot-plug in standby) before Active Source is given up.
    private let addressWaitSeconds: Double

    public init(choice: CECAdapterChoice, osdName: String = "kioskd", pollSeconds: Double = 10, followUpSeconds: Double = 2,
                addressWaitSeconds: Double = 10, logger: Logger, onStatus: @escaping @Sendable (CECLinkStatus) -> Void,
                askConnector: @escaping @Sendable () -> Void = {}, keys: CECRemoteKeyMap = CECRemoteKeyMap(enabled: false),
                onKey: @escaping @Sendable (UInt16, KeyState) -> Void = { _, _ in }) throws {
        self.keys = keys
        self.onKey = onKey
        self.choice = choice
        self.osdName = osdName
        self.pollSeconds = pollSeconds
        self.followUpSeconds = followUpSeconds
        self.addressWaitSeconds = addressWaitSeconds
        self.logger = logger
        self.onStatus = onStatus
        self.askConnector = askConnector
        var adapter: String?
        if case .path(let p) = choice { adapter = p }
        shared = Mutex(Shared(status: CECLinkStatus(adapter: adapter, power: .unknown, error: nil)))
        wake = Descriptor(adopting: try Posix.call("eventfd") { eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK)) })
    }

    /// The last status (any thread).
    public var status: CECLinkStatus { shared.withLock { $0.status } }

    /// Starts the link's thread, which opens the adapter, claims a Playback address and brings the
    /// TV to `panel`. `connector`: the output's DRM card number and connector id (for `"auto"`).
    public func start(panel: Panel, connector: (card: UInt32, connectorId: UInt32)?) {
        shared.withLock {
            $0.pending = panel
            $0.connector = connector
            $0.threadDone = false
        }
        do {
            try NamedThread.detach(name: "kioskd-cec") { [self] in
                run()
                shared.withLock { $0.threadDone = true }
            }
        } catch {
            shared.withLock { $0.threadDone = true }
            publish { $0.error = "\(error)" }
        }
    }

    /// The panel was blanked or lit: the TV follows. Never blocks (any thread).
    public func request(_ panel: Panel, connector: (card: UInt32, connectorId: UInt32)?) {
        shared.withLock {
            $0.pending = panel
            if let connector { $0.connector = connector }
        }
        signal()
    }

    /// The output's DRM card and connector (for `"auto"`), when `askConnector` asked (any thread).
    public func setConnector(_ connector: (card: UInt32, connectorId: UInt32)?) {
        guard let connector else { return }
        shared.withLock { $0.connector = connector }
    }

    /// Ends the link's thread; waits at most `timeout` seconds for a transmit under way.
    public func stop(timeout: Double = 2) {
        shared.withLock { $0.stopping = true }
        signal()
        let until = Date(timeIntervalSinceNow: timeout)
        while !shared.withLock({ $0.threadDone }) && Date() < until { usleep(10_000) }
    }

    private func signal() {
        var one: UInt64 = 1
        _ = try? Posix.call("write(eventfd)") { write(wake.raw, &one, 8) }
    }

    /// Sleeps until a request or the stop, at most `seconds`; true when woken early.
    private func sleep(_ seconds: Double, drain: Bool) -> Bool {
        var p = pollfd(fd: wake.raw, events: Int16(POLLIN), revents: 0)
        let ms = Int32(max(0, min(seconds, 3600)) * 1000)
        let r = poll(&p, 1, ms)
        guard r > 0 else { return false }
        if drain {
            var v: UInt64 = 0
            _ = read(wake.raw, &v, 8)
        }
        return true
    }

    func drainWake() {
        var v: UInt64 = 0
        _ = read(wake.raw, &v, 8)
    }

    private func take() -> (panel: Panel?, connector: (card: UInt32, connectorId: UInt32)?, stopping: Bool) {
        shared.withLock { s in
            defer { s.pending = nil }
            return (s.pending, s.connector, s.stopping)
        }
    }

    private func publish(_ update: (inout CECLinkStatus) -> Void) {
        let (changed, now): (Bool, CECLinkStatus) = shared.withLock { s in
            var n = s.status
            update(&n)
            defer { s.status = n }
            return (n != s.status, n)
        }
        guard changed else { return }
        if let e = now.error {
            logger.warning("HDMI-CEC: \(e)", metadata: ["cec.adapter": "\(now.adapter ?? "none")"])
        } else {
            logger.info("HDMI-CEC: TV power \(now.power.rawValue)", metadata: ["cec.adapter": "\(now.adapter ?? "none")"])
        }
        onStatus(now)
    }

    static func monotonic() -> Double { Double(nowNanos(.monotonic)) / 1e9 }

    /// The link's thread: carries out requests, asks for the power status, reopens a lost adapter.
    private func run() {
        var adapter: CECAdapter?
        var actionError: String?
        var nextPoll = Self.monotonic()
        var followUps = 0
        var follower = CECFollower(keys: keys)
        var lit = true
        while true {
            // Signals so far are for what `take` hands over now: a later one is a newer request.
            drainWake()
            let (panel, connector, stopping) = take()
            if stopping { return }
            let now = Self.monotonic()
            if panel != nil || now >= nextPoll {
                if adapter == nil {
                    if case .auto = choice, connector == nil { askConnector() }
                    do {
                        adapter = try connect(connector)
                        if adapter == nil {
                            publish { $0 = CECLinkStatus(adapter: nil, power: .unknown, error: nil) }
                        }
                    } catch {
                        publish { $0.power = .unknown; $0.error = "cec: \(error)" }
                    }
                }
                if let a = adapter {
                    do {
                        if let panel {
                            lit = panel == .lit
                            actionError = try apply(panel, on: a)
                            followUps = 5
                        }
                        let q = try powerStatus(a)
                        publish { $0.adapter = a.path; $0.power = q.power; $0.error = actionError ?? q.error }
                    } catch let e as KioskError {
                        publish { $0.power = .unknown; $0.error = "cec: \(e.message)" }
                        // A gone adapter (unplugged, driver unloaded) is opened again next time.
                        if e.errno == ENODEV || e.errno == EBADF || e.errno == ENXIO {
                            adapter = nil
                            deliver(follower.release())
                        }
                    } catch {
                        publish { $0.power = .unknown; $0.error = "cec: \(error)" }
                    }
                }
                if followUps > 0 {
                    followUps -= 1
                    nextPoll = Self.monotonic() + followUpSeconds
                } else {
                    nextPoll = Self.monotonic() + pollSeconds
                }
            }
            if let a = adapter, keys.enabled {
                if !listen(a, until: nextPoll, follower: &follower, lit: lit) {
                    adapter = nil
                    deliver(follower.release())
                }
            } else {
                _ = sleep(nextPoll - Self.monotonic(), drain: true)
            }
        }
    }

    /// Opens the adapter chosen (nil: `"auto"` found none) and claims a Playback logical address
    /// unless the adapter has one configured already.
    private func connect(_ connector: (card: UInt32, connectorId: UInt32)?) throws -> CECAdapter? {
        let path: String
        switch choice {
        case .none: return nil
        case .path(let p): path = p
        case .auto:
            guard let connector else { return nil }
            var found: [(path: String, connector: CECConnector)] = []
            for p in CECAdapter.devicePaths() {
                guard let a = try? CECAdapter(path: p) else { continue }
                found.append((p, a.connector()))
            }
            guard let p = CECAutoMatch.adapter(for: connector.card, connectorId: connector.connectorId, among: found) else { return nil }
            path = p
        }
        let a = try CECAdapter(path: path)
        let (count, first) = try a.logicalAddresses()
        if count == 0 {
            try a.claimPlayback(osdName: osdName)
        }
        if keys.enabled {
            // Without it the TV's remote keys are not heard; standby and wake-up work anyway.
            do { try a.follow() } catch { logger.warning("HDMI-CEC: the remote's keys cannot be read: \(error)", metadata: ["cec.adapter": "\(path)"]) }
        }
        let now = try a.logicalAddresses().first
        logger.info("HDMI-CEC adapter opened", metadata: [
            "cec.adapter": "\(path)", "cec.name": "\((try? a.name()) ?? "?")",
            "cec.logical_address": "\((now ?? first).map { "\($0.raw)" } ?? "none yet")",
            "cec.physical_address": "\((try? a.physicalAddress())?.description ?? "?")",
        ])
        return a
    }

    /// Standby, or Image View On then Active Source. Returns the problem, if the TV did not take it.
    private func apply(_ panel: Panel, on a: CECAdapter) throws -> String? {
        var physical = try a.physicalAddress()
        var logical = try a.logicalAddresses().first
        switch panel {
        case .blanked:
            // Some TVs obey Standby only from the active source.
            if let logical, physical.isValid {
                _ = try a.transmit(.activeSource(from: logical, physical: physical))
            }
            let r = try a.transmit(.standby(from: logical ?? .unregistered))
            return r.transmitProblem.map { "\(CECPowerQuery.noAnswer) (Standby \($0))" }
        case .lit:
            // Allowed from Unregistered: a TV that dropped hot-plug in standby (f.f.f.f) wakes too.
            let r = try a.transmit(.imageViewOn(from: logical ?? .unregistered))
            if let p = r.transmitProblem { return "\(CECPowerQuery.noAnswer) (Image View On \(p))" }
            // Once on, such a TV raises hot-plug again: the adapter gets its physical address and
            // the kernel claims the logical one; then Active Source switches the TV to this input.
            let until = Self.monotonic() + addressWaitSeconds
            while logical == nil || !physical.isValid {
                if Self.monotonic() >= until {
                    return "cec: the TV gave no physical address within \(Int(addressWaitSeconds)) s of Image View On; Active Source not sent"
                }
                if sleep(0.25, drain: false) { return nil } // a newer request goes first
                physical = try a.physicalAddress()
                logical = try a.logicalAddresses().first
            }
            let s = try a.transmit(.activeSource(from: logical!, physical: physical))
            return s.transmitProblem.map { "cec: Active Source was not sent (\($0))" }
        }
    }

    /// Give Device Power Status to the TV, waiting at most two seconds for Report Power Status
    /// (the specification gives a follower one; a TV busy changing state may take longer).
    private func powerStatus(_ a: CECAdapter) throws -> CECPowerQuery {
        let from = try a.logicalAddresses().first ?? .unregistered
        return CECPowerQuery(try a.transmit(.giveDevicePowerStatus(from: from), reply: .reportPowerStatus, timeoutMs: 2000))
    }
}
