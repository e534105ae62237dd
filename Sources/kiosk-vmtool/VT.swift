#if canImport(Glibc)
import Glibc
#endif
import CKioskLinux
import KioskCore

/// `kiosk-vmtool vt …`: switches the kernel's virtual consoles the way a user's Ctrl+Alt+Fn does,
/// with a bounded wait, so scenarios can test a program that follows VT switches (`VT_PROCESS`).
///
///   vt activate N [--timeout-ms MS] [--device PATH]
///       `ioctl(VT_ACTIVATE, N)` on /dev/tty0, then polls `VT_GETSTATE` every 10 ms until VT N is
///       the active console. Prints "vmtool: vt N active after MS ms"; exit 3 (naming the active
///       VT) when the switch did not complete in time — e.g. a `VT_PROCESS` owner that never
///       answered with `VT_RELDISP`.
///   vt active [--device PATH]
///       Prints the active VT number (`VT_GETSTATE` `v_active`).
enum VTTool {
    static func main(_ args: ArraySlice<String>) {
        guard let verb = args.first else { fail("vt needs 'activate N' or 'active'\n\(usage)", code: 2) }
        let o = Options(args.dropFirst(), known: ["timeout-ms", "device"])
        let device = o.string("device") ?? "/dev/tty0"
        switch verb {
        case "active":
            guard o.positional.isEmpty else { fail("vt active takes no arguments, got \(o.positional)", code: 2) }
            let fd = open(device)
            defer { close(fd) }
            print(activeVT(fd, device: device))
        case "activate":
            guard o.positional.count == 1, let n = Int32(o.positional[0]), (1...63).contains(n) else {
                fail("vt activate needs one VT number 1…63, got \(o.positional)", code: 2)
            }
            let timeoutMs = o.int("timeout-ms", 10000)
            let fd = open(device)
            defer { close(fd) }
            let start = nowNanos()
            guard ioctl(fd, UInt(VT_ACTIVATE), n) == 0 else {
                fail("VT_ACTIVATE \(n) on \(device) failed: \(String(cString: strerror(errno)))")
            }
            let ms = waitActive(fd, n, device: device, start: start, timeoutMs: timeoutMs)
            guard let ms else {
                fail("VT \(n) not active within \(timeoutMs) ms on \(device) (VT \(activeVT(fd, device: device)) still active; "
                     + "does its VT_PROCESS owner answer VT_RELDISP?)", code: 3)
            }
            say("vt \(n) active after \(ms) ms")
        default:
            fail("unknown vt command '\(verb)' (activate N | active)\n\(usage)", code: 2)
        }
    }

    /// Opens the console device without making it the controlling terminal (`open(O_NOCTTY)`).
    static func open(_ device: String) -> Int32 {
        let fd = Glibc.open(device, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { fail("cannot open \(device): \(String(cString: strerror(errno)))") }
        return fd
    }

    /// The active VT number (`ioctl(VT_GETSTATE)`).
    static func activeVT(_ fd: Int32, device: String) -> Int {
        var st = vt_stat()
        guard ioctl(fd, UInt(VT_GETSTATE), &st) == 0 else {
            fail("VT_GETSTATE on \(device) failed: \(String(cString: strerror(errno)))")
        }
        return Int(st.v_active)
    }

    /// Polls `VT_GETSTATE` every 10 ms until `n` is active; milliseconds since `start`, or nil after `timeoutMs`.
    static func waitActive(_ fd: Int32, _ n: Int32, device: String, start: Int64, timeoutMs: Int) -> Int? {
        let deadline = start + Int64(timeoutMs) * 1_000_000
        while true {
            let now = nowNanos()
            if activeVT(fd, device: device) == Int(n) { return Int((now - start) / 1_000_000) }
            if now >= deadline { return nil }
            sleepMs(10)
        }
    }
}
