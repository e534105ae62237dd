import Testing
@testable import KioskDRM

/// Which device an output is driven on (`DRMDeviceChoice`), on a Raspberry Pi 5's devices as the
/// kernel names them: vc4 for HDMI, RP1's DSI, and v3d, render-only; card numbers in probe order.
struct DeviceChoiceTests {
    static let pi5 = [
        DRMDeviceSummary(path: "/dev/dri/card0", driver: "v3d", byPath: "/dev/dri/by-path/platform-1002000000.v3d-card", connectors: nil),
        DRMDeviceSummary(path: "/dev/dri/card1", driver: "drm-rp1-dsi", byPath: "/dev/dri/by-path/platform-1f00130000.dsi-card",
                         connectors: ["DSI-2"]),
        DRMDeviceSummary(path: "/dev/dri/card2", driver: "vc4", byPath: "/dev/dri/by-path/platform-axi:gpu-card",
                         connectors: ["HDMI-A-1", "HDMI-A-2", "Writeback-1"]),
    ]

    func choose(_ device: String?, _ connector: String? = nil, _ devices: [DRMDeviceSummary] = pi5) -> String {
        do { return try DRMDeviceChoice.resolve(device: device, connector: connector, among: devices) ?? "default" } catch {
            return "error: \(error)"
        }
    }

    @Test func aDriverNameChoosesItsDevice() {
        #expect(choose("vc4") == "/dev/dri/card2")
        #expect(choose("drm-rp1-dsi", "DSI-2") == "/dev/dri/card1")
        // Written either way, as drivers name themselves with - or _.
        #expect(choose("drm_rp1_dsi") == "/dev/dri/card1")
        #expect(choose("VC4", "HDMI-A-2") == "/dev/dri/card2")
    }

    @Test func aPathOrByPathNameChoosesItsDevice() {
        #expect(choose("/dev/dri/card1") == "/dev/dri/card1")
        #expect(choose("/dev/dri/by-path/platform-axi:gpu-card") == "/dev/dri/card2")
        // A path no device has (yet) is kept as written: the card waits for it.
        #expect(choose("/dev/dri/by-path/pci-0000:01:00.0-card") == "/dev/dri/by-path/pci-0000:01:00.0-card")
    }

    @Test func aConnectorAloneIsSearchedOverEveryDevice() {
        #expect(choose(nil, "DSI-2") == "/dev/dri/card1")
        #expect(choose(nil, "hdmi-a-2") == "/dev/dri/card2")
        // Not on any device: the default device, whose card names the missing connector.
        #expect(choose(nil, "DPI-1") == "default")
        #expect(choose(nil, nil) == "default")
    }

    @Test func renderOnlyDevicesAreNeverChosen() {
        let v3d = choose("v3d")
        #expect(v3d.hasPrefix("error: driver \"v3d\" has no device with connectors (render-only: /dev/dri/card0 (v3d, "), "\(v3d)")
        let byPath = choose("/dev/dri/by-path/platform-1002000000.v3d-card")
        #expect(byPath.contains("/dev/dri/by-path/platform-1002000000.v3d-card is /dev/dri/card0 (v3d, ") && byPath.contains("render-only"),
                "\(byPath)")
        let none = choose("vc5")
        #expect(none.hasPrefix("error: no DRM device has driver \"vc5\"; devices: /dev/dri/card0 (v3d, "), "\(none)")
        #expect(none.contains("/dev/dri/card2 (vc4, /dev/dri/by-path/platform-axi:gpu-card)") && none.contains("kioskd --list-outputs"))
    }

    /// Two cards of one driver (two virtio-gpus): the connector decides; when both have it, or
    /// no connector is named, the choice is refused naming both.
    @Test func twoDevicesOfOneDriverAreAmbiguousUnlessTheConnectorDecides() {
        let two = [
            DRMDeviceSummary(path: "/dev/dri/card0", driver: "virtio_gpu", byPath: "/dev/dri/by-path/pci-0000:00:01.0-card",
                             connectors: ["Virtual-1"]),
            DRMDeviceSummary(path: "/dev/dri/card1", driver: "virtio_gpu", byPath: "/dev/dri/by-path/pci-0000:00:02.0-card",
                             connectors: ["Virtual-2", "Virtual-3"]),
        ]
        #expect(choose("virtio_gpu", "Virtual-3", two) == "/dev/dri/card1")
        let unnamed = choose("virtio_gpu", nil, two)
        #expect(unnamed == "error: driver \"virtio_gpu\" names 2 DRM devices: /dev/dri/card0 (virtio_gpu, /dev/dri/by-path/pci-0000:00:01.0-card), "
            + "/dev/dri/card1 (virtio_gpu, /dev/dri/by-path/pci-0000:00:02.0-card); name this output's connector, or the device by its "
            + "/dev/dri/by-path name", "\(unnamed)")
        var same = two
        same[1].connectors = ["Virtual-1"]
        let both = choose("virtio_gpu", "Virtual-1", same)
        #expect(both.hasPrefix("error: driver \"virtio_gpu\" names 2 DRM devices and connector \"Virtual-1\" is on 2 of them: /dev/dri/card0 "),
                "\(both)")
        let search = choose(nil, "Virtual-1", same)
        #expect(search.hasPrefix("error: connector \"Virtual-1\" is on 2 DRM devices: /dev/dri/card0 (virtio_gpu, ")
            && search.contains("/dev/dri/card1 (virtio_gpu, /dev/dri/by-path/pci-0000:00:02.0-card)"), "\(search)")
        #expect(choose("virtio_gpu", "Virtual-9", two).contains("connector \"Virtual-9\" is on none of them"))
    }
}
