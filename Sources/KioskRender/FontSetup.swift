import CCairo

/// fontconfig's configuration, loaded once per process, ahead of the first text where it can be.
///
/// Loading it (`FcInit`: fontconfig's XML files and the font caches) costs several milliseconds
/// of CPU. pango does it on a thread of its own when the process makes its first font map, and
/// the first layout waits for that thread: in kioskd that was the render thread, on the way to
/// the first frame and READY=1, with a thread start and a hand-off under a loaded CPU on top.
/// `prepare()` does it on the calling thread instead (kioskd's main thread, which is otherwise
/// idle while the daemon is built on other threads), together with pango's own one-time start
/// (a throwaway font map: the thread pango starts for it finds the configuration loaded). A
/// `prepare()` on another thread while one runs waits for it (Swift's one-time initialization
/// of a global), then returns at once; `Canvas` calls it before its first layout, so text never
/// races a second, wasted load.
public enum FontSetup {
    private static let prepared: Bool = {
        let loaded = FcInit() != 0
        if let map = pango_cairo_font_map_new() { g_object_unref(UnsafeMutableRawPointer(map)) }
        return loaded
    }()

    /// Loads fontconfig's configuration if no thread has yet (waiting for one that is); false
    /// when fontconfig could not load it (text then falls back as pango decides).
    @discardableResult
    public static func prepare() -> Bool { prepared }
}
