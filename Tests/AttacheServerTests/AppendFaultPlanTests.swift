import Testing
@testable import AttacheServer

@Suite("Append fault plans")
struct AppendFaultPlanTests {
    @Test func rulesParseAndPrintBack() throws {
        let plan = try AppendFaultPlan(parsing: "drop@1-3:after=5000, stall@4:after=10:seconds=2,460@5")
        #expect(plan.description == "drop@1-3:after=5000,stall@4:after=10:seconds=2,460@5")
        #expect(plan.fault(forRequest: 2) == .drop(afterBytes: 5000))
        #expect(plan.fault(forRequest: 4) == .stall(afterBytes: 10, seconds: 2))
        #expect(plan.fault(forRequest: 5) == .checksumMismatch)
        #expect(plan.fault(forRequest: 6) == nil)
        #expect(try AppendFaultPlan(parsing: "").isEmpty)
    }

    @Test(arguments: ["cut", "drop:after=0", "drop:seconds=1", "460:after=3", "drop@x"])
    func badRulesAreRefused(_ spec: String) {
        #expect(throws: (any Error).self) { try AppendFaultPlan(parsing: spec) }
    }

    @Test func metadataDecodesTusPairsAndRefusesGarbage() {
        let pairs = ResumableController.decodeMetadata("filename d29ybGRfZG9taW5hdGlvbl9wbGFuLnBkZg==,is_confidential")
        #expect(pairs == [["filename", "world_domination_plan.pdf"], ["is_confidential", ""]])
        #expect(ResumableController.decodeMetadata("filename !!!") == nil)
        #expect(ResumableController.decodeMetadata(nil) == [])
        #expect(ResumableController.encodeMetadata([["a", "b c"]]) == "a YiBj")
        #expect(ResumableController.parseBoolean("?1") == true)
        #expect(ResumableController.parseBoolean("?0") == false)
        #expect(ResumableController.parseBoolean("1") == nil)
    }
}
