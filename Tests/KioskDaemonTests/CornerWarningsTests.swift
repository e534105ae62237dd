import KioskComponent
import Testing

/// The corner warning's one writer: texts by key, drawn in the keys' order, shown on change only.
struct CornerWarningsTests {
    @Test func mergesSourcesByKeyInTheirOrder() {
        var shown: [String?] = []
        let corner = CornerWarnings { shown.append($0) }
        corner.set(.fleetPrimaries, "two primaries")
        corner.set(.fleetOffline, "offline")
        corner.set(.state, "state not saved")
        #expect(corner.text == "state not saved · offline · two primaries", "drawn in the keys' order, whatever the order set")
        corner.set(.fleetOffline, nil)
        #expect(corner.text == "state not saved · two primaries")
        corner.set(.state, nil)
        corner.set(.fleetPrimaries, nil)
        #expect(corner.text == nil)
        #expect(shown == ["two primaries", "offline · two primaries", "state not saved · offline · two primaries",
                          "state not saved · two primaries", "two primaries", nil])
    }

    @Test func showsOnlyWhatChanged() {
        var shown: [String?] = []
        let corner = CornerWarnings { shown.append($0) }
        corner.set(.fleetOffline, nil)
        corner.set(.fleetOffline, "offline")
        corner.set(.fleetOffline, "offline")
        corner.set(CornerWarnings.Key(rank: 5, name: "time"), nil)
        #expect(shown == ["offline"], "setting the same text again, or clearing what is not set, draws nothing")
        #expect(corner.text(of: .fleetOffline) == "offline")
    }
}
