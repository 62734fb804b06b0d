#pragma once
// The live line `fourfold run` redraws on a terminal: job i of n, the job, its pass, elapsed and
// an estimate of what is left, cut to the terminal's width so that '\r' can redraw it.
#include <cstddef>
#include <string>
#include <string_view>

namespace fourfold::report {

// index: 0-based job group now running, begun at group_start_s (seconds since the run began).
// The estimate: the groups to come take as long as the finished ones did on average, and the
// running one the rest of that average. Before the first one finishes there is no average:
// `budget_left_s`, what the settings give the groups from this one on at the least (warm-up,
// minimum time, memory window), stands in, marked "at least"; 0 leaves it "estimating".
std::string progress_line(std::size_t index, std::size_t total, std::string_view title,
                          std::string_view pass, double elapsed_s, double group_start_s,
                          std::size_t width, double budget_left_s = 0);

// "42 s", "3 min 05 s", "1 h 02 min"
std::string duration_text(double seconds);

} // namespace fourfold::report
