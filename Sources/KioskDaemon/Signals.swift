import Dispatch
import Glibc
import KioskPosix
import Logging
import UnixSignals

/// Every signal kioskd acts on, in one place (docs/control.md, "Signals"):
///
/// - SIGTERM, SIGINT: graceful stop, through the service group (`gracefulStop`);
/// - SIGHUP: reload the config on the render loop;
/// - SIGUSR1, SIGUSR2: hand the display to another program and take it back (`DisplayHandoff`).
///
/// The last three are one set of dispatch sources, installed before the render loop starts (so a
/// VT switch signal is never lost or fatal) and removed by `cancel()`. Each handler only posts
/// the work to the render loop.
final class DaemonSignals {
    /// The signals that stop kioskd gracefully (handled by the service group).
    static let gracefulStop: [UnixSignal] = [.sigterm, .sigint]

    private let sources: [any DispatchSourceSignal]

    /// Installs the handlers: `reload` on SIGHUP, `handoff` for SIGUSR1 and SIGUSR2.
    init(daemon: LoopBound<Daemon>, handoff: DisplayHandoff, notifier: SystemdNotifier, logger: Logger) {
        let actions: [(Int32, @Sendable () -> Void)] = [
            (SIGHUP, {
                daemon.post { daemon in
                    logger.notice("SIGHUP: reloading the config", metadata: ["config": "\(daemon.config.file)"])
                    notifier.reloading()
                    // The files are read off the loop; READY once the reload is applied.
                    daemon.reload { _ in notifier.ready() }
                }
            }),
            (SIGUSR1, { handoff.loop.post { handoff.release() } }),
            (SIGUSR2, { handoff.loop.post { handoff.acquire() } }),
        ]
        var sources: [any DispatchSourceSignal] = []
        let queue = DispatchQueue(label: "kioskd.signals")
        for (sig, action) in actions {
            signal(sig, SIG_IGN)
            // A serial queue of its own (libdispatch's overcommit pool): a handler on a global
            // queue would start a pool worker, and with it libdispatch's once-a-second monitor
            // timer for the rest of the process's life.
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler(handler: action)
            source.resume()
            sources.append(source)
        }
        self.sources = sources
    }

    /// Removes the handlers (the signals stay ignored).
    func cancel() {
        for s in sources { s.cancel() }
    }
}
