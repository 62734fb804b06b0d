#include "fourfold/measure/stopping_rule.hpp"

#include "fourfold/measure/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace fourfold::measure {

json stopping_settings::to_json() const {
    return json{{"min_samples", min_samples},     {"min_time_s", min_time_s},
                {"max_rel_stdev", max_rel_stdev}, {"timeout_s", timeout_s},
                {"max_samples", max_samples},     {"plateau_spread", plateau_spread}};
}

std::string_view to_string(stop_state s) {
    switch (s) {
    case stop_state::running:
        return "running";
    case stop_state::converged_noise:
        return "converged_noise";
    case stop_state::converged_plateau:
        return "converged_plateau";
    case stop_state::timed_out:
        return "timed_out";
    case stop_state::sample_cap:
        return "sample_cap";
    }
    return "?";
}

std::string_view stop_class(stop_state s) {
    switch (s) {
    case stop_state::converged_noise:
    case stop_state::converged_plateau:
        return "converged";
    default:
        return to_string(s);
    }
}

void stopping_rule::add(double sample) {
    ++m_n;
    const double delta = sample - m_mean;
    m_mean += delta / static_cast<double>(m_n);
    m_m2 += delta * (sample - m_mean);
    m_samples.push_back(sample);
}

double stopping_rule::rel_stdev() const {
    if (m_n < 2 || m_mean == 0)
        return 0;
    return std::sqrt(m_m2 / static_cast<double>(m_n - 1)) / std::fabs(m_mean);
}

void stopping_rule::checkpoint() {
    std::vector<double> sorted = m_samples;
    std::sort(sorted.begin(), sorted.end());
    const double median = quantile_sorted(sorted, 0.5);
    const double iqr = quantile_sorted(sorted, 0.75) - quantile_sorted(sorted, 0.25);
    m_robust.push_back(median != 0 ? iqr / 1.349 / std::fabs(median) : 0.0);
}

bool stopping_rule::plateaued() const {
    constexpr std::size_t k_window = 4;
    if (m_robust.size() < k_window)
        return false;
    const auto first = m_robust.end() - static_cast<std::ptrdiff_t>(k_window);
    const auto [lo, hi] = std::minmax_element(first, m_robust.end());
    double mean = 0;
    for (auto it = first; it != m_robust.end(); ++it)
        mean += *it;
    mean /= static_cast<double>(k_window);
    if (mean <= 0)
        return true; // no spread at all: every further sample is the same
    // Stable relative to itself, or moving by less than the noise we would call converged
    // (timers with coarse ticks make a small IQR jump between whole ticks).
    return (*hi - *lo) / mean <= m_settings.plateau_spread ||
           (*hi - *lo) <= m_settings.max_rel_stdev;
}

stop_state stopping_rule::check(double elapsed_s) {
    m_elapsed_s = elapsed_s;
    if (m_state != stop_state::running)
        return m_state;
    if (m_n >= m_settings.max_samples)
        return m_state = stop_state::sample_cap;
    if (elapsed_s >= m_settings.timeout_s)
        return m_state = stop_state::timed_out;
    if (m_n < m_settings.min_samples || elapsed_s < m_settings.min_time_s)
        return m_state;
    if (rel_stdev() < m_settings.max_rel_stdev)
        return m_state = stop_state::converged_noise;
    if (m_n >= m_next_checkpoint) {
        m_next_checkpoint = m_n + std::max<std::int64_t>(1, m_n / 4);
        checkpoint();
        if (plateaued())
            return m_state = stop_state::converged_plateau;
    }
    return m_state;
}

std::string stopping_rule::detail() const {
    const double pct = 100.0 * rel_stdev();
    switch (m_state) {
    case stop_state::converged_noise:
        return fmt::format("rel stdev {:.2f}% < {:.2f}% after {} samples, {:.2f} s", pct,
                           100.0 * m_settings.max_rel_stdev, m_n, m_elapsed_s);
    case stop_state::converged_plateau:
        return fmt::format("noise plateaued: robust rel noise {:.2f}% (IQR-based) over the last 4 "
                           "checkpoints, rel stdev {:.2f}%, after {} samples, {:.2f} s",
                           100.0 * robust_noise(), pct, m_n, m_elapsed_s);
    case stop_state::timed_out:
        return fmt::format("timed out after {:.2f} s with rel stdev {:.2f}% still moving ({} "
                           "samples)",
                           m_elapsed_s, pct, m_n);
    case stop_state::sample_cap:
        return fmt::format("stopped at the {}-sample cap with rel stdev {:.2f}%", m_n, pct);
    case stop_state::running:
        break;
    }
    return fmt::format("running: {} samples, rel stdev {:.2f}%", m_n, pct);
}

} // namespace fourfold::measure
