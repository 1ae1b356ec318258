import Testing
@testable import AttacheServer

@Suite("Fault plans")
struct FaultPlanTests {
    @Test(arguments: [
        ("503", [FaultRule(.status(503, retryAfter: nil))]),
        ("429@2:retry-after=5", [FaultRule(.status(429, retryAfter: 5), when: .requests(2...2))]),
        ("429", [FaultRule(.status(429, retryAfter: 1))]),
        ("413@1-3", [FaultRule(.tooLargeEarly, when: .requests(1...3))]),
        ("stall@*:seconds=0.5", [FaultRule(.stall(seconds: 0.5))]),
        ("drop:after=10,garbage@4", [FaultRule(.drop(afterBytes: 10)), FaultRule(.garbage, when: .requests(4...4))]),
        ("empty@50%, truncated", [FaultRule(.empty, when: .percent(50)), FaultRule(.truncated)]),
        ("business:code=7:message=a%2Cb", [FaultRule(.business(code: 7, message: "a,b"))]),
        ("business", [FaultRule(.business(code: 1001, message: "rejected by business rule"))]),
        ("", []),
    ] as [(String, [FaultRule])])
    func parsesValidSpecs(spec: String, rules: [FaultRule]) throws {
        let plan = try FaultPlan(parsing: spec)
        #expect(plan.rules == rules)
        // What a plan prints parses back to the same plan.
        #expect(try FaultPlan(parsing: plan.description) == plan)
    }

    @Test(arguments: ["418", "503@0", "503@3-1", "503@x", "drop:after=-1", "stall:seconds=abc", "503:bogus=1", "garbage:x", "50@150%"])
    func rejectsInvalidSpecs(spec: String) {
        #expect(throws: (any Error).self) { try FaultPlan(parsing: spec) }
    }

    @Test func schedulesMatchTheRightRequests() throws {
        let plan = try FaultPlan(parsing: "503@2-3,500@5")
        #expect((1...6).map { plan.fault(forRequest: $0)?.name } == [nil, "503", "503", nil, "500", nil])
        let never = try FaultPlan(parsing: "503@0%")
        #expect((1...50).allSatisfy { never.fault(forRequest: $0) == nil })
        let always = try FaultPlan(parsing: "503@100%")
        #expect((1...50).allSatisfy { always.fault(forRequest: $0) != nil })
    }
}

@Suite("Range header")
struct ByteRangeTests {
    @Test(arguments: [
        (nil, 100, ByteRange.whole),
        ("bytes=0-0", 100, .partial(0...0)),
        ("bytes=10-", 100, .partial(10...99)),
        ("bytes=-200", 100, .partial(0...99)),
        ("bytes=100-", 100, .unsatisfiable),
        ("bytes=0-", 0, .unsatisfiable),
        ("bytes=5-2", 100, .whole),
        ("bytes=a-b", 100, .whole),
    ] as [(String?, Int64, ByteRange)])
    func parses(header: String?, size: Int64, expected: ByteRange) {
        #expect(ByteRange.parse(header, size: size) == expected)
    }
}
