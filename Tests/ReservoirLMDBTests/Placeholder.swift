import Testing
@testable import ReservoirLMDB
