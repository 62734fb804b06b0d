#pragma once
// Summary statistics of timing samples. The median is the headline; its 95 % CI comes from a
// percentile bootstrap with a fixed seed, so the same samples always give the same interval.
#include "fourfold/core/json.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace fourfold::measure {

inline constexpr std::uint64_t k_bootstrap_seed = 0xf0f0'2026'0000'0001ull;

struct interval {
    double low = 0;
    double high = 0;
};

struct sample_stats {
    std::int64_t n = 0;
    double min = 0, q1 = 0, median = 0, q3 = 0, iqr = 0, max = 0;
    double mean = 0, stdev = 0;
    interval ci95;        // of the median
    int ci_resamples = 0; // bootstrap resamples behind ci95
    json to_json() const;
};

// Quantile of sorted data by linear interpolation between order statistics (Hyndman-Fan 7,
// the default of R and NumPy). p in [0, 1].
double quantile_sorted(std::span<const double> sorted, double p);
double median_of(std::vector<double> values);

// Resamples used for n samples: 2000, reduced for very large n so that the work stays bounded
// (resamples x n <= 4e7), never below 200.
int bootstrap_resamples_for(std::size_t n);

// Percentile-bootstrap interval of the median at `confidence` (e.g. 0.95).
interval bootstrap_median_ci(std::span<const double> samples, double confidence, int resamples,
                             std::uint64_t seed = k_bootstrap_seed);

sample_stats summarize(std::span<const double> samples, std::uint64_t seed = k_bootstrap_seed);

} // namespace fourfold::measure
