/// A scene that shows the time and shows it differently while the system clock is not
/// synchronised (the clock's `unsynced` setting). The scene manager tells every such scene
/// whenever synchronisation changes, and when scenes are made or replaced.
public protocol TimeTruthAware: AnyObject {
    /// Whether the system clock is synchronised; returns true when what the scene shows changed
    /// (the manager then draws the next frame).
    func setTimeSynchronized(_ synchronized: Bool) -> Bool
}
