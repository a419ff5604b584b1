import SandboxPolicy
import Testing

@Suite("L1 app names")
struct AppNameTests {
    @Test("L1 a plain name is accepted", arguments: [
        "MyApp", "My App", "App-1_2", "a", "Caf\u{E9}", "日本語", "Documents", "Inbox", "tmp", "app",
        "My.App", "MyApp.", String(repeating: "x", count: 251), String(repeating: "\u{E9}", count: 125) + "x",
    ])
    func plainNames(name: String) {
        #expect(ContainerLayout.problemWithAppName(name) == nil)
    }

    @Test("L1 a name that is not plain is refused with a reason", arguments: [
        ("", "empty"),
        ("a/b", "\"/\""),
        ("/", "\"/\""),
        ("MyApp/", "\"/\""),
        (".", "cannot be \".\""),
        ("..", "cannot be \"..\""),
        (".hidden", "starts with \".\""),
        (".app", "starts with \".\""),
        ("a\u{0}b", "NUL"),
        ("a\nb", "control character"),
        ("a\tb", "control character"),
        ("a\u{7F}", "control character"),
        (String(repeating: "x", count: 252), "252 bytes"),
        (String(repeating: "\u{E9}", count: 126), "252 bytes"),
        ("MyApp.app", "ends with \".app\""),
    ])
    func notPlainNames(name: String, reason: String) {
        let problem = ContainerLayout.problemWithAppName(name)
        #expect(problem?.contains(reason) == true, "\(String(describing: problem))")
    }

    @Test("L1 the longest name leaves room for .app in 255 bytes")
    func longestName() {
        #expect(ContainerLayout.maximumAppNameBytes == 251)
        let name = String(repeating: "x", count: 251)
        #expect(ContainerLayout(appName: name).bundleName.utf8.count == 255)
    }
}
