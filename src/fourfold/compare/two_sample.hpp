#pragma once
// Two-sample statistics for `fourfold compare`: the Mann-Whitney U test and the ratio of medians
// with a percentile-bootstrap CI, and the verdict rule built on the CI (never on the p-value).
#include "fourfold/measure/statistics.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace fourfold::compare {

// The two-sided Mann-Whitney U test. Exact (the permutation distribution of U) when both
// samples have fewer than 50 values and no value is tied; otherwise the normal approximation
// with the tie correction of the variance and a continuity correction. `method` says which.
struct u_test {
    double u_a = 0; // pairs (a, b) with a > b, ties counting one half
    double p_two_sided = 1;
    std::string method; // "exact" | "normal, tie and continuity corrected" | "none: ..."
};
inline constexpr std::size_t k_exact_u_below = 50;
u_test mann_whitney_u(std::span<const double> a, std::span<const double> b);
// P(U <= u) for samples of sizes m and n without ties (the exact null distribution).
double exact_u_cdf(std::size_t m, std::size_t n, double u);

// median(b) / median(a) with a 95 % percentile-bootstrap CI: a and b are resampled
// independently, with a fixed seed, so the same samples always give the same interval.
struct ratio_estimate {
    double ratio = 0;
    measure::interval ci95;
    bool has_ci = false; // false with fewer than 2 samples on either side
    int resamples = 0;
};
inline constexpr std::uint64_t k_ratio_seed = 0xf0f0'2026'0000'0005ull;
ratio_estimate median_ratio(std::span<const double> a, std::span<const double> b,
                            std::uint64_t seed = k_ratio_seed);

// FASTER / SLOWER / SAME / UNCLEAR from the CI of a ratio B/A, a practical threshold t and the
// timings' own scatter n (the larger relative_noise of A's and B's samples): FASTER or SLOWER
// when the whole CI lies beyond 1 -/+ max(t, n) in that direction (a shift inside the
// measurement's own scatter is not called, as nvbench's compare does); SAME when the whole CI
// lies within [1 - t, 1 + t]; else UNCLEAR. A p-value never decides.
enum class verdict { faster, slower, same, unclear };
std::string_view to_string(verdict v);
// Times (lower is better): ratio B/A of µs per call.
verdict time_verdict(const ratio_estimate& r, double threshold, double noise = 0);
// Rates (higher is better): ratio B/A of tokens/s.
verdict rate_verdict(const ratio_estimate& r, double threshold, double noise = 0);
// The scatter of a timing's samples, robust to the long right tail of preempted samples: the
// IQR over 1.349 (the stdev of a normal distribution with that IQR) over the median; 0 with
// fewer than 2 samples. A stdev would let a few preempted samples veto every verdict.
inline constexpr double k_iqr_per_sigma = 1.349;
double relative_noise(std::span<const double> samples);
// The rule in words, for legends and --help.
std::string verdict_rule(double threshold);

} // namespace fourfold::compare
