import Testing
@testable import KioskCEC

// Expected bytes are written from the HDMI-CEC specification's message tables (header =
// initiator << 4 | destination; Playback device 1 is logical address 4, the TV 0, broadcast
// and Unregistered 15), as `cec-ctl --trace` prints them, not computed by the encoder.
@Suite struct CECMessageTests {
    let playback1 = CECLogicalAddress(4)

    @Test func standbyToTheTV() {
        #expect(CECMessage.standby(from: playback1).bytes == [0x40, 0x36])
    }

    @Test func imageViewOnFromPlaybackAndFromUnregistered() {
        #expect(CECMessage.imageViewOn(from: playback1).bytes == [0x40, 0x04])
        // A TV in standby that dropped hot-plug leaves the adapter without an address.
        #expect(CECMessage.imageViewOn(from: .unregistered).bytes == [0xF0, 0x04])
    }

    @Test func activeSourceIsBroadcastWithThePhysicalAddress() {
        #expect(CECMessage.activeSource(from: playback1, physical: CECPhysicalAddress(0x1000)).bytes == [0x4F, 0x82, 0x10, 0x00])
        #expect(CECMessage.activeSource(from: CECLogicalAddress(8), physical: CECPhysicalAddress(0x2310)).bytes == [0x8F, 0x82, 0x23, 0x10])
    }

    @Test func giveDevicePowerStatus() {
        let m = CECMessage.giveDevicePowerStatus(from: playback1)
        #expect(m.bytes == [0x40, 0x8F])
        #expect(m.initiator == playback1)
        #expect(m.destination == .tv)
        #expect(m.opcode == 0x8F)
    }

    @Test(arguments: [
        ([0x04, 0x90, 0x00], .on),
        ([0x04, 0x90, 0x01], .standby),
        ([0x04, 0x90, 0x02], .toOn),
        ([0x04, 0x90, 0x03], .toStandby),
        ([0x04, 0x90, 0x07], .unknown),
    ] as [([UInt8], CECPowerStatus)])
    func reportPowerStatusDecodes(bytes: [UInt8], expected: CECPowerStatus) {
        #expect(CECMessage(bytes: bytes).reportedPowerStatus == expected)
    }

    @Test func otherMessagesCarryNoPowerStatus() {
        #expect(CECMessage(bytes: [0x04, 0x90]).reportedPowerStatus == nil) // operand missing
        #expect(CECMessage(bytes: [0x04, 0x00, 0x8F, 0x00]).reportedPowerStatus == nil)
        #expect(CECMessage(bytes: [0x40]).reportedPowerStatus == nil) // a poll
    }

    @Test func featureAbortNamesTheRefusedOpcode() throws {
        let abort = try #require(CECMessage(bytes: [0x04, 0x00, 0x8F, 0x04]).featureAbort)
        #expect(abort.opcode == 0x8F)
        #expect(abort.reason == 0x04)
        #expect(CECMessage(bytes: [0x04, 0x90, 0x00]).featureAbort == nil)
    }

    @Test func physicalAddressText() {
        #expect(CECPhysicalAddress(0x1000).description == "1.0.0.0")
        #expect(CECPhysicalAddress(0x2310).description == "2.3.1.0")
        #expect(CECPhysicalAddress.invalid.description == "f.f.f.f")
        #expect(!CECPhysicalAddress(0xFFFF).isValid)
        #expect(CECPhysicalAddress(0).isValid) // the TV itself
    }

    @Test func powerStatusWireNames() {
        #expect(CECPowerStatus.toOn.rawValue == "to-on")
        #expect(CECPowerStatus.toStandby.rawValue == "to-standby")
    }
}

// Transmit results as the kernel fills `struct cec_msg` (tx_status / rx_status bits of
// <linux/cec.h>: TX OK 0x01, NACK 0x04, MAX_RETRIES 0x20; RX OK 0x01, TIMEOUT 0x02,
// FEATURE_ABORT 0x04).
@Suite struct CECPowerQueryTests {
    @Test func anAnswerGivesThePowerStatus() {
        let q = CECPowerQuery(CECTransmitResult(txStatus: 0x01, rxStatus: 0x01, reply: CECMessage(bytes: [0x04, 0x90, 0x01])))
        #expect(q.power == .standby)
        #expect(q.error == nil)
    }

    @Test func notAcknowledgedIsNoAnswer() {
        // No device at address 0: the kernel gives up after its retries.
        let q = CECPowerQuery(CECTransmitResult(txStatus: 0x24, rxStatus: 0, reply: nil))
        #expect(q.power == .unknown)
        #expect(q.error == "cec: no answer from the TV (Give Device Power Status not acknowledged)")
    }

    @Test func noReplyInTimeIsNoAnswer() {
        let q = CECPowerQuery(CECTransmitResult(txStatus: 0x01, rxStatus: 0x02, reply: nil))
        #expect(q.power == .unknown)
        #expect(q.error == "cec: no answer from the TV (no Report Power Status in time)")
    }

    @Test func featureAbortIsNoAnswer() {
        // A TV adapter without a follower: the kernel answers Feature Abort for it.
        let q = CECPowerQuery(CECTransmitResult(txStatus: 0x01, rxStatus: 0x05, reply: CECMessage(bytes: [0x04, 0x00, 0x8F, 0x00])))
        #expect(q.power == .unknown)
        #expect(q.error?.hasPrefix("cec: no answer from the TV") == true)
        #expect(q.error?.contains("Feature Abort") == true)
    }

    @Test func aWrongReplyIsNotTakenForAStatus() {
        let q = CECPowerQuery(CECTransmitResult(txStatus: 0x01, rxStatus: 0x01, reply: CECMessage(bytes: [0x04, 0x87, 0x00, 0x0C, 0x03])))
        #expect(q.power == .unknown)
        #expect(q.error != nil)
    }
}

// `adapter = "auto"` on connector-info answers recorded from real and emulated adapters:
// (path, type, card_no, connector_id) as CEC_ADAP_G_CONNECTOR_INFO gives them.
@Suite struct CECAutoMatchTests {
    typealias Recorded = (path: String, type: UInt32, card: UInt32, connector: UInt32)

    static func adapters(_ r: [Recorded]) -> [(path: String, connector: CECConnector)] {
        r.map { ($0.path, CECConnector(type: $0.type, card: $0.card, connectorId: $0.connector)) }
    }

    /// A Raspberry Pi 4/5: vc4 registers one adapter per HDMI port on its card (card 1 here:
    /// v3d probed first), HDMI-A-1 is connector 32 and HDMI-A-2 connector 42.
    static let pi: [Recorded] = [("/dev/cec0", 1, 1, 32), ("/dev/cec1", 1, 1, 42)]
    /// vivid's emulated bus: no DRM connector.
    static let vivid: [Recorded] = [("/dev/cec0", 0, 0, 0), ("/dev/cec1", 0, 0, 0)]
    /// A PC: i915's DisplayPort CEC tunnel on card 0 plus a USB adapter (no connector).
    static let pc: [Recorded] = [("/dev/cec0", 0, 0, 0), ("/dev/cec1", 1, 0, 95)]

    @Test(arguments: [
        (pi, 1, 32, "/dev/cec0"),
        (pi, 1, 42, "/dev/cec1"),
        (pi, 0, 32, nil),          // same connector id on another card
        (pi, 1, 33, nil),          // a connector without CEC (DSI)
        (vivid, 0, 0, nil),        // no DRM connector is never a match, even for id 0
        (pc, 0, 95, "/dev/cec1"),
        (pc, 1, 95, nil),
    ] as [([Recorded], UInt32, UInt32, String?)])
    func matches(recorded: [Recorded], card: UInt32, connector: UInt32, expected: String?) {
        #expect(CECAutoMatch.adapter(for: card, connectorId: connector, among: Self.adapters(recorded)) == expected)
    }

    @Test func listedOutOfOrderTheLowestNumberWins() {
        let r: [Recorded] = [("/dev/cec10", 1, 0, 50), ("/dev/cec2", 1, 0, 50)]
        #expect(CECAutoMatch.adapter(for: 0, connectorId: 50, among: Self.adapters(r)) == "/dev/cec2")
    }

    @Test func unknownConnectorTypesAreKeptApart() {
        #expect(CECConnector(type: 2, card: 1, connectorId: 32) == .other(2))
        #expect(CECConnector(type: 0, card: 1, connectorId: 32) == .none)
    }

    @Test func cardNumbers() {
        #expect(CECAutoMatch.cardNumber(ofDevicePath: "/dev/dri/card0") == 0)
        #expect(CECAutoMatch.cardNumber(ofDevicePath: "/dev/dri/card12") == 12)
        #expect(CECAutoMatch.cardNumber(ofDevicePath: "/dev/dri/renderD128") == nil)
        #expect(CECAutoMatch.cardNumber(ofDevicePath: "/dev/dri/cardX") == nil)
    }
}

@Suite struct CECAdapterChoiceTests {
    @Test func configWords() {
        #expect(CECAdapterChoice(configValue: "none") == CECAdapterChoice.none)
        #expect(CECAdapterChoice(configValue: "auto") == .auto)
        #expect(CECAdapterChoice(configValue: "/dev/cec1") == .path("/dev/cec1"))
        #expect(CECAdapterChoice(configValue: "cec1") == nil)
        #expect(CECAdapterChoice(configValue: "Auto") == nil)
        #expect(CECAdapterChoice(configValue: "/dev/") == nil)
        #expect(CECAdapterChoice(configValue: "") == nil)
    }
}
