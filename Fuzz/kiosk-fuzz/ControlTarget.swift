import Foundation
import KioskControl
import KioskDaemon
import NIOCore
import NIOEmbedded
import NIOHTTP1

/// Raw bytes on the control socket → NIO's HTTP/1.1 server pipeline (`configureHTTPServerPipeline`,
/// as the daemon uses: decoder, pipelining, error handling) → `ControlRouter.parse` → an answer
/// encoded back. The bytes arrive in up to three writes (split where a hash of the input says)
/// so partial heads and bodies are exercised too.
enum ControlTarget {
    /// Collects each request (body bounded like the daemon's), routes it and answers.
    final class Router: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        var head: HTTPRequestHead?
        var body: [UInt8] = []
        var tooLarge = false

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let h):
                head = h; body = []; tooLarge = false
            case .body(var b):
                if body.count + b.readableBytes > ControlRouter.maxBodyBytes { tooLarge = true; body = [] }
                else if !tooLarge { body += b.readBytes(length: b.readableBytes) ?? [] }
            case .end:
                guard let h = head else { return }
                head = nil
                let r: ControlResponse
                if tooLarge {
                    r = .error(413, "request body too large")
                } else {
                    do {
                        let cmd = try ControlRouter.parse(method: h.method.rawValue, uri: h.uri, body: body)
                        r = .json(200, ["command": "\(cmd)"])
                    } catch let e as ControlRequestError {
                        r = e.response
                    } catch {
                        r = .error(400, "\(error)")
                    }
                }
                _ = r.jsonObject
                var headers = HTTPHeaders()
                headers.add(name: "Content-Type", value: r.contentType)
                headers.add(name: "Content-Length", value: "\(r.body.count)")
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: h.version, status: HTTPResponseStatus(statusCode: r.status), headers: headers))), promise: nil)
                var buf = context.channel.allocator.buffer(capacity: r.body.count)
                buf.writeBytes(r.body)
                context.write(wrapOutboundOut(.body(.byteBuffer(buf))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }

    static func run(_ data: UnsafeRawBufferPointer) {
        let bytes = Array(data)
        let channel = EmbeddedChannel()
        do {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
            try channel.pipeline.syncOperations.addHandler(Router())
        } catch {
            fatalError("cannot set up the pipeline: \(error)")
        }
        // Split points from a hash of the input: the same input always arrives in the same pieces.
        var h: UInt64 = 0xcbf29ce484222325
        for x in bytes { h = (h ^ UInt64(x)) &* 0x100000001b3 }
        let n = bytes.count
        let a = h & 3 == 0 ? n : Int((h >> 8) % UInt64(n + 1))
        let b = a + Int((h >> 32) % UInt64(n - a + 1))
        let cuts = [0, a, b, n]
        for i in 0..<3 where cuts[i] < cuts[i + 1] {
            var buf = channel.allocator.buffer(capacity: cuts[i + 1] - cuts[i])
            buf.writeBytes(bytes[cuts[i]..<cuts[i + 1]])
            do { try channel.writeInbound(buf) } catch { break }
            while let _ = try? channel.readOutbound(as: ByteBuffer.self) {}
            if !channel.isActive { break }
        }
        while let _ = try? channel.readOutbound(as: ByteBuffer.self) {}
        _ = try? channel.finish(acceptAlreadyClosed: true)
    }
}
