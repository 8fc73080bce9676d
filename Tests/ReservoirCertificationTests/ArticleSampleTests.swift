import Foundation
import Testing

/// The article's Swift blocks are in WritingABackendSample.swift verbatim, so building this
/// target compiles the sample as the article shows it.
@Suite("The DocC article's sample")
struct ArticleSampleTests {
    @Test func everySwiftBlockOfTheArticleIsInTheCompiledSample() throws {
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let article = try String(contentsOf: here.appendingPathComponent("../../Sources/Reservoir/Reservoir.docc/WritingABackend.md").standardized, encoding: .utf8)
        let sample = try String(contentsOf: here.appendingPathComponent("WritingABackendSample.swift"), encoding: .utf8)
        let blocks = article.components(separatedBy: "```swift\n").dropFirst().compactMap { $0.components(separatedBy: "\n```").first }
        #expect(blocks.count >= 2, "the article's Swift blocks: \(blocks.count)")
        for block in blocks {
            #expect(sample.contains(block), "not in WritingABackendSample.swift as written:\n\(block)")
        }
    }
}
