#include "fourfold/measure/timing.hpp"

#include "fourfold/core/error.hpp"

#include <ATen/ATen.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <memory>

namespace fourfold::measure {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// One candidate's state during a measurement.
struct lane {
    timing_candidate* cand = nullptr;
    timing_result result;
    stopping_rule rule;
    std::unique_ptr<backend::captured_graph> graph;
    std::unique_ptr<backend::device_event> start, stop;
    int sets = 1; // input sets cycled through (1 = hot)
    int next_set = 0;
    double spent_s = 0; // wall time spent sampling this lane
    bool done = false;
};

// The most a sample's rotation over its input sets may last (each set is called once a sample).
constexpr double k_rotation_budget_s = 0.01;

int next_set(lane& l) {
    const int s = l.next_set;
    l.next_set = (l.next_set + 1) % l.sets;
    return s;
}

double host_call_us(backend::device& dev, timing_candidate& c, int set) {
    dev.synchronize();
    const auto t0 = clock_type::now();
    c.call(set);
    dev.synchronize();
    return seconds_since(t0) * 1e6;
}

// Warm-up: one untimed call per input set, then calls for `warmup_s` to estimate the cost.
double warm_up(backend::device& dev, timing_candidate& c, int sets, double warmup_s) {
    for (int s = 0; s < sets; ++s)
        c.call(s);
    dev.synchronize();
    std::vector<double> costs;
    const auto t0 = clock_type::now();
    int set = 0;
    do {
        costs.push_back(host_call_us(dev, c, set));
        set = (set + 1) % sets;
    } while (seconds_since(t0) < warmup_s || costs.size() < 3);
    return median_of(costs);
}

std::int64_t calls_for(const timing_settings& s, double call_us, int sets) {
    const double want = s.target_sample_s * 1e6 / std::max(call_us, 0.05);
    auto calls = static_cast<std::int64_t>(std::clamp(want, 1.0, double(s.max_calls_per_sample)));
    // every input set the same number of times
    calls = std::max<std::int64_t>(calls, sets);
    return (calls + sets - 1) / sets * sets;
}

double take_sample_us(backend::device& dev, lane& l, const timing_settings& s) {
    auto& c = *l.cand;
    const auto n = l.result.calls_per_sample;
    switch (l.result.mode) {
    case timing_mode::host: {
        if (l.result.cache == cache_mode::cold)
            dev.flush_cache();
        dev.synchronize();
        const auto t0 = clock_type::now();
        for (std::int64_t i = 0; i < n; ++i)
            c.call(next_set(l));
        dev.synchronize();
        return seconds_since(t0) * 1e6 / static_cast<double>(n);
    }
    case timing_mode::event: {
        if (l.result.cache == cache_mode::cold)
            dev.flush_cache();
        l.start->record();
        c.call(next_set(l));
        l.stop->record();
        dev.synchronize();
        return l.stop->elapsed_ms_since(*l.start) * 1e3;
    }
    case timing_mode::batch: {
        l.start->record();
        for (std::int64_t i = 0; i < n; ++i)
            c.call(next_set(l));
        l.stop->record();
        dev.synchronize();
        return l.stop->elapsed_ms_since(*l.start) * 1e3 / static_cast<double>(n);
    }
    case timing_mode::graph: {
        l.start->record();
        l.graph->replay();
        l.stop->record();
        dev.synchronize();
        return l.stop->elapsed_ms_since(*l.start) * 1e3 / static_cast<double>(n);
    }
    }
    (void)s;
    return 0;
}

void prepare_lane(backend::device& dev, lane& l, const timing_settings& s) {
    auto& c = *l.cand;
    auto& r = l.result;
    r.name = c.name;
    r.mode = s.mode;
    r.cache = s.cache;
    if (r.mode == timing_mode::graph && !c.capturable) {
        // The candidate synchronises with the host, so no graph can hold it: measure it per call
        // with events instead and say so.
        r.mode = timing_mode::event;
        r.note = fmt::format("graph capture impossible ({}); measured in event mode",
                             c.not_capturable_reason.empty() ? "the call synchronises with the host"
                                                             : c.not_capturable_reason);
    }
    // Cold cache: event and host modes flush before each sample; batch and graph rotate over
    // input sets whose total exceeds the cache. One set, or a hot cache, reads the same inputs.
    const bool rotate = r.cache == cache_mode::cold &&
                        (r.mode == timing_mode::batch || r.mode == timing_mode::graph);
    l.sets = rotate ? std::max(1, c.input_sets) : 1;
    if (l.sets > 1) {
        // Every set is called once a sample, so a long call (a whole model's round trip on
        // inputs much smaller than the cache) would make a sample of thousands of calls (a graph
        // of millions of nodes). The rotation gets at most k_rotation_budget_s of calls.
        c.call(0);
        const double call_us = host_call_us(dev, c, 0);
        const auto most = static_cast<int>(
            std::clamp(std::floor(k_rotation_budget_s * 1e6 / std::max(call_us, 0.05)), 1.0, 1e9));
        if (l.sets > most) {
            r.note = fmt::format("cold cache: {} input sets of the {} that would rotate its "
                                 "inputs out of the cache (a call took {:.0f} µs: the rotation "
                                 "is held to {:.0f} ms a sample)",
                                 most, l.sets, call_us, k_rotation_budget_s * 1e3);
            l.sets = most;
        }
    }
    r.input_sets_used = l.sets;
    r.warmup_call_us = warm_up(dev, c, l.sets, s.warmup_s);
    switch (r.mode) {
    case timing_mode::host:
        r.calls_per_sample = r.cache == cache_mode::cold ? 1 : calls_for(s, r.warmup_call_us, 1);
        break;
    case timing_mode::event:
        r.calls_per_sample = 1;
        break;
    case timing_mode::batch:
    case timing_mode::graph:
        r.calls_per_sample = calls_for(s, r.warmup_call_us, l.sets);
        break;
    }
    if (r.mode != timing_mode::host) {
        l.start = dev.make_event();
        l.stop = dev.make_event();
    }
    if (r.mode == timing_mode::graph) {
        const auto n = r.calls_per_sample;
        const int sets = l.sets;
        l.graph = dev.capture([&c, n, sets] {
            for (std::int64_t i = 0; i < n; ++i)
                c.call(static_cast<int>(i % sets));
        });
        l.graph->replay(); // the first replay uploads the graph; keep it out of the samples
        dev.synchronize();
    }
}

} // namespace

std::string_view to_string(timing_mode m) {
    switch (m) {
    case timing_mode::host:
        return "host";
    case timing_mode::event:
        return "event";
    case timing_mode::batch:
        return "batch";
    case timing_mode::graph:
        return "graph";
    }
    return "?";
}

std::string_view to_string(cache_mode c) {
    return c == cache_mode::hot ? "hot" : "cold";
}

std::optional<timing_mode> parse_timing_mode(std::string_view text) {
    for (const auto m :
         {timing_mode::host, timing_mode::event, timing_mode::batch, timing_mode::graph})
        if (to_string(m) == text)
            return m;
    return std::nullopt;
}

std::optional<cache_mode> parse_cache_mode(std::string_view text) {
    if (text == "hot")
        return cache_mode::hot;
    if (text == "cold")
        return cache_mode::cold;
    return std::nullopt;
}

std::optional<std::string> mode_unsupported(timing_mode mode, cache_mode cache,
                                            const backend::capabilities& caps) {
    if (mode != timing_mode::host && !caps.events)
        return fmt::format("timing mode '{}' needs device events, which this device lacks; "
                           "valid here: host",
                           to_string(mode));
    if (mode == timing_mode::graph && !caps.graphs)
        return "timing mode 'graph' needs graph capture, which this device lacks";
    if (cache == cache_mode::cold && !caps.cache_flush &&
        (mode == timing_mode::host || mode == timing_mode::event))
        return fmt::format("a cold cache in '{}' mode needs a cache flush, which this device "
                           "lacks; use --cache hot",
                           to_string(mode));
    return std::nullopt;
}

json timing_settings::to_json() const {
    return json{{"mode", to_string(mode)},
                {"cache", to_string(cache)},
                {"stopping", stop.to_json()},
                {"warmup_s", warmup_s},
                {"target_sample_s", target_sample_s},
                {"max_calls_per_sample", max_calls_per_sample}};
}

timing_settings timing_settings::defaults_for(const backend::capabilities& caps) {
    timing_settings s;
    if (caps.graphs) {
        s.mode = timing_mode::graph;
        s.cache = cache_mode::cold;
    }
    return s;
}

json timing_result::to_json() const {
    json out{{"mode", to_string(mode)},
             {"cache", to_string(cache)},
             {"calls_per_sample", calls_per_sample},
             {"input_sets", input_sets_used},
             {"stats", stats.to_json()},
             {"stop", stop_class(stop)},
             {"stop_state", to_string(stop)},
             {"stop_detail", stop_detail},
             {"elapsed_s", elapsed_s},
             {"warmup_call_us", warmup_call_us}};
    if (!note.empty())
        out["note"] = note;
    return out;
}

std::vector<timing_result> measure_interleaved(backend::device& dev,
                                               std::vector<timing_candidate>& candidates,
                                               const timing_settings& settings) {
    if (const auto why = mode_unsupported(settings.mode, settings.cache, dev.caps()))
        throw bad_input(*why);
    std::vector<lane> lanes;
    lanes.reserve(candidates.size());
    for (auto& c : candidates) {
        lanes.push_back(lane{&c, {}, stopping_rule(settings.stop), nullptr, nullptr, nullptr});
        prepare_lane(dev, lanes.back(), settings);
    }
    std::size_t running = lanes.size();
    while (running > 0) {
        for (auto& l : lanes) {
            if (l.done)
                continue;
            const auto t0 = clock_type::now();
            const double us = take_sample_us(dev, l, settings);
            l.spent_s += seconds_since(t0);
            l.result.samples_us.push_back(us);
            l.rule.add(us);
            const auto state = l.rule.check(l.spent_s);
            if (state != stop_state::running) {
                l.done = true;
                --running;
                l.result.stop = state;
                l.result.stop_detail = l.rule.detail();
                l.result.elapsed_s = l.spent_s;
            }
        }
    }
    std::vector<timing_result> out;
    for (auto& l : lanes) {
        l.result.stats = summarize(l.result.samples_us);
        out.push_back(std::move(l.result));
    }
    return out;
}

double host_round_trip_us(backend::device& dev, int reps) {
    auto x = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(dev.torch_device()));
    for (int i = 0; i < reps / 4; ++i) // warm: the first trips pay for lazy initialisation
        (void)x.add_(1.0).item<float>();
    std::vector<double> us;
    us.reserve(static_cast<std::size_t>(reps));
    for (int i = 0; i < reps; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        (void)x.add_(1.0).item<float>();
        us.push_back(
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                .count());
    }
    return median_of(std::move(us));
}

} // namespace fourfold::measure
