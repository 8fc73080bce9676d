import Foundation
import Testing

/// The README's "Using the library" code is Examples/UsingTheLibrary's main.swift, which
/// scripts/run-example builds and runs: this keeps the two the same text.
@Suite("README example")
struct ReadmeExampleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The first Swift code block after `heading` marked as the example's main.swift
    /// (`<!-- compiled: main -->`; scripts/readme-snippets compiles the others).
    static func firstSwiftBlock(in markdown: String, after heading: String) -> String? {
        guard let section = markdown.range(of: "\n" + heading + "\n"),
              let open = markdown.range(of: "<!-- compiled: main -->\n```swift\n", range: section.upperBound..<markdown.endIndex),
              let close = markdown.range(of: "\n```\n", range: open.upperBound..<markdown.endIndex) else { return nil }
        return String(markdown[open.upperBound..<close.lowerBound]) + "\n"
    }

    @Test("the README's main code block under \"Using the library\" is the example's main.swift, character for character")
    func sameText() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let main = try String(contentsOf: Self.root.appendingPathComponent("Examples/UsingTheLibrary/Sources/UsingTheLibrary/main.swift"), encoding: .utf8)
        let snippet = try #require(Self.firstSwiftBlock(in: readme, after: "## Using the library"), "README.md has no ```swift block under \"## Using the library\"")
        let snippetLines = snippet.split(separator: "\n", omittingEmptySubsequences: false)
        let mainLines = main.split(separator: "\n", omittingEmptySubsequences: false)
        let firstDifference = zip(snippetLines, mainLines).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(snippetLines.count, mainLines.count)
        #expect(snippet == main, """
            README.md and Examples/UsingTheLibrary/Sources/UsingTheLibrary/main.swift differ from line \(firstDifference + 1) of the snippet: \
            README has "\(firstDifference < snippetLines.count ? String(snippetLines[firstDifference]) : "(end)")", \
            main.swift has "\(firstDifference < mainLines.count ? String(mainLines[firstDifference]) : "(end)")"; change both
            """)
    }

    @Test("the block finder takes the first main-marked Swift block after the heading, whole")
    func finder() {
        let markdown = "# T\n<!-- compiled: main -->\n```swift\nbefore\n```\n## Using the library\n\ntext\n<!-- compiled: manifest -->\n```swift\nlet m = 0\n```\n<!-- compiled: main -->\n```swift\nlet a = 1\n\nlet b = 2\n```\n```swift\nlater\n```\n"
        #expect(Self.firstSwiftBlock(in: markdown, after: "## Using the library") == "let a = 1\n\nlet b = 2\n")
        #expect(Self.firstSwiftBlock(in: markdown, after: "## Missing") == nil)
    }
}
