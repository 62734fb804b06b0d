#include "fourfold/measure/statistics.hpp"

#include "fourfold/core/rng.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace fourfold::measure {

json sample_stats::to_json() const {
    return json{{"n", n},
                {"min", min},
                {"q1", q1},
                {"median", median},
                {"q3", q3},
                {"iqr", iqr},
                {"max", max},
                {"mean", mean},
                {"stdev", stdev},
                {"ci95_low", ci95.low},
                {"ci95_high", ci95.high},
                {"ci_resamples", ci_resamples}};
}

double quantile_sorted(std::span<const double> sorted, double p) {
    if (sorted.empty())
        throw std::invalid_argument("quantile of no samples");
    const double h = p * static_cast<double>(sorted.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(h));
    const auto hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

double median_of(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return quantile_sorted(values, 0.5);
}

int bootstrap_resamples_for(std::size_t n) {
    if (n == 0)
        return 0;
    const double budget = 4e7 / static_cast<double>(n);
    return static_cast<int>(std::clamp(budget, 200.0, 2000.0));
}

interval bootstrap_median_ci(std::span<const double> samples, double confidence, int resamples,
                             std::uint64_t seed) {
    const std::size_t n = samples.size();
    if (n == 0)
        throw std::invalid_argument("bootstrap of no samples");
    if (n == 1)
        return {samples[0], samples[0]};
    xoshiro256 rng(seed);
    std::vector<double> draw(n);
    std::vector<double> medians(static_cast<std::size_t>(resamples));
    for (auto& m : medians) {
        for (auto& d : draw)
            d = samples[rng.below(n)];
        // median via nth_element: the upper middle, averaged with the lower one for even n
        const auto mid = draw.begin() + static_cast<std::ptrdiff_t>(n / 2);
        std::nth_element(draw.begin(), mid, draw.end());
        double value = *mid;
        if (n % 2 == 0)
            value = 0.5 * (value + *std::max_element(draw.begin(), mid));
        m = value;
    }
    std::sort(medians.begin(), medians.end());
    const double alpha = (1.0 - confidence) / 2.0;
    return {quantile_sorted(medians, alpha), quantile_sorted(medians, 1.0 - alpha)};
}

sample_stats summarize(std::span<const double> samples, std::uint64_t seed) {
    sample_stats s;
    s.n = static_cast<std::int64_t>(samples.size());
    if (samples.empty())
        return s;
    std::vector<double> sorted(samples.begin(), samples.end());
    std::sort(sorted.begin(), sorted.end());
    s.min = sorted.front();
    s.max = sorted.back();
    s.q1 = quantile_sorted(sorted, 0.25);
    s.median = quantile_sorted(sorted, 0.5);
    s.q3 = quantile_sorted(sorted, 0.75);
    s.iqr = s.q3 - s.q1;
    s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(s.n);
    double ss = 0;
    for (const double x : sorted)
        ss += (x - s.mean) * (x - s.mean);
    s.stdev = s.n > 1 ? std::sqrt(ss / static_cast<double>(s.n - 1)) : 0.0;
    s.ci_resamples = bootstrap_resamples_for(sorted.size());
    s.ci95 = bootstrap_median_ci(samples, 0.95, s.ci_resamples, seed);
    return s;
}

} // namespace fourfold::measure
