import FoundationEssentials
import Glibc
import KioskConfig
import KioskControl
import KioskCore
import KioskPosix
import KioskScenes
import KioskState
import Logging
import Synchronization

/// The commands whose slow part runs on the daemon's worker (`Daemon.work`, the `kioskd-work`
/// thread) instead of the render loop: a screenshot's PNG encoding, a painting's encoding, write
/// and fsync, the config and theme files a reload or a theme choice reads, the theme folder's
/// listing and the saved paintings the phone page reads. The loop takes
/// what is cheap (a copy of the frame or of the painting, the names asked for), the worker does
/// the rest, and the answer is given on the loop once the work is done — a painting only once it
/// is on disk. The loop keeps drawing meanwhile.
extension ControlCommandHandler {
    /// Carries out `command` with its slow part on `daemon.work` and answers through `reply` (on
    /// the loop) once that is done. False: `command` has no such part (nothing was done).
    func submitOffLoop(_ command: ControlCommand, on daemon: Daemon, reply: @escaping (ControlResponse) -> Void) -> Bool {
        switch command {
        case .screenshot(let output):
            let head: OutputHead
            do { head = try daemon.head(named: output) } catch {
                reply(.from(error, field: "output"))
                return true
            }
            head.manager.renderIfPossible()
            head.manager.screenshotPNG { result in
                switch result {
                case .success(let png):
                    reply(ControlResponse(status: 200, contentType: "image/png", body: png))
                case .failure(let error):
                    daemon.logger.error("control command failed", metadata: ["command": "\(command)", "error": "\(error)"])
                    reply(.from(error))
                }
            }
            return true
        case .paint(.save, let name):
            // Without a paint scene the command is answered at once (404) by `handle`.
            guard let p = daemon.scenes(as: PaintControl.self).first else { return false }
            p.save(name: name) { result in
                switch result {
                case .success(let path):
                    reply(.json(200, PaintAnswer(strokes: p.strokeCount, path: path)))
                case .failure(let error):
                    reply(Self.paintSaveRefusal(error, logger: daemon.logger))
                }
                daemon.scenesDidChange()
                daemon.changes.noteChange()
            }
            return true
        case .reload:
            daemon.reload { result in
                switch result {
                case .success(let m): reply(.json(200, ReloadAnswer(message: m)))
                case .failure(let e): reply(.error(422, e.message))
                }
                daemon.changes.noteChange()
            }
            return true
        case .theme(let name):
            let directory = daemon.config.themeDirectory
            daemon.work.run({ Result<Theme, Error> { try ThemeLoader.load(named: name, directory: directory) } }, then: { theme in
                defer { daemon.changes.noteChange() }
                if !self.submitChoice(command, on: daemon, theme: theme, reply: reply) { reply(.error(500, "not a choice: \(command)")) }
            })
            return true
        case .themes:
            let directory = daemon.config.themeDirectory
            daemon.work.run({ ThemeLoader.available(in: directory) }, then: { names in
                reply(.json(200, ThemesAnswer(themes: names, theme: daemon.activeThemeName, chosenTheme: daemon.themeName)))
            })
            return true
        case .painting(let name):
            guard let directory = daemon.paintingsDirectory() else { return false }
            daemon.work.run({ Daemon.paintingAnswer(directory: directory, name: name) }, then: reply)
            return true
        case .paintings:
            guard let directory = daemon.paintingsDirectory() else { return false }
            daemon.work.run({ Daemon.paintingsAnswer(directory: directory) }, then: reply)
            return true
        default:
            return false
        }
    }

    /// The answer to a painting save that failed: 409 when the file exists (paintings are never
    /// overwritten), 503 while too many paintings wait to be written, otherwise as the error says
    /// (logged).
    static func paintSaveRefusal(_ error: Error, logger: Logger) -> ControlResponse {
        let e = error as? KioskError
        switch e?.errno {
        case EEXIST?: return .error(409, e!.message, field: "name")
        case EAGAIN?: return .error(503, e!.message)
        default:
            logger.error("cannot save the painting", metadata: ["error": "\(error)"])
            return .from(error, field: "name")
        }
    }
}

/// A reload whose files are being read on the worker, and whom to answer once it is applied.
final class ReloadInFlight {
    /// Set on the worker when it begins reading: a reload asked for before that shares the reading
    /// (which still begins after it was asked for).
    let started = Flag()
    var waiters: [(Result<String, KioskError>) -> Void] = []

    /// A flag set once, on any thread.
    final class Flag: Sendable {
        private let value = Mutex(false)
        func set() { value.withLock { $0 = true } }
        var isSet: Bool { value.withLock { $0 } }
    }
}

extension Daemon {
    /// Reloads the config file as `reload()` does without reading files on the loop: the config
    /// and the theme files it names are read on `work`, then applied here, and `done` is called
    /// with the outcome. Reloads asked for while one is still waiting for the worker to begin
    /// share its reading and its outcome.
    public func reload(then done: @escaping (Result<String, KioskError>) -> Void) {
        if let last = reloadsInFlight.last, !last.started.isSet {
            last.waiters.append(done)
            return
        }
        let inFlight = ReloadInFlight()
        inFlight.waiters.append(done)
        reloadsInFlight.append(inFlight)
        let file = config.file, environment = reloadEnvironment, kinds = registry.kinds, chosen = themes.chosenName, layer = settings.applied
        let started = inFlight.started, disk = state as? FileStateStore, logger = self.logger
        work.run({ () -> ReloadCoordinator.Reading in
            started.set()
            return ReloadCoordinator.read(file: file, environment: environment, kinds: kinds, chosenTheme: chosen,
                                          settings: layer, state: disk, logger: logger)
        }, then: { reading in
            self.reloadsInFlight.removeAll { $0 === inFlight }
            let outcome = self.reload(reading: reading)
            for w in inFlight.waiters { w(outcome) }
        })
    }

    /// One saved painting's PNG bytes, read from `directory` (on the worker).
    static func paintingAnswer(directory dir: String, name: String) -> ControlResponse {
        let path = "\(dir)/\(name)"
        var st = stat()
        guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            return .error(404, "no painting named '\(name)' in \(dir)", field: "name")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            return .error(500, Posix.error("read", path: path, errno: errno).message)
        }
        return ControlResponse(status: 200, contentType: "image/png", body: [UInt8](data))
    }

    /// The saved paintings in `directory`, newest first (on the worker).
    static func paintingsAnswer(directory dir: String) -> ControlResponse {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        var list: [PaintingsAnswer.Painting] = []
        for n in names where n.hasSuffix(".png") && !n.hasPrefix(".") {
            var st = stat()
            guard lstat("\(dir)/\(n)", &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { continue }
            list.append(.init(name: n, bytes: Int(st.st_size), modified: PairingBook.iso(Double(st.st_mtim.tv_sec))))
        }
        list.sort { ($0.modified, $0.name) > ($1.modified, $1.name) }
        return .json(200, PaintingsAnswer(paintings: list))
    }
}
