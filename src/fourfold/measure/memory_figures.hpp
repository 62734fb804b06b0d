#pragma once
// The memory ledger's figures for one job, from what a memory pass read: the levels before the
// job (baseline), the peak counters the system keeps, the sampler's maxima and the last reading.
// A level that cannot be had is null with its reason under "unavailable", never 0.
#include "fourfold/backend/memory_probe.hpp"
#include "fourfold/core/json.hpp"
#include "fourfold/measure/memory_sampler.hpp"

#include <map>
#include <string>

namespace fourfold::measure {

struct memory_reading {
    std::string driver_level;
    bool device_wide = false;
    std::map<std::string, std::string> unavailable; // from the probe
    backend::memory_sample baseline, last, counters;
    sampler_report sampler;
    std::int64_t calls = 0;
    std::int64_t inputs_bytes = 0;
};

// driver_peak_bytes, reserved_peak_bytes, allocated_peak_bytes, outside_allocator_bytes
// (= driver - reserved), baseline, delta_peak_bytes, peak_sources, unavailable, sampler,
// timeline ([t_ms, driver bytes] pairs), driver_peak_t_ms (when the sampled driver level peaked)
// and driver_peak_sampled_bytes.
json memory_figures(const memory_reading& r);

} // namespace fourfold::measure
