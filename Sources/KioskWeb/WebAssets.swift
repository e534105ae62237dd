/// The phone page's files, served by kioskd itself (no CDN, no build step).
public enum WebAssets {
    /// The file at `path` ("/" is the page): its content type and bytes; nil: no such file.
    public static func file(_ path: String) -> (contentType: String, body: [UInt8])? {
        switch path {
        case "/", "/index.html":
            return ("text/html; charset=utf-8", Array(page.utf8))
        default:
            return nil
        }
    }

    private static let page = """
    <!doctype html>
    <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
    <title>kioskd</title></head>
    <body><h1>kioskd</h1><p>Pair this device with the code shown on the kiosk's screen.</p></body></html>
    """
}
