import Foundation
import SeamJSON
import XCTest

/// Random mutations of valid documents: every one either decodes or throws `JSONError` (never
/// crashes), and whatever decodes re-encodes to bytes that decode to the same value.
///
/// `SEAM_FUZZ_ITERATIONS` sets the number of documents (scripts/test sets 20000).
final class JSONFuzzTests: XCTestCase {
    private var iterations: Int {
        ProcessInfo.processInfo.environment["SEAM_FUZZ_ITERATIONS"].flatMap { Int($0) } ?? 2_000
    }

    func testValuesRoundTrip() throws {
        var documents = RandomDocuments(seed: 11)
        for _ in 0..<iterations {
            let value = documents.value()
            let bytes = value.encoded()
            XCTAssertEqual(try JSON.decode(bytes), value, String(decoding: bytes, as: UTF8.self))
        }
    }

    func testMutationsDecodeOrThrow() {
        var documents = RandomDocuments(seed: 12)
        var decoded = 0
        for _ in 0..<iterations {
            let input = documents.mutate(documents.document())
            guard let value = checkedDecode(input) else { continue }
            decoded += 1
            let encoded = value.encoded()
            do {
                let again = try JSON.decode(encoded)
                XCTAssertEqual(again, value, String(decoding: encoded, as: UTF8.self))
                XCTAssertEqual(again.encoded(), encoded)
            } catch {
                XCTFail("re-encoded \(String(decoding: encoded, as: UTF8.self).debugDescription) fails: \(error)")
            }
        }
        XCTAssertGreaterThan(decoded, iterations / 50, "the mutations should leave some documents valid")
        print("JSONFuzzTests: \(iterations) mutated documents, \(decoded) decoded and round-tripped, the rest refused")
    }

    /// Decodes `input`, checking that an error names a byte inside it (or its end).
    private func checkedDecode(_ input: [UInt8]) -> JSON? {
        do {
            return try JSON.decode(input)
        } catch {
            XCTAssertTrue((0...input.count).contains(error.offset), "\(error) for \(input.count) bytes")
            XCTAssertFalse(error.message.isEmpty)
            return nil
        }
    }

    /// The same mutated documents through Python's `json` module, made as strict as RFC 8259 (strict
    /// UTF-8, no lone surrogates, no duplicate keys, no NaN, depth ≤ 64): the two must accept the
    /// same documents and write the same bytes for them.
    func testAgreesWithPython() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else {
            throw XCTSkip("python3 is not installed")
        }
        var documents = RandomDocuments(seed: 13)
        let inputs = (0..<iterations).map { _ in documents.mutate(documents.document()) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("seam-json-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let inputFile = directory.appendingPathComponent("in.txt")
        let outputFile = directory.appendingPathComponent("out.txt")
        try inputs.map(Self.hex).joined(separator: "\n").write(to: inputFile, atomically: true, encoding: .utf8)

        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        python.arguments = ["-c", Self.pythonChecker, inputFile.path, outputFile.path]
        try python.run()
        python.waitUntilExit()
        XCTAssertEqual(python.terminationStatus, 0)
        let answers = try String(contentsOf: outputFile, encoding: .utf8).split(
            separator: "\n", omittingEmptySubsequences: false)
        XCTAssertEqual(answers.count, inputs.count)

        var accepted = 0
        for (input, answer) in zip(inputs, answers) {
            let ours = (try? JSON.decode(input)).map { Self.hex($0.encoded()) } ?? "-"
            XCTAssertEqual(ours, String(answer), String(decoding: input, as: UTF8.self).debugDescription)
            if ours != "-" { accepted += 1 }
        }
        XCTAssertGreaterThan(accepted, 0)
        print("JSONFuzzTests: \(inputs.count) mutated documents checked against Python, \(accepted) accepted by both")
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    private static let pythonChecker = #"""
        import json, sys

        class Refused(Exception):
            pass

        def pairs(members):
            keys = set()
            for key, _ in members:
                if key in keys:
                    raise Refused()
                keys.add(key)
            return dict(members)

        def number(text):
            value = float(text)
            if value in (float("inf"), float("-inf")):
                raise Refused()
            return value

        def integer(text):
            if len(text.lstrip("-")) <= 19:
                value = int(text)
                if -2**63 <= value < 2**63:
                    return value
            return number(text)

        def constant(name):
            raise Refused()

        def check(value, depth):
            if isinstance(value, str):
                value.encode("utf-8")  # lone surrogates from \u escapes fail here
            elif isinstance(value, (list, dict)):
                if depth >= 64:
                    raise Refused()
                for key in value if isinstance(value, dict) else []:
                    key.encode("utf-8")
                for item in value.values() if isinstance(value, dict) else value:
                    check(item, depth + 1)

        out = []
        for line in open(sys.argv[1]).read().split("\n"):
            try:
                text = bytes.fromhex(line).decode("utf-8")
                value = json.loads(text, object_pairs_hook=pairs, parse_float=number, parse_int=integer,
                                   parse_constant=constant)
                check(value, 0)
                out.append(json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
                           .encode("utf-8").hex())
            except (Refused, ValueError, UnicodeError, RecursionError):
                out.append("-")
        open(sys.argv[2], "w").write("\n".join(out))
        """#
}
