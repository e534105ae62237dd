import KioskCore
import KioskRender
import Logging

/// How the manager moves between scenes.
public struct SceneSwitching: Sendable, Equatable {
    /// Seconds each scene stays on screen in a timed rotation; 0 = no rotation.
    public var rotateSeconds: Double
    /// evdev key codes that show the next / previous scene.
    public var nextKeys: [UInt16]
    public var previousKeys: [UInt16]
    /// A horizontal swipe starting at the screen's edge switches scenes.
    public var edgeSwipe: Bool
    public init(rotateSeconds: Double = 0, nextKeys: [UInt16] = [], previousKeys: [UInt16] = [], edgeSwipe: Bool = false) {
        self.rotateSeconds = rotateSeconds; self.nextKeys = nextKeys; self.previousKeys = previousKeys; self.edgeSwipe = edgeSwipe
    }
}

/// Owns the scenes, the display and the input routing: sends input to the scene on screen,
/// arms one timer for the scene's next deadline, and draws only when something changed —
/// and only when the display can take a frame. Runs on the event loop's thread.
public final class SceneManager {
    public private(set) var scenes: [Scene]
    public private(set) var currentIndex: Int = 0
    public private(set) var theme: Theme
    public let display: DisplayOutput
    public let loop: any Scheduler
    public let time: TimeSource
    public var switching: SceneSwitching
    let logger: Logger

    /// The frame as the viewer sees it (logical size, overlays included): where the latest frame
    /// was drawn — the display's own buffer (the headless framebuffer; on DRM the scan-out buffer
    /// a frame that repaints everything went to, slow to read) or the copy the display lent for
    /// it. Nil while no display size is known, before the first frame and while the output is
    /// inactive.
    public var canvas: Canvas? { frameSize == nil ? nil : composer.shown }
    /// The logical size frames are drawn at; nil while nothing is connected.
    public private(set) var frameSize: Size?
    /// Draws the frames into what the display lends, with the overlays (FrameComposer.swift).
    private let composer: FrameComposer
    /// Frames that repaint everything drawn straight into the buffer the display shows so far.
    public var directFrameCount: UInt64 { composer.directFrames }
    /// Partial frames drawn in place in the buffer the display shows so far.
    public var inPlaceFrameCount: UInt64 { composer.inPlaceFrames }
    /// Whether the display lent a copy of the frame (a frame-sized canvas besides its buffers,
    /// which it copies damage from; never on the headless display that is not turned).
    public var hasFrameCanvas: Bool { composer.lentCopy }
    private var needsFull = true
    private var dirty = true
    private var renderQueued = false
    var deadlineTimer: TimerID?
    var armedDeadline: Deadline?
    var rotationTimer: TimerID?
    var armRetryDelayNs = SceneManager.armRetryFirstNs
    var armRetryTimer: TimerID?
    /// Test seam: an error makes arming the scene timer fail as if the loop had refused it.
    var armFault: (() -> Error?)?
    private(set) var started = false
    /// Where a screenshot's encoding goes: the daemon's worker thread; at once on the caller's
    /// thread by default.
    public var offLoop: OffLoopWork = InlineWork()
    /// Where the scenes' writes go (a painting's encoding, write and fsync), given to the scenes
    /// that use it: the daemon's thread for writes, so that a slow disk delays no screenshot;
    /// at once on the caller's thread by default.
    public var sceneWrites: OffLoopWork = InlineWork() {
        didSet { giveOffLoop(scenes) }
    }
    /// Screenshots being encoded: the frame copied, and who waits for its PNG.
    var shotsInFlight: [(frame: UInt64, waiters: [(Result<[UInt8], Error>) -> Void])] = []

    /// Turns raw touches into taps, long presses and swipes (given to scenes alongside raw touches).
    public var gestureRecognizer = GestureRecognizer()
    var gestureTimer: TimerID?
    /// Called with every event before the scene sees it; return true to swallow it (wake from blank).
    public var inputFilter: ((InputEvent) -> Bool)?

    /// Shows a cursor that relative mice move (config `[input] cursor`); the left button acts as a
    /// finger at the cursor. The cursor is drawn over the scene's frame and the pixels under it
    /// are put back before the scene draws again, so scenes never see it.
    public var showsCursor = false {
        didSet {
            guard showsCursor != oldValue else { return }
            if !showsCursor { cursor.hide() }
            if started { setNeedsFrame() }
        }
    }
    /// The cursor's tip in logical pixels (nil until a mouse moves).
    public var cursorPosition: Point? { cursor.position }
    let cursor = CursorOverlay()
    /// The touch slot the mouse button uses (well away from libinput's device × 1000 + slot).
    public static let cursorSlot = 999_000

    /// A short warning drawn small in the bottom-right corner over every scene (such as "state not
    /// saved"), in the theme's colours; nil: none. Like the cursor, it is taken off before the scene
    /// draws again, so scenes never see it.
    public var stateWarning: String? {
        get { warning.text }
        set {
            guard newValue != warning.text else { return }
            warning.text = newValue
            if started { setNeedsFrame() }
        }
    }
    private let warning = WarningOverlay()

    /// Whether the system clock is synchronised. Scenes that show the time (`TimeTruthAware`)
    /// show it differently until it is; when it changes, the scene on screen redraws in the next frame.
    public var timeSynchronized: Bool = true {
        didSet { if timeSynchronized != oldValue { timeSynchronizationChanged() } }
    }

    /// Burn-in care: the content of scenes with static content (`PixelShiftable`: the clock, the
    /// counter) moves along this orbit, one step per timer wake-up; nil: off (the default).
    public var pixelOrbit: PixelOrbit? {
        didSet { if pixelOrbit != oldValue { pixelOrbitChanged() } }
    }
    /// The orbit's timer and the composition of moved content (SceneManager+Orbit.swift).
    var orbit = OrbitComposer()
    /// A pairing code being offered to a phone (drawn over every scene while set); nil: none.
    public var pairingPrompt: PairingPrompt? {
        get { pairing.prompt }
        set {
            pairing.prompt = newValue
            if started { setNeedsFrame() }
        }
    }
    private let pairing = PairingOverlay()

    /// Called once, after the first frame was presented (systemd READY=1).
    public var onFirstFrame: (() -> Void)?
    /// Called after every presented frame.
    public var onFrame: ((Damage) -> Void)?
    /// Called when the scene on screen changes (name).
    public var onSceneChange: ((String) -> Void)?
    /// Called after the scene manager handled a display's news that the output went away
    /// (`.inactive`) or (re)appeared (`.needsFullRedraw`); not for `.ready`.
    public var onDisplayChange: ((DisplayEvent) -> Void)?

    private var statistics = FrameStatistics()
    /// Frames presented so far.
    public var frameCount: UInt64 { statistics.frames }
    /// Monotonic time of the last present() call, for latency measurements.
    public var lastPresentNs: Int64 { composer.lastPresentNs }

    /// `time` is what scenes are told the time is; nil: the loop's own clocks.
    public init(scenes: [Scene], theme: Theme, display: DisplayOutput, loop: any Scheduler,
                time: TimeSource? = nil, switching: SceneSwitching = SceneSwitching(), logger: Logger) {
        precondition(!scenes.isEmpty, "a scene manager needs at least one scene")
        self.scenes = scenes
        self.theme = theme
        self.display = display
        self.loop = loop
        self.time = time ?? SchedulerTime(loop)
        self.switching = switching
        self.logger = logger
        composer = FrameComposer(display: display, overlays: [warning, pairing, cursor], logger: logger)
        giveOffLoop(scenes)
    }

    public var current: Scene { scenes[currentIndex] }

    /// Lays out, shows the first scene and draws the first frame as soon as the display can take it.
    public func start(initialScene: String? = nil) {
        display.onEvent = { [weak self] e in self?.displayEvent(e) }
        if let n = initialScene, let i = scenes.firstIndex(where: { $0.name == n }) { currentIndex = i }
        for s in scenes { s.apply(theme: theme) }
        tellTimeTruth(scenes)
        started = true
        relayout()
        current.didAppear(now: time.now())
        armRotation()
        setNeedsFrame(full: true)
        reschedule()
    }

    /// Stops timers; the display is shut down by its owner.
    public func stop() {
        if let t = deadlineTimer { loop.cancel(t); deadlineTimer = nil }
        if let t = rotationTimer { loop.cancel(t); rotationTimer = nil }
        if let t = armRetryTimer { loop.cancel(t); armRetryTimer = nil }
        stopOrbit()
        started = false
    }

    // MARK: scenes and themes

    /// Replaces the scenes (config reload) keeping the one on screen if its name still exists.
    public func replaceScenes(_ newScenes: [Scene], switching: SceneSwitching, theme: Theme) {
        precondition(!newScenes.isEmpty)
        let name = current.name
        scenes = newScenes
        self.switching = switching
        self.theme = theme
        currentIndex = newScenes.firstIndex(where: { $0.name == name }) ?? 0
        for s in scenes { s.apply(theme: theme) }
        tellTimeTruth(scenes)
        giveOffLoop(scenes)
        if let size = frameSize { for s in scenes { s.layout(size: size) } }
        current.didAppear(now: time.now())
        armRotation()
        onSceneChange?(current.name)
        setNeedsFrame(full: true)
        reschedule()
    }

    public func show(sceneNamed name: String) throws {
        guard let i = scenes.firstIndex(where: { $0.name == name }) else {
            throw KioskError.notFound("no scene named '\(name)'; scenes: \(scenes.map(\.name).joined(separator: ", "))")
        }
        show(index: i)
    }

    public func show(index: Int) {
        let i = ((index % scenes.count) + scenes.count) % scenes.count
        guard i != currentIndex || !started else { return }
        currentIndex = i
        gestureRecognizer.reset()
        current.didAppear(now: time.now())
        logger.info("scene on screen", metadata: ["scene": "\(current.name)"])
        onSceneChange?(current.name)
        armRotation()
        setNeedsFrame(full: true)
        reschedule()
    }

    public func next() { show(index: currentIndex + 1) }
    public func previous() { show(index: currentIndex - 1) }

    /// Switches the theme at run time: every scene redraws with it.
    public func setTheme(_ theme: Theme) {
        self.theme = theme
        for s in scenes { s.apply(theme: theme) }
        setNeedsFrame(full: true)
        reschedule()
    }

    /// Every scene that implements `type` (a control protocol such as `CounterControl`), in order.
    public func scene<T>(as type: T.Type) -> [T] { scenes.compactMap { $0 as? T } }

    /// Tells the manager that the scene on screen changed outside input and time (control commands).
    public func sceneDidChange() {
        setNeedsFrame()
        reschedule()
    }

    // MARK: frames

    /// Marks the frame dirty and draws it at the end of this loop iteration if the display can take it.
    public func setNeedsFrame(full: Bool = false) {
        if full { needsFull = true }
        dirty = true
        guard !renderQueued else { return }
        renderQueued = true
        loop.deferToEndOfIteration { [weak self] in
            guard let self else { return }
            self.renderQueued = false
            self.renderIfPossible()
        }
    }

    private func relayout() {
        let size = display.logicalSize
        if size != frameSize { composer.displayChanged(size: size, sizeChanged: true) }
        frameSize = size
        guard let size else { return }
        for s in scenes { s.layout(size: size) }
        needsFull = true
    }

    private func displayEvent(_ e: DisplayEvent) {
        switch e {
        case .ready:
            if dirty { renderIfPossible() }
        case .needsFullRedraw:
            relayout()
            setNeedsFrame(full: true)
        case .inactive:
            // Its buffers may be gone (unplugged): nothing drawn there is read any more.
            composer.displayChanged(size: frameSize, sizeChanged: false)
        }
        if e != .ready { onDisplayChange?(e) }
    }

    /// Draws the scene on screen and presents it, if something changed and the display can take
    /// a frame: a scene that repaints everything (and is not moved by the pixel orbit) may be
    /// drawn straight into the buffer the display shows next.
    public func renderIfPossible() {
        guard dirty, display.canPresent, let size = frameSize else { return }
        let t0 = nowNanos(.monotonic)
        let scene = current
        let repaints = orbitingScene == nil && (scene as? FullFrameDrawing)?.nextDrawRepaintsEverything == true
        switch composer.render(size: size, full: needsFull, repaintsEverything: repaints, scene: scene, theme: theme,
                               draw: { drawScene(into: $0, full: $1) }) {
        case .noTarget:
            return
        case .unchanged:
            dirty = false
            needsFull = false
        case .failed:
            dirty = true
            needsFull = true
        case .presented(let damage):
            dirty = false
            needsFull = false
            frameDone(damage, since: t0)
        }
    }

    private func frameDone(_ damage: Damage, since t0: Int64) {
        // The cost is measured on the real clock (what drawing took); the frame is placed on
        // the loop's clock, which the frame rate is counted on.
        statistics.record(costNs: nowNanos(.monotonic) - t0, at: loop.now(.monotonic))
        if frameCount == 1 { onFirstFrame?() }
        onFrame?(damage)
    }

    /// Frame count, frame rate over the last five seconds of the loop's clock, and frame cost percentiles.
    public var stats: FrameStats { statistics.stats(now: loop.now(.monotonic)) }

    /// Writes what the viewer sees (the logical frame) as PNG.
    public func screenshot(to path: String) throws {
        try shownCanvas().writePNG(to: path)
    }

    /// What the viewer sees (the logical frame) as PNG bytes, encoded on the calling thread
    /// (the daemon uses `screenshotPNG(done:)`, which does not hold the loop).
    public func screenshotPNG() throws -> [UInt8] {
        try shownCanvas().pngData()
    }

    func shownCanvas() throws -> Canvas {
        guard frameSize != nil else { throw KioskError.display("no frame to capture: no display is connected") }
        guard let canvas else { throw KioskError.display("no frame to capture: nothing was drawn on \(display.displayDescription) since it became active") }
        return canvas
    }
}
