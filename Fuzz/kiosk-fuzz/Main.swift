import Foundation

/// Fuzz targets for kioskd's parsers, one binary: `kiosk-fuzz TARGET [libFuzzer options] [CORPUS…]`.
///
/// Built with `-sanitize=fuzzer -DFUZZING` (scripts/fuzz.sh) it runs libFuzzer on TARGET; built
/// normally it runs TARGET once on each file given (to replay a corpus or a crashing input).
/// Targets: `config` (TOML text → DaemonConfig), `theme` (theme file → Theme), `control` (raw
/// bytes on the control socket → NIO's HTTP decoder → ControlRouter → answer).
enum FuzzTargets {
    static let all: [String: @Sendable (UnsafeRawBufferPointer) -> Void] = [
        "config": ConfigTarget.run,
        "theme": ThemeTarget.run,
        "control": ControlTarget.run,
    ]

    /// The target chosen by `KIOSK_FUZZ_TARGET` (set from the first argument, so that libFuzzer's
    /// child processes, which get the arguments without it, run the same target).
    nonisolated(unsafe) static var current: ((UnsafeRawBufferPointer) -> Void)?

    static func usage() -> Never {
        printError("usage: kiosk-fuzz \(all.keys.sorted().joined(separator: "|")) [libFuzzer options] [corpus dirs or files]\n")
        exit(64)
    }

    /// Picks the target and returns the remaining arguments.
    static func select() -> [String] {
        var args = CommandLine.arguments
        if args.count > 1, all[args[1]] != nil {
            setenv("KIOSK_FUZZ_TARGET", args[1], 1)
            args.remove(at: 1)
        }
        guard let name = ProcessInfo.processInfo.environment["KIOSK_FUZZ_TARGET"], let t = all[name] else { usage() }
        current = t
        return args
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func LLVMFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTargets.current?(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size))
    return 0
}

#if FUZZING
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<CInt>,
                         _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

@main
struct FuzzMain {
    static func main() {
        let args = FuzzTargets.select()
        var cArgs: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        var argc = CInt(args.count)
        let code = cArgs.withUnsafeMutableBufferPointer { buf -> CInt in
            var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = buf.baseAddress
            return LLVMFuzzerRunDriver(&argc, &argv) { LLVMFuzzerTestOneInput($0, $1) }
        }
        exit(code)
    }
}
#else
@main
struct ReplayMain {
    static func main() {
        let args = FuzzTargets.select().dropFirst()
        var files: [String] = []
        for a in args where !a.hasPrefix("-") {
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: a, isDirectory: &isDir), isDir.boolValue {
                files += ((try? FileManager.default.contentsOfDirectory(atPath: a)) ?? []).sorted().map { "\(a)/\($0)" }
            } else {
                files.append(a)
            }
        }
        for f in files {
            guard let d = FileManager.default.contents(atPath: f) else { printError("cannot read \(f)\n"); exit(1) }
            printError("running \(f) (\(d.count) bytes)\n")
            d.withUnsafeBytes { FuzzTargets.current?($0) }
        }
        printError("ran \(files.count) inputs\n")
    }
}
#endif

/// Writes a message to standard error.
func printError(_ s: String) { FileHandle.standardError.write(Data(s.utf8)) }
