/// Metric families in Prometheus's text exposition format (version 0.0.4), the format every
/// scraper reads: `# HELP` and `# TYPE` lines, then one line per sample, histograms as their
/// `_bucket{le=…}`, `_sum` and `_count` lines.
public enum PrometheusText {
    /// The `Content-Type` a server gives this text.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The families as text. A family whose name, or a sample whose label name, Prometheus would
    /// refuse is left out rather than written broken (`MetricFamily.isValidName`).
    public static func render(_ families: [MetricFamily]) -> String {
        var out = ""
        for family in families where MetricFamily.isValidName(family.name) {
            out += "# HELP \(family.name) \(escapeHelp(family.help))\n"
            out += "# TYPE \(family.name) \(family.kind.rawValue)\n"
            for sample in family.samples where sample.labels.allSatisfy({ MetricFamily.isValidLabelName($0.0) }) {
                switch sample.value {
                case .number(let v):
                    out += "\(family.name)\(labels(sample.labels)) \(number(v))\n"
                case .histogram(let h):
                    for (bound, count) in zip(h.bounds, h.cumulative) {
                        out += "\(family.name)_bucket\(labels(sample.labels + [("le", number(bound))])) \(count)\n"
                    }
                    out += "\(family.name)_bucket\(labels(sample.labels + [("le", "+Inf")])) \(h.count)\n"
                    out += "\(family.name)_sum\(labels(sample.labels)) \(number(h.sum))\n"
                    out += "\(family.name)_count\(labels(sample.labels)) \(h.count)\n"
                }
            }
        }
        return out
    }

    static func labels(_ pairs: [(String, String)]) -> String {
        guard !pairs.isEmpty else { return "" }
        return "{" + pairs.map { "\($0.0)=\"\(escapeLabel($0.1))\"" }.joined(separator: ",") + "}"
    }

    /// A value as Prometheus writes one: integers without a fraction, `+Inf`, `-Inf`, `NaN`.
    public static func number(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v > 0 ? "+Inf" : "-Inf" }
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return "\(v)"
    }

    /// Help text escapes `\` and line feeds; label values escape `"` too.
    static func escapeHelp(_ s: String) -> String {
        s.replacingAll("\\", with: "\\\\").replacingAll("\n", with: "\\n")
    }

    static func escapeLabel(_ s: String) -> String {
        escapeHelp(s).replacingAll("\"", with: "\\\"")
    }
}

extension String {
    /// Every `target` replaced with `replacement` (Foundation-free).
    fileprivate func replacingAll(_ target: Character, with replacement: String) -> String {
        guard contains(target) else { return self }
        var out = ""
        for c in self {
            if c == target { out += replacement } else { out.append(c) }
        }
        return out
    }
}
