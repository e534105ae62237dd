import Foundation
import Glibc
import KioskCore
import KioskRender
import Testing

/// Whether this process may mount a tmpfs (root with CAP_SYS_ADMIN): tried once, in a folder of its own.
private let mayMountTmpfs: Bool = {
    let dir = "\(NSTemporaryDirectory())kt-mount-probe-\(getpid())"
    guard mkdir(dir, 0o700) == 0 else { return false }
    defer { rmdir(dir) }
    guard mount("tmpfs", dir, "tmpfs", 0, "size=16k") == 0 else { return false }
    umount2(dir, Int32(MNT_DETACH))
    return true
}()
@testable import KioskScenes

/// Paintings are written only into the paintings folder, as new files (never over an existing
/// file or through a symlink), with the exact pixels, and a failed write leaves nothing behind.
@Suite(.serialized) struct PaintSaveTests {
    func freshDir(_ tag: String) -> String {
        let d = NSTemporaryDirectory() + "k-ps-\(tag)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try! FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }

    func listing(_ dir: String) -> [String: Data] {
        var out: [String: Data] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] {
            let p = "\(dir)/\(name)"
            out[name] = FileManager.default.contents(atPath: p) ?? Data("<unreadable or dir>".utf8)
        }
        return out
    }

    func paintedRig(_ dir: String) throws -> PaintRig {
        let rig = try PaintRig(dataDirectory: dir)
        rig.scene.colors.set(color: paintInk)
        let path = paintLine(from: Point(x: 40, y: 60), to: Point(x: 300, y: 90))
        var events = [rig.touch(.down, slot: 0, px: path[0])]
        events += path.dropFirst().map { rig.touch(.motion, slot: 0, px: $0) }
        events.append(rig.touch(.up, slot: 0, px: path.last!))
        rig.send(events)
        _ = rig.scene.draw(into: rig.screen)
        return rig
    }

    @Test func aNamedSaveLandsInThePaintingsFolderWithTheExactPixels() throws {
        let root = freshDir("ok")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let rig = try paintedRig("\(root)/paintings")
        let path = try rig.scene.save(name: "drawing-1.png")
        #expect(path == "\(root)/paintings/drawing-1.png")
        var st = stat()
        #expect(lstat(path, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o640)
        #expect((st.st_mode & S_IFMT) == S_IFREG)
        // Pixel for pixel what the scene shows in its paint area.
        let img = try Canvas.loadPNG(path: path)
        let area = rig.scene.paintArea
        #expect(img.size == Size(width: area.width, height: area.height))
        var differing = 0
        for y in 0..<area.height {
            for x in 0..<area.width where img.color(x: x, y: y) != rig.screen.color(x: area.x + x, y: area.y + y) { differing += 1 }
        }
        #expect(differing == 0)
        #expect(img.color(x: 40, y: 60) == paintInk)
    }

    @Test func namesThatLeaveTheFolderOrAreNotPlainPNGNamesAreRefused() throws {
        let root = freshDir("bad")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Data("keep".utf8).write(to: URL(fileURLWithPath: "\(root)/x.png"))
        let rig = try paintedRig("\(root)/paintings")
        let before = listing(root)
        let bad = ["../x.png", "../escape.png", "a/b.png", "/tmp/abs.png", "..", ".png", ".hidden.png", "x.txt", "x.PNG",
                   "x.png/", "sp ace.png", "x\u{0}.png", "é.png", "", String(repeating: "a", count: 97) + ".png"]
        for name in bad {
            do {
                _ = try rig.scene.save(name: name)
                Issue.record("saving as \"\(name)\" succeeded")
            } catch let e as KioskError {
                #expect(e.kind == .control, "\(name): \(e.message)")
                #expect(e.message.contains("expected a file name such as drawing-1.png"), "\(e.message)")
            }
        }
        #expect(listing(root) == before)
        #expect(listing("\(root)/paintings").isEmpty)
        // 100 bytes is the longest name taken.
        let longest = String(repeating: "a", count: 96) + ".png"
        #expect(try rig.scene.save(name: longest) == "\(root)/paintings/\(longest)")
    }

    @Test func aSymlinkOrAFileAtTheNameIsNeverWrittenThrough() throws {
        let root = freshDir("link")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = "\(root)/paintings"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let outside = "\(root)/outside.png"
        try Data("precious".utf8).write(to: URL(fileURLWithPath: outside))
        #expect(symlink(outside, "\(dir)/link.png") == 0)
        #expect(symlink("\(root)/dangling-target.png", "\(dir)/dangling.png") == 0)
        try Data("old".utf8).write(to: URL(fileURLWithPath: "\(dir)/old.png"))
        let rig = try paintedRig(dir)
        for name in ["link.png", "dangling.png", "old.png"] {
            do {
                _ = try rig.scene.save(name: name)
                Issue.record("saving over \(name) succeeded")
            } catch let e as KioskError {
                #expect(e.errno == EEXIST)
                #expect(e.message == "cannot write \(dir)/\(name): a file of that name already exists (errno 17); paintings are never overwritten")
            }
        }
        #expect(FileManager.default.contents(atPath: outside) == Data("precious".utf8))
        #expect(!FileManager.default.fileExists(atPath: "\(root)/dangling-target.png"))
        #expect(FileManager.default.contents(atPath: "\(dir)/old.png") == Data("old".utf8))
    }

    @Test func automaticNamesSkipExistingFilesAndSymlinks() throws {
        let root = freshDir("auto")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = "\(root)/paintings"
        let rig = try paintedRig(dir)
        let first = try rig.scene.save(name: nil)
        // Plant a dangling symlink at the next automatic name: it is skipped, not followed.
        let second = first.replacingOccurrences(of: ".png", with: "-2.png")
        #expect(symlink("\(root)/target.png", second) == 0)
        let third = try rig.scene.save(name: nil)
        #expect(third == first.replacingOccurrences(of: ".png", with: "-3.png"))
        #expect(!FileManager.default.fileExists(atPath: "\(root)/target.png"))
    }

    @Test func aFailedWriteLeavesNoFileAndNamesTheErrno() throws {
        let root = freshDir("enospc")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = "\(root)/paintings"
        let rig = try paintedRig(dir)
        rig.scene.files.writeFault = { $0.hasPrefix(dir) ? ENOSPC : nil }
        do {
            _ = try rig.scene.save(name: "full.png")
            Issue.record("the save succeeded")
        } catch let e as KioskError {
            #expect(e.message == "cannot write \(dir)/full.png: write: No space left on device (errno 28)")
            #expect(e.errno == ENOSPC)
        }
        #expect(listing(dir).isEmpty)
    }

    @Test(.enabled(if: mayMountTmpfs, "mounting a 16 KiB tmpfs needs root with CAP_SYS_ADMIN: no real full file system here (fault injection covers the rest)"))
    func aFullFileSystemLeavesNoFileAndNamesTheErrno() throws {
        let root = freshDir("tmpfs")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let mnt = "\(root)/mnt"
        try FileManager.default.createDirectory(atPath: mnt, withIntermediateDirectories: true)
        // A real full file system (the trait checked that this process may mount one).
        try #require(mount("tmpfs", mnt, "tmpfs", 0, "size=16k") == 0, "mount tmpfs on \(mnt): errno \(errno)")
        defer { umount2(mnt, Int32(MNT_DETACH)) }
        let dir = "\(mnt)/paintings"
        let rig = try paintedRig(dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        // Fill it.
        let fd = open("\(mnt)/filler", O_WRONLY | O_CREAT, 0o600)
        var block = [UInt8](repeating: 1, count: 4096)
        while write(fd, &block, block.count) > 0 {}
        close(fd)
        do {
            _ = try rig.scene.save(name: "full.png")
            Issue.record("the save succeeded on a full file system")
        } catch let e as KioskError {
            #expect(e.message.hasPrefix("cannot write \(dir)/full.png: "), "\(e.message)")
            #expect(e.message.hasSuffix("No space left on device (errno 28)"), "\(e.message)")
        }
        #expect(listing(dir).isEmpty)
    }
}
