#pragma once
// The live line `fourfold run` redraws on a terminal: job i of n, the job, its pass, elapsed and
// an estimate of what is left, cut to the terminal's width so that '\r' can redraw it.
#include <cstddef>
#include <string>
#include <string_view>

namespace fourfold::report {

// index: 0-based job group now running, begun at group_start_s (seconds since the run began).
// The estimate: the groups to come take as long as the finished ones did on average, and the
// running one the rest of that average ("estimating" before the first one finishes).
std::string progress_line(std::size_t index, std::size_t total, std::string_view title,
                          std::string_view pass, double elapsed_s, double group_start_s,
                          std::size_t width);

// "42 s", "3 min 05 s", "1 h 02 min"
std::string duration_text(double seconds);

} // namespace fourfold::report
