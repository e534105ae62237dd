import Foundation
import KioskControl
import KioskCore
import KioskDaemon
import Testing

/// The control API cannot make kioskd write a file where a client says: screenshots are answered
/// as PNG bytes, paintings go into the paintings folder under a plain file name.
@Suite struct FileRouteTests {
    func refusal(_ uri: String, _ body: String) -> ControlRequestError? {
        do {
            let c = try ControlRouter.parse(method: "POST", uri: uri, body: Array(body.utf8))
            Issue.record("\(uri) \(body) was accepted as \(c)")
            return nil
        } catch let e as ControlRequestError { return e } catch { Issue.record("\(error)"); return nil }
    }

    @Test func screenshotPathIsRefusedTheClientWritesTheFile() {
        for path in ["/tmp/x.png", "/etc/../tmp/x.png", "/var/lib/kioskd/state.png"] {
            let e = refusal("/screenshot", #"{"path":"\#(path)"}"#)
            #expect(e?.status == 400)
            #expect(e?.field == "path")
            #expect(e?.message.contains("kioskd writes no screenshot file; the answer is the PNG and the client writes it (kioskctl screenshot FILE.png)") == true, "\(String(describing: e))")
        }
    }

    @Test func paintSavePathIsRefusedAndNamesMustBePlain() {
        let p = refusal("/paint/save", #"{"path":"/tmp/x.png"}"#)
        #expect(p?.status == 400)
        #expect(p?.field == "path")
        #expect(p?.message.contains("paintings are saved in kioskd's paintings folder") == true, "\(String(describing: p))")
        for name in ["../x.png", "a/b.png", "/tmp/x.png", ".x.png", "x.txt", String(repeating: "a", count: 101) + ".png"] {
            let e = refusal("/paint/save", #"{"name":"\#(name)"}"#)
            #expect(e?.status == 400, "\(name)")
            #expect(e?.field == "name", "\(name)")
        }
    }
}
