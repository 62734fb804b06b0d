#include "fourfold/measure/memory_sampler.hpp"

#include <algorithm>
#include <chrono>

namespace fourfold::measure {
namespace {

using clock_type = std::chrono::steady_clock;

void keep_max(std::optional<std::int64_t>& into, const std::optional<std::int64_t>& v) {
    if (v && (!into || *v > *into))
        into = v;
}

} // namespace

std::vector<timeline_point> downsample_max(const std::vector<timeline_point>& points,
                                           std::size_t max_points) {
    if (points.size() <= max_points || max_points == 0)
        return points;
    std::vector<timeline_point> out;
    out.reserve(max_points);
    const double per = static_cast<double>(points.size()) / static_cast<double>(max_points);
    for (std::size_t b = 0; b < max_points; ++b) {
        const auto lo = static_cast<std::size_t>(static_cast<double>(b) * per);
        const auto hi =
            std::min(points.size(), static_cast<std::size_t>(static_cast<double>(b + 1) * per));
        if (lo >= hi)
            continue;
        auto best = points[lo];
        for (std::size_t i = lo; i < hi; ++i)
            if (points[i].driver_bytes > best.driver_bytes)
                best = points[i];
        out.push_back(best);
    }
    return out;
}

memory_sampler::memory_sampler(backend::memory_probe& probe, double target_hz,
                               std::size_t timeline_points)
    : m_probe(probe), m_target_hz(target_hz), m_points(timeline_points) {}

memory_sampler::~memory_sampler() {
    if (m_running)
        stop();
}

void memory_sampler::start() {
    m_polls = 0;
    m_max = {};
    m_timeline.clear();
    m_poll_seconds = 0;
    m_running = true;
    m_thread = std::thread([this] { loop(); });
}

void memory_sampler::loop() {
    const auto period = std::chrono::duration<double>(1.0 / m_target_hz);
    const auto t0 = clock_type::now();
    auto next = t0;
    while (m_running.load(std::memory_order_relaxed)) {
        const auto before = clock_type::now();
        const auto s = m_probe.now();
        const auto after = clock_type::now();
        {
            std::lock_guard lock(m_mutex);
            m_poll_seconds += std::chrono::duration<double>(after - before).count();
            keep_max(m_max.driver, s.driver);
            keep_max(m_max.reserved, s.reserved);
            keep_max(m_max.allocated, s.allocated);
            if (s.driver)
                m_timeline.push_back(
                    {std::chrono::duration<double, std::milli>(before - t0).count(), *s.driver});
        }
        m_polls.fetch_add(1, std::memory_order_relaxed);
        next += std::chrono::duration_cast<clock_type::duration>(period);
        if (next < after)
            next = after; // fell behind: poll again at once, never in a burst
        std::this_thread::sleep_until(next);
    }
    m_duration_s = std::chrono::duration<double>(clock_type::now() - t0).count();
}

sampler_report memory_sampler::stop() {
    m_running = false;
    if (m_thread.joinable())
        m_thread.join();
    sampler_report r;
    r.target_hz = m_target_hz;
    r.polls = m_polls.load();
    r.duration_s = m_duration_s;
    r.achieved_hz = m_duration_s > 0 ? static_cast<double>(r.polls) / m_duration_s : 0;
    r.poll_cost_us = r.polls > 0 ? 1e6 * m_poll_seconds / static_cast<double>(r.polls) : 0;
    r.max = m_max;
    r.timeline = downsample_max(m_timeline, m_points);
    return r;
}

} // namespace fourfold::measure
