#include "fourfold/measure/memory_figures.hpp"

#include <optional>
#include <utility>

namespace fourfold::measure {
namespace {

json optional_json(const std::optional<std::int64_t>& v) {
    return v ? json(*v) : json(nullptr);
}

} // namespace

json memory_figures(const memory_reading& r) {
    json unavailable = json::object();
    for (const auto& [level, why] : r.unavailable)
        unavailable[level] = why;
    json sources = json::object();
    // A level's peak: the system's own counter where it keeps one, else the sampled maximum,
    // and never below the last reading.
    auto peak_of = [&](const char* level, const std::optional<std::int64_t>& counter,
                       const std::optional<std::int64_t>& sampled,
                       const std::optional<std::int64_t>& final_reading) {
        std::optional<std::int64_t> best;
        std::string source;
        if (counter) {
            best = counter;
            source = "counter";
        }
        for (const auto& [v, name] :
             {std::pair{sampled, "sampled max"}, std::pair{final_reading, "last reading"}})
            if (v && (!best || *v > *best)) {
                best = v;
                source = name;
            }
        if (best)
            sources[level] = source;
        else if (!unavailable.contains(level))
            unavailable[level] = "no reading on this device";
        return best;
    };
    const auto driver = peak_of("driver", r.counters.driver, r.sampler.max.driver, r.last.driver);
    const auto reserved =
        peak_of("reserved", r.counters.reserved, r.sampler.max.reserved, r.last.reserved);
    const auto allocated =
        peak_of("allocated", r.counters.allocated, r.sampler.max.allocated, r.last.allocated);
    json f;
    f["driver_level"] = r.driver_level;
    f["device_wide"] = r.device_wide;
    f["driver_peak_bytes"] = optional_json(driver);
    f["reserved_peak_bytes"] = optional_json(reserved);
    f["allocated_peak_bytes"] = optional_json(allocated);
    f["outside_allocator_bytes"] = driver && reserved ? json(*driver - *reserved) : json(nullptr);
    if (!(driver && reserved))
        unavailable["outside_allocator"] = "needs both the driver and the reserved level";
    f["baseline"] = json{{"driver_bytes", optional_json(r.baseline.driver)},
                         {"reserved_bytes", optional_json(r.baseline.reserved)},
                         {"allocated_bytes", optional_json(r.baseline.allocated)}};
    auto delta = [](const std::optional<std::int64_t>& peak,
                    const std::optional<std::int64_t>& base) {
        return peak && base ? json(*peak - *base) : json(nullptr);
    };
    f["delta_peak_bytes"] = json{{"driver", delta(driver, r.baseline.driver)},
                                 {"reserved", delta(reserved, r.baseline.reserved)},
                                 {"allocated", delta(allocated, r.baseline.allocated)}};
    f["peak_sources"] = sources;
    f["unavailable"] = unavailable;
    f["inputs_bytes"] = r.inputs_bytes;
    f["calls"] = r.calls;
    f["sampler"] = json{{"target_hz", r.sampler.target_hz},
                        {"achieved_hz", r.sampler.achieved_hz},
                        {"polls", r.sampler.polls},
                        {"poll_cost_us", r.sampler.poll_cost_us},
                        {"duration_s", r.sampler.duration_s}};
    json timeline = json::array();
    for (const auto& p : r.sampler.timeline)
        timeline.push_back(json::array({p.t_ms, p.driver_bytes}));
    f["timeline"] = timeline;
    // when the sampled driver level peaked (ms since the pass began; the downsampled timeline
    // keeps each bucket's maximum, so its largest point is the sampled peak itself)
    const timeline_point* top = nullptr;
    for (const auto& p : r.sampler.timeline)
        if (!top || p.driver_bytes > top->driver_bytes)
            top = &p;
    f["driver_peak_t_ms"] = top ? json(top->t_ms) : json(nullptr);
    f["driver_peak_sampled_bytes"] = top ? json(top->driver_bytes) : json(nullptr);
    return f;
}

} // namespace fourfold::measure
