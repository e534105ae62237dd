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
            let m = (e as? KioskError)?.message ?? ""
            return m.contains("\"HDMI-A-3\"") && m.contains("/dev/dri/card1")
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
            let m = (e as? KioskError)?.message ?? ""
            return m.contains("3840x2160@30") && m.contains("HDMI-A-2") && m.contains("1920x1080@60, 1920x1080@50, 1280x720@60")
        }
    }

    @Test func connectorWithoutModes() {
        #expect(throws: KioskError.self) { _ = try DRMSelection.mode(connectors[0], request: nil) }
    }

    @Test func crtcChoice() throws {
        let encoders = [DRMEncoder(id: 51, crtcID: 0, possibleCRTCs: 0b110), DRMEncoder(id: 52, crtcID: 31, possibleCRTCs: 0b011)]
        let crtcs = [DRMCrtc(id: 30, index: 0), DRMCrtc(id: 31, index: 1), DRMCrtc(id: 32, index: 2)]
        // Already driven: keep its CRTC.
        var dp = connectors[2]; dp.encoderID = 52
        #expect(try DRMSelection.crtc(for: dp, encoders: encoders, crtcs: crtcs).id == 31)
        // Not driven: first possible CRTC (bit 1 → id 31), skipping busy ones.
        #expect(try DRMSelection.crtc(for: connectors[1], encoders: encoders, crtcs: crtcs).id == 31)
        #expect(try DRMSelection.crtc(for: connectors[1], encoders: encoders, crtcs: crtcs, busy: [31]).id == 32)
        #expect(throws: KioskError.self) {
            _ = try DRMSelection.crtc(for: connectors[1], encoders: encoders, crtcs: crtcs, busy: [31, 32])
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
