extension SceneManager {
    /// Tells `scenes` whether the system clock is synchronised (they start out assuming it is).
    func tellTimeTruth(_ scenes: [Scene]) {
        for s in scenes { _ = (s as? TimeTruthAware)?.setTimeSynchronized(timeSynchronized) }
    }

    /// `timeSynchronized` changed: every time-showing scene learns it; when the one on screen
    /// shows it, it is brought up to now and redrawn in this loop iteration's frame.
    func timeSynchronizationChanged() {
        var changed = false
        for s in scenes {
            guard let aware = s as? TimeTruthAware else { continue }
            if aware.setTimeSynchronized(timeSynchronized), s === current { changed = true }
        }
        guard started, changed else { return }
        setNeedsFrame()
        tick()
    }
}
