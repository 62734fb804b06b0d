#include "fourfold/core/rng.hpp"
#include "fourfold/measure/stopping_rule.hpp"

#include <gtest/gtest.h>

using namespace fourfold;
using namespace fourfold::measure;

namespace {

// Feeds samples, advancing a synthetic clock by `dt` each, until the rule stops.
template <class F>
stop_state run(stopping_rule& rule, double dt, F sample, std::int64_t limit = 1000000) {
    double t = 0;
    for (std::int64_t i = 0; i < limit; ++i) {
        rule.add(sample(i));
        t += dt;
        const auto s = rule.check(t);
        if (s != stop_state::running)
            return s;
    }
    return stop_state::running;
}

stopping_settings settings() {
    stopping_settings s;
    s.min_samples = 10;
    s.min_time_s = 0.5;
    s.max_rel_stdev = 0.005;
    s.timeout_s = 15;
    return s;
}

} // namespace

TEST(stopping_rule, quiet_samples_converge_on_noise_after_the_minimum_time) {
    stopping_rule rule(settings());
    xoshiro256 rng(1);
    const auto state = run(rule, 0.01, [&](auto) { return 100.0 * (1 + 0.001 * rng.normal()); });
    EXPECT_EQ(state, stop_state::converged_noise);
    EXPECT_EQ(rule.n(), 50); // 0.5 s at 10 ms a sample, not earlier
}

TEST(stopping_rule, never_stops_before_min_samples) {
    auto s = settings();
    s.min_samples = 200;
    stopping_rule rule(s);
    const auto state = run(rule, 0.01, [](auto) { return 1.0; });
    EXPECT_EQ(state, stop_state::converged_noise);
    EXPECT_EQ(rule.n(), 200);
}

TEST(stopping_rule, steady_noise_above_the_threshold_converges_on_a_plateau) {
    stopping_rule rule(settings());
    xoshiro256 rng(2);
    const auto state = run(rule, 0.001, [&](auto) { return 100.0 * (1 + 0.05 * rng.normal()); });
    EXPECT_EQ(state, stop_state::converged_plateau);
    EXPECT_NEAR(rule.robust_noise(), 0.05, 0.01);
    EXPECT_LT(rule.n(), 15000); // long before the 15 s timeout
}

TEST(stopping_rule, noise_that_keeps_growing_times_out) {
    stopping_rule rule(settings());
    xoshiro256 rng(3);
    const auto state = run(rule, 0.001, [&](std::int64_t i) {
        return 100.0 * (1 + 0.02 * (1 + static_cast<double>(i) / 100.0) * rng.normal());
    });
    EXPECT_EQ(state, stop_state::timed_out);
    EXPECT_NEAR(static_cast<double>(rule.n()), 15000, 2); // 15 s at 1 ms a sample
}

TEST(stopping_rule, sample_cap_stops_a_run_that_would_go_on) {
    auto s = settings();
    s.max_samples = 500;
    s.timeout_s = 1e9;
    s.min_time_s = 1e6;
    stopping_rule rule(s);
    const auto state = run(rule, 1e-6, [](auto) { return 1.0; });
    EXPECT_EQ(state, stop_state::sample_cap);
    EXPECT_EQ(rule.n(), 500);
}

TEST(stopping_rule, detail_says_why_it_stopped) {
    stopping_rule rule(settings());
    run(rule, 0.01, [](auto) { return 2.0; });
    EXPECT_NE(rule.detail().find("rel stdev"), std::string::npos);
    EXPECT_EQ(stop_class(stop_state::converged_plateau), "converged");
    EXPECT_EQ(stop_class(stop_state::timed_out), "timed_out");
}
