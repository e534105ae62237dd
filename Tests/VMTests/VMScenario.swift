import Foundation
import KioskTesting
import Testing

/// Runs the QEMU kernel-test scenarios of scripts/vm/vmtest.py from swift test. The scenario is the
/// one oracle: its checks (scripts/vm/scenarios_*.py) decide pass or fail; a test here runs it,
/// records one issue per failed check and prints the figures it measured.
enum VMScenario {
    /// Runs `scenario` with the binaries built next to this test bundle (or KIOSKD_BIN /
    /// KIOSK_VMTOOL_BIN), expects it to pass and returns its `results` (for the log).
    @discardableResult
    static func check(_ scenario: String, needsKioskd: Bool = false) throws -> [String: Any] {
        let r = try run(scenario, needsKioskd: needsKioskd)
        let failures = r["failures"] as? [String] ?? ["the RESULT line has no failures list"]
        #expect(r["ok"] as? Bool == true && failures.isEmpty, "\(scenario) failed (\(failures.count) check(s))")
        for f in failures { Issue.record("\(scenario): \(f)") }
        let results = r["results"] as? [String: Any] ?? [:]
        if let data = try? JSONSerialization.data(withJSONObject: results, options: [.sortedKeys]) {
            print("\(scenario) results: \(String(decoding: data, as: UTF8.self).prefix(4000))")
        }
        return results
    }

    /// Runs one scenario of scripts/vm/vmtest.py and returns its RESULT object.
    static func run(_ scenario: String, needsKioskd: Bool = false) throws -> [String: Any] {
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let binDir = URL(fileURLWithPath: exe).deletingLastPathComponent().path
        let env = ProcessInfo.processInfo.environment
        let kioskd = env["KIOSKD_BIN"] ?? "\(binDir)/kioskd"
        let vmtool = env["KIOSK_VMTOOL_BIN"] ?? "\(binDir)/kiosk-vmtool"
        for bin in needsKioskd ? [vmtool, kioskd] : [vmtool] where !FileManager.default.isExecutableFile(atPath: bin) {
            throw VMScenarioError("\(bin) is not built (swift build --product \(URL(fileURLWithPath: bin).lastPathComponent))")
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let p = try SpawnedProcess("/usr/bin/python3", [root.appendingPathComponent("scripts/vm/vmtest.py").path, "--scenario", scenario,
                                                        "--kioskd", kioskd, "--vmtool", vmtool],
                                   directory: root.path, stdout: .pipe, stderr: .inherit)
        let text = p.output()
        p.wait()
        guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix("RESULT ") }),
              let obj = try JSONSerialization.jsonObject(with: Data(line.dropFirst(7).utf8)) as? [String: Any] else {
            throw VMScenarioError("no RESULT line from vmtest.py \(scenario) (exit \(p.exitStatus)): \(text.suffix(2000))")
        }
        #expect(p.exitStatus == (obj["ok"] as? Bool == true ? 0 : 1), "vmtest.py exit status \(p.exitStatus)")
        return obj
    }
}

struct VMScenarioError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// Whether the QEMU kernel tests run (KIOSK_VM_TESTS=1).
let vmTestsEnabled = ProcessInfo.processInfo.environment["KIOSK_VM_TESTS"] == "1"
