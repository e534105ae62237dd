import KioskCore
import KioskRender

/// A scene that hands slow work (a painting's encoding and write) to the daemon's worker; the
/// manager gives it its `sceneWrites` when the scene is installed.
public protocol UsesOffLoopWork: AnyObject {
    var offLoop: OffLoopWork { get set }
}

extension SceneManager {
    /// Gives `sceneWrites` to the scenes that use it.
    func giveOffLoop(_ scenes: [Scene]) {
        for case let s as UsesOffLoopWork in scenes { s.offLoop = sceneWrites }
    }

    /// What the viewer sees (the logical frame) as PNG, without holding the loop: the frame's
    /// pixels are copied here (the copy of a frame, no encoding) and encoded on `offLoop`;
    /// `done` runs on the loop with the bytes or the error. Screenshots asked for while the
    /// same frame is being encoded share that encoding.
    public func screenshotPNG(done: @escaping (Result<[UInt8], Error>) -> Void) {
        let frame = frameCount
        if let i = shotsInFlight.lastIndex(where: { $0.frame == frame }) {
            shotsInFlight[i].waiters.append(done)
            return
        }
        let copy: PixelCopy
        do {
            copy = try shownCanvas().pixelCopy()
        } catch {
            done(.failure(error))
            return
        }
        shotsInFlight.append((frame, [done]))
        offLoop.run({ () -> Result<[UInt8], Error> in
            do { return .success(try copy.pngData()) } catch { return .failure(error) }
        }, then: { result in
            guard let i = self.shotsInFlight.firstIndex(where: { $0.frame == frame }) else { return }
            let waiters = self.shotsInFlight.remove(at: i).waiters
            for w in waiters { w(result) }
        })
    }
}
