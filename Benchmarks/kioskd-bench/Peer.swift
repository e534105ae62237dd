#if canImport(Glibc)
import Glibc
#endif
import Foundation
import KioskCore

/// The pygame (SDL2) peer: the same three scenes as small Python scripts, run headless
/// (SDL_VIDEODRIVER=dummy) from Benchmarks/peer with the venv made by Benchmarks/setup-peer.sh.
struct Peer {
    let python: String
    let dir: String
    let version: String

    static let env = ["SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy", "PYGAME_HIDE_SUPPORT_PROMPT": "1"]

    /// Finds the venv's python and checks that pygame imports; nil (with the reason) otherwise.
    static func locate(python: String, dir: String) -> (Peer?, String) {
        guard access(python, X_OK) == 0 else {
            return (nil, "pygame peer unavailable: \(python) not found (run Benchmarks/setup-peer.sh)")
        }
        guard access(dir + "/clock.py", R_OK) == 0 else { return (nil, "pygame peer unavailable: no scripts in \(dir)") }
        do {
            let r = try Spawn.run([python, "-c", "import pygame, sys; sys.stdout.write('pygame %s SDL %s\\n' % (pygame.version.ver, '.'.join(map(str, pygame.get_sdl_version()))))"],
                                  env: env, marker: nil)
            guard r.succeeded else { return (nil, "pygame peer unavailable: `import pygame` failed with \(python) (run Benchmarks/setup-peer.sh)") }
            let v = r.output.trimmingCharacters(in: .whitespacesAndNewlines)
            return (Peer(python: python, dir: dir, version: v), v)
        } catch {
            return (nil, "pygame peer unavailable: \(error)")
        }
    }

    /// Runs `scene.py --bench N --size WxH` and returns its JSON object.
    func bench(_ scene: String, size: Size, frames: Int, extra: [String] = []) throws -> [String: Any] {
        let r = try Spawn.run([python, "\(dir)/\(scene).py", "--bench", "\(frames)", "--size", "\(size)"] + extra, env: Peer.env, marker: nil)
        guard r.succeeded, let line = r.output.split(separator: "\n").last,
              let obj = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw SceneBenches.BenchError(description: "peer \(scene).py --bench failed (status \(r.status)): \(r.output.suffix(300))")
        }
        return obj
    }

    /// Time from exec to the first frame, and peak RSS, of `scene.py --first-frame`.
    func firstFrame(_ scene: String, size: Size) throws -> SpawnResult {
        try Spawn.run([python, "\(dir)/\(scene).py", "--first-frame", "--size", "\(size)"], env: Peer.env)
    }

    /// The peer's normal loop for `seconds`: CPU seconds and voluntary context switches.
    func idle(_ scene: String, size: Size, seconds: Double) throws -> (cpu: Double, nvcsw: Double, wall: Double) {
        let r = try Spawn.run([python, "\(dir)/\(scene).py", "--idle", "\(seconds)", "--size", "\(size)"], env: Peer.env, marker: nil)
        guard r.succeeded, let line = r.output.split(separator: "\n").last,
              let o = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let cpu = o["cpu_s"] as? Double, let nv = (o["nvcsw"] as? NSNumber)?.doubleValue, let wall = o["wall_s"] as? Double else {
            throw SceneBenches.BenchError(description: "peer \(scene).py --idle failed (status \(r.status))")
        }
        return (cpu, nv, wall)
    }

    static func samples(_ obj: [String: Any], _ key: String, _ sub: String? = nil) -> Samples? {
        var v: Any? = obj[key]
        if let sub { v = (v as? [String: Any])?[sub] }
        guard let a = v as? [Any] else { return nil }
        let d = a.compactMap { ($0 as? NSNumber)?.doubleValue }
        return d.isEmpty ? nil : Samples(d)
    }
}
