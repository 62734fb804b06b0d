#include "fourfold/backend/device.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/measure/timing.hpp"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

using namespace fourfold;
using namespace fourfold::measure;

TEST(timing, host_mode_interleaves_candidates_and_reports_per_call_microseconds) {
    auto dev = backend::open_device({backend::device_kind::cpu, 0});
    auto small = at::ones({1 << 10});
    auto large = at::ones({1 << 20});
    std::vector<timing_candidate> c(2);
    c[0].name = "small";
    c[0].call = [&](int) { (void)(small * 2); };
    c[1].name = "large";
    c[1].call = [&](int) { (void)(large * 2); };
    timing_settings s;
    s.stop.min_time_s = 0.05;
    s.stop.timeout_s = 2;
    s.warmup_s = 0.01;
    const auto r = measure_interleaved(*dev, c, s);
    ASSERT_EQ(r.size(), 2u);
    for (const auto& x : r) {
        EXPECT_EQ(x.mode, timing_mode::host);
        EXPECT_GE(x.stats.n, 10);
        EXPECT_EQ(static_cast<std::size_t>(x.stats.n), x.samples_us.size());
        EXPECT_GT(x.stats.median, 0);
        EXPECT_NE(x.stop, stop_state::running);
        EXPECT_GE(x.calls_per_sample, 1);
    }
    // 1024 times more elements cost more per call
    EXPECT_GT(r[1].stats.median, 10 * r[0].stats.median);
    EXPECT_GT(r[0].calls_per_sample, r[1].calls_per_sample);
}

TEST(timing, cold_host_mode_flushes_and_times_single_calls) {
    auto dev = backend::open_device({backend::device_kind::cpu, 0});
    auto x = at::ones({1 << 16});
    std::vector<timing_candidate> c(1);
    c[0].name = "x";
    c[0].call = [&](int) { (void)(x * 2); };
    timing_settings s;
    s.cache = cache_mode::cold;
    s.stop.min_time_s = 0.05;
    s.stop.timeout_s = 1;
    s.warmup_s = 0.01;
    const auto r = measure_interleaved(*dev, c, s);
    EXPECT_EQ(r[0].calls_per_sample, 1);
    EXPECT_EQ(r[0].cache, cache_mode::cold);
}

TEST(timing, modes_a_device_lacks_are_refused_with_the_reason) {
    auto dev = backend::open_device({backend::device_kind::cpu, 0});
    const auto& caps = dev->caps();
    EXPECT_FALSE(mode_unsupported(timing_mode::host, cache_mode::hot, caps));
    EXPECT_TRUE(mode_unsupported(timing_mode::event, cache_mode::cold, caps));
    EXPECT_TRUE(mode_unsupported(timing_mode::graph, cache_mode::cold, caps));
    std::vector<timing_candidate> none;
    timing_settings s;
    s.mode = timing_mode::batch;
    EXPECT_THROW(measure_interleaved(*dev, none, s), bad_input);
    EXPECT_EQ(timing_settings::defaults_for(caps).mode, timing_mode::host);
}

TEST(timing, mode_names_round_trip) {
    for (const auto m :
         {timing_mode::host, timing_mode::event, timing_mode::batch, timing_mode::graph})
        EXPECT_EQ(parse_timing_mode(to_string(m)), m);
    EXPECT_FALSE(parse_timing_mode("wall"));
    EXPECT_EQ(parse_cache_mode("cold"), cache_mode::cold);
}

// The variants of one job are sampled in turn, A B C A B C ..., not one after the other, so that
// drift during the job (clocks, temperature, other tenants) falls on every variant alike.
TEST(timing, variants_are_sampled_in_turn) {
    auto dev = backend::open_device({backend::device_kind::cpu, 0});
    auto x = at::ones({1 << 12});
    std::vector<int> order; // the candidate of every call, warm-up included
    std::vector<timing_candidate> c(3);
    for (int i = 0; i < 3; ++i) {
        c[static_cast<std::size_t>(i)].name = "v" + std::to_string(i);
        c[static_cast<std::size_t>(i)].call = [&, i](int) {
            (void)(x * 2);
            order.push_back(i);
        };
    }
    timing_settings s;
    s.stop.min_samples = 10;
    s.stop.min_time_s = 0.02;
    s.stop.timeout_s = 1;
    s.warmup_s = 0.005;
    const auto r = measure_interleaved(*dev, c, s);
    ASSERT_EQ(r.size(), 3u);
    std::vector<int> blocks; // runs of calls of one candidate
    for (const int i : order)
        if (blocks.empty() || blocks.back() != i)
            blocks.push_back(i);
    // every candidate gets at least 10 samples, each its own block, taken in turn
    ASSERT_GE(blocks.size(), 30u);
    for (std::size_t k = 0; k < 30; ++k)
        EXPECT_EQ(blocks[k], static_cast<int>(k % 3)) << k;
}
