// The report layer over one run's records: per-workload tables with units in their headers, and
// the geometric-mean speed-up lines (pairing, the one-baseline rule, the small/bandwidth-bound
// split, boolean-parameter facets, and the notes that qualify a figure).
#include "fourfold/report/ledger_tables.hpp"
#include "fourfold/report/speedup_summary.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <sstream>

using namespace fourfold;
using namespace fourfold::report;

namespace {

// An op_time record as the runner writes one (the fields the report reads).
record timed(const std::string& workload, const std::string& variant, json params, double median_us,
             double bytes_moved, std::string mode = "graph", std::string stop = "converged") {
    job_id id;
    id.workload = workload;
    id.variant = variant;
    id.device = "cuda:0";
    id.dtype = "bf16";
    id.params = std::move(params);
    auto r = record::make(ledger::op_time, id);
    r.figures = json{{"stats",
                      {{"median", median_us},
                       {"ci95_low", median_us},
                       {"ci95_high", median_us},
                       {"iqr", 0.1},
                       {"n", 10}}},
                     {"mode", mode},
                     {"cache", "cold"},
                     {"stop", stop},
                     {"bytes_moved", bytes_moved},
                     {"cache_bytes", 50.0 * (1 << 20)},
                     {"gb_per_s", bytes_moved / median_us / 1e3},
                     {"pct_of_bandwidth", 10.0},
                     {"host_sync", variant == "generic" && workload == "moe_decode"}};
    return r;
}

json linear(int n, bool bias) {
    return json{{"tokens", 1}, {"n", n}, {"k", 4096}, {"bias", bias}};
}

} // namespace

TEST(speedup_summary, geometric_mean_over_pairs_sharing_one_baseline_split_by_the_cache) {
    const double small = 8.0 * (1 << 20), large = 200.0 * (1 << 20);
    std::vector<record> rs{
        timed("linear_decode", "stock", linear(1024, false), 10, small),
        timed("linear_decode", "generic", linear(1024, false), 20, small), // 2x
        timed("linear_decode", "stock", linear(2048, true), 10, small),
        timed("linear_decode", "generic", linear(2048, true), 40, small), // 4x
        timed("linear_decode", "stock", linear(50000, false), 100, large),
        timed("linear_decode", "generic", linear(50000, false), 100, large), // 1x
        timed("linear_decode", "stock", linear(60000, true), 100, large), // no baseline: unpaired
        timed("softmax", "stock", json{{"rows", 1}, {"vocab", 1000}}, 5, 8000),
        timed("softmax", "generic", json{{"rows", 1}, {"vocab", 1000}}, 15, 8000),
    };
    rs.push_back(record::skipped(ledger::op_time, rs[1].job, "not here")); // ignored
    const auto s = summarize_speedups(rs, "stock", "generic");
    ASSERT_EQ(s.size(), 2u);
    const auto& lin = s[0].workload == "linear_decode" ? s[0] : s[1];
    EXPECT_EQ(lin.all.pairs, 3u);
    EXPECT_NEAR(lin.all.geomean, std::cbrt(2.0 * 4.0 * 1.0), 1e-12);
    EXPECT_DOUBLE_EQ(lin.all.min, 1.0);
    EXPECT_DOUBLE_EQ(lin.all.max, 4.0);
    EXPECT_EQ(lin.small.pairs, 2u);
    EXPECT_NEAR(lin.small.geomean, std::sqrt(8.0), 1e-12);
    EXPECT_EQ(lin.large.pairs, 1u);
    EXPECT_DOUBLE_EQ(lin.large.geomean, 1.0);
    ASSERT_EQ(lin.facets.size(), 2u); // bias=false, bias=true
    EXPECT_EQ(lin.facets[0].label, "bias=false");
    EXPECT_NEAR(lin.facets[0].geomean, std::sqrt(2.0), 1e-12);
    EXPECT_DOUBLE_EQ(lin.facets[1].geomean, 4.0);
    EXPECT_TRUE(lin.notes.empty());

    std::ostringstream out;
    print_speedup_summaries(s, out);
    const auto text = out.str();
    EXPECT_NE(text.find("speed-up of stock over generic"), std::string::npos) << text;
    EXPECT_NE(text.find("linear_decode bf16 cuda:0: all: 2.00x over 3 cases"), std::string::npos)
        << text;
    EXPECT_NE(text.find("small (bytes moved < 50.000 MiB last-level cache): 2.83x over 2 cases"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("bias=true: 4.00x over 1 case"), std::string::npos) << text;
}

TEST(speedup_summary, a_figure_timed_differently_or_not_converged_says_so) {
    std::vector<record> rs{
        timed("moe_decode", "stock", json{{"tokens", 8}}, 40, 1e6, "graph"),
        timed("moe_decode", "generic", json{{"tokens", 8}}, 300, 1e6, "event", "timed_out"),
    };
    const auto s = summarize_speedups(rs);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_DOUBLE_EQ(s[0].all.geomean, 7.5);
    ASSERT_EQ(s[0].notes.size(), 2u);
    EXPECT_NE(s[0].notes[0].find("did not converge"), std::string::npos);
    EXPECT_NE(s[0].notes[1].find("generic by event/cold"), std::string::npos) << s[0].notes[1];
    EXPECT_TRUE(summarize_speedups({rs[0]}).empty()); // nothing to pair: no line
}

TEST(ledger_tables, a_run_over_several_workloads_prints_one_table_per_workload_with_units) {
    auto lin = timed("linear_decode", "stock", linear(1024, false), 10, 8e6);
    lin.figures["facts"] = json{{"layer", "Llama-3-8B k_proj"}};
    std::vector<record> rs{lin,
                           timed("moe_decode", "generic", json{{"tokens", 8}}, 300, 1e6, "event")};
    std::ostringstream out;
    print_ledger_tables(rs, out);
    const auto text = out.str();
    EXPECT_NE(text.find("linear_decode - op_time: microseconds per call"), std::string::npos)
        << text;
    EXPECT_NE(text.find("moe_decode - op_time: microseconds per call"), std::string::npos) << text;
    EXPECT_NE(text.find("median [µs]"), std::string::npos);
    EXPECT_NE(text.find("Llama-3-8B k_proj"), std::string::npos);
    EXPECT_NE(text.find("host sync"), std::string::npos); // moe's table says who synchronised
    std::ostringstream one;
    print_ledger_tables({lin}, one);
    EXPECT_EQ(one.str().find("linear_decode - "), std::string::npos) << one.str();
}
