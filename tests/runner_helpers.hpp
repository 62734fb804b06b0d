#pragma once
// Runs jobs in-process through the real runner on a real device and returns their records.
#include "fourfold/backend/device.hpp"
#include "fourfold/runner/runner.hpp"

#include <string>
#include <vector>

namespace fourfold::testing {

struct quick_run {
    std::vector<record> records;
    runner::run_summary summary;
};

inline runner::run_settings quick_settings(const std::string& ledgers) {
    runner::run_settings s;
    s.ledgers = runner::parse_ledgers(ledgers);
    s.timing.stop.min_time_s = 0.02;
    s.timing.stop.timeout_s = 0.3;
    s.timing.warmup_s = 0.005;
    return s;
}

inline quick_run run_jobs(backend::device& dev, const std::vector<runner::job_spec>& specs,
                          const std::string& ledgers, runner::run_settings s) {
    s.ledgers = runner::parse_ledgers(ledgers);
    const auto plan = runner::make_plan(specs, s, dev);
    runner::memory_sink sink;
    runner::run_context ctx{dev, dev.measure_copy_bandwidth(), sink};
    quick_run out;
    out.summary = runner::execute(plan, ctx);
    out.records = sink.records;
    return out;
}

inline quick_run run_jobs(backend::device& dev, const std::vector<runner::job_spec>& specs,
                          const std::string& ledgers) {
    if (dev.caps().graphs) {
        auto s = quick_settings(ledgers);
        s.timing = measure::timing_settings::defaults_for(dev.caps());
        s.timing.stop.min_time_s = 0.02;
        s.timing.stop.timeout_s = 0.3;
        s.timing.warmup_s = 0.005;
        return run_jobs(dev, specs, ledgers, s);
    }
    return run_jobs(dev, specs, ledgers, quick_settings(ledgers));
}

inline const record* find_record(const quick_run& r, ledger l, const std::string& variant) {
    for (const auto& rec : r.records)
        if (rec.which == l && rec.job.variant == variant)
            return &rec;
    return nullptr;
}

} // namespace fourfold::testing
