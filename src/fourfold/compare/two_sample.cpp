#include "fourfold/compare/two_sample.hpp"

#include "fourfold/core/rng.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <vector>

namespace fourfold::compare {
namespace {

// Mid-rank sum of `a` in the pooled sample, and the tie term sum(t^3 - t) over tied groups.
struct rank_sums {
    double rank_sum_a = 0;
    double tie_term = 0;
    bool ties = false;
};

rank_sums ranks_of(std::span<const double> a, std::span<const double> b) {
    std::vector<std::pair<double, bool>> pooled; // value, from a
    pooled.reserve(a.size() + b.size());
    for (const double x : a)
        pooled.emplace_back(x, true);
    for (const double x : b)
        pooled.emplace_back(x, false);
    std::sort(pooled.begin(), pooled.end(),
              [](const auto& l, const auto& r) { return l.first < r.first; });
    rank_sums out;
    std::size_t i = 0;
    while (i < pooled.size()) {
        std::size_t j = i;
        while (j + 1 < pooled.size() && pooled[j + 1].first == pooled[i].first)
            ++j;
        const double mid_rank = 0.5 * static_cast<double>(i + j) + 1.0;
        const double t = static_cast<double>(j - i + 1);
        if (t > 1) {
            out.ties = true;
            out.tie_term += t * t * t - t;
        }
        for (std::size_t k = i; k <= j; ++k)
            if (pooled[k].second)
                out.rank_sum_a += mid_rank;
        i = j + 1;
    }
    return out;
}

double median_inplace(std::vector<double>& v) {
    const auto n = v.size();
    const auto mid = v.begin() + static_cast<std::ptrdiff_t>(n / 2);
    std::nth_element(v.begin(), mid, v.end());
    double value = *mid;
    if (n % 2 == 0)
        value = 0.5 * (value + *std::max_element(v.begin(), mid));
    return value;
}

} // namespace

double exact_u_cdf(std::size_t m, std::size_t n, double u) {
    if (u < 0)
        return 0;
    const auto top = static_cast<std::size_t>(std::floor(u));
    if (top >= m * n)
        return 1;
    // P(i, j, u) over growing i and j, in probabilities rather than counts so that every step is
    // a sum of non-negative terms: P(i,j,u) = i/(i+j) P(i-1,j,u-j) + j/(i+j) P(i,j-1,u).
    // prev[j] holds the distribution for i-1, cur[j] for i.
    std::vector<std::vector<double>> prev(n + 1), cur(n + 1);
    for (std::size_t j = 0; j <= n; ++j)
        prev[j] = {1.0}; // i = 0: U is 0 for sure
    for (std::size_t i = 1; i <= m; ++i) {
        cur[0] = {1.0}; // j = 0: U is 0 for sure
        for (std::size_t j = 1; j <= n; ++j) {
            std::vector<double> d(i * j + 1, 0.0);
            const double wi = static_cast<double>(i) / static_cast<double>(i + j);
            const double wj = 1.0 - wi;
            // the largest of the i values of a is above all j values of b: U grows by j
            for (std::size_t k = 0; k < prev[j].size(); ++k)
                d[k + j] += wi * prev[j][k];
            for (std::size_t k = 0; k < cur[j - 1].size(); ++k)
                d[k] += wj * cur[j - 1][k];
            cur[j] = std::move(d);
        }
        std::swap(prev, cur);
    }
    const auto& dist = prev[n];
    double cdf = 0;
    for (std::size_t k = 0; k <= top && k < dist.size(); ++k)
        cdf += dist[k];
    return std::min(cdf, 1.0);
}

u_test mann_whitney_u(std::span<const double> a, std::span<const double> b) {
    u_test out;
    if (a.empty() || b.empty()) {
        out.method = "none: a sample is empty";
        return out;
    }
    const double m = static_cast<double>(a.size());
    const double n = static_cast<double>(b.size());
    const auto r = ranks_of(a, b);
    out.u_a = r.rank_sum_a - m * (m + 1) / 2;
    if (!r.ties && a.size() < k_exact_u_below && b.size() < k_exact_u_below) {
        // two-sided: twice the smaller tail, as R's wilcox.test and SciPy do
        const double lower = exact_u_cdf(a.size(), b.size(), out.u_a);
        // the null distribution is symmetric about mn/2: P(U >= u) = P(U <= mn - u)
        const double upper = exact_u_cdf(a.size(), b.size(), m * n - out.u_a);
        out.p_two_sided = std::min(1.0, 2.0 * std::min(lower, upper));
        out.method = "exact";
        return out;
    }
    const double total = m + n;
    const double variance = m * n / 12.0 * ((total + 1) - r.tie_term / (total * (total - 1)));
    out.method = "normal, tie and continuity corrected";
    if (!(variance > 0)) { // every value tied: no evidence of a shift at all
        out.p_two_sided = 1;
        return out;
    }
    const double z = std::max(0.0, std::fabs(out.u_a - m * n / 2) - 0.5) / std::sqrt(variance);
    out.p_two_sided = std::min(1.0, std::erfc(z / std::sqrt(2.0)));
    return out;
}

ratio_estimate median_ratio(std::span<const double> a, std::span<const double> b,
                            std::uint64_t seed) {
    ratio_estimate out;
    if (a.empty() || b.empty())
        return out;
    out.ratio = measure::median_of({b.begin(), b.end()}) / measure::median_of({a.begin(), a.end()});
    if (a.size() < 2 || b.size() < 2)
        return out;
    out.resamples = measure::bootstrap_resamples_for(a.size() + b.size());
    xoshiro256 rng(seed);
    std::vector<double> da(a.size()), db(b.size());
    std::vector<double> ratios;
    ratios.reserve(static_cast<std::size_t>(out.resamples));
    for (int i = 0; i < out.resamples; ++i) {
        for (auto& x : da)
            x = a[rng.below(a.size())];
        for (auto& x : db)
            x = b[rng.below(b.size())];
        const double ma = median_inplace(da);
        if (ma != 0)
            ratios.push_back(median_inplace(db) / ma);
    }
    if (ratios.size() < 2)
        return out;
    std::sort(ratios.begin(), ratios.end());
    out.ci95 = {measure::quantile_sorted(ratios, 0.025), measure::quantile_sorted(ratios, 0.975)};
    out.has_ci = std::isfinite(out.ci95.low) && std::isfinite(out.ci95.high);
    return out;
}

std::string_view to_string(verdict v) {
    switch (v) {
    case verdict::faster:
        return "FASTER";
    case verdict::slower:
        return "SLOWER";
    case verdict::same:
        return "SAME";
    case verdict::unclear:
        return "UNCLEAR";
    }
    return "UNCLEAR";
}

namespace {

verdict by_ci(const ratio_estimate& r, double threshold, double noise, bool higher_is_better) {
    if (!r.has_ci)
        return verdict::unclear;
    const double lo = 1.0 - threshold, hi = 1.0 + threshold;
    const double beyond = std::max(threshold, std::isfinite(noise) ? noise : 0.0);
    const bool all_above = r.ci95.low > 1.0 + beyond;
    const bool all_below = r.ci95.high < 1.0 - beyond;
    if (all_above)
        return higher_is_better ? verdict::faster : verdict::slower;
    if (all_below)
        return higher_is_better ? verdict::slower : verdict::faster;
    if (r.ci95.low >= lo && r.ci95.high <= hi)
        return verdict::same;
    return verdict::unclear;
}

} // namespace

verdict time_verdict(const ratio_estimate& r, double threshold, double noise) {
    return by_ci(r, threshold, noise, false);
}
verdict rate_verdict(const ratio_estimate& r, double threshold, double noise) {
    return by_ci(r, threshold, noise, true);
}

double relative_noise(std::span<const double> samples) {
    if (samples.size() < 2)
        return 0;
    std::vector<double> sorted(samples.begin(), samples.end());
    std::sort(sorted.begin(), sorted.end());
    const double median = measure::quantile_sorted(sorted, 0.5);
    const double iqr =
        measure::quantile_sorted(sorted, 0.75) - measure::quantile_sorted(sorted, 0.25);
    return median > 0 ? iqr / k_iqr_per_sigma / median : 0;
}

std::string verdict_rule(double threshold) {
    const double pct = threshold * 100;
    return fmt::format(
        "verdict from the 95 % bootstrap CI of the ratio B/A and a practical threshold of {:g} %: "
        "FASTER when the whole CI is beyond {:g} % better (time ratio < {:g}, rate ratio > "
        "{:g}), SLOWER when the whole CI is beyond {:g} % worse, SAME when the whole CI lies "
        "within +-{:g} %, UNCLEAR otherwise; a pair whose samples scatter more than that (IQR / "
        "1.349 over the median, of A or B) must clear its scatter instead, and a "
        "host-synchronising time, or "
        "the rate of steps the host launches op by op (eager decode), must also clear how far the "
        "host round trip measured beside it moved; "
        "the Mann-Whitney p-value is shown beside it and never decides",
        pct, pct, 1 - threshold, 1 + threshold, pct, pct);
}

} // namespace fourfold::compare
