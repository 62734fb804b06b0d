#pragma once
// The timing engine: warm-up, one of four timing modes, the stopping rule, statistics. Several
// candidates (the variants of one job) are sampled interleaved, A B A B ..., so that drift
// (clocks, temperature, other tenants) falls on all of them alike.
#include "fourfold/backend/device.hpp"
#include "fourfold/measure/statistics.hpp"
#include "fourfold/measure/stopping_rule.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fourfold::measure {

// host:  host clock, device synchronised at both edges (CPU, MPS; any device)
// event: device events around one call, after an L2 flush when cold
// batch: back-to-back calls between one event pair
// graph: N calls captured in a CUDA graph, replayed between one event pair (no launch gaps)
enum class timing_mode { host, event, batch, graph };
enum class cache_mode { hot, cold };
std::string_view to_string(timing_mode m);
std::string_view to_string(cache_mode c);
std::optional<timing_mode> parse_timing_mode(std::string_view text);
std::optional<cache_mode> parse_cache_mode(std::string_view text);
// Why `mode` cannot run on a device with these capabilities; nullopt when it can.
std::optional<std::string> mode_unsupported(timing_mode mode, cache_mode cache,
                                            const backend::capabilities& caps);

struct timing_settings {
    timing_mode mode = timing_mode::host;
    cache_mode cache = cache_mode::hot;
    stopping_settings stop;
    double warmup_s = 0.1;         // time-based warm-up after the first untimed call
    double target_sample_s = 5e-4; // batch/graph/host-hot: calls per sample so one lasts this long
    std::int64_t max_calls_per_sample = 2000;
    json to_json() const;
    // The defaults for a device: graph + cold on CUDA, host + hot elsewhere.
    static timing_settings defaults_for(const backend::capabilities& caps);
};

struct timing_candidate {
    std::string name;
    // Enqueues one call on the device's current stream, reading input set `set`.
    std::function<void(int set)> call;
    int input_sets = 1;     // distinct input sets (rotation for the cold cache)
    bool capturable = true; // false when the call synchronises with the host
    std::string not_capturable_reason;
};

struct timing_result {
    std::string name;
    timing_mode mode = timing_mode::host;
    cache_mode cache = cache_mode::hot;
    std::int64_t calls_per_sample = 1;
    int input_sets_used = 1;
    std::vector<double> samples_us; // per call
    sample_stats stats;
    stop_state stop = stop_state::running;
    std::string stop_detail;
    double elapsed_s = 0;
    double warmup_call_us = 0; // host-timed cost of one call during warm-up
    std::string note;          // e.g. a mode change forced by the candidate, said plainly
    json to_json() const;      // the op_time figures of this result (without bytes/bandwidth)
};

std::vector<timing_result> measure_interleaved(backend::device& dev,
                                               std::vector<timing_candidate>& candidates,
                                               const timing_settings& settings);

// A control measured beside each job's timings: the host's round trip to the device (one
// one-element op launched and its value read back, as a host-synchronising variant does),
// median µs of `reps`. A time that syncs with the host moves with it; compare uses it to tell
// a change in such a time from a change in the machine.
inline constexpr int k_round_trip_reps = 200;
double host_round_trip_us(backend::device& dev, int reps = k_round_trip_reps);

} // namespace fourfold::measure
