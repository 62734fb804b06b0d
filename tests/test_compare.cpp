// compare: the Mann-Whitney U test against published values, the bootstrap CI of a ratio of
// medians against a known truth, the verdict rule, pairing, and the refusal of undeclared
// differences.
#include "compare_fixtures.hpp"
#include "fourfold/compare/comparison.hpp"
#include "fourfold/report/compare_tables.hpp"
#include "test_helpers.hpp"

#include <gtest/gtest.h>
#include <sstream>

using namespace fourfold;
using namespace fourfold::compare;
using namespace fourfold::testing;

namespace {

// Samples of sizes m and n with exactly u pairs (a > b): b = 0, 2, 4, ...; each a = 2k + 1
// lies above exactly k of them.
std::pair<std::vector<double>, std::vector<double>> samples_with_u(std::size_t m, std::size_t n,
                                                                   std::size_t u) {
    std::vector<double> b(n), a(m);
    for (std::size_t j = 0; j < n; ++j)
        b[j] = 2.0 * static_cast<double>(j);
    for (std::size_t i = 0; i < m; ++i) {
        const std::size_t k = std::min(n, u);
        u -= k;
        // above b[0..k-1], below b[k]; distinct from each other so that nothing ties
        a[i] = 2.0 * static_cast<double>(k) - 1.0 + 0.001 * static_cast<double>(i);
    }
    return {a, b};
}

std::vector<store::stored_record> stored(const std::vector<record>& recs, std::int64_t run = 1) {
    std::vector<store::stored_record> out;
    std::int64_t id = 1;
    for (const auto& r : recs) {
        store::stored_record s;
        s.id = id++;
        s.run_id = run;
        s.rec = r;
        out.push_back(std::move(s));
    }
    return out;
}

store::run_row run_row_of(std::int64_t id, const std::string& label, const json& prov) {
    store::run_row r;
    r.id = id;
    r.label = label;
    r.device = "cpu";
    r.provenance = prov;
    return r;
}

const json k_softmax{{"rows", 1}, {"vocab", 1000}};

} // namespace

// Critical values of U for a two-sided test at alpha = 0.05, from the standard published table
// (e.g. Mann & Whitney 1947; reproduced in most statistics texts): reject when U <= critical.
TEST(mann_whitney, exact_p_values_reproduce_the_published_table_of_critical_values) {
    struct row {
        std::size_t m, n, critical;
    };
    const row table[] = {{5, 5, 2},     {6, 6, 5},    {7, 7, 8},    {8, 8, 13},   {9, 9, 17},
                         {10, 10, 23},  {11, 11, 30}, {12, 12, 37}, {13, 13, 45}, {14, 14, 55},
                         {15, 15, 64},  {16, 16, 75}, {17, 17, 87}, {18, 18, 99}, {19, 19, 113},
                         {20, 20, 127}, {4, 8, 4},    {5, 10, 8},   {8, 12, 22},  {10, 15, 39}};
    for (const auto& t : table) {
        const auto [a1, b1] = samples_with_u(t.m, t.n, t.critical);
        const auto at = mann_whitney_u(a1, b1);
        EXPECT_EQ(at.method, "exact");
        EXPECT_DOUBLE_EQ(at.u_a, static_cast<double>(t.critical)) << t.m << "x" << t.n;
        EXPECT_LE(at.p_two_sided, 0.05) << t.m << "x" << t.n;
        const auto [a2, b2] = samples_with_u(t.m, t.n, t.critical + 1);
        const auto above = mann_whitney_u(a2, b2);
        EXPECT_DOUBLE_EQ(above.u_a, static_cast<double>(t.critical + 1));
        EXPECT_GT(above.p_two_sided, 0.05) << t.m << "x" << t.n;
    }
}

TEST(mann_whitney, exact_small_cases_match_counting) {
    // all of a below all of b: one arrangement of C(m+n, m); two-sided doubles it
    const std::vector<double> a3{1, 2, 3}, b3{4, 5, 6};
    EXPECT_NEAR(mann_whitney_u(a3, b3).p_two_sided, 2.0 / 20.0, 1e-12);
    const std::vector<double> a4{1, 2, 3, 4}, b4{5, 6, 7, 8};
    EXPECT_NEAR(mann_whitney_u(a4, b4).p_two_sided, 2.0 / 70.0, 1e-12);
    EXPECT_NEAR(exact_u_cdf(4, 4, 16), 1.0, 1e-12);
}

// R's ?wilcox.test example (Hollander & Wolfe 1973, p. 69): W = 35, one-sided p = 0.1272.
TEST(mann_whitney, reproduces_r_exact_example) {
    const std::vector<double> x{0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46};
    const std::vector<double> y{1.15, 0.88, 0.90, 0.74, 1.21};
    const auto t = mann_whitney_u(x, y);
    EXPECT_EQ(t.method, "exact");
    EXPECT_DOUBLE_EQ(t.u_a, 35);
    EXPECT_NEAR(t.p_two_sided, 2 * 0.1272, 1e-4);
}

// R: wilcox.test(Ozone ~ Month, data = airquality, subset = Month %in% c(5, 8)):
// W = 127.5, p-value = 0.0001208 (ties: normal approximation with continuity correction).
TEST(mann_whitney, reproduces_r_tied_normal_example) {
    const std::vector<double> may{41, 36, 12, 18, 28, 23, 19, 8, 7,  16, 11, 14,  18,
                                  14, 34, 6,  30, 11, 1,  11, 4, 32, 23, 45, 115, 37};
    const std::vector<double> aug{39, 9,  16, 78, 35, 66, 122, 89,  110, 44, 28,  65, 22,
                                  59, 23, 31, 44, 21, 9,  45,  168, 73,  76, 118, 84, 85};
    const auto t = mann_whitney_u(may, aug);
    EXPECT_EQ(t.method, "normal, tie and continuity corrected");
    EXPECT_DOUBLE_EQ(t.u_a, 127.5);
    EXPECT_NEAR(t.p_two_sided, 0.0001208, 5e-7);
    const auto swapped = mann_whitney_u(aug, may);
    EXPECT_DOUBLE_EQ(swapped.u_a, 26.0 * 26.0 - 127.5);
    EXPECT_NEAR(swapped.p_two_sided, t.p_two_sided, 1e-15);
}

TEST(mann_whitney, all_values_tied_is_no_evidence) {
    const std::vector<double> a(20, 3.0), b(30, 3.0);
    EXPECT_DOUBLE_EQ(mann_whitney_u(a, b).p_two_sided, 1.0);
}

// The 95 % percentile-bootstrap CI of median(B)/median(A) covers the true ratio about 95 % of
// the time, on log-normal timing-like samples with a known ratio of medians.
TEST(median_ratio, bootstrap_ci_covers_the_true_ratio_at_its_nominal_rate) {
    constexpr int k_trials = 400;
    constexpr double k_true = 1.1;
    int covered = 0;
    for (int t = 0; t < k_trials; ++t) {
        const auto a = lognormal_samples(10.0, 0.1, 80, 1000 + t);
        const auto b = lognormal_samples(10.0 * k_true, 0.1, 60, 5000 + t);
        const auto r = median_ratio(a, b, 77 + static_cast<std::uint64_t>(t));
        ASSERT_TRUE(r.has_ci);
        ASSERT_LE(r.ci95.low, r.ratio);
        ASSERT_GE(r.ci95.high, r.ratio);
        covered += r.ci95.low <= k_true && k_true <= r.ci95.high ? 1 : 0;
    }
    const double rate = static_cast<double>(covered) / k_trials;
    // binomial sd at 400 trials is 1.1 %; the percentile bootstrap of a median runs a little wide
    EXPECT_GT(rate, 0.91);
    EXPECT_LT(rate, 0.99);
}

TEST(median_ratio, same_samples_same_interval) {
    const auto a = lognormal_samples(5, 0.2, 50, 1);
    const auto b = lognormal_samples(5, 0.2, 50, 2);
    const auto r1 = median_ratio(a, b), r2 = median_ratio(a, b);
    EXPECT_EQ(r1.ci95.low, r2.ci95.low);
    EXPECT_EQ(r1.ci95.high, r2.ci95.high);
}

TEST(verdict, rule_uses_the_whole_ci_against_the_threshold) {
    auto est = [](double lo, double hi) {
        ratio_estimate r;
        r.ratio = (lo + hi) / 2;
        r.ci95 = {lo, hi};
        r.has_ci = true;
        return r;
    };
    EXPECT_EQ(time_verdict(est(0.90, 0.97), 0.02), verdict::faster);
    EXPECT_EQ(time_verdict(est(0.97, 0.99), 0.02), verdict::unclear); // better, not by 2 %
    EXPECT_EQ(time_verdict(est(0.985, 1.01), 0.02), verdict::same);
    EXPECT_EQ(time_verdict(est(1.03, 1.2), 0.02), verdict::slower);
    EXPECT_EQ(time_verdict(est(0.9, 1.1), 0.02), verdict::unclear);
    EXPECT_EQ(time_verdict(est(0.95, 0.99), 0.005), verdict::faster); // the threshold is settable
    // rates: higher is better
    EXPECT_EQ(rate_verdict(est(1.03, 1.2), 0.02), verdict::faster);
    EXPECT_EQ(rate_verdict(est(0.90, 0.97), 0.02), verdict::slower);
    ratio_estimate no_ci;
    no_ci.ratio = 0.5;
    EXPECT_EQ(time_verdict(no_ci, 0.02), verdict::unclear); // a point estimate alone never decides
    // samples that scatter 10 %: a shift must clear 10 %, not 2 %; SAME still needs +-2 %
    EXPECT_EQ(time_verdict(est(1.05, 1.08), 0.02, 0.10), verdict::unclear);
    EXPECT_EQ(time_verdict(est(1.12, 1.20), 0.02, 0.10), verdict::slower);
    EXPECT_EQ(rate_verdict(est(0.85, 0.88), 0.02, 0.10), verdict::slower);
    EXPECT_EQ(time_verdict(est(0.99, 1.01), 0.02, 0.10), verdict::same);
    EXPECT_EQ(time_verdict(est(1.03, 1.04), 0.02, 0.01), verdict::slower); // below t: t decides
}

TEST(verdict, relative_noise_is_a_robust_sigma_over_the_median) {
    EXPECT_DOUBLE_EQ(relative_noise(std::vector<double>{5.0}), 0.0);
    // {8, 9, 10, 11, 12}: quartiles 9 and 11, IQR 2, median 10
    EXPECT_NEAR(relative_noise(std::vector<double>{12.0, 8.0, 10.0, 9.0, 11.0}), 0.2 / 1.349,
                1e-12);
    // a normal-ish sample: the stdev's value
    EXPECT_NEAR(relative_noise(lognormal_samples(20, 0.05, 20000, 3)), 0.05, 0.003);
    // 3 % preempted samples 100x slower: the scatter barely moves (a stdev would read ~170 %)
    auto tail = lognormal_samples(20, 0.05, 2000, 4);
    for (std::size_t i = 0; i < tail.size(); i += 33)
        tail[i] *= 100;
    EXPECT_LT(relative_noise(tail), 0.06);
}

// A against itself (same distribution): FASTER or SLOWER must be rare; a real 20 % change is
// found nearly always.
TEST(verdict, a_vs_a_rarely_calls_a_difference_and_a_real_one_is_found) {
    int called = 0, found = 0;
    constexpr int k_trials = 200;
    for (int t = 0; t < k_trials; ++t) {
        const auto a = lognormal_samples(20, 0.05, 100, 10 + t);
        const auto b = lognormal_samples(20, 0.05, 100, 900 + t);
        const auto v = time_verdict(median_ratio(a, b), k_default_threshold);
        called += v == verdict::faster || v == verdict::slower ? 1 : 0;
        const auto c = lognormal_samples(16, 0.05, 100, 2000 + t);
        found += time_verdict(median_ratio(a, c), k_default_threshold) == verdict::faster ? 1 : 0;
    }
    EXPECT_LT(called, k_trials / 20);
    EXPECT_GT(found, k_trials * 95 / 100);
}

TEST(threshold, parses_percentages_and_fractions_and_refuses_the_rest) {
    EXPECT_DOUBLE_EQ(parse_threshold("2%"), 0.02);
    EXPECT_DOUBLE_EQ(parse_threshold("0.5 %"), 0.005);
    EXPECT_DOUBLE_EQ(parse_threshold("0.05"), 0.05);
    for (const char* bad : {"2", "-1%", "abc", "", "0", "60%", "2%%"})
        EXPECT_THROW(parse_threshold(bad), bad_input) << bad;
    EXPECT_THROW(parse_allowed({"device,bogus"}), bad_input);
    EXPECT_EQ(parse_allowed({"device, dtype", "build"}),
              (std::set<std::string>{"build", "device", "dtype"}));
}

TEST(provenance_diff, files_fields_under_names_and_sets_aside_what_always_differs) {
    EXPECT_EQ(diff_name_of("device.name"), "device_model");
    EXPECT_EQ(diff_name_of("device.uuid"), "device_instance");
    EXPECT_EQ(diff_name_of("device.nvml.sm_clock_mhz"), "");
    EXPECT_EQ(diff_name_of("device.nvml.max_sm_clock_mhz"), "device_config");
    EXPECT_EQ(diff_name_of("libtorch.version"), "torch");
    EXPECT_EQ(diff_name_of("libtorch.num_threads"), "threads");
    EXPECT_EQ(diff_name_of("fourfold.git_sha"), "build");
    EXPECT_EQ(diff_name_of("fourfold.torch_prefix"), "torch");
    EXPECT_EQ(diff_name_of("settings.timing.mode"), "timing");
    EXPECT_EQ(diff_name_of("host.hostname"), "");
    EXPECT_EQ(diff_name_of("host.cpu_model"), "host");
    EXPECT_EQ(diff_name_of("collected_at"), "");
    EXPECT_EQ(diff_name_of("brand_new_section.x"), "other");
    const auto d = diff_provenance(provenance("X", "sha1", "host", "t0"),
                                   provenance("X", "sha1", "host", "t1"));
    EXPECT_TRUE(d.fields.empty()); // only timestamps, host name and the start-up bandwidth differ
    EXPECT_EQ(d.never_treatment.size(), 3u);
    const auto e = diff_provenance(provenance("X", "sha1"), provenance("Y", "sha2"));
    EXPECT_EQ(e.names(), (std::set<std::string>{"build", "device_model"}));
    ASSERT_EQ(e.derived.size(), 1u); // device.capabilities.arch follows from the device
    for (const auto& n : diff_names())
        EXPECT_TRUE(is_diff_name(n.name));
}

TEST(pairing, pairs_by_key_lists_the_rest_and_pairs_across_dtype_only_when_unambiguous) {
    const auto a =
        stored({op_time_record(job_of("softmax", "stock", "fp32", k_softmax), {1, 2, 3}),
                op_time_record(job_of("softmax", "stock", "bf16", k_softmax), {1, 2, 3}),
                op_time_record(job_of("softmax", "generic", "fp32", k_softmax), {1, 2, 3})});
    const auto b =
        stored({op_time_record(job_of("softmax", "stock", "fp32", k_softmax), {1, 2, 3}),
                op_time_record(job_of("softmax", "stock", "bf16", k_softmax), {1, 2, 3}),
                op_time_record(job_of("linear_decode", "stock", "fp32", json{{"n", 8}}), {1})});
    const auto p = pair_runs(a, b);
    EXPECT_EQ(p.by_key(), 2u);
    EXPECT_EQ(p.by_case(), 0u);
    ASSERT_EQ(p.unpaired.size(), 2u);
    for (const auto& u : p.unpaired) {
        EXPECT_FALSE(u.why.empty());
        EXPECT_TRUE((u.side == 'A' && u.rec.rec.job.variant == "generic") ||
                    (u.side == 'B' && u.rec.rec.job.workload == "linear_decode"));
    }
    // one fp32 record against one bf16 record: paired by case, the dtype named
    const auto f32 =
        stored({op_time_record(job_of("softmax", "stock", "fp32", k_softmax), {1, 2})});
    const auto b16 =
        stored({op_time_record(job_of("softmax", "stock", "bf16", k_softmax), {1, 2})});
    const auto q = pair_runs(f32, b16);
    ASSERT_EQ(q.pairs.size(), 1u);
    EXPECT_TRUE(q.pairs[0].by_case);
    EXPECT_EQ(q.pairs[0].job_diffs, std::vector<std::string>{"dtype"});
    // two candidates on one side: ambiguous, nothing paired, everything listed
    const auto two =
        stored({op_time_record(job_of("softmax", "stock", "fp32", k_softmax), {1, 2}),
                op_time_record(job_of("softmax", "stock", "fp16", k_softmax), {1, 2})});
    const auto r = pair_runs(two, b16);
    EXPECT_TRUE(r.pairs.empty());
    EXPECT_EQ(r.unpaired.size(), 3u);
    EXPECT_NE(r.unpaired[0].why.find("ambiguous"), std::string::npos);
}

TEST(compare, an_undeclared_dtype_device_or_provenance_difference_is_refused_by_name) {
    const auto f32 = stored({op_time_record(job_of("softmax", "stock", "fp32", k_softmax),
                                            lognormal_samples(10, 0.05, 40, 1))});
    const auto b16 = stored({op_time_record(job_of("softmax", "stock", "bf16", k_softmax),
                                            lognormal_samples(8, 0.05, 40, 2))});
    const auto ra = run_row_of(1, "f32", provenance());
    const auto rb = run_row_of(2, "b16", provenance("Test CPU", "abc123", "host", "t1"));
    try {
        (void)compare_runs(ra, f32, rb, b16, {});
        FAIL() << "an fp32 run against a bf16 run must be refused";
    } catch (const refused& e) {
        EXPECT_EQ(e.missing(), std::vector<std::string>{"dtype"});
        const std::string msg = e.what();
        EXPECT_NE(msg.find("--allow-diff dtype"), std::string::npos) << msg;
        EXPECT_NE(msg.find("fp32 -> bf16"), std::string::npos) << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos);
    }
    compare_options allow;
    allow.allowed = {"dtype"};
    const auto c = compare_runs(ra, f32, rb, b16, allow);
    ASSERT_EQ(c.op_time.size(), 1u);
    EXPECT_EQ(c.what.job_diffs.at("dtype"), 1u);
    EXPECT_EQ(c.op_time[0].decision, verdict::faster);

    // a cpu run against a cuda run: the device and the device model
    const auto gpu = stored(
        {op_time_record(job_of("softmax", "stock", "fp32", k_softmax, "cuda:0"), {1, 2, 3})});
    const auto rg = run_row_of(3, "gpu", provenance("NVIDIA H200"));
    try {
        (void)compare_runs(ra, f32, rg, gpu, {});
        FAIL() << "a cpu run against a cuda run must be refused";
    } catch (const refused& e) {
        EXPECT_EQ(e.missing(), (std::vector<std::string>{"device", "device_model"}));
    }
    // another fourfold build: refused unless --allow-diff build
    const auto rs = run_row_of(4, "new build", provenance("Test CPU", "def456"));
    EXPECT_THROW((void)compare_runs(ra, f32, rs, f32, {}), refused);
    compare_options build;
    build.allowed = {"build", "torch"};
    const auto ok = compare_runs(ra, f32, rs, f32, build);
    EXPECT_EQ(ok.what.declared_but_equal, std::set<std::string>{"torch"});
    // another timing mode on one record: a timing difference of that pair
    const auto graph = stored({op_time_record(job_of("softmax", "stock", "fp32", k_softmax),
                                              {1, 2, 3}, "graph", "cold")});
    EXPECT_THROW((void)compare_runs(ra, f32, run_row_of(5, "g", provenance()), graph, {}), refused);
}

TEST(compare, ledgers_get_their_own_rows_units_and_directions) {
    const auto jt = job_of("decoder", "stock", "bf16", json{{"model", "tiny"}, {"ctx", 512}});
    const auto a = stored({
        op_time_record(job_of("softmax", "stock", "fp32", k_softmax),
                       lognormal_samples(10, 0.02, 60, 1)),
        throughput_record(jt, 512, lognormal_samples(20, 0.02, 60, 2)),
        correctness_record(job_of("softmax", "stock", "fp32", k_softmax), "PASS", 1e-7),
        memory_record(job_of("softmax", "stock", "fp32", k_softmax), 3e9, 2e9, 1e9),
        record::skipped(ledger::op_time, job_of("softmax", "stock", "fp16", k_softmax),
                        "fp16 unsupported on this device"),
    });
    const auto b = stored({
        op_time_record(job_of("softmax", "stock", "fp32", k_softmax),
                       lognormal_samples(12, 0.02, 60, 3)),
        throughput_record(jt, 512, lognormal_samples(16, 0.02, 60, 4)),
        correctness_record(job_of("softmax", "stock", "fp32", k_softmax), "FAIL", 0.5),
        memory_record(job_of("softmax", "stock", "fp32", k_softmax), std::nullopt, 2.5e9, 1e9),
        op_time_record(job_of("softmax", "stock", "fp16", k_softmax), {1, 2, 3}),
    });
    const auto c =
        compare_runs(run_row_of(1, "a", provenance()), a, run_row_of(2, "b", provenance()), b, {});
    ASSERT_EQ(c.op_time.size(), 1u);
    EXPECT_EQ(c.op_time[0].unit, "µs");
    EXPECT_NEAR(c.op_time[0].ratio.ratio, 1.2, 0.02);
    EXPECT_EQ(c.op_time[0].decision, verdict::slower);
    ASSERT_TRUE(c.op_time[0].u);
    EXPECT_LT(c.op_time[0].u->p_two_sided, 1e-6);
    ASSERT_EQ(c.throughput.size(), 1u);
    EXPECT_EQ(c.throughput[0].unit, "tokens/s");
    EXPECT_EQ(c.throughput[0].ctx, "512");
    EXPECT_NEAR(c.throughput[0].ratio.ratio, 20.0 / 16.0,
                0.02); // fewer ms per token: more tokens/s
    EXPECT_EQ(c.throughput[0].decision, verdict::faster);
    ASSERT_EQ(c.correctness.size(), 1u);
    EXPECT_EQ(c.correctness[0].transition, "PASS->FAIL");
    EXPECT_TRUE(c.has_regression());
    ASSERT_EQ(c.memory.size(), 1u);
    const auto& levels = c.memory[0].levels;
    EXPECT_EQ(levels[0].level, "driver");
    EXPECT_FALSE(levels[0].delta_bytes()); // unavailable in B: no delta, never 0
    EXPECT_FALSE(levels[0].why_b.empty());
    EXPECT_DOUBLE_EQ(*levels[1].delta_bytes(), 0.5e9);
    ASSERT_EQ(c.not_compared.size(), 1u); // skipped in A: reported, not compared
    EXPECT_EQ(c.not_compared[0].a, record_status::skipped);
    const auto j = c.to_json();
    EXPECT_EQ(j["op_time"][0]["verdict"], "SLOWER");
    EXPECT_EQ(j["op_time"][0]["a"]["dtype"], "fp32"); // the jobs, beside their figures
    EXPECT_DOUBLE_EQ(j["op_time"][0]["value_b"].get<double>(), c.op_time[0].b_value);
    EXPECT_TRUE(j["regression"].get<bool>());
}

// A time that syncs with the host, where the host round trip measured beside it moved between
// the runs: the machine changed under it, so a shift no larger than the host's is not called; a
// device-side time with the same shift is, a host-bound time under a steady round trip is too,
// and so is a change well beyond the host's drift.
TEST(compare, a_host_synchronising_time_must_clear_the_host_round_trips_drift) {
    auto timed = [](const std::string& variant, bool host_sync, double median, double rt_before,
                    double rt_after, std::uint64_t seed) {
        auto r = op_time_record(job_of("moe_decode", variant, "bf16", json{{"tokens", 1}}),
                                lognormal_samples(median, 0.01, 200, seed), "event", "cold");
        r.figures["host_sync"] = host_sync;
        r.figures["host_round_trip_us"] =
            json{{"before", rt_before}, {"after", rt_after}, {"reps", 200}};
        return r;
    };
    auto runs = [&](double rt_b_before, double rt_b_after, double generic_b = 150) {
        const auto a =
            stored({timed("generic", true, 100, 20, 20, 1), timed("stock", false, 30, 20, 20, 2)});
        const auto b = stored({timed("generic", true, generic_b, rt_b_before, rt_b_after, 3),
                               timed("stock", false, 45, rt_b_before, rt_b_after, 4)});
        return compare_runs(run_row_of(1, "a", provenance()), a, run_row_of(2, "b", provenance()),
                            b, {});
    };
    auto row = [](const comparison& c, const std::string& variant) {
        for (const auto& r : c.op_time)
            if (r.id.a.variant == variant)
                return r;
        ADD_FAILURE() << "no row for " << variant;
        return timed_row{};
    };
    const auto moved = runs(30, 31); // the host round trip 1.5x slower in B
    EXPECT_EQ(row(moved, "generic").decision, verdict::unclear);
    EXPECT_NE(row(moved, "generic").note.find("host round trip"), std::string::npos);
    EXPECT_EQ(row(moved, "stock").decision, verdict::slower); // device-side: called
    EXPECT_NEAR(*row(moved, "stock").round_trip_b, 30.5, 1e-9);
    EXPECT_EQ(row(runs(20, 20.1), "generic").decision, verdict::slower); // a steady host: called
    EXPECT_EQ(row(runs(20, 32), "generic").decision, verdict::unclear); // moved 60 % within B's job
    EXPECT_EQ(row(runs(30, 31, 300), "generic").decision,
              verdict::slower); // 3x: beyond the host's 1.5x
    const auto j = moved.to_json();
    EXPECT_DOUBLE_EQ(j["op_time"][0]["host_round_trip_us"]["a"].get<double>(), 20.0);
    EXPECT_TRUE(j["op_time"][0].contains("noise_a"));
    // the environment: what each run measured of the machine, and whether it moved
    ASSERT_EQ(moved.environment.size(), 2u);
    EXPECT_EQ(moved.environment[0].what, "copy bandwidth");
    EXPECT_FALSE(moved.environment[0].moved(k_default_threshold)); // 10 and 10 GB/s
    EXPECT_EQ(moved.environment[1].what, "host round trip");
    EXPECT_DOUBLE_EQ(*moved.environment[1].a, 20.0);
    EXPECT_DOUBLE_EQ(*moved.environment[1].b, 30.5);
    EXPECT_TRUE(moved.environment[1].moved(k_default_threshold));
    EXPECT_TRUE(j["environment"][1]["moved_beyond_threshold"].get<bool>());
    std::ostringstream text;
    report::print_comparison(moved, text, report::table_format::text);
    EXPECT_NE(text.str().find("the machine changed between the runs"), std::string::npos)
        << text.str();
    EXPECT_FALSE(runs(20, 20).environment[1].moved(k_default_threshold));
}

// Eager decode steps are launched op by op from the host: their tokens/s must clear the host
// round trip's move too; graph-mode steps replay without the host and are called on their CI.
TEST(compare, eager_decode_throughput_must_clear_the_host_round_trips_drift) {
    auto decoded = [](const std::string& mode, double ms_per_token, double rt, std::uint64_t seed) {
        auto r = throughput_record(
            job_of("decode", "stock", "bf16", json{{"model", "m"}, {"ctx", 512}, {"mode", mode}}),
            512, lognormal_samples(ms_per_token, 0.01, 64, seed));
        r.figures["mode"] = mode;
        r.figures["host_paced"] = mode == "eager";
        r.figures["host_sync"] = false;
        r.figures["host_round_trip_us"] = json{{"before", rt}, {"after", rt}, {"reps", 200}};
        return r;
    };
    // B: every step 20 % slower, and the host round trip 50 % slower
    const auto a = stored({decoded("eager", 30, 20, 1), decoded("graph", 10, 20, 2)});
    const auto b = stored({decoded("eager", 36, 30, 3), decoded("graph", 12, 30, 4)});
    const auto c =
        compare_runs(run_row_of(1, "a", provenance()), a, run_row_of(2, "b", provenance()), b, {});
    ASSERT_EQ(c.throughput.size(), 2u);
    for (const auto& r : c.throughput) {
        EXPECT_NEAR(*r.round_trip_b, 30.0, 1e-9);
        if (r.id.a.params["mode"] == "eager") {
            EXPECT_EQ(r.decision, verdict::unclear);
            EXPECT_NE(r.note.find("the host launches every op of these steps"), std::string::npos)
                << r.note;
            EXPECT_NE(r.note.find("SLOWER without it"), std::string::npos) << r.note;
        } else {
            EXPECT_EQ(r.decision, verdict::slower) << r.note;
        }
    }
    ASSERT_EQ(c.environment.size(), 2u);
    EXPECT_DOUBLE_EQ(*c.environment[1].a, 20.0); // throughput records carry the round trip too
}

TEST(compare, geometric_means_are_per_workload_and_variant_over_one_baseline) {
    std::vector<record> ra, rb;
    for (int n : {64, 128, 256}) {
        const auto j = job_of("linear_decode", "stock", "bf16", json{{"n", n}, {"k", 64}});
        ra.push_back(op_time_record(j, lognormal_samples(10, 0.01, 40, n)));
        rb.push_back(op_time_record(j, lognormal_samples(n == 64 ? 5 : 10, 0.01, 40, n + 1)));
    }
    ra.push_back(op_time_record(job_of("softmax", "stock", "fp32", k_softmax),
                                lognormal_samples(10, 0.01, 40, 1)));
    rb.push_back(op_time_record(job_of("softmax", "stock", "fp32", k_softmax),
                                lognormal_samples(20, 0.01, 40, 2)));
    const auto c = compare_runs(run_row_of(1, "a", provenance()), stored(ra),
                                run_row_of(2, "b", provenance()), stored(rb), {});
    ASSERT_EQ(c.geomeans.size(), 1u); // softmax has one pair: its ratio is its own row
    EXPECT_EQ(c.geomeans[0].workload, "linear_decode");
    EXPECT_EQ(c.geomeans[0].n, 3u);
    EXPECT_NEAR(c.geomeans[0].value, std::cbrt(0.5), 0.01);
}

TEST(compare, one_run_compares_each_variant_with_the_baseline_variant) {
    const auto recs = stored({
        op_time_record(job_of("softmax", "stock", "fp32", k_softmax),
                       lognormal_samples(10, 0.02, 40, 1)),
        op_time_record(job_of("softmax", "generic", "fp32", k_softmax),
                       lognormal_samples(30, 0.02, 40, 2)),
        op_time_record(job_of("softmax", "generic", "bf16", k_softmax),
                       lognormal_samples(30, 0.02, 40, 3)),
    });
    compare_options o;
    o.baseline_variant = "stock";
    const auto c = compare_variants(run_row_of(1, "r", provenance()), recs, o);
    ASSERT_EQ(c.op_time.size(), 1u);
    EXPECT_EQ(c.op_time[0].id.variant_text(), "stock -> generic");
    EXPECT_EQ(c.op_time[0].decision, verdict::slower);
    ASSERT_EQ(c.unpaired.size(), 1u); // bf16 has no stock record
    EXPECT_EQ(c.unpaired[0].job.dtype, "bf16");
    EXPECT_NE(c.baseline_text().find("variant 'stock'"), std::string::npos);
    o.baseline_variant = "fastest";
    EXPECT_THROW((void)compare_variants(run_row_of(1, "r", provenance()), recs, o), bad_input);
}

// Within one run a variant that cannot be captured (the MoE host loop) is event-timed beside a
// graph-timed baseline: that comes with the variant, so the comparison goes on and says so; two
// runs timed in two modes are still refused until declared.
TEST(compare, a_variant_timed_in_another_mode_within_one_run_is_part_of_the_treatment) {
    const auto moe = json{{"tokens", 8}, {"experts", 128}};
    const auto linear = json{{"tokens", 1}, {"n", 4096}, {"k", 4096}};
    const auto recs = stored({
        op_time_record(job_of("moe_decode", "stock", "bf16", moe),
                       lognormal_samples(33, 0.02, 40, 1), "graph", "cold"),
        op_time_record(job_of("moe_decode", "generic", "bf16", moe),
                       lognormal_samples(290, 0.05, 40, 2), "event", "cold"),
        op_time_record(job_of("linear_decode", "stock", "bf16", linear),
                       lognormal_samples(12.9, 0.01, 40, 3), "graph", "cold"),
        op_time_record(job_of("linear_decode", "generic", "bf16", linear),
                       lognormal_samples(12.9, 0.01, 40, 4), "graph", "cold"),
    });
    compare_options o;
    o.baseline_variant = "stock";
    const auto c = compare_variants(run_row_of(1, "r", provenance()), recs, o);
    ASSERT_EQ(c.op_time.size(), 2u);
    EXPECT_EQ(c.what.job_diffs.at("timing"), 1u);
    EXPECT_EQ(c.what.with_variant, std::set<std::string>{"timing"});
    for (const auto& r : c.op_time)
        if (r.id.a.workload == "moe_decode") {
            EXPECT_EQ(r.mode, "graph/cold -> event/cold");
            EXPECT_NE(r.note.find("timing graph/cold vs event/cold"), std::string::npos) << r.note;
            EXPECT_EQ(r.decision, verdict::slower);
        }
    std::ostringstream text;
    report::print_comparison(c, text, report::table_format::text);
    EXPECT_NE(text.str().find("comes with the variant"), std::string::npos) << text.str();

    // the same difference between two runs is a treatment to declare
    const auto a = stored({op_time_record(job_of("moe_decode", "stock", "bf16", moe),
                                          lognormal_samples(33, 0.02, 40, 5), "graph", "cold")});
    const auto b = stored({op_time_record(job_of("moe_decode", "stock", "bf16", moe),
                                          lognormal_samples(33, 0.02, 40, 6), "event", "cold")});
    EXPECT_THROW((void)compare_runs(run_row_of(1, "a", provenance()), a,
                                    run_row_of(2, "b", provenance()), b, {}),
                 refused);
}

TEST(compare, in_store_by_label_and_usage_errors) {
    temp_dir dir;
    auto s = store::result_store::open(dir / "c.db", store::open_mode::read_write);
    const auto j = job_of("softmax", "stock", "fp32", k_softmax);
    write_run(s, "before", provenance(), {op_time_record(j, lognormal_samples(10, 0.02, 30, 1))});
    write_run(s, "after", provenance("Test CPU", "abc123", "host", "t1"),
              {op_time_record(j, lognormal_samples(10, 0.02, 30, 2))});
    const auto c = compare_in_store(s, {"before", "after"}, {});
    EXPECT_EQ(c.op_time.size(), 1u);
    EXPECT_TRUE(c.what.names().empty());
    EXPECT_THROW((void)compare_in_store(s, {"before"}, {}),
                 bad_input); // one run, no baseline variant
    EXPECT_THROW((void)compare_in_store(s, {"before", "after", "before"}, {}), bad_input);
    compare_options o;
    o.baseline_variant = "stock";
    EXPECT_THROW((void)compare_in_store(s, {"before", "after"}, o), bad_input);
    EXPECT_THROW((void)compare_in_store(s, {"nosuch", "after"}, {}), bad_input);
    // a label that two runs carry: the latest is used, and the output says which and the others
    write_run(s, "after", provenance("Test CPU", "abc123", "host", "t1"),
              {op_time_record(j, lognormal_samples(10, 0.02, 30, 3))});
    const auto again = compare_in_store(s, {"before", "after"}, {});
    EXPECT_EQ(again.b.id, 3);
    EXPECT_EQ(again.b.same_label_runs, std::vector<std::int64_t>{2});
    EXPECT_NE(run_text(again.b).find("latest of 2 runs"), std::string::npos);
    EXPECT_TRUE(compare_in_store(s, {"1", "2"}, {}).b.same_label_runs.empty()); // by id: no note
}

TEST(compare, a_throughput_in_frames_per_second_is_compared_in_its_unit_and_axis) {
    const auto j = job_of("vae_decode", "stock", "bf16", json{{"frames", 9}});
    const auto a =
        stored({rate_record(j, "frames/s", "frames", 9, lognormal_samples(50, 0.02, 60, 1))});
    const auto b =
        stored({rate_record(j, "frames/s", "frames", 9, lognormal_samples(40, 0.02, 60, 2))}, 2);
    const auto c =
        compare_runs(run_row_of(1, "a", provenance()), a, run_row_of(2, "b", provenance()), b, {});
    ASSERT_EQ(c.throughput.size(), 1u);
    EXPECT_EQ(c.throughput[0].unit, "frames/s");
    EXPECT_EQ(c.throughput[0].context_axis, "frames");
    EXPECT_EQ(c.throughput[0].ctx, "9");
    EXPECT_NEAR(c.throughput[0].ratio.ratio, 50.0 / 40.0,
                0.02); // fewer ms per frame: more frames/s
    EXPECT_EQ(c.throughput[0].decision, verdict::faster);
}
