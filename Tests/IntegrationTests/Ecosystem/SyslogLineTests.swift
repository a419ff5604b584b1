// One message, one line: what the driver sends to syslog and through the
// start's pipe has its newlines made spaces, and nothing else changed.

@testable import DriverRuntime
import Testing

@Suite("Ecosystem: a log message is one line")
struct SyslogLineTests {
    @Test("onOneLine turns each newline into a space and keeps every other byte, multi-byte characters included")
    func newlinesBecomeSpaces() {
        #expect(onOneLine("a\nb\n\nc\n") == "a b  c ")
        #expect(onOneLine("no newline: é 😀 \r\t") == "no newline: é 😀 \r\t")
        #expect(onOneLine("é\n😀\nend") == "é 😀 end")
        #expect(onOneLine("") == "")
        // In a carriage return and line feed pair (one Character to Swift,
        // so a replacement by Characters would miss it) the feed goes too.
        #expect(onOneLine("x\r\ny") == "x\r y")
    }
}
