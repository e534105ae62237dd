#if canImport(Glibc)
import Glibc
#endif
import CTimex
import KioskCore

/// One inotify instance registered on a `KioskLoop`: the events of each wake-up are decoded and
/// handed to `handler` together, on the loop's thread.
public final class InotifyWatcher {
    /// One decoded `struct inotify_event`.
    public struct Event: Sendable, Equatable {
        public let wd: Int32
        public let mask: UInt32
        /// The name inside the watched directory ("" for events on the watched path itself).
        public let name: String
    }

    private let inotify: Descriptor
    private let loop: any KioskLoop
    private var loopWatch: WatchID?
    private let handler: ([Event]) -> Void

    public init(loop: any KioskLoop, _ handler: @escaping ([Event]) -> Void) throws {
        self.loop = loop
        self.handler = handler
        inotify = Descriptor(adopting: try Posix.call("inotify_init1") { inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK)) })
        loopWatch = try loop.watch(fd: inotify.raw) { [weak self] in self?.readEvents() }
    }

    deinit {
        if let w = loopWatch { loop.unwatch(w) }
    }

    /// Adds (or updates) a watch; returns its descriptor. Errors name the path.
    @discardableResult
    public func add(path: String, mask: UInt32) throws -> Int32 {
        try Posix.call("inotify_add_watch", path: path) { inotify_add_watch(inotify.raw, path, mask) }
    }

    public func remove(_ wd: Int32) {
        _ = try? Posix.call("inotify_rm_watch") { inotify_rm_watch(inotify.raw, wd) }
    }

    /// Reads and dispatches everything queued now (also called by the loop when the fd is readable).
    public func readEvents() {
        var events: [Event] = []
        // Aligned for struct inotify_event; room for many events with names up to NAME_MAX.
        let size = 16 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
        defer { buffer.deallocate() }
        while let n = try? inotify.read(into: buffer, count: size), n > 0 {
            var offset = 0
            let header = MemoryLayout<inotify_event>.size
            while offset + header <= n {
                let p = buffer + offset
                let wd = p.loadUnaligned(fromByteOffset: 0, as: Int32.self)
                let mask = p.loadUnaligned(fromByteOffset: 4, as: UInt32.self)
                let len = Int(p.loadUnaligned(fromByteOffset: 12, as: UInt32.self))
                var name = ""
                if len > 0 {
                    let bytes = UnsafeRawBufferPointer(start: p + header, count: len)
                    let end = bytes.firstIndex(of: 0) ?? len
                    name = String(decoding: bytes[0..<end], as: UTF8.self)
                }
                events.append(Event(wd: wd, mask: mask, name: name))
                offset += header + len
            }
        }
        if !events.isEmpty { handler(events) }
    }
}

extension InotifyWatcher.Event {
    public var isOverflow: Bool { mask & UInt32(IN_Q_OVERFLOW) != 0 }
}
