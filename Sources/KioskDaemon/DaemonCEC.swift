import KioskCEC
import KioskControl
import KioskCore
import KioskDRM
import KioskPosix

extension Daemon {
    /// Starts a CEC link for every output with a CEC adapter (`[output.cec]` / `[display.cec]`):
    /// from now on the TV follows the output's blanking, starting with its current state.
    func startCEC() {
        for head in heads {
            let choice = head.settings.cecChoice(config.display)
            if case .none = choice { continue }
            var l = logger
            l[metadataKey: "output"] = "\(head.name)"
            let feed = WeakLoopBound(self, loop: loop)
            let bound = WeakLoopBound(head, loop: loop)
            let link: CECLink
            do {
                link = try CECLink(choice: choice, logger: l, onStatus: { _ in
                    // Heard on the link's thread; observers (web page, MQTT) hear it on the loop.
                    feed.loop.post { feed.value?.changes.noteChange() }
                }, askConnector: {
                    bound.loop.post {
                        guard let head = bound.value else { return }
                        head.cec?.setConnector(Daemon.cecConnector(head))
                    }
                }, keys: head.settings.cecKeys(config.display), onKey: { code, state in
                    // The TV's remote acts on its own output, as a keyboard's key would.
                    let usec = UInt64(nowNanos(.monotonic) / 1000)
                    bound.loop.post { bound.value?.manager.input(.key(code: code, state: state, timeUsec: usec)) }
                })
            } catch {
                logger.error("cannot start HDMI-CEC", metadata: ["output": "\(head.name)", "error": "\(error)"])
                continue
            }
            head.cec = link
            head.blanking.onBlankedChange = { [unowned head] blanked in
                head.cec?.request(blanked ? .blanked : .lit, connector: Daemon.cecConnector(head))
            }
            link.start(panel: head.display.isBlanked ? .blanked : .lit, connector: Daemon.cecConnector(head))
        }
    }

    /// Ends the CEC links' threads (a transmit under way is waited for, briefly).
    func stopCEC() {
        for h in heads {
            h.cec?.stop()
            h.cec = nil
        }
    }

    /// The DRM card and connector an output drives, for `adapter = "auto"`.
    static func cecConnector(_ head: OutputHead) -> (card: UInt32, connectorId: UInt32)? {
        (head.display as? DRMDisplay)?.drmConnectorIdentity
    }

    /// `outputs` with each output's CEC status.
    func withCEC(_ outputs: [OutputsAnswer.Output]) -> [OutputsAnswer.Output] {
        var outputs = outputs
        for (i, h) in heads.enumerated() where i < outputs.count {
            guard let s = h.cec?.status else { continue }
            outputs[i].cec = .init(adapter: s.adapter ?? "none", power: s.power.rawValue, error: s.error)
        }
        return outputs
    }
}
