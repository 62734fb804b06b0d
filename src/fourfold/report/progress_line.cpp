#include "fourfold/report/progress_line.hpp"

#include "fourfold/report/text_table.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace fourfold::report {

std::string duration_text(double seconds) {
    const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
    if (s < 60)
        return fmt::format("{} s", s);
    if (s < 3600)
        return fmt::format("{} min {:02} s", s / 60, s % 60);
    return fmt::format("{} h {:02} min", s / 3600, (s % 3600) / 60);
}

std::string progress_line(std::size_t index, std::size_t total, std::string_view title,
                          std::string_view pass, double elapsed_s, double group_start_s,
                          std::size_t width, double budget_left_s) {
    std::string eta = "estimating";
    if (index == 0 && budget_left_s > 0)
        eta = fmt::format("at least ~{} left",
                          duration_text(std::max(0.0, budget_left_s - elapsed_s)));
    if (index > 0 && total > index) {
        const double per_group = group_start_s / double(index);
        const double left = per_group * double(total - index - 1) +
                            std::max(0.0, per_group - (elapsed_s - group_start_s));
        eta = fmt::format("~{} left", duration_text(left));
    }
    const auto head = fmt::format("[job {}/{}] ", index + 1, total);
    const auto tail = fmt::format(": {}  ({} elapsed, {})", pass, duration_text(elapsed_s), eta);
    std::string name(title);
    const std::size_t fixed = display_width(head) + display_width(tail);
    // keep the counters and the estimate whole; the job's name gives way, down to nothing
    if (width > 0 && fixed + display_width(name) > width) {
        const std::size_t room = width > fixed + 3 ? width - fixed - 3 : 0;
        std::size_t cut = 0, seen = 0;
        while (cut < name.size() && seen < room) {
            ++cut;
            while (cut < name.size() && (static_cast<unsigned char>(name[cut]) & 0xc0) == 0x80)
                ++cut;
            ++seen;
        }
        name.resize(cut);
        name += "...";
    }
    return head + name + tail;
}

} // namespace fourfold::report
