#include "fourfold/core/rng.hpp"
#include "fourfold/measure/statistics.hpp"

#include <cmath>
#include <gtest/gtest.h>

using namespace fourfold;
using namespace fourfold::measure;

TEST(statistics, quantiles_interpolate_between_order_statistics) {
    const std::vector<double> v{1, 2, 3, 4, 5};
    EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.0), 1);
    EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.25), 2);
    EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.5), 3);
    EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.75), 4);
    EXPECT_DOUBLE_EQ(quantile_sorted(v, 1.0), 5);
    const std::vector<double> even{1, 2, 3, 4};
    EXPECT_DOUBLE_EQ(quantile_sorted(even, 0.5), 2.5);
    EXPECT_DOUBLE_EQ(quantile_sorted(even, 0.25), 1.75); // NumPy's default gives the same
}

TEST(statistics, summary_of_a_small_known_sample) {
    const std::vector<double> v{4, 1, 3, 2, 5};
    const auto s = summarize(v);
    EXPECT_EQ(s.n, 5);
    EXPECT_DOUBLE_EQ(s.min, 1);
    EXPECT_DOUBLE_EQ(s.max, 5);
    EXPECT_DOUBLE_EQ(s.median, 3);
    EXPECT_DOUBLE_EQ(s.iqr, 2);
    EXPECT_DOUBLE_EQ(s.mean, 3);
    EXPECT_NEAR(s.stdev, std::sqrt(2.5), 1e-12);
    EXPECT_LE(s.ci95.low, s.median);
    EXPECT_GE(s.ci95.high, s.median);
}

TEST(statistics, normal_distribution_matches_its_known_quantiles) {
    xoshiro256 rng(7);
    std::vector<double> v(200000);
    for (auto& x : v)
        x = 10.0 + 2.0 * rng.normal();
    const auto s = summarize(v);
    EXPECT_NEAR(s.median, 10.0, 0.03);
    EXPECT_NEAR(s.mean, 10.0, 0.03);
    EXPECT_NEAR(s.stdev, 2.0, 0.02);
    EXPECT_NEAR(s.iqr, 2.0 * 1.3489795, 0.04); // IQR of a normal = 1.349 sigma
    EXPECT_NEAR(s.q1, 10.0 - 2.0 * 0.6744898, 0.03);
    // the CI of the median of 2e5 samples is narrow: about +-1.96 * 1.2533 sigma / sqrt(n)
    EXPECT_NEAR(s.ci95.high - s.ci95.low, 2 * 1.96 * 1.2533 * 2.0 / std::sqrt(2e5), 0.01);
}

TEST(statistics, exponential_distribution_matches_its_known_quantiles) {
    xoshiro256 rng(11);
    std::vector<double> v(200000);
    for (auto& x : v)
        x = -std::log(1.0 - rng.uniform());
    const auto s = summarize(v);
    EXPECT_NEAR(s.median, std::log(2.0), 0.01);
    EXPECT_NEAR(s.iqr, std::log(3.0), 0.015); // q3 - q1 = ln 4 - ln(4/3)
    EXPECT_NEAR(s.mean, 1.0, 0.01);
}

TEST(statistics, bootstrap_is_reproducible_with_a_fixed_seed) {
    xoshiro256 rng(3);
    std::vector<double> v(501);
    for (auto& x : v)
        x = rng.normal();
    const auto a = bootstrap_median_ci(v, 0.95, 1000);
    const auto b = bootstrap_median_ci(v, 0.95, 1000);
    EXPECT_EQ(a.low, b.low);
    EXPECT_EQ(a.high, b.high);
}

TEST(statistics, bootstrap_ci_of_the_median_covers_the_true_median_about_95_percent) {
    int covered = 0;
    constexpr int k_trials = 300;
    for (int t = 0; t < k_trials; ++t) {
        xoshiro256 rng(1000 + t);
        std::vector<double> v(101);
        for (auto& x : v)
            x = 5.0 + rng.normal(); // true median 5
        const auto ci = bootstrap_median_ci(v, 0.95, 1000, 99 + t);
        covered += (ci.low <= 5.0 && 5.0 <= ci.high);
    }
    const double coverage = double(covered) / k_trials;
    EXPECT_GT(coverage, 0.90);
    EXPECT_LT(coverage, 0.99);
}

TEST(statistics, resample_budget_is_bounded_for_large_samples) {
    EXPECT_EQ(bootstrap_resamples_for(100), 2000);
    EXPECT_EQ(bootstrap_resamples_for(100000), 400);
    EXPECT_EQ(bootstrap_resamples_for(10000000), 200);
}
