#pragma once
// Records for the compare and report tests, written the way the runner writes them (same
// figures, same units, raw samples), with samples drawn from known distributions so that the
// statistics have a known truth to be checked against.
#include "fourfold/core/record.hpp"
#include "fourfold/core/rng.hpp"
#include "fourfold/store/result_store.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace fourfold::testing {

inline job_id job_of(const std::string& workload, const std::string& variant,
                     const std::string& dtype, json params, const std::string& device = "cpu") {
    return job_id{workload, variant, device, dtype, std::move(params), 7};
}

// n samples of median_us * exp(sigma * N(0, 1)): a log-normal whose median is median_us.
inline std::vector<double> lognormal_samples(double median_us, double sigma, std::size_t n,
                                             std::uint64_t seed) {
    xoshiro256 rng(seed);
    std::vector<double> out(n);
    for (auto& x : out)
        x = median_us * std::exp(sigma * rng.normal());
    return out;
}

inline record op_time_record(job_id job, std::vector<double> samples_us,
                             const std::string& mode = "host", const std::string& cache = "hot") {
    auto r = record::make(ledger::op_time, std::move(job));
    auto sorted = samples_us;
    std::sort(sorted.begin(), sorted.end());
    r.figures = json{{"mode", mode},
                     {"cache", cache},
                     {"stats", {{"n", sorted.size()}, {"median", sorted[sorted.size() / 2]}}}};
    r.samples = std::move(samples_us);
    return r;
}

inline record throughput_record(job_id job, double ctx, std::vector<double> samples_ms) {
    auto r = record::make(ledger::throughput, std::move(job));
    auto sorted = samples_ms;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    r.figures = json{{"ctx", ctx},
                     {"mode", "eager"},
                     {"tokens_per_s", 1000.0 / median},
                     {"ms_per_token", {{"median", median}}},
                     {"bandwidth_limit_tokens_per_s", 3000.0 / median}};
    r.samples = std::move(samples_ms);
    r.samples_unit = "ms/token";
    return r;
}

// A throughput record in a unit other than tokens/s, the way a whole-model workload writes it
// through the runner (throughput_figures): frames/s per `axis`, ms per frame samples.
inline record rate_record(job_id job, const std::string& unit, const std::string& axis,
                          double context, std::vector<double> samples_ms) {
    auto r = record::make(ledger::throughput, std::move(job));
    auto sorted = samples_ms;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    r.figures = json{{"unit", unit},
                     {"step_unit", "ms/frame"},
                     {"context_axis", axis},
                     {"context", context},
                     {"rate", 1000.0 / median},
                     {"mode", "eager"},
                     {"step_stats", {{"median", median}, {"n", sorted.size()}}}};
    r.unit = unit;
    r.samples = std::move(samples_ms);
    r.samples_unit = "ms/frame";
    return r;
}

inline record correctness_record(job_id job, const std::string& verdict, double rel_l2) {
    auto r = record::make(ledger::correctness, std::move(job));
    r.figures = json{{"verdict", verdict},
                     {"metrics",
                      {{"rel_l2", rel_l2},
                       {"max_abs", rel_l2 * 3},
                       {"max_ulp", 2},
                       {"psnr_db", 80.0},
                       {"nan", 0},
                       {"inf", 0}}},
                     {"tolerance", {{"rel_l2", 1e-3}}}};
    return r;
}

inline record memory_record(job_id job, std::optional<double> driver, double reserved,
                            double allocated) {
    auto r = record::make(ledger::memory, std::move(job));
    r.figures = json{
        {"driver_level", "process RSS"},
        {"driver_peak_bytes", driver ? json(*driver) : json(nullptr)},
        {"reserved_peak_bytes", reserved},
        {"allocated_peak_bytes", allocated},
        {"outside_allocator_bytes", driver ? json(*driver - reserved) : json(nullptr)},
        {"unavailable",
         driver ? json::object()
                : json{{"driver", "no driver probe on this test device"},
                       {"outside_allocator", "needs both the driver and the reserved level"}}},
        {"baseline", {{"driver_bytes", 1e6}}},
        {"sampler", {{"achieved_hz", 1000.0}}},
        {"timeline", json::array({json::array({0.0, 1e6}), json::array({1.0, driver.value_or(2e6)}),
                                  json::array({2.0, 1.5e6})})}};
    return r;
}

// Provenance shaped like collect_provenance's, with the fields that always differ set apart.
inline json provenance(const std::string& device_name = "Test CPU",
                       const std::string& git_sha = "abc123",
                       const std::string& timing_mode = "host",
                       const std::string& collected_at = "t0") {
    return json{
        {"fourfold", {{"git_sha", git_sha}, {"build_type", "Release"}}},
        {"libtorch", {{"version", "1.13"}}},
        {"host", {{"cpu_model", "Test CPU"}, {"hostname", "host-" + collected_at}}},
        {"device",
         {{"name", device_name}, {"kind", "cpu"}, {"capabilities", {{"arch", device_name}}}}},
        {"settings", {{"timing", {{"mode", timing_mode}, {"cache", "hot"}}}, {"seed", 1}}},
        {"bandwidth", {{"gb_per_s", collected_at == "t0" ? 10.0 : 11.0}}},
        {"collected_at", collected_at}};
}

// Writes a run with these records to the store; returns its id.
inline std::int64_t write_run(store::result_store& s, const std::string& label, const json& prov,
                              const std::vector<record>& records) {
    const auto run = s.begin_run(label, "cpu", "test", prov);
    for (const auto& r : records)
        s.add_record(run, r);
    s.finish_run(run, "complete");
    return run;
}

} // namespace fourfold::testing
