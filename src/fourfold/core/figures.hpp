#pragma once
// One typed struct per ledger for the figures the layers exchange (runner writes them, compare
// and report read them). The store keeps a record's figures as JSON, which stays the on-disk and
// export form: these structs are read from it and written into it here and nowhere else, so a
// key is named in one place. Keys a struct does not own (workload facts, notes, timelines) stay
// in the JSON beside it untouched.
//
// Reading is tolerant of records older than a field: a missing key is the field's default (or
// nullopt), never an error; a key present with the wrong type throws stored_value_error, which
// the store's readers turn into "run R, record N: ..." (store/).
#include "fourfold/core/json.hpp"
#include "fourfold/core/record.hpp"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace fourfold {

// A stored figure that has the wrong type for its key.
class stored_value_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Summary statistics as stored (measure::sample_stats::to_json).
struct stats_figure {
    std::int64_t n = 0;
    double min = 0, q1 = 0, median = 0, q3 = 0, iqr = 0, max = 0, mean = 0, stdev = 0;
    double ci95_low = 0, ci95_high = 0;
    static std::optional<stats_figure> from_json(const json& j);
    json to_json() const;
};

// The host round trip measured before and after a job (the control beside host-bound timings).
struct round_trip_figure {
    double before_us = 0, after_us = 0;
    int reps = 0;
    double mean_us() const { return (before_us + after_us) / 2; }
    static std::optional<round_trip_figure> from_json(const json& j);
    json to_json() const;
};

struct op_time_figures {
    std::string mode, cache, stop;     // how it was timed; "converged" / "timed_out"
    std::optional<stats_figure> stats; // µs per call
    double bytes_moved = 0, flops = 0;
    double gb_per_s = 0, tflop_per_s = 0;
    double bandwidth_ceiling_gb_per_s = 0, pct_of_bandwidth = 0;
    bool host_sync = false;
    std::optional<round_trip_figure> host_round_trip;
    double cache_bytes = 0; // the last-level cache the cold-cache rotation had to exceed

    static op_time_figures from(const json& figures);
    // Sets the keys this struct owns in `figures`, leaving every other key as it is.
    void write(json& figures) const;
    std::string timing_text() const {
        return (mode.empty() ? "?" : mode) + "/" + (cache.empty() ? "?" : cache);
    }
};

// The throughput ledger of a whole-model workload: a rate in the workload's own unit (tokens/s
// for a decoder, frames/s for a video VAE), its per-step samples, and the axis that names the
// job's context (ctx for a decoder, frames or tiles for a VAE).
struct throughput_figures {
    std::string unit = "tokens/s";      // the rate's unit (records before it existed: tokens/s)
    std::string step_unit = "ms/token"; // the samples' unit
    std::string context_axis = "ctx";   // the job parameter the context is
    json context;                       // its value (null when the workload has none)
    double rate = 0;                    // `unit`, from the median step
    std::optional<stats_figure> step_stats;
    std::string mode, stop;
    bool host_sync = false, host_paced = false;
    std::optional<round_trip_figure> host_round_trip;
    std::optional<double> bandwidth_limit; // in `unit`, where the workload can say
    std::optional<double> prefill_ms;

    static throughput_figures from(const json& figures);
    void write(json& figures) const;
};

struct correctness_figures {
    std::string verdict; // "PASS" / "FAIL"
    std::vector<std::string> failed_checks;
    json metrics = json::object();
    json tolerance = json::object();
    std::string output_dtype;
    std::string repro;

    static correctness_figures from(const json& figures);
    void write(json& figures) const;
    bool pass() const { return verdict == "PASS"; }
};

struct memory_figures_view {
    std::string driver_level;
    bool device_wide = false;
    std::optional<std::int64_t> driver_peak_bytes, reserved_peak_bytes, allocated_peak_bytes,
        outside_allocator_bytes;
    json baseline = json::object();
    json unavailable = json::object();
    std::int64_t calls = 0;

    static memory_figures_view from(const json& figures);
};

// The correctness metrics every reader lists beside a verdict (compare's CSV, the report's CSV),
// with their units: one table, as core/memory_levels.hpp is for the memory levels.
struct correctness_metric_field {
    const char* key;  // under figures.metrics
    const char* unit; // "" for a ratio
};
inline constexpr correctness_metric_field k_correctness_metrics[] = {
    {"rel_l2", ""},     {"max_abs", ""},   {"max_ulp", "ULP"},
    {"p99_ulp", "ULP"}, {"psnr_db", "dB"}, {"cosine", ""}};

// The facts a variant's records carry (storage bytes, the path, a kernel's configuration).
json facts_of(const json& figures);

} // namespace fourfold
