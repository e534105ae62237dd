import KioskCore

/// A value that belongs to one event loop's thread, in a form that may travel to other threads
/// (in a closure posted to the loop, a signal handler, a service): it can only be opened on the
/// loop's thread, which `value` checks (`KioskLoop.assertInLoop`, a trap otherwise). Before the
/// loop first runs, the thread that builds the daemon may open it too.
public struct LoopBound<Value>: @unchecked Sendable {
    // @unchecked: the wrapped value is reachable only through `value`, which traps on any thread
    // but the loop's, so it is never touched by two threads.
    public let loop: any KioskLoop
    private let wrapped: Value

    public init(_ value: Value, loop: any KioskLoop) {
        self.loop = loop
        self.wrapped = value
    }

    /// The value; only on the loop's thread.
    public var value: Value {
        loop.assertInLoop()
        return wrapped
    }

    /// Runs `body` with the value on the loop's thread.
    public func post(_ body: @escaping @Sendable (Value) -> Void) {
        loop.post { body(self.value) }
    }
}

/// A weak reference to an object of one event loop's thread, that may travel to other threads
/// (work handed to a helper thread that posts back to the loop). Like `LoopBound`, it can only be
/// opened on the loop's thread; it does not keep the object alive (nil once it is gone).
public struct WeakLoopBound<Value: AnyObject>: Sendable {
    /// The weak reference, reached only through `LoopBound`'s check.
    private final class Box {
        weak var object: Value?
        init(_ object: Value) { self.object = object }
    }
    private let bound: LoopBound<Box>
    public var loop: any KioskLoop { bound.loop }

    public init(_ value: Value, loop: any KioskLoop) {
        bound = LoopBound(Box(value), loop: loop)
    }

    /// The object, if it still exists; only on the loop's thread.
    public var value: Value? { bound.value.object }
}
