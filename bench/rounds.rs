//! How many rounds a benchmark times: `EQCHECK_BENCH_ROUNDS` when it is a positive
//! number, else the benchmark's own default.

/// The rounds to time: `EQCHECK_BENCH_ROUNDS`, or `default`.
pub fn rounds(default: usize) -> usize {
    std::env::var("EQCHECK_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.trim().parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(default)
}
