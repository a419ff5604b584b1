// The INIT reply that asks the kernel for passthrough: what it grants must be
// known to every worker before the kernel can read the reply. The kernel
// sends the first CREATE or OPEN the moment it has it; a worker that still
// saw "not granted" answered it without passthrough, a later open of the
// same file was answered with it, and the kernel failed that open (its
// io-mode check: EIO). TmpfileRulesTests.unnamedThenNamed (W1) failed so in
// about one run of five.

import CFuse
@testable import FuseKit
import Foundation
import Glibc
import Synchronization
import Testing

@Suite struct InitGrantTests {
    /// An INIT request offering passthrough, as the kernel writes it.
    private static func initRequest(unique: UInt64) -> [UInt8] {
        var header = cfuse_in_header()
        var body = cfuse_init_in()
        header.opcode = CFUSE_OPCODE_INIT
        header.unique = unique
        header.len = UInt32(MemoryLayout<cfuse_in_header>.size + MemoryLayout<cfuse_init_in>.size)
        body.major = 7
        body.minor = 45
        body.flags = CFUSE_INIT_EXT
        body.flags2 = CFUSE_PASSTHROUGH_FLAGS2
        return withUnsafeBytes(of: header) { Array($0) } + withUnsafeBytes(of: body) { Array($0) }
    }

    /// libfuse's reply to it: no error, nothing asked for.
    private static func initReply(unique: UInt64) -> [UInt8] {
        var header = cfuse_out_header()
        header.unique = unique
        header.len = UInt32(CFUSE_INIT_REPLY_SIZE)
        var reply = withUnsafeBytes(of: header) { Array($0) }
        reply += [UInt8](repeating: 0, count: Int(CFUSE_INIT_REPLY_SIZE) - reply.count)
        return reply
    }

    @Test("passthrough's grant is published before the INIT reply is written (a blocked write shows it granted)")
    func grantKnownBeforeTheKernelReadsTheReply() throws {
        var pipeEnds: [Int32] = [0, 0]
        try #require(pipe(&pipeEnds) == 0)
        defer { close(pipeEnds[0]); close(pipeEnds[1]) }
        // Fill the pipe, so that writing the reply blocks until the test reads.
        let readEnd = pipeEnds[0], writeEnd = pipeEnds[1]
        _ = fcntl(writeEnd, F_SETFL, O_NONBLOCK)
        let filler = [UInt8](repeating: 0, count: 4096)
        var filled = 0
        while true {
            let n = write(writeEnd, filler, filler.count)
            if n <= 0 { break }
            filled += n
        }
        _ = fcntl(writeEnd, F_SETFL, 0)

        let channel = PassthroughChannel(wanted: true, killPrivV2: true)
        channel.attach(device: writeEnd)
        var request = Self.initRequest(unique: 2)
        request.withUnsafeMutableBytes { channel.received($0.baseAddress!, length: $0.count) }

        let written = Atomic<Int>(-2)
        let sender = Thread {
            var reply = Self.initReply(unique: 2)
            let count = reply.withUnsafeMutableBytes { bytes in
                var iov = iovec(iov_base: bytes.baseAddress, iov_len: bytes.count)
                return channel.send(writeEnd, &iov, 1, ring: nil)
            }
            written.store(count, ordering: .releasing)
        }
        sender.start()
        // While the reply's write is blocked, the grant must already show.
        var seenGranted = false
        for _ in 0..<2000 where !seenGranted {
            seenGranted = channel.granted && channel.killPrivV2
            if !seenGranted { usleep(1000) }
        }
        #expect(written.load(ordering: .acquiring) == -2, "the reply's write did not block")
        #expect(seenGranted, "passthrough was granted only after the reply reached the kernel")
        // Let the write through, then read the reply back: it asks for passthrough.
        var drained = 0
        var buffer = [UInt8](repeating: 0, count: 4096)
        while drained < filled {
            let n = read(readEnd, &buffer, min(buffer.count, filled - drained))
            if n <= 0 { break }
            drained += n
        }
        var reply = [UInt8](repeating: 0, count: Int(CFUSE_INIT_REPLY_SIZE))
        #expect(read(readEnd, &reply, reply.count) == reply.count)
        for _ in 0..<2000 where written.load(ordering: .acquiring) == -2 { usleep(1000) }
        #expect(written.load(ordering: .acquiring) == Int(CFUSE_INIT_REPLY_SIZE))
        let body = reply.withUnsafeBytes {
            $0.loadUnaligned(fromByteOffset: MemoryLayout<cfuse_out_header>.size, as: cfuse_init_out.self)
        }
        #expect(body.flags2 & CFUSE_PASSTHROUGH_FLAGS2 != 0 && body.flags & CFUSE_INIT_EXT != 0)
        #expect(channel.granted)
    }
}
