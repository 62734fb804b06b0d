// The typed ledger figures (core/figures.hpp): what the runner writes and compare and report
// read, converted from and to the store's JSON in one place.
#include "compare_fixtures.hpp"
#include "fourfold/core/figures.hpp"
#include "fourfold/store/result_store.hpp"
#include "test_helpers.hpp"

#include <gtest/gtest.h>

using namespace fourfold;
using namespace fourfold::testing;

TEST(figures, op_time_writes_its_keys_and_leaves_the_others) {
    json f{{"mode", "graph"},
           {"stats", {{"median", 2.5}, {"n", 40}, {"ci_resamples", 2000}}},
           {"facts", {{"kernel", "x"}}}};
    auto o = op_time_figures::from(f);
    EXPECT_EQ(o.mode, "graph");
    ASSERT_TRUE(o.stats);
    EXPECT_EQ(o.stats->median, 2.5);
    EXPECT_EQ(o.stats->n, 40);
    o.gb_per_s = 812.5;
    o.host_round_trip = round_trip_figure{13.0, 14.0, 200};
    o.write(f);
    EXPECT_EQ(f["facts"]["kernel"], "x");        // not the struct's: untouched
    EXPECT_EQ(f["stats"]["ci_resamples"], 2000); // a stats key it does not name: kept
    const auto back = op_time_figures::from(f);
    EXPECT_EQ(back.gb_per_s, 812.5);
    ASSERT_TRUE(back.host_round_trip);
    EXPECT_EQ(back.host_round_trip->mean_us(), 13.5);
}

TEST(figures, a_throughput_record_from_before_units_reads_as_tokens_per_second) {
    const auto r = throughput_record(job_of("decode", "stock", "bf16", json{{"ctx", 512}}), 512,
                                     {10.0, 10.0, 10.0});
    const auto t = throughput_figures::from(r.figures);
    EXPECT_EQ(t.unit, "tokens/s");
    EXPECT_EQ(t.context_axis, "ctx");
    EXPECT_EQ(t.context, 512);
    EXPECT_DOUBLE_EQ(t.rate, 100.0);
    ASSERT_TRUE(t.step_stats);
    EXPECT_DOUBLE_EQ(t.step_stats->median, 10.0);
    ASSERT_TRUE(t.bandwidth_limit);
    EXPECT_DOUBLE_EQ(*t.bandwidth_limit, 300.0);
}

TEST(figures, a_stored_value_of_the_wrong_type_is_an_error_that_names_the_key) {
    try {
        (void)op_time_figures::from(json{{"gb_per_s", "fast"}});
        FAIL() << "no throw";
    } catch (const stored_value_error& e) {
        EXPECT_NE(std::string(e.what()).find("gb_per_s"), std::string::npos) << e.what();
    }
    EXPECT_THROW((void)throughput_figures::from(json{{"unit", 3}}), stored_value_error);
    EXPECT_THROW((void)correctness_figures::from(json{{"metrics", "none"}}), stored_value_error);
}

TEST(figures, a_count_past_what_a_double_holds_exactly_is_an_error_not_undefined_behaviour) {
    // found by fuzz_stored_figures (its first 10-minute run): n = 1.3e37 was cast to int64
    const json huge = json::parse(R"({"ms_per_token": {"median": 80.0, "n": 1.3e37}})");
    try {
        (void)throughput_figures::from(huge);
        FAIL() << "no throw";
    } catch (const stored_value_error& e) {
        EXPECT_NE(std::string(e.what()).find("'n'"), std::string::npos) << e.what();
    }
    EXPECT_THROW((void)stats_figure::from_json(json{{"n", -1e300}}), stored_value_error);
    EXPECT_EQ(stats_figure::from_json(json{{"n", 12}})->n, 12);
}

TEST(figures, every_ledger_round_trips_through_the_store) {
    temp_dir dir;
    auto s = store::result_store::open(dir / "f.db", store::open_mode::read_write);
    const auto job = job_of("vae_decode", "stock", "bf16", json{{"frames", 9}});
    auto op =
        op_time_record(job_of("softmax", "stock", "fp32", json{{"rows", 1}}), {1.0, 2.0, 3.0});
    auto o = op_time_figures::from(op.figures);
    o.gb_per_s = 42;
    o.host_sync = true;
    o.write(op.figures);
    const auto rate = rate_record(job, "frames/s", "frames", 9, {40.0, 50.0, 60.0});
    const auto cor = correctness_record(job, "FAIL", 0.25);
    const auto mem = memory_record(job, 3e9, 2e9, 1e9);
    const auto run = write_run(s, "typed", provenance(), {op, rate, cor, mem});
    const auto back = s.records(run, true);
    ASSERT_EQ(back.size(), 4u);
    for (const auto& b : back) {
        switch (b.rec.which) {
        case ledger::op_time: {
            const auto x = op_time_figures::from(b.rec.figures);
            EXPECT_EQ(x.gb_per_s, 42);
            EXPECT_TRUE(x.host_sync);
            EXPECT_EQ(x.stats->median, 2.0);
            break;
        }
        case ledger::throughput: {
            const auto x = throughput_figures::from(b.rec.figures);
            EXPECT_EQ(x.unit, "frames/s");
            EXPECT_EQ(x.step_unit, "ms/frame");
            EXPECT_EQ(x.context_axis, "frames");
            EXPECT_EQ(x.context, 9);
            EXPECT_DOUBLE_EQ(x.rate, 20.0);
            EXPECT_EQ(b.rec.unit, "frames/s");
            break;
        }
        case ledger::correctness: {
            const auto x = correctness_figures::from(b.rec.figures);
            EXPECT_FALSE(x.pass());
            EXPECT_EQ(x.metrics["rel_l2"], 0.25);
            break;
        }
        case ledger::memory: {
            const auto x = memory_figures_view::from(b.rec.figures);
            EXPECT_EQ(x.driver_peak_bytes, 3000000000);
            EXPECT_EQ(x.outside_allocator_bytes, 1000000000);
            break;
        }
        }
    }
}
