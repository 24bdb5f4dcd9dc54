import SeamSystem

/// How long the seamds a benchmark starts poll after a turn with work (`seamd --spin`): they
/// inherit `SEAM_SPIN_MICROSECONDS` from the bench's environment, else take seamd's default.
enum SeamdSpin {
    static var described: String {
        guard let text = Environment.value("SEAM_SPIN_MICROSECONDS") else { return "200 µs (its default)" }
        return "\(text) µs (SEAM_SPIN_MICROSECONDS)"
    }
}
