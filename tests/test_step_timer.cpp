// The whole-model step timer stops by the shared stopping rule (measure/stopping_rule.hpp): it
// converges, times out or caps as op timing does, never cuts a round short, keeps its warm-up
// round out of the samples, and the decode workload's throughput records carry the rule's stop
// states under the run's settings.
#include "fourfold/backend/device.hpp"
#include "fourfold/measure/step_timer.hpp"
#include "runner_helpers.hpp"

#include <chrono>
#include <gtest/gtest.h>

using namespace fourfold;
using namespace fourfold::measure;

namespace {

std::unique_ptr<backend::device> cpu() {
    return backend::open_device({backend::device_kind::cpu, 0});
}

// Busy for `us` microseconds: steadier than a sleep, so the times are what the step took.
void spin_us(double us) {
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(us);
    while (std::chrono::steady_clock::now() < until) {
    }
}

struct counted_round {
    int lead_ins = 0;
    int steps = 0;
    step_round round(std::int64_t steps_per_round, double step_us) {
        return {[this] { ++lead_ins; },
                [this, step_us](std::int64_t) {
                    ++steps;
                    spin_us(step_us);
                },
                steps_per_round};
    }
};

stopping_settings never_converging() {
    stopping_settings s;
    s.min_samples = 1;
    s.min_time_s = 0;
    s.max_rel_stdev = 0;   // no noise is small enough
    s.plateau_spread = -1; // and no plateau flat enough
    s.timeout_s = 60;
    return s;
}

} // namespace

TEST(step_timer, the_sample_cap_stops_it_after_whole_rounds) {
    auto dev = cpu();
    auto s = never_converging();
    s.max_samples = 12;
    counted_round c;
    const auto t = time_steps(*dev, s, c.round(5, 20));
    // 12 samples are reached inside the third round, which runs to its end: 15, not 12
    EXPECT_EQ(t.stop, stop_state::sample_cap);
    EXPECT_EQ(t.rounds, 3);
    EXPECT_EQ(t.step_ms.size(), 15u);
    EXPECT_EQ(t.lead_ms.size(), 3u);
    // the warm-up round ran and is in no sample
    EXPECT_EQ(c.lead_ins, 4);
    EXPECT_EQ(c.steps, 20);
    EXPECT_EQ(t.to_json()["stop"], "sample_cap");
    EXPECT_EQ(t.to_json()["rounds"], 3);
    EXPECT_NE(t.stop_detail.find("15-sample cap"), std::string::npos) << t.stop_detail;
}

TEST(step_timer, the_timeout_stops_it_with_the_rules_words) {
    auto dev = cpu();
    auto s = never_converging();
    s.timeout_s = 0.03;
    counted_round c;
    const auto t = time_steps(*dev, s, c.round(2, 5000)); // 10 ms a round
    EXPECT_EQ(t.stop, stop_state::timed_out);
    EXPECT_GE(t.elapsed_s, 0.03);
    // about 3 rounds of 10 ms; fewer where the machine is loaded (a round's wall time then
    // stretches), never more than the timeout allows
    EXPECT_GE(t.rounds, 1);
    EXPECT_LE(t.rounds, 6);
    // it stopped at the first check after the timeout: before the last round, it had not passed
    const double last_round_s = (t.step_ms.end()[-1] + t.step_ms.end()[-2]) / 1000.0;
    EXPECT_LT(t.elapsed_s - last_round_s, 0.03 + 0.005);
    EXPECT_EQ(t.to_json()["stop"], "timed_out");
    EXPECT_EQ(t.to_json()["stop_state"], "timed_out");
    EXPECT_EQ(t.stop_detail.rfind("timed out", 0), 0u) << t.stop_detail;
    for (const auto ms : t.step_ms)
        EXPECT_GE(ms, 5.0);
}

TEST(step_timer, steady_steps_converge_once_the_minimum_time_is_spent) {
    auto dev = cpu();
    stopping_settings s;
    s.min_samples = 10;
    s.min_time_s = 0.02;
    s.max_rel_stdev = 0.5; // a busy loop of 200 us on a shared CPU is well inside 50 %
    s.timeout_s = 10;
    counted_round c;
    const auto t = time_steps(*dev, s, c.round(4, 200));
    EXPECT_EQ(stop_class(t.stop), "converged") << t.stop_detail;
    EXPECT_EQ(t.to_json()["stop"], "converged");
    EXPECT_GE(t.elapsed_s, 0.02);
    EXPECT_GE(t.step_ms.size(), 10u);
    EXPECT_EQ(t.step_ms.size(), static_cast<std::size_t>(4 * t.rounds));
    EXPECT_FALSE(t.events); // the CPU has no device events: the host clock, synchronised
    EXPECT_NE(t.method("prefill included").find("host clock"), std::string::npos);
}

TEST(step_timer, a_workloads_minimum_rounds_run_past_the_timeout_with_the_state_kept) {
    auto dev = cpu();
    auto s = never_converging();
    s.timeout_s = 0.001; // passed inside the first round
    counted_round c;
    auto round = c.round(2, 2000);
    round.min_rounds = 3;
    const auto t = time_steps(*dev, s, round);
    EXPECT_EQ(t.rounds, 3);
    EXPECT_EQ(t.step_ms.size(), 6u);
    EXPECT_EQ(t.stop, stop_state::timed_out); // what the rule said, not hidden by the minimum
    EXPECT_NE(t.stop_detail.find("at least 3 rounds"), std::string::npos) << t.stop_detail;
    EXPECT_EQ(c.lead_ins, 4); // the warm-up round, then the three
}

TEST(step_timer, a_round_without_steps_is_refused) {
    auto dev = cpu();
    EXPECT_THROW(time_steps(*dev, stopping_settings{}, step_round{[] {}, [](std::int64_t) {}, 0}),
                 std::invalid_argument);
}

TEST(step_timer, decode_throughput_stops_by_the_runs_stopping_settings) {
    auto dev = cpu();
    auto s = fourfold::testing::quick_settings("throughput");
    s.timing.stop.min_time_s = 0;
    s.timing.stop.min_samples = 1;
    s.timing.stop.max_rel_stdev = 0;
    s.timing.stop.plateau_spread = -1;
    s.timing.stop.max_samples = 10; // two rounds of 6 decode steps
    const auto r =
        fourfold::testing::run_jobs(*dev,
                                    {{"decode",
                                      json{{"model", "tiny-llama"}, {"ctx", 12}, {"tokens", 6}},
                                      dtype::fp32,
                                      {"stock"},
                                      ""}},
                                    "throughput", s);
    const auto* rec = fourfold::testing::find_record(r, ledger::throughput, "stock");
    ASSERT_NE(rec, nullptr);
    ASSERT_EQ(rec->status, record_status::ok) << rec->reason;
    const auto& f = rec->figures;
    EXPECT_EQ(f["stop"], "sample_cap");
    EXPECT_EQ(f["stop_state"], "sample_cap");
    EXPECT_EQ(f["rounds"], 2);
    EXPECT_EQ(rec->samples.size(), 12u);
    EXPECT_EQ(f["ms_per_token"]["n"], 12);
    EXPECT_NE(f["stop_detail"].get<std::string>().find("cap"), std::string::npos);
}
