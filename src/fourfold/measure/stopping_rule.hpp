#pragma once
// When to stop sampling (DESIGN.md): at least `min_samples` and `min_time_s`, then stop as soon
// as the relative standard deviation falls under `max_rel_stdev` (converged: noise) or the noise
// stops changing (converged: plateau - the noise is a property of the op and the machine, and
// more samples will not shrink it); give up at `timeout_s` (timed_out) or `max_samples`.
//
// The plateau is judged on a robust noise figure, IQR / 1.349 / median (the standard deviation
// a normal distribution with that IQR would have, relative to the median): the plain standard
// deviation of timing samples is ruled by rare outliers (interrupts, page faults) and keeps
// jumping however many samples are taken. The robust noise is computed at checkpoints spaced
// geometrically (every 25 % more samples); the plateau is reached when the last four agree
// within `plateau_spread` of their mean, or move by less than `max_rel_stdev` in absolute terms
// (the noise is then known better than the convergence threshold itself).
#include "fourfold/core/json.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fourfold::measure {

struct stopping_settings {
    std::int64_t min_samples = 10;
    double min_time_s = 0.5;
    double max_rel_stdev = 0.005;
    double timeout_s = 15.0;
    std::int64_t max_samples = 100000;
    // Plateau: the last four checkpoints of the robust noise lie within this fraction of
    // their mean.
    double plateau_spread = 0.10;
    json to_json() const;
};

enum class stop_state { running, converged_noise, converged_plateau, timed_out, sample_cap };
std::string_view to_string(stop_state s);
// "converged" for both converged states, else the state's name.
std::string_view stop_class(stop_state s);

class stopping_rule {
  public:
    explicit stopping_rule(stopping_settings settings) : m_settings(settings) {}

    void add(double sample);
    // `elapsed_s`: time spent on this measurement so far.
    stop_state check(double elapsed_s);

    std::int64_t n() const { return m_n; }
    double mean() const { return m_mean; }
    double rel_stdev() const;
    // IQR / 1.349 / median of the samples so far (computed at checkpoints; 0 before the first).
    double robust_noise() const { return m_robust.empty() ? 0.0 : m_robust.back(); }
    // One line saying why it stopped (or where it stands).
    std::string detail() const;

  private:
    bool plateaued() const;
    void checkpoint();

    stopping_settings m_settings;
    std::int64_t m_n = 0;
    double m_mean = 0, m_m2 = 0; // Welford
    std::vector<double> m_samples;
    std::vector<double> m_robust; // robust noise at each checkpoint
    std::int64_t m_next_checkpoint = 0;
    stop_state m_state = stop_state::running;
    double m_elapsed_s = 0;
};

} // namespace fourfold::measure
