import KioskCore

/// What each finger (touch slot) on the paint scene is doing. A finger keeps the role it got
/// when it came down until it lifts: on the toolbar it presses a tool; over the open colour
/// picker it works the part it touched; elsewhere, while the picker is open, it only closes the
/// picker; otherwise it draws a stroke. A drawing finger whose stroke was cleared away is
/// ignored until it lifts.
struct PaintSlots {
    enum Role: Equatable { case draw, tool, picker(ColorPicker.Part), ignored }

    private var roles: [Int: Role] = [:]

    /// The role of a finger that comes down at `p` (scene pixels); `picker` is the picker when open.
    static func role(forDownAt p: Point, toolbar: PaintToolbar, picker: ColorPicker?) -> Role {
        if toolbar.frame.contains(p) { return .tool }
        if let picker { return picker.part(at: p).map { .picker($0) } ?? .ignored }
        return .draw
    }

    var isEmpty: Bool { roles.isEmpty }
    var count: Int { roles.count }
    /// The fingers down, in slot order.
    var slots: [Int] { roles.keys.sorted() }

    subscript(slot: Int) -> Role? {
        get { roles[slot] }
        set { roles[slot] = newValue }
    }

    /// Drawing fingers stop drawing (their strokes were cleared).
    mutating func ignoreDrawing() {
        for (slot, role) in roles where role == .draw { roles[slot] = .ignored }
    }
}
