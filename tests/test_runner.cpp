#include "fourfold/backend/device.hpp"
#include "runner_helpers.hpp"

#include <gtest/gtest.h>

using namespace fourfold;
using namespace fourfold::testing;

namespace {

std::unique_ptr<backend::device> cpu() {
    return backend::open_device({backend::device_kind::cpu, 0});
}

// stock and generic: the variants every device runs (native ones skip off CUDA)
const std::vector<std::string> k_portable{"stock", "generic"};
const std::vector<runner::job_spec> k_small_cases{
    {"softmax", json{{"rows", 4}, {"vocab", 1000}}, dtype::fp32, k_portable, ""},
    {"softmax", json{{"rows", 4}, {"vocab", 1000}}, dtype::bf16, k_portable, ""},
    {"linear_decode", json{{"tokens", 2}, {"n", 256}, {"k", 512}, {"bias", true}}, dtype::fp32,
     k_portable, ""},
    {"linear_decode", json{{"tokens", 1}, {"n", 256}, {"k", 512}, {"bias", false}}, dtype::bf16,
     k_portable, ""},
};

} // namespace

TEST(runner, every_user_variant_passes_against_the_float64_reference) {
    auto dev = cpu();
    const auto r = run_jobs(*dev, k_small_cases, "correctness");
    std::size_t checked = 0;
    for (const auto& rec : r.records) {
        if (rec.status == record_status::skipped)
            continue; // reason checked elsewhere
        ASSERT_EQ(rec.status, record_status::ok) << rec.reason;
        EXPECT_EQ(rec.figures["verdict"], "PASS")
            << rec.job.workload << " " << rec.job.variant << " " << rec.job.dtype << " "
            << rec.figures["failed_checks"].dump();
        ++checked;
    }
    EXPECT_GE(checked, 8u);
    EXPECT_EQ(r.summary.exit_code(), 0);
}

TEST(runner, deliberately_wrong_results_fail_correctness) {
    auto dev = cpu();
    for (const char* workload : {"softmax", "linear_decode"}) {
        runner::job_spec spec{workload,
                              json::object(),
                              dtype::fp32,
                              {"stock", "wrong_one_element", "bf16_rounded", "nan_one"},
                              ""};
        spec.params = std::string(workload) == "softmax" ? json{{"rows", 2}, {"vocab", 4096}}
                                                         : json{{"n", 512}, {"k", 256}};
        const auto r = run_jobs(*dev, {spec}, "correctness");
        EXPECT_EQ(find_record(r, ledger::correctness, "stock")->figures["verdict"], "PASS")
            << workload;
        for (const char* wrong : {"wrong_one_element", "bf16_rounded", "nan_one"}) {
            const auto* rec = find_record(r, ledger::correctness, wrong);
            ASSERT_NE(rec, nullptr);
            EXPECT_EQ(rec->figures["verdict"], "FAIL") << workload << " " << wrong;
            EXPECT_FALSE(rec->figures["failed_checks"].empty());
            const auto repro = rec->figures["repro"].get<std::string>();
            EXPECT_NE(repro.find("--variants " + std::string(wrong)), std::string::npos);
            EXPECT_NE(repro.find("--seed "), std::string::npos);
        }
        EXPECT_EQ(
            find_record(r, ledger::correctness, "nan_one")->figures["metrics"]["new_nonfinite"], 1);
        EXPECT_EQ(r.summary.correctness_fail, 3u);
        EXPECT_EQ(r.summary.exit_code(), 1);
    }
}

TEST(runner, each_record_carries_exactly_one_ledger) {
    auto dev = cpu();
    const auto r = run_jobs(*dev, {k_small_cases[0]}, "op_time,correctness,memory");
    // a key only one ledger writes, per ledger
    const std::map<ledger, std::string> own{{ledger::op_time, "stats"},
                                            {ledger::correctness, "verdict"},
                                            {ledger::memory, "driver_peak_bytes"}};
    std::map<ledger, int> count;
    for (const auto& rec : r.records) {
        ASSERT_EQ(rec.status, record_status::ok) << rec.reason;
        ++count[rec.which];
        EXPECT_EQ(rec.unit, std::string(unit_of(rec.which)));
        for (const auto& [l, key] : own)
            EXPECT_EQ(rec.figures.contains(key), l == rec.which)
                << to_string(rec.which) << " has " << key;
        EXPECT_EQ(rec.samples.empty(), rec.which != ledger::op_time);
    }
    EXPECT_EQ(count[ledger::op_time], 2);
    EXPECT_EQ(count[ledger::correctness], 2);
    EXPECT_EQ(count[ledger::memory], 2);
}

TEST(runner, op_time_records_say_how_they_were_measured) {
    auto dev = cpu();
    const auto r = run_jobs(*dev, {k_small_cases[2]}, "op_time");
    for (const auto* v : {"stock", "generic"}) {
        const auto* rec = find_record(r, ledger::op_time, v);
        ASSERT_NE(rec, nullptr);
        const auto& f = rec->figures;
        EXPECT_EQ(f["mode"], "host");
        EXPECT_EQ(f["cache"], "hot");
        EXPECT_GT(f["stats"]["median"].get<double>(), 0);
        EXPECT_LE(f["stats"]["ci95_low"].get<double>(), f["stats"]["median"].get<double>());
        // 2x512 + 256x512 + 256 inputs and 2x256 outputs, fp32
        EXPECT_DOUBLE_EQ(f["bytes_moved"].get<double>(),
                         4.0 * (2 * 512 + 256 * 512 + 256 + 2 * 256));
        EXPECT_GT(f["pct_of_bandwidth"].get<double>(), 0);
        EXPECT_TRUE(f["stop"] == "converged" || f["stop"] == "timed_out");
        // the control beside the timings: the host round trip before and after the job
        EXPECT_GT(f["host_round_trip_us"]["before"].get<double>(), 0);
        EXPECT_GT(f["host_round_trip_us"]["after"].get<double>(), 0);
        EXPECT_EQ(f["host_round_trip_us"]["reps"], measure::k_round_trip_reps);
    }
}

TEST(runner, what_the_build_cannot_do_is_a_skip_with_its_reason_not_a_failure) {
    auto dev = cpu();
    const auto r = run_jobs(*dev,
                            {{"linear_decode", json{{"n", 64}, {"k", 64}}, dtype::fp16, {}, ""},
                             {"softmax", json{{"vocab", 64}}, dtype::fp16, {}, ""}},
                            "op_time,correctness");
    for (const auto& rec : r.records) {
        EXPECT_NE(rec.status, record_status::failed) << rec.reason;
        if (rec.status == record_status::skipped)
            EXPECT_FALSE(rec.reason.empty());
    }
    // 2 cases x 3 variants (stock, generic, native) x 2 ledgers, each ran or said why not
    EXPECT_EQ(r.records.size(), 12u);
}
