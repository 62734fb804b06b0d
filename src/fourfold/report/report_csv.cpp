#include "fourfold/core/build_info.hpp"
#include "fourfold/core/figures.hpp"
#include "fourfold/core/memory_levels.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/report/compare_tables.hpp"
#include "fourfold/report/html.hpp"
#include "fourfold/report/ledger_tables.hpp"
#include "fourfold/report/report_parts.hpp"
#include "fourfold/report/svg_chart.hpp"
#include "fourfold/report/text_table.hpp"
#include "fourfold/store/export.hpp"
#include "fourfold/store/run_state.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <set>
#include <sstream>

namespace fourfold::report::detail {

using compare::comparison;
using compare::timed_row;
using compare::verdict;
using store::stored_record;

void write_csv(const report_data& d, std::ostream& out) {
    out << "section,run,run_label,ledger,workload,variant,device,dtype,params,quantity,unit,value,"
           "baseline\n";
    auto row = [&](const std::string& section, const store::run_row& r, ledger l,
                   const std::string& workload, const std::string& variant,
                   const std::string& device, const std::string& dtype, const std::string& params,
                   const std::string& quantity, const std::string& unit, const std::string& value,
                   const std::string& baseline) {
        const std::vector<std::string> cells{section,  std::to_string(r.id),
                                             r.label,  std::string(to_string(l)),
                                             workload, variant,
                                             device,   dtype,
                                             params,   quantity,
                                             unit,     value,
                                             baseline};
        for (std::size_t i = 0; i < cells.size(); ++i)
            out << (i ? "," : "") << store::csv_escape(cells[i]);
        out << '\n';
    };
    auto g = [](std::optional<double> v) {
        return v && std::isfinite(*v) ? fmt::format("{:.9g}", *v) : std::string();
    };
    for (std::size_t i = 0; i < d.runs.size(); ++i)
        for (const auto& s : d.records[i]) {
            const auto& j = s.rec.job;
            const auto& f = s.rec.figures;
            auto put = [&](const std::string& q, const std::string& unit, const std::string& v,
                           const std::string& baseline = "") {
                row("record", d.runs[i], s.rec.which, j.workload, j.variant, j.device, j.dtype,
                    j.params.dump(), q, unit, v, baseline);
            };
            if (s.rec.status != record_status::ok) {
                put("status", "", fmt::format("{}: {}", to_string(s.rec.status), s.rec.reason));
                continue;
            }
            switch (s.rec.which) {
            case ledger::op_time:
                put("median_us_per_call", "us", g(number_at(f, "/stats/median")));
                put("ci95_low_us", "us", g(number_at(f, "/stats/ci95_low")));
                put("ci95_high_us", "us", g(number_at(f, "/stats/ci95_high")));
                put("gb_per_s", "GB/s", g(number_at(f, "/gb_per_s")));
                break;
            case ledger::throughput: {
                const auto t = throughput_figures::from(f);
                const bool tokens = t.unit == "tokens/s";
                put(t.context_axis, "", t.context.is_number() ? g(t.context.get<double>()) : "");
                put(tokens ? "tokens_per_s" : "rate", t.unit, g(t.rate));
                put(tokens ? "bandwidth_limit_tokens_per_s" : "bandwidth_limit", t.unit,
                    t.bandwidth_limit ? g(*t.bandwidth_limit) : "");
                break;
            }
            case ledger::correctness: {
                const auto cf = correctness_figures::from(f);
                put("verdict", "", cf.verdict, "float64 CPU reference");
                for (const auto& metric : k_correctness_metrics)
                    put(metric.key, metric.unit,
                        g(number_at(cf.metrics, (std::string("/") + metric.key).c_str())),
                        "float64 CPU reference");
                put("tolerance_rel_l2", "", g(number_at(cf.tolerance, "/rel_l2")));
                break;
            }
            case ledger::memory:
                for (const char* k : {"driver_peak_bytes", "reserved_peak_bytes",
                                      "allocated_peak_bytes", "outside_allocator_bytes"}) {
                    const auto v = number_at(f, (std::string("/") + k).c_str());
                    put(k, "bytes", v ? g(v) : "unavailable");
                }
                break;
            }
        }
    auto compared = [&](const comparison& c) {
        const auto base = c.baseline_text();
        for (const auto* rows : {&c.op_time, &c.throughput})
            for (const auto& r : *rows) {
                const auto quantity = r.id.which == ledger::op_time ? "time_ratio_b_over_a"
                                      : r.unit == "tokens/s"        ? "tokens_per_s_ratio_b_over_a"
                                                                    : "rate_ratio_b_over_a";
                auto put = [&](const std::string& q, const std::string& unit,
                               const std::string& v) {
                    row("compare", c.b, r.id.which, r.id.a.workload, r.id.variant_text(),
                        r.id.device_text(), r.id.dtype_text(), r.id.b.params.dump(), q, unit, v,
                        base);
                };
                put(quantity, "ratio", g(r.ratio.ratio));
                if (r.ratio.has_ci) {
                    put(std::string(quantity) + "_ci95_low", "ratio", g(r.ratio.ci95.low));
                    put(std::string(quantity) + "_ci95_high", "ratio", g(r.ratio.ci95.high));
                }
                if (r.u)
                    put("mann_whitney_p_two_sided", "", g(r.u->p_two_sided));
                put("verdict", "", std::string(to_string(r.decision)));
            }
        for (const auto& gm : c.geomeans)
            row("compare", c.b, gm.which, gm.workload, gm.variant, "", "", "",
                fmt::format("geomean_ratio_b_over_a_over_{}_pairs", gm.n), "ratio", g(gm.value),
                base);
    };
    for (const auto& c : d.within)
        if (c)
            compared(*c);
    for (const auto& c : d.across)
        if (c)
            compared(*c);
}

} // namespace fourfold::report::detail
