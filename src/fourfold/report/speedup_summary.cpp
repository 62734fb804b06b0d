#include "fourfold/report/speedup_summary.hpp"

#include "fourfold/core/figures.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/report/ledger_tables.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <set>
#include <tuple>

namespace fourfold::report {
namespace {

struct pair_of {
    const record* variant = nullptr;
    const record* baseline = nullptr;
    double speedup() const { return median_of(*baseline) / median_of(*variant); }
    static double median_of(const record& r) {
        const auto st = op_time_figures::from(r.figures).stats;
        return st ? st->median : 0;
    }
};

bool usable(const record& r) {
    if (r.which != ledger::op_time || r.status != record_status::ok)
        return false;
    return pair_of::median_of(r) > 0;
}

speedup_stat stat_of(std::string label, const std::vector<pair_of>& pairs) {
    speedup_stat s;
    s.label = std::move(label);
    s.pairs = pairs.size();
    if (pairs.empty())
        return s;
    double log_sum = 0;
    s.min = s.max = pairs.front().speedup();
    for (const auto& p : pairs) {
        const double x = p.speedup();
        log_sum += std::log(x);
        s.min = std::min(s.min, x);
        s.max = std::max(s.max, x);
    }
    s.geomean = std::exp(log_sum / static_cast<double>(pairs.size()));
    return s;
}

std::string line(const speedup_stat& s) {
    if (s.pairs == 0)
        return fmt::format("{}: no cases", s.label);
    return fmt::format("{}: {}x over {} case{} (range {}x - {}x)", s.label, fmt_num(s.geomean),
                       s.pairs, s.pairs == 1 ? "" : "s", fmt_num(s.min), fmt_num(s.max));
}

} // namespace

std::vector<speedup_summary> summarize_speedups(const std::vector<record>& records,
                                                const std::string& variant,
                                                const std::string& baseline) {
    // (workload, device, dtype) -> case key -> the two records
    using group_key = std::tuple<std::string, std::string, std::string>;
    std::map<group_key, std::map<std::string, pair_of>> groups;
    for (const auto& r : records) {
        if (!usable(r) || (r.job.variant != variant && r.job.variant != baseline))
            continue;
        auto& p = groups[{r.job.workload, r.job.device, r.job.dtype}][r.job.case_key()];
        (r.job.variant == variant ? p.variant : p.baseline) = &r;
    }
    std::vector<speedup_summary> out;
    for (const auto& [key, cases] : groups) {
        std::vector<pair_of> pairs;
        for (const auto& [case_key, p] : cases)
            if (p.variant && p.baseline)
                pairs.push_back(p);
        if (pairs.empty())
            continue;
        speedup_summary s;
        std::tie(s.workload, s.device, s.dtype) = key;
        s.variant = variant;
        s.baseline = baseline;
        s.all = stat_of("all", pairs);

        s.split_bytes = op_time_figures::from(pairs.front().variant->figures).cache_bytes;
        if (s.split_bytes > 0) {
            std::vector<pair_of> small, large;
            for (const auto& p : pairs)
                (op_time_figures::from(p.variant->figures).bytes_moved < s.split_bytes ? small
                                                                                       : large)
                    .push_back(p);
            const auto cache = human_bytes(s.split_bytes);
            s.small =
                stat_of(fmt::format("small (bytes moved < {} last-level cache)", cache), small);
            s.large = stat_of(fmt::format("bandwidth-bound (bytes moved >= {})", cache), large);
        } else {
            s.notes.push_back(
                "no last-level cache size in the records: no small/bandwidth-bound split");
        }

        // each boolean parameter that takes both values in these pairs
        std::map<std::string, std::map<bool, std::vector<pair_of>>> by_flag;
        for (const auto& p : pairs) {
            const auto& params = p.variant->job.params;
            for (auto it = params.begin(); it != params.end(); ++it)
                if (it.value().is_boolean())
                    by_flag[it.key()][it.value().get<bool>()].push_back(p);
        }
        for (const auto& [name, values] : by_flag) {
            if (values.size() < 2)
                continue;
            for (const auto& [value, subset] : values)
                s.facets.push_back(stat_of(fmt::format("{}={}", name, value), subset));
        }

        std::size_t unconverged = 0;
        std::set<std::string> modes_variant, modes_baseline;
        for (const auto& p : pairs) {
            const auto v = op_time_figures::from(p.variant->figures);
            const auto b = op_time_figures::from(p.baseline->figures);
            if (v.stop != "converged" || b.stop != "converged")
                ++unconverged;
            modes_variant.insert(v.timing_text());
            modes_baseline.insert(b.timing_text());
        }
        if (unconverged > 0)
            s.notes.push_back(fmt::format("{} of {} pairs hold a record that did not converge (see "
                                          "its stop column)",
                                          unconverged, pairs.size()));
        if (modes_variant != modes_baseline) {
            auto names = [](const std::set<std::string>& m) {
                return join(std::vector<std::string>(m.begin(), m.end()), ", ");
            };
            s.notes.push_back(fmt::format("timed differently: {} by {}, {} by {} (a variant that "
                                          "synchronises with the host cannot be graph-captured)",
                                          variant, names(modes_variant), baseline,
                                          names(modes_baseline)));
        }
        out.push_back(std::move(s));
    }
    return out;
}

void print_speedup_summaries(const std::vector<speedup_summary>& summaries, std::ostream& out) {
    if (summaries.empty())
        return;
    const auto& first = summaries.front();
    out << fmt::format("speed-up of {} over {}: median({}) / median({}) per case, geometric mean "
                       "over the cases of this run (one baseline: {})\n",
                       first.variant, first.baseline, first.baseline, first.variant,
                       first.baseline);
    for (const auto& s : summaries) {
        out << fmt::format("  {} {} {}: {}\n", s.workload, s.dtype, s.device, line(s.all));
        if (s.split_bytes > 0 && s.all.pairs > 1)
            out << fmt::format("    {}\n    {}\n", line(s.small), line(s.large));
        for (const auto& f : s.facets)
            out << fmt::format("    {}\n", line(f));
        for (const auto& n : s.notes)
            out << fmt::format("    note: {}\n", n);
    }
    out << '\n';
}

} // namespace fourfold::report
