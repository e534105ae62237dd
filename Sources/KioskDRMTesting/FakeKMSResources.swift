import KioskCore
import KioskDRM

/// The devices a test starts from: connectors, encoders, CRTCs and planes built from a list of outputs.
extension FakeKMS {
    /// One output of `outputs(_:crtcs:consoleFB:)`: a connector with its modes and status.
    public struct Output: Sendable, Equatable {
        public var name: String
        public var modes: [DRMMode]
        public var status: DRMConnector.Status
        /// The CRTCs (bit = index) its encoder can drive; nil: every CRTC.
        public var possibleCRTCs: UInt32?
        public init(_ name: String, modes: [DRMMode], status: DRMConnector.Status = .connected, possibleCRTCs: UInt32? = nil) {
            self.name = name; self.modes = modes; self.status = status; self.possibleCRTCs = possibleCRTCs
        }
    }

    /// One connector `name` with the given modes (the first preferred), one encoder, one CRTC
    /// showing framebuffer `consoleFB` in the first mode, one primary plane.
    public static func oneOutput(name: String = "Virtual-1", modes: [DRMMode], consoleFB: UInt32 = 7) -> DRMResources {
        outputs([Output(name, modes: modes)], consoleFB: consoleFB)
    }

    /// Connectors 30, 31, … for `outputs`, each with an encoder of its own (20, 21, …), `crtcs`
    /// CRTCs (10, 11, …; default one an output) with a primary plane each (40, 41, …). The first
    /// connected outputs are driven at start: connector i through encoder i by CRTC i, showing
    /// framebuffer `consoleFB + i` in its first mode (the console).
    public static func outputs(_ outputs: [Output], crtcs: Int? = nil, consoleFB: UInt32 = 7) -> DRMResources {
        let n = crtcs ?? outputs.count
        let all = n >= 32 ? UInt32.max : (UInt32(1) << UInt32(n)) - 1
        var connectors: [DRMConnector] = [], encoders: [DRMEncoder] = []
        var crtcList = (0..<n).map { DRMCrtc(id: 10 + UInt32($0), index: $0) }
        for (i, o) in outputs.enumerated() {
            let eid = 20 + UInt32(i)
            let lit = i < n && o.status == .connected
            if lit {
                crtcList[i].bufferID = consoleFB + UInt32(i)
                crtcList[i].mode = o.modes.first
            }
            connectors.append(DRMConnector(id: 30 + UInt32(i), name: o.name, status: o.status, modes: o.modes,
                                           encoderID: lit ? eid : 0, encoderIDs: [eid]))
            encoders.append(DRMEncoder(id: eid, crtcID: lit ? 10 + UInt32(i) : 0, possibleCRTCs: o.possibleCRTCs ?? all))
        }
        let planes = (0..<n).map { DRMPlane(id: 40 + UInt32($0), kind: .primary, possibleCRTCs: 1 << UInt32($0), crtcID: 10 + UInt32($0),
                                            formats: [0x3432_5258]) }
        return DRMResources(connectors: connectors, encoders: encoders, crtcs: crtcList, planes: planes)
    }
}
