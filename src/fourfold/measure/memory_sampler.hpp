#pragma once
// A background thread that polls a device's memory levels at a fixed rate, keeping each level's
// maximum and a timeline of the driver level. The achieved rate and the cost of one poll are
// measured and reported with the figures they produced.
#include "fourfold/backend/memory_probe.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace fourfold::measure {

struct timeline_point {
    double t_ms = 0;
    std::int64_t driver_bytes = 0;
};

struct sampler_report {
    double target_hz = 0;
    double achieved_hz = 0;
    std::int64_t polls = 0;
    double poll_cost_us = 0; // mean wall time of one poll
    double duration_s = 0;
    backend::memory_sample max;
    std::vector<timeline_point> timeline; // downsampled to at most `timeline_points`
};

class memory_sampler {
  public:
    memory_sampler(backend::memory_probe& probe, double target_hz,
                   std::size_t timeline_points = 256);
    ~memory_sampler();
    memory_sampler(const memory_sampler&) = delete;
    memory_sampler& operator=(const memory_sampler&) = delete;

    void start();
    sampler_report stop();
    std::int64_t polls() const { return m_polls.load(); }

  private:
    void loop();

    backend::memory_probe& m_probe;
    double m_target_hz;
    std::size_t m_points;
    std::thread m_thread;
    std::atomic<bool> m_running{false};
    std::atomic<std::int64_t> m_polls{0};
    std::mutex m_mutex;
    backend::memory_sample m_max;
    std::vector<timeline_point> m_timeline;
    double m_poll_seconds = 0;
    double m_duration_s = 0;
};

// Bucket maximum, so a downsampled timeline keeps every peak.
std::vector<timeline_point> downsample_max(const std::vector<timeline_point>& points,
                                           std::size_t max_points);

} // namespace fourfold::measure
