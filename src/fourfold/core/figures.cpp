#include "fourfold/core/figures.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>

namespace fourfold {
namespace {

// The value at `key`, or `fallback` when absent or null; the wrong type is stored_value_error.
double number(const json& j, const char* key, double fallback = 0) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null())
        return fallback;
    if (!it->is_number())
        throw stored_value_error(fmt::format("'{}' is {}, not a number", key, it->dump()));
    return it->get<double>();
}

std::optional<double> optional_number(const json& j, const char* key) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null())
        return std::nullopt;
    return number(j, key);
}

// A count (samples, calls, repetitions): a number whose magnitude is at most 2^53, where a double
// holds every integer; anything else is stored_value_error (converting 1.3e37 to an integer was
// undefined behaviour, found by fuzz_stored_figures in its first 10-minute run).
std::int64_t whole(double v, const char* key) {
    if (!std::isfinite(v) || std::fabs(v) > 9007199254740992.0)
        throw stored_value_error(fmt::format("'{}' is {}, not a count", key, v));
    return static_cast<std::int64_t>(v);
}

std::int64_t count(const json& j, const char* key, double fallback = 0) {
    return whole(number(j, key, fallback), key);
}

std::optional<std::int64_t> optional_int(const json& j, const char* key) {
    const auto v = optional_number(j, key);
    return v ? std::optional<std::int64_t>(whole(*v, key)) : std::nullopt;
}

std::string text(const json& j, const char* key, std::string fallback = {}) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null())
        return fallback;
    if (!it->is_string())
        throw stored_value_error(fmt::format("'{}' is {}, not text", key, it->dump()));
    return it->get<std::string>();
}

bool flag(const json& j, const char* key) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null())
        return false;
    if (!it->is_boolean())
        throw stored_value_error(fmt::format("'{}' is {}, not true or false", key, it->dump()));
    return it->get<bool>();
}

json object(const json& j, const char* key) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null())
        return json::object();
    if (!it->is_object())
        throw stored_value_error(fmt::format("'{}' is {}, not an object", key, it->dump()));
    return *it;
}

json optional_json(const std::optional<double>& v) {
    return v ? json(*v) : json(nullptr);
}

} // namespace

std::optional<stats_figure> stats_figure::from_json(const json& j) {
    if (!j.is_object())
        return std::nullopt;
    stats_figure s;
    s.n = count(j, "n");
    s.min = number(j, "min");
    s.q1 = number(j, "q1");
    s.median = number(j, "median");
    s.q3 = number(j, "q3");
    s.iqr = number(j, "iqr");
    s.max = number(j, "max");
    s.mean = number(j, "mean");
    s.stdev = number(j, "stdev");
    s.ci95_low = number(j, "ci95_low");
    s.ci95_high = number(j, "ci95_high");
    return s;
}

json stats_figure::to_json() const {
    return json{{"n", n},
                {"min", min},
                {"q1", q1},
                {"median", median},
                {"q3", q3},
                {"iqr", iqr},
                {"max", max},
                {"mean", mean},
                {"stdev", stdev},
                {"ci95_low", ci95_low},
                {"ci95_high", ci95_high}};
}

std::optional<round_trip_figure> round_trip_figure::from_json(const json& j) {
    if (!j.is_object())
        return std::nullopt;
    round_trip_figure r{
        number(j, "before"), number(j, "after"),
        static_cast<int>(std::clamp<std::int64_t>(count(j, "reps"), INT32_MIN, INT32_MAX))};
    if (r.before_us <= 0 || r.after_us <= 0)
        return std::nullopt;
    return r;
}

json round_trip_figure::to_json() const {
    return json{{"before", before_us}, {"after", after_us}, {"reps", reps}};
}

op_time_figures op_time_figures::from(const json& f) {
    op_time_figures o;
    o.mode = text(f, "mode");
    o.cache = text(f, "cache");
    o.stop = text(f, "stop");
    if (const auto it = f.find("stats"); it != f.end())
        o.stats = stats_figure::from_json(*it);
    o.bytes_moved = number(f, "bytes_moved");
    o.flops = number(f, "flops");
    o.gb_per_s = number(f, "gb_per_s");
    o.tflop_per_s = number(f, "tflop_per_s");
    o.bandwidth_ceiling_gb_per_s = number(f, "bandwidth_ceiling_gb_per_s");
    o.pct_of_bandwidth = number(f, "pct_of_bandwidth");
    o.host_sync = flag(f, "host_sync");
    if (const auto it = f.find("host_round_trip_us"); it != f.end())
        o.host_round_trip = round_trip_figure::from_json(*it);
    o.cache_bytes = number(f, "cache_bytes");
    return o;
}

void op_time_figures::write(json& f) const {
    f["mode"] = mode;
    f["cache"] = cache;
    f["stop"] = stop;
    if (stats) {
        // keep what the struct does not name (ci_resamples)
        json s = f.contains("stats") && f["stats"].is_object() ? f["stats"] : json::object();
        s.update(stats->to_json());
        f["stats"] = s;
    }
    f["bytes_moved"] = bytes_moved;
    f["flops"] = flops;
    f["gb_per_s"] = gb_per_s;
    f["tflop_per_s"] = tflop_per_s;
    f["bandwidth_ceiling_gb_per_s"] = bandwidth_ceiling_gb_per_s;
    f["pct_of_bandwidth"] = pct_of_bandwidth;
    f["host_sync"] = host_sync;
    if (host_round_trip)
        f["host_round_trip_us"] = host_round_trip->to_json();
    f["cache_bytes"] = cache_bytes;
}

throughput_figures throughput_figures::from(const json& f) {
    throughput_figures t;
    t.unit = text(f, "unit", "tokens/s");
    t.step_unit = text(f, "step_unit", "ms/token");
    t.context_axis = text(f, "context_axis", "ctx");
    if (const auto it = f.find("context"); it != f.end())
        t.context = *it;
    else if (const auto c = f.find(t.context_axis); c != f.end())
        t.context = *c;
    // records before the unit was theirs held the rate as tokens_per_s
    t.rate = number(f, "rate", number(f, "tokens_per_s"));
    const char* stats_key = f.contains("step_stats") ? "step_stats" : "ms_per_token";
    if (const auto it = f.find(stats_key); it != f.end())
        t.step_stats = stats_figure::from_json(*it);
    t.mode = text(f, "mode");
    t.stop = text(f, "stop");
    t.host_sync = flag(f, "host_sync");
    t.host_paced = flag(f, "host_paced");
    if (const auto it = f.find("host_round_trip_us"); it != f.end())
        t.host_round_trip = round_trip_figure::from_json(*it);
    t.bandwidth_limit = optional_number(f, "bandwidth_limit");
    if (!t.bandwidth_limit)
        t.bandwidth_limit = optional_number(f, "bandwidth_limit_tokens_per_s");
    t.prefill_ms = optional_number(f, "prefill_ms");
    return t;
}

void throughput_figures::write(json& f) const {
    f["unit"] = unit;
    f["step_unit"] = step_unit;
    f["context_axis"] = context_axis;
    f["context"] = context;
    f["rate"] = rate;
    if (step_stats)
        f["step_stats"] = step_stats->to_json();
    f["mode"] = mode;
    f["stop"] = stop;
    f["host_sync"] = host_sync;
    f["host_paced"] = host_paced;
    if (host_round_trip)
        f["host_round_trip_us"] = host_round_trip->to_json();
    f["bandwidth_limit"] = optional_json(bandwidth_limit);
    if (prefill_ms)
        f["prefill_ms"] = *prefill_ms;
}

correctness_figures correctness_figures::from(const json& f) {
    correctness_figures c;
    c.verdict = text(f, "verdict", "?");
    if (const auto it = f.find("failed_checks"); it != f.end() && it->is_array())
        for (const auto& x : *it)
            if (x.is_string())
                c.failed_checks.push_back(x.get<std::string>());
    c.metrics = object(f, "metrics");
    c.tolerance = object(f, "tolerance");
    c.output_dtype = text(f, "output_dtype");
    c.repro = text(f, "repro");
    return c;
}

void correctness_figures::write(json& f) const {
    f["verdict"] = verdict;
    f["failed_checks"] = failed_checks;
    f["metrics"] = metrics;
    f["tolerance"] = tolerance;
    if (!output_dtype.empty())
        f["output_dtype"] = output_dtype;
    if (!repro.empty())
        f["repro"] = repro;
}

memory_figures_view memory_figures_view::from(const json& f) {
    memory_figures_view m;
    m.driver_level = text(f, "driver_level");
    m.device_wide = flag(f, "device_wide");
    m.driver_peak_bytes = optional_int(f, "driver_peak_bytes");
    m.reserved_peak_bytes = optional_int(f, "reserved_peak_bytes");
    m.allocated_peak_bytes = optional_int(f, "allocated_peak_bytes");
    m.outside_allocator_bytes = optional_int(f, "outside_allocator_bytes");
    m.baseline = object(f, "baseline");
    m.unavailable = object(f, "unavailable");
    m.calls = count(f, "calls");
    return m;
}

json facts_of(const json& f) {
    return object(f, "facts");
}

} // namespace fourfold
