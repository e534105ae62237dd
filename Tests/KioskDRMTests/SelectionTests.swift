import Testing
import KioskCore
import CDRM
@testable import KioskDRM

private let hdmiModes = [
    DRMMode(width: 1920, height: 1080, refresh: 60, refreshMilliHz: 60_000, isPreferred: true),
    DRMMode(width: 1920, height: 1080, refresh: 50, refreshMilliHz: 50_000),
    DRMMode(width: 1920, height: 1080, refresh: 60, refreshMilliHz: 59_940),
    DRMMode(width: 1280, height: 720, refresh: 60, refreshMilliHz: 60_000),
]
private let connectors = [
    DRMConnector(id: 40, name: "HDMI-A-1", status: .disconnected, modes: [], encoderIDs: [50]),
    DRMConnector(id: 41, name: "HDMI-A-2", status: .connected, modes: hdmiModes, encoderIDs: [51]),
    DRMConnector(id: 42, name: "DP-1", status: .connected, modes: [DRMMode(width: 2560, height: 1440, refresh: 144)], encoderIDs: [52]),
]

@Suite struct SelectionTests {
    @Test func parsesModes() throws {
        #expect(try ModeRequest(parsing: "1920x1080@60") == ModeRequest(width: 1920, height: 1080, refresh: 60))
        #expect(try ModeRequest(parsing: "1280x800") == ModeRequest(width: 1280, height: 800, refresh: nil))
        #expect(try ModeRequest(parsing: " 1920X1080@59.94 ") == ModeRequest(width: 1920, height: 1080, refresh: 60))
    }

    @Test(arguments: ["", "1920", "1920x", "x1080", "1920x1080@", "1920x1080@abc", "-5x10", "0x0", "1920x1080@60@60", "99999x10"])
    func rejectsBadModes(_ text: String) {
        #expect {
            _ = try ModeRequest(parsing: text)
        } throws: { e in
            (e as? KioskError)?.message.contains("mode \"\(text)\"") == true
        }
    }

    @Test func firstConnectedWhenUnnamed() throws {
        #expect(try DRMSelection.connector(connectors, named: nil, device: "/dev/dri/card0")?.name == "HDMI-A-2")
        let none = connectors.map { c -> DRMConnector in var c = c; c.status = .disconnected; return c }
        #expect(try DRMSelection.connector(none, named: nil, device: "/dev/dri/card0") == nil)
    }

    @Test func namedConnectorEvenIfDisconnected() throws {
        #expect(try DRMSelection.connector(connectors, named: "dp-1", device: "/dev/dri/card0")?.id == 42)
        #expect(try DRMSelection.connector(connectors, named: "HDMI-A-1", device: "/dev/dri/card0")?.status == .disconnected)
    }

    @Test func unknownConnectorListsWhatExists() {
        #expect {
            _ = try DRMSelection.connector(connectors, named: "HDMI-A-3", device: "/dev/dri/card1")
        } throws: { e in
            let m = (e as? MissingOutputPart)?.description ?? ""
            return (e as? MissingOutputPart)?.asked == .connector("HDMI-A-3") && m.contains("\"HDMI-A-3\"") && m.contains("/dev/dri/card1")
                && m.contains("HDMI-A-1 (disconnected)") && m.contains("HDMI-A-2 (connected)") && m.contains("DP-1 (connected)")
        }
    }

    @Test func preferredModeByDefault() throws {
        let m = try DRMSelection.mode(connectors[1], request: nil)
        #expect(m.description == "1920x1080@60" && m.isPreferred)
        // Without a preferred flag the first mode is used.
        #expect(try DRMSelection.mode(connectors[2], request: nil).description == "2560x1440@144")
    }

    @Test func requestedModes() throws {
        #expect(try DRMSelection.mode(connectors[1], request: ModeRequest(width: 1920, height: 1080, refresh: 50)).refresh == 50)
        #expect(try DRMSelection.mode(connectors[1], request: ModeRequest(width: 1280, height: 720)).size == Size(width: 1280, height: 720))
        // Several 1080p60 modes: the preferred one wins over 59.94.
        let m = try DRMSelection.mode(connectors[1], request: ModeRequest(width: 1920, height: 1080, refresh: 60))
        #expect(m.isPreferred && m.refreshMilliHz == 60_000)
        // Without a refresh the preferred one as well, not the highest.
        #expect(try DRMSelection.mode(connectors[1], request: ModeRequest(width: 1920, height: 1080)).isPreferred)
    }

    @Test func unknownModeListsModes() {
        #expect {
            _ = try DRMSelection.mode(connectors[1], request: ModeRequest(width: 3840, height: 2160, refresh: 30))
        } throws: { e in
            let m = (e as? MissingOutputPart)?.description ?? ""
            return (e as? MissingOutputPart)?.asked == .mode(ModeRequest(width: 3840, height: 2160, refresh: 30), connector: "HDMI-A-2")
                && m.contains("3840x2160@30") && m.contains("HDMI-A-2") && m.contains("1920x1080@60, 1920x1080@50, 1280x720@60")
        }
    }

    @Test func connectorWithoutModes() {
        #expect(throws: KioskError.self) { _ = try DRMSelection.mode(connectors[0], request: nil) }
    }

    /// A card's connectors, encoders (id 50 + n) and CRTCs (id 30 + index), and the CRTC each
    /// connector must get (nil: the assignment must fail naming `unassigned`).
    struct CRTCCase: Sendable, CustomStringConvertible {
        var description: String
        /// Per connector: its encoders and the CRTC its current encoder drives (nil: none).
        var connectors: [(encoders: [UInt32], current: UInt32?)]
        /// Per encoder id: possible_crtcs.
        var encoders: [UInt32: UInt32]
        var crtcCount: Int
        /// The CRTC id each connector gets, in order; nil: it throws.
        var expected: [UInt32]?
        /// The connectors the error names (when `expected` is nil).
        var unassigned: [String] = []

        var res: (connectors: [DRMConnector], encoders: [DRMEncoder], crtcs: [DRMCrtc]) {
            var encs = encoders.keys.sorted().map { DRMEncoder(id: $0, crtcID: 0, possibleCRTCs: encoders[$0]!) }
            let conns = connectors.enumerated().map { i, c -> DRMConnector in
                var enc: UInt32 = 0
                if let cur = c.current, let e = encs.firstIndex(where: { c.encoders.contains($0.id) && $0.crtcID == 0 }) {
                    encs[e].crtcID = cur
                    enc = encs[e].id
                }
                return DRMConnector(id: 40 + UInt32(i), name: "OUT-\(i + 1)", status: .connected, modes: [], encoderID: enc,
                                    encoderIDs: c.encoders)
            }
            return (conns, encs, (0..<crtcCount).map { DRMCrtc(id: 30 + UInt32($0), index: $0) })
        }
    }

    static let crtcCases: [CRTCCase] = [
        CRTCCase(description: "one output a CRTC", connectors: [([50], nil), ([51], nil)], encoders: [50: 0b11, 51: 0b11],
                 crtcCount: 2, expected: [30, 31]),
        CRTCCase(description: "greedy fails: A {0,1}, B {0}", connectors: [([50], nil), ([51], nil)], encoders: [50: 0b11, 51: 0b01],
                 crtcCount: 2, expected: [31, 30]),
        CRTCCase(description: "the current CRTC is kept", connectors: [([50], 31), ([51], nil)], encoders: [50: 0b11, 51: 0b11],
                 crtcCount: 2, expected: [31, 30]),
        CRTCCase(description: "the current CRTC is left when the other output needs it", connectors: [([50], 30), ([51], nil)],
                 encoders: [50: 0b11, 51: 0b01], crtcCount: 2, expected: [31, 30]),
        CRTCCase(description: "three searched: A {0,1,2}, B {0,1}, C {0}", connectors: [([50], nil), ([51], nil), ([52], nil)],
                 encoders: [50: 0b111, 51: 0b011, 52: 0b001], crtcCount: 3, expected: [32, 31, 30]),
        CRTCCase(description: "encoders shared MST-style, one a CRTC", connectors: [([50, 51], nil), ([50, 51], nil)],
                 encoders: [50: 0b01, 51: 0b10], crtcCount: 2, expected: [30, 31]),
        CRTCCase(description: "fewer CRTCs than outputs", connectors: [([50], nil), ([51], nil), ([52], nil)],
                 encoders: [50: 0b11, 51: 0b11, 52: 0b11], crtcCount: 2, expected: nil, unassigned: ["OUT-3"]),
        CRTCCase(description: "one encoder shared by two outputs", connectors: [([50], nil), ([50], nil)], encoders: [50: 0b11],
                 crtcCount: 2, expected: nil, unassigned: ["OUT-2"]),
        CRTCCase(description: "no CRTC any encoder can use", connectors: [([50], nil)], encoders: [50: 0b100], crtcCount: 2,
                 expected: nil, unassigned: ["OUT-1"]),
    ]

    @Test(arguments: crtcCases)
    func crtcAssignment(_ c: CRTCCase) throws {
        let r = c.res
        if let expected = c.expected {
            let got = try DRMSelection.assignCRTCs(connectors: r.connectors, encoders: r.encoders, crtcs: r.crtcs, device: "/dev/dri/card1")
            #expect(r.connectors.map { got[$0.id]?.id } == expected)
        } else {
            var message = ""
            #expect(throws: KioskError.self) {
                do { _ = try DRMSelection.assignCRTCs(connectors: r.connectors, encoders: r.encoders, crtcs: r.crtcs, device: "/dev/dri/card1") }
                catch let e as KioskError { message = e.message; throw e }
            }
            #expect(message.hasPrefix("/dev/dri/card1 cannot drive \(r.connectors.map(\.name).joined(separator: ", ")) at once"), "\(message)")
            #expect(message.contains("no CRTC left for \(c.unassigned.joined(separator: ", ")) ("), "\(message)")
            #expect(message.hasSuffix("CRTCs: \(r.crtcs.map { "\($0.id)" }.joined(separator: ", ")))"), "\(message)")
            let partial = DRMSelection.matchCRTCs(connectors: r.connectors, encoders: r.encoders, crtcs: r.crtcs)
            #expect(partial.unassigned.map(\.name) == c.unassigned)
            #expect(Set(partial.assigned.values.map(\.id)).count == partial.assigned.count, "no CRTC given twice")
        }
    }

    @Test func primaryPlaneChoice() {
        let xrgb: UInt32 = 0x3432_5258
        let planes = [
            DRMPlane(id: 60, kind: .overlay, possibleCRTCs: 0b1, formats: [xrgb]),
            DRMPlane(id: 61, kind: .primary, possibleCRTCs: 0b10, formats: [xrgb]),
            DRMPlane(id: 62, kind: .primary, possibleCRTCs: 0b1, formats: [0x3432_5241]),
            DRMPlane(id: 63, kind: .primary, possibleCRTCs: 0b1, formats: [0x3432_5241, xrgb]),
        ]
        #expect(DRMSelection.primaryPlane(planes, crtc: DRMCrtc(id: 30, index: 0), format: xrgb)?.id == 63)
        #expect(DRMSelection.primaryPlane(planes, crtc: DRMCrtc(id: 31, index: 1), format: xrgb)?.id == 61)
        #expect(DRMSelection.primaryPlane(planes, crtc: DRMCrtc(id: 32, index: 2), format: xrgb) == nil)
    }

    @Test func describeMarksInUseAndModes() {
        let res = DRMResources(
            connectors: [DRMConnector(id: 41, name: "Virtual-1", status: .connected,
                                      modes: [DRMMode(width: 1280, height: 800, refresh: 75, isPreferred: true),
                                              DRMMode(width: 1024, height: 768, refresh: 60)],
                                      encoderID: 51, encoderIDs: [51], widthMM: 340, heightMM: 210),
                         DRMConnector(id: 42, name: "Virtual-2", status: .disconnected, modes: [], encoderIDs: [52])],
            encoders: [DRMEncoder(id: 51, crtcID: 30, possibleCRTCs: 1), DRMEncoder(id: 52, crtcID: 0, possibleCRTCs: 2)],
            crtcs: [DRMCrtc(id: 30, index: 0, bufferID: 77, mode: DRMMode(width: 1024, height: 768, refresh: 60))],
            planes: [])
        let text = DRMDisplay.describe(res)
        #expect(text == """
              Virtual-1 connected 340x210 mm [in use: CRTC 30]
                 + 1280x800@75
                *  1024x768@60
              Virtual-2 disconnected

            """)
    }

    @Test func modeFromKernelRecordComputesRefresh() {
        // CVT 1280x800@75: clock 106500 kHz, htotal 1696, vtotal 838 → 74.934 Hz.
        var raw = drmModeModeInfoForTest(clock: 106_500, h: 1280, htotal: 1696, v: 800, vtotal: 838, vrefresh: 75, preferred: true)
        let m = DRMMode(raw)
        #expect(m.width == 1280 && m.height == 800 && m.refresh == 75 && m.isPreferred)
        #expect(m.refreshMilliHz == 74_934)
        #expect(m.name == "1280x800")
        raw.vrefresh = 0
        #expect(DRMMode(raw).description == "1280x800@0")
    }
}

/// A kernel mode record as `drmModeGetConnector` would return it.
private func drmModeModeInfoForTest(clock: UInt32, h: UInt16, htotal: UInt16, v: UInt16, vtotal: UInt16, vrefresh: UInt32, preferred: Bool) -> drmModeModeInfo {
    var m = drmModeModeInfo()
    m.clock = clock
    m.hdisplay = h; m.htotal = htotal
    m.vdisplay = v; m.vtotal = vtotal
    m.vrefresh = vrefresh
    m.type = preferred ? UInt32(DRM_MODE_TYPE_PREFERRED) : 0
    let name = Array("\(h)x\(v)".utf8)
    withUnsafeMutableBytes(of: &m.name) { buf in
        for (i, b) in name.enumerated() { buf[i] = b }
    }
    return m
}
