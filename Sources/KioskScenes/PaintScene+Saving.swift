import FoundationEssentials
import Glibc
import KioskCore
import KioskRender
import Logging

/// The painting's controls (clear, undo, redo) and saving it off the loop.
extension PaintScene {
    // MARK: PaintControl

    public func clear() { painting.clear() }
    @discardableResult public func undo() -> Bool { painting.undo() }
    @discardableResult public func redo() -> Bool { painting.redo() }

    /// Writes the paint area (finished and unfinished strokes, without the toolbar) as a new PNG
    /// file in the paintings folder (see `PaintingFiles`), all of it on the calling thread;
    /// returns the path written.
    public func save(name: String?) throws -> String {
        var outcome: Result<String, Error>?
        save(name: name, on: InlineWork()) { outcome = $0 }
        return try outcome!.get()
    }

    /// Saves the painting as `save(name:)` does without holding the loop: the paint area is
    /// drawn and its pixels copied here; the PNG is encoded, written and fsync'ed on `offLoop`;
    /// `done` runs on the loop once the file is on disk, with its path, or with the error
    /// (naming the file and the call that failed).
    public func save(name: String?, done: @escaping (Result<String, Error>) -> Void) {
        save(name: name, on: offLoop, done: done)
    }

    func save(name: String?, on work: OffLoopWork, done: @escaping (Result<String, Error>) -> Void) {
        let copy: PixelCopy
        do {
            if let name { try Self.validateFileName(name) }
            if let last = lastCopy, last.changes == changes, last.theme == theme, last.size == size {
                copy = last.pixels
            } else {
                copy = try renderPainting().pixelCopy()
                lastCopy = (changes, theme, size, copy)
            }
        } catch {
            done(.failure(error))
            return
        }
        guard savesWaiting == 0 || savingBytes + copy.bytes.count <= maxSavingBytes else {
            let waiting = savesWaiting == 1 ? "1 painting (\(savingBytes >> 20) MiB) is" : "\(savesWaiting) paintings (\(savingBytes >> 20) MiB) are"
            done(.failure(KioskError(.scene, "cannot save the painting now: \(waiting) still being written to \(files.directory); not saved, try again once they are on disk", errno: EAGAIN)))
            return
        }
        savesWaiting += 1
        savingBytes += copy.bytes.count
        let files = self.files
        let realtimeNs = lastNow?.realtimeNs ?? SystemTimeSource().now().realtimeNs
        let strokes = painting.strokes.count
        work.run({ () -> Result<String, Error> in
            Result {
                try files.prepare(name: name)
                return try files.write(try copy.pngData(), name: name, realtimeNs: realtimeNs)
            }
        }, then: { result in
            self.savesWaiting -= 1
            self.savingBytes -= copy.bytes.count
            if self.savesWaiting == 0 { self.lastCopy = nil } // its pixels are not kept longer than the saves
            if case .success(let target) = result {
                self.savedPaths.append(target)
                self.logger.info("painting saved", metadata: ["path": "\(target)", "strokes": "\(strokes)"])
            }
            done(result)
        })
    }

    /// The painting as an image of the paint area's size.
    public func renderPainting() throws -> Canvas {
        let area = paintArea
        guard area.width > 0, area.height > 0 else {
            throw KioskError.scene("the paint scene '\(name)' has no size yet (it was never laid out)")
        }
        let out = try Canvas(size: Size(width: area.width, height: area.height))
        let layer = try cachedLayer()
        out.draw(layer, x: Double(-area.x), y: Double(-area.y))
        out.translated(x: Double(-area.x), y: Double(-area.y)) {
            for slot in painting.activeOrder { if let s = painting.active[slot] { stroke(s, on: out) } }
        }
        return out
    }
}
