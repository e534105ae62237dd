import Foundation
import Testing

/// Kernel tests of the DRM/KMS display: QEMU boots Debian's kernel with bochs-drm (-device VGA) or
/// virtio-gpu, the display code draws through `kiosk-vmtool drm` (and the real kioskd), and the
/// host checks QMP screendump pixels (scripts/vm/scenarios_drm.py). Enabled with KIOSK_VM_TESTS=1.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["KIOSK_VM_TESTS"] == "1"), .serialized)
struct DRMVMTests {
    @Test(arguments: ["drm-basic-bochs-atomic", "drm-basic-bochs-legacy", "drm-basic-virtio-atomic", "drm-basic-virtio-legacy"])
    func firstFrameDamageFlipsBlankAndRestore(_ scenario: String) throws {
        let r = try DRMVM.run(scenario)
        DRMVM.expectPassed(r, scenario)
        let res = r["results"] as? [String: Any] ?? [:]
        #expect(res["logical"] as? String == "1280x800")
        #expect(res["atomic"] as? String == (scenario.hasSuffix("atomic") ? "1" : "0"), "API in use: \(String(describing: res["atomic"]))")
        // Buffer age with two buffers: the first rect present copies the whole frame (that buffer
        // missed the pattern), the next ones only their own rect plus the previous one.
        #expect(res["copied"] as? [Int] == [1280 * 800, 5000, 5000], "copied \(String(describing: res["copied"]))")
        #expect(res["flip_events"] as? Int == 30)
        #expect((res["restored_changed_pixels"] as? Int ?? 0) > 1280 * 800 / 2)
        #expect(res["blanked_centre"] as? [Int] != [255, 255, 255])
    }

    @Test func rotation90TurnsThePicture() throws {
        let r = try DRMVM.run("drm-rotate90")
        DRMVM.expectPassed(r, "drm-rotate90")
        #expect((r["results"] as? [String: Any])?["logical"] as? String == "800x1280")
    }

    @Test func virtioGPUUnplugAndReplugIsFollowed() throws {
        let r = try DRMVM.run("drm-hotplug-virtio")
        DRMVM.expectPassed(r, "drm-hotplug-virtio")
        let after = (r["results"] as? [String: Any])?["after"] as? [String: Any] ?? [:]
        #expect(after["modesets"] as? String == "2" && after["inactive"] as? String == "1", "after replug: \(after)")
    }
}

enum DRMVM {
    /// Runs one scenario of scripts/vm/vmtest.py with the binaries built next to this test bundle
    /// (or KIOSKD_BIN / KIOSK_VMTOOL_BIN) and returns its RESULT object.
    static func run(_ scenario: String) throws -> [String: Any] {
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let binDir = URL(fileURLWithPath: exe).deletingLastPathComponent().path
        let env = ProcessInfo.processInfo.environment
        let kioskd = env["KIOSKD_BIN"] ?? "\(binDir)/kioskd"
        let vmtool = env["KIOSK_VMTOOL_BIN"] ?? "\(binDir)/kiosk-vmtool"
        guard FileManager.default.isExecutableFile(atPath: vmtool) else {
            throw DRMVMError("\(vmtool) is not built (swift build --product kiosk-vmtool)")
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        p.arguments = [root.appendingPathComponent("scripts/vm/vmtest.py").path, "--scenario", scenario,
                       "--kioskd", kioskd, "--vmtool", vmtool]
        p.currentDirectoryURL = root
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.standardError
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix("RESULT ") }),
              let obj = try JSONSerialization.jsonObject(with: Data(line.dropFirst(7).utf8)) as? [String: Any] else {
            throw DRMVMError("no RESULT line from vmtest.py \(scenario) (exit \(p.terminationStatus)): \(text.suffix(2000))")
        }
        #expect(p.terminationStatus == (obj["ok"] as? Bool == true ? 0 : 1), "vmtest.py exit status \(p.terminationStatus)")
        return obj
    }

    static func expectPassed(_ r: [String: Any], _ scenario: String) {
        let failures = r["failures"] as? [String] ?? ["no failures list"]
        #expect(r["ok"] as? Bool == true, "\(scenario) failed: \(failures.joined(separator: "; "))")
        #expect(failures.isEmpty, "\(scenario): \(failures)")
    }
}

struct DRMVMError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
