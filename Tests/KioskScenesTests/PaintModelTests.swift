import Testing
import Logging
import KioskCore
import KioskRender
@testable import KioskScenes

final class PaintingLog: PaintingObserver {
    var changes: [PaintingChange] = []
    func painting(_ painting: Painting, didChange change: PaintingChange) { changes.append(change) }
}

@Suite struct PaintModelTests {
    @Test func strokesFollowTheirSlotsAndNotifyObservers() {
        let p = Painting(), log = PaintingLog()
        p.addObserver(log)
        p.startStroke(slot: 0, at: Point(x: 1, y: 1), color: .red, width: 20)
        p.startStroke(slot: 1, at: Point(x: 9, y: 9), color: .blue, width: 8)
        #expect(p.continueStroke(slot: 0, to: Point(x: 2, y: 2)))
        #expect(!p.continueStroke(slot: 0, to: Point(x: 2, y: 2)))   // a repeated point adds nothing
        #expect(!p.continueStroke(slot: 7, to: Point(x: 2, y: 2)))   // no stroke on slot 7
        #expect(p.continueStroke(slot: 1, to: Point(x: 8, y: 8)))
        #expect(p.endStroke(slot: 1))
        #expect(p.endStroke(slot: 0))
        #expect(!p.endStroke(slot: 0))
        #expect(p.strokes.map(\.color) == [.blue, .red])                 // in the order they finished
        #expect(p.strokes[1].points == [Point(x: 1, y: 1), Point(x: 2, y: 2)])
        #expect(p.strokes[1].startPoint == Point(x: 1, y: 1))
        #expect(log.changes == [.started(slot: 0), .started(slot: 1), .extended(slot: 0, from: 1), .extended(slot: 1, from: 1),
                                .finished(slot: 1, index: 0), .finished(slot: 0, index: 1)])
    }

    @Test func undoRedoAndTheUndoLimit() {
        let p = Painting(maxUndo: 2)
        for i in 0..<4 {
            p.startStroke(slot: 0, at: Point(x: Double(i), y: 0), color: .red, width: 20)
            p.endStroke(slot: 0)
        }
        #expect(p.undo() && p.undo())
        #expect(!p.undo())                  // only the last two can be undone
        #expect(p.strokes.count == 2)
        #expect(p.redo())
        #expect(p.strokes.last?.startPoint == Point(x: 2, y: 0))
        // A new stroke forgets what could be redone.
        p.startStroke(slot: 0, at: Point(x: 50, y: 0), color: .red, width: 20)
        p.endStroke(slot: 0)
        #expect(!p.canRedo && !p.redo())
        p.clear()
        #expect(p.isEmpty && !p.canUndo)
    }

    @Test func aDownOnABusySlotFinishesTheOldStroke() {
        let p = Painting()
        p.startStroke(slot: 0, at: .zero, color: .red, width: 20)
        p.startStroke(slot: 0, at: Point(x: 5, y: 5), color: .red, width: 20)
        #expect(p.strokes.count == 1 && p.active.count == 1)
    }
}

@Suite struct PaintConfigTests {
    func table(_ entries: [(String, ConfigValue)]) -> ConfigTable {
        ConfigTable(path: "scene.paint", location: SourceLocation(file: "kiosk.toml", line: 10),
                    entries: entries.enumerated().map { i, e in (e.0, ConfigNode(e.1, at: SourceLocation(file: "kiosk.toml", line: 11 + i))) })
    }
    func nums(_ v: [Double]) -> ConfigValue {
        .array(v.map { ConfigNode(.double($0), at: SourceLocation(file: "kiosk.toml", line: 11)) })
    }
    func context() -> SceneContext {
        SceneContext(name: "paint", stored: { _ in nil }, counterIntents: { _ in }, logger: Logger(label: "test"), dataDirectory: "/tmp")
    }

    @Test func readsEveryKey() throws {
        let s = try PaintSettings.read(table([
            ("background", .string("#FAFAFA")), ("brush_widths", nums([4, 12, 30, 60])), ("default_width", .int(12)),
            ("max_undo", .int(50)), ("idle_reset_seconds", .int(120)), ("idle_save", .bool(true)),
            ("save_directory", .string("/var/lib/kioskd/paintings")),
        ]))
        #expect(s == PaintSettings(background: Color(r8: 250, g8: 250, b8: 250), brushWidths: [4, 12, 30, 60], defaultWidth: 12,
                                   maxUndo: 50, idleResetSeconds: 120, idleSave: true, saveDirectory: "/var/lib/kioskd/paintings"))
        let d = try PaintSettings.read(table([]))
        #expect(d == PaintSettings())
        #expect(try PaintSettings.read(table([("background", .string("theme"))])).background == nil)
        #expect(try PaintSettings.read(table([("brush_widths", nums([5, 10]))])).defaultWidth == 10)
        let scene = try PaintScene.make(table([("max_undo", .int(3))]), context())
        #expect(scene.kind == "paint" && scene.name == "paint")
        #expect((scene as? PaintScene)?.painting.maxUndo == 3)
    }

    @Test func badValuesNameFileLineAndKey() {
        let cases: [([(String, ConfigValue)], String)] = [
            ([("background", .string("beige"))], "kiosk.toml:11: key 'scene.paint.background'"),
            ([("brush_widths", nums([8, 0]))], "kiosk.toml:11: key 'scene.paint.brush_widths': entry 1"),
            ([("brush_widths", .array([]))], "key 'scene.paint.brush_widths': expected 1…8 widths"),
            ([("brush_widths", .string("wide"))], "key 'scene.paint.brush_widths': expected an array"),
            ([("default_width", .int(25))], "kiosk.toml:11: key 'scene.paint.default_width': 25.0 is not one of brush_widths"),
            ([("max_undo", .int(-1))], "key 'scene.paint.max_undo': -1 is out of range"),
            ([("idle_reset_seconds", .string("soon"))], "key 'scene.paint.idle_reset_seconds': expected a number"),
            ([("idle_save", .int(1))], "key 'scene.paint.idle_save': expected true or false"),
            ([("save_directory", .string("paintings"))], "key 'scene.paint.save_directory': expected an absolute path"),
            ([("idle_save", .bool(true)), ("colour", .string("red"))], "kiosk.toml:12: key 'scene.paint.colour': unknown key"),
        ]
        for (entries, expected) in cases {
            do {
                _ = try PaintScene.make(table(entries), context())
                Issue.record("no error for \(entries.map(\.0))")
            } catch let e as KioskError {
                #expect(e.message.contains(expected), "\(e.message)")
            } catch { Issue.record("unexpected \(error)") }
        }
    }
}
