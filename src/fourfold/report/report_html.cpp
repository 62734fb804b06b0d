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
namespace {

using compare::comparison;
using compare::timed_row;
using compare::verdict;
using store::stored_record;

constexpr double k_gib = 1024.0 * 1024.0 * 1024.0;
constexpr std::size_t k_timeline_points = 240; // per small chart; peaks kept when thinning

void speedup_charts(const comparison& c, std::string& out, double threshold) {
    std::map<std::pair<std::string, std::string>, std::vector<const timed_row*>> groups;
    for (const auto& r : c.op_time)
        groups[{r.id.a.workload, r.id.variant_text()}].push_back(&r);
    for (const auto& [key, rows] : groups) {
        svg::bar_spec spec;
        spec.reference = 1;
        spec.band = std::pair{1 / (1 + threshold), 1 / (1 - threshold)};
        spec.axis_label = "speed-up = A µs per call / B µs per call (> 1: B faster)";
        spec.legend = {
            {"faster", "FASTER"}, {"same", "SAME"}, {"unclear", "UNCLEAR"}, {"slower", "SLOWER"}};
        for (const auto* r : rows) {
            svg::bar b;
            b.label = r->id.dtype_text() + " " + r->id.b.params_text();
            if (r->id.a.device != r->id.b.device)
                b.label = r->id.device_text() + " " + b.label;
            b.value = 1 / r->ratio.ratio;
            if (r->ratio.has_ci) {
                b.low = 1 / r->ratio.ci95.high;
                b.high = 1 / r->ratio.ci95.low;
            }
            b.css = lower(to_string(r->decision));
            b.tooltip = fmt::format(
                "{}: A {} µs, B {} µs per call (medians); time ratio B/A {} (95% CI {}); speed-up "
                "{}; p (U test) {}; {}",
                b.label, fmt_num(r->a_value), fmt_num(r->b_value), fmt_num(r->ratio.ratio, 4),
                r->ratio.has_ci ? fmt::format("{} - {}", fmt_num(r->ratio.ci95.low, 4),
                                              fmt_num(r->ratio.ci95.high, 4))
                                : "n/a",
                fmt_num(b.value, 4), p_cell(r->u), to_string(r->decision));
            spec.bars.push_back(std::move(b));
        }
        std::string note = fmt::format("{} shape(s); whiskers: 95 % bootstrap CI; shaded: the "
                                       "practical threshold of {:g} %",
                                       rows.size(), threshold * 100);
        for (const auto& g : c.geomeans)
            if (g.which == ledger::op_time && g.workload == key.first && g.variant == key.second)
                note += fmt::format("; geometric mean of the time ratios B/A over these {} "
                                    "shapes: {} (speed-up {}), against this one baseline only",
                                    g.n, fmt_num(g.value, 4), fmt_num(1 / g.value, 4));
        out += svg::figure({"speedup",
                            fmt::format("op_time speed-up per shape: {} {} ({} vs {})", key.first,
                                        key.second, c.treated_text(), c.baseline_text()),
                            "speed-up (ratio of medians of µs per call; > 1 = faster)",
                            "A = " + c.baseline_text(), note},
                           svg::bar_chart(spec));
    }
}

void throughput_charts(const report_data& d, std::string& out) {
    struct line_set {
        std::map<std::string, svg::series> values, limits; // by series name
        std::string unit = "tokens/s", axis = "ctx";
    };
    std::map<std::string, line_set> by_workload;
    for (std::size_t i = 0; i < d.runs.size(); ++i)
        for (const auto& s : d.records[i]) {
            if (s.rec.which != ledger::throughput || s.rec.status != record_status::ok)
                continue;
            const auto t = throughput_figures::from(s.rec.figures);
            if (!(t.rate > 0) || !t.context.is_number())
                continue;
            const double x = t.context.get<double>();
            job_id rest = s.rec.job;
            rest.params.erase(t.context_axis); // the x axis
            const auto params = rest.params_text();
            const auto name =
                fmt::format("{}: {} {} {}{}", compare::run_text(d.runs[i]), rest.variant,
                            rest.dtype, rest.device, params.empty() ? "" : " " + params);
            auto& set = by_workload[s.rec.job.workload];
            set.unit = t.unit;
            set.axis = t.context_axis;
            auto& line = set.values[name];
            line.name = name;
            line.points.emplace_back(x, t.rate);
            if (t.bandwidth_limit) {
                auto& l = set.limits[name];
                l.name = "bandwidth limit, " + name;
                l.dashed = true;
                l.points.emplace_back(x, *t.bandwidth_limit);
            }
        }
    const std::string baseline = "none: absolute figures (the ratios B/A, each with its named "
                                 "baseline, are in the tables)";
    if (by_workload.empty()) {
        out += svg::empty_figure(
            {"throughput", "throughput: each whole-model workload's rate per context",
             "the workload's own unit (tokens/s, frames/s; higher is better)", baseline, ""},
            "no throughput records in these runs: the throughput ledger "
            "comes from whole-model workloads (fourfold run --ledgers "
            "throughput)");
        return;
    }
    for (auto& [workload, set] : by_workload) {
        svg::line_spec spec;
        int colour = 0;
        for (auto& [name, line] : set.values) {
            std::sort(line.points.begin(), line.points.end());
            line.colour = colour;
            spec.lines.push_back(line);
            if (const auto it = set.limits.find(name); it != set.limits.end()) {
                std::sort(it->second.points.begin(), it->second.points.end());
                it->second.colour = colour;
                spec.lines.push_back(it->second);
            }
            ++colour;
        }
        spec.x_label = set.axis;
        spec.y_label = set.unit;
        spec.categorical_x = true;
        const auto unit = set.unit + " (higher is better)";
        out += svg::figure(
            {"throughput", fmt::format("throughput: {} per {}, {}", set.unit, set.axis, workload),
             unit, baseline, "dashed: the memory-bandwidth limit of the run's device"},
            svg::line_chart(spec));
    }
}

void correctness_chart(const store::run_row& run, const std::vector<stored_record>& recs,
                       std::string& out) {
    std::vector<std::string> variants;
    std::map<std::string, std::size_t> row_of;
    svg::group_spec spec;
    spec.dots_on_log_axis = true;
    spec.axis_label = "relative L2 error vs the float64 CPU reference (log scale)";
    spec.mark_label = "tolerance (rel L2)";
    for (const auto& s : recs)
        if (s.rec.which == ledger::correctness && s.rec.status == record_status::ok &&
            std::find(variants.begin(), variants.end(), s.rec.job.variant) == variants.end())
            variants.push_back(s.rec.job.variant);
    spec.series = variants;
    for (const auto& s : recs) {
        if (s.rec.which != ledger::correctness || s.rec.status != record_status::ok)
            continue;
        const auto label = job_label(s.rec.job, false);
        auto [it, fresh] = row_of.emplace(label, spec.rows.size());
        if (fresh) {
            svg::group_row r;
            r.label = label;
            r.values.resize(variants.size());
            r.tooltips.resize(variants.size());
            r.why_missing.resize(variants.size());
            spec.rows.push_back(std::move(r));
        }
        auto& row = spec.rows[it->second];
        const auto v = static_cast<std::size_t>(
            std::find(variants.begin(), variants.end(), s.rec.job.variant) - variants.begin());
        const auto& f = s.rec.figures;
        row.values[v] = number_at(f, "/metrics/rel_l2");
        row.mark = number_at(f, "/tolerance/rel_l2");
        row.tooltips[v] =
            fmt::format("{} {}: {} — rel L2 {}, max abs {}, max ULP {}, PSNR {} dB, NaN/Inf {}/{}",
                        label, s.rec.job.variant, f.value("verdict", "?"),
                        fmt_num(number_at(f, "/metrics/rel_l2").value_or(NAN)),
                        fmt_num(number_at(f, "/metrics/max_abs").value_or(NAN)),
                        fmt_num(number_at(f, "/metrics/max_ulp").value_or(NAN), 6),
                        f.value("/metrics/psnr_exact"_json_pointer, false)
                            ? std::string("exact")
                            : fmt_num(number_at(f, "/metrics/psnr_db").value_or(NAN), 4),
                        fmt_num(number_at(f, "/metrics/nan").value_or(NAN)),
                        fmt_num(number_at(f, "/metrics/inf").value_or(NAN)));
    }
    const svg::frame fr{"correctness", "correctness per variant: " + compare::run_text(run),
                        "relative L2 error (dimensionless, log scale; lower is closer)",
                        "float64 CPU reference computed from the same inputs",
                        "hover a dot for max abs, max ULP, PSNR and the verdict"};
    if (spec.rows.empty()) {
        out += svg::empty_figure(fr, "no correctness records measured in this run");
        return;
    }
    out += svg::figure(fr, svg::grouped_chart(spec));
}

void memory_levels_chart(const store::run_row& run, const std::vector<stored_record>& recs,
                         std::string& out) {
    svg::group_spec spec;
    for (const auto& l : k_memory_levels)
        spec.series.emplace_back(l.label);
    spec.axis_label = "GiB";
    std::string driver_level;
    for (const auto& s : recs) {
        if (s.rec.which != ledger::memory || s.rec.status != record_status::ok)
            continue;
        const auto& f = s.rec.figures;
        if (driver_level.empty())
            driver_level = f.value("driver_level", "");
        svg::group_row r;
        r.label = job_label(s.rec.job, true);
        for (const auto& l : k_memory_levels) {
            const auto v = number_at(f, l.pointer);
            r.values.push_back(v ? std::optional<double>(*v / k_gib) : std::nullopt);
            const auto why = f.value("unavailable", json::object())
                                 .value(l.unavailable_key, std::string("not recorded"));
            r.why_missing.push_back(why);
            r.tooltips.push_back(v ? fmt::format("{}: {} peak {} ({:.0f} bytes)", r.label, l.label,
                                                 human_bytes(*v), *v)
                                   : std::string());
        }
        spec.rows.push_back(std::move(r));
    }
    const svg::frame fr{"memory-levels", "memory levels per job: " + compare::run_text(run),
                        "GiB (peak during the memory pass)",
                        "absolute: 0 = nothing held; outside allocator = driver - reserved",
                        driver_level.empty() ? "" : "driver level here: " + driver_level};
    if (spec.rows.empty()) {
        out += svg::empty_figure(fr, "no memory records measured in this run");
        return;
    }
    out += svg::figure(fr, svg::grouped_chart(spec));
}

// Thins a timeline to at most k_timeline_points, keeping the largest value of each bucket so
// that no peak disappears from the picture.
std::vector<std::pair<double, double>> thin(const json& timeline) {
    std::vector<std::pair<double, double>> pts;
    for (const auto& p : timeline)
        if (p.is_array() && p.size() == 2 && p[0].is_number() && p[1].is_number())
            pts.emplace_back(p[0].get<double>(), p[1].get<double>());
    if (pts.size() <= k_timeline_points)
        return pts;
    std::vector<std::pair<double, double>> out;
    const double per = static_cast<double>(pts.size()) / static_cast<double>(k_timeline_points);
    for (std::size_t b = 0; b < k_timeline_points; ++b) {
        const auto from = static_cast<std::size_t>(static_cast<double>(b) * per);
        const auto to =
            std::min(pts.size(), static_cast<std::size_t>(static_cast<double>(b + 1) * per));
        auto best = pts[from];
        for (auto i = from; i < to; ++i)
            if (pts[i].second > best.second)
                best = pts[i];
        out.push_back(best);
    }
    return out;
}

void memory_timelines(const store::run_row& run, const std::vector<stored_record>& recs,
                      std::string& out) {
    std::string charts;
    std::size_t drawn = 0;
    for (const auto& s : recs) {
        if (s.rec.which != ledger::memory || s.rec.status != record_status::ok)
            continue;
        const auto& f = s.rec.figures;
        const auto pts = thin(f.value("timeline", json::array()));
        if (pts.size() < 2)
            continue;
        svg::line_spec spec;
        spec.width = 400;
        spec.height = 200;
        spec.legend = false;
        spec.y_divisor = k_gib;
        spec.x_label = "ms since the pass began";
        spec.y_label = "GiB";
        spec.lines.push_back({"driver level", pts, false, 0});
        std::string base = "driver level at 0 (absolute bytes)";
        if (const auto b = number_at(f, "/baseline/driver_bytes")) {
            spec.lines.push_back(
                {"before the pass", {{pts.front().first, *b}, {pts.back().first, *b}}, true, 6});
            base = fmt::format("dashed: the driver level before the pass ({})", human_bytes(*b));
        }
        // the sampled peak and its moment, marked by a dotted vertical line; what the job says
        // of its pad calls (a VAE decode's), where it says it
        std::string note;
        const auto peak_t = number_at(f, "/driver_peak_t_ms");
        const auto peak_b = number_at(f, "/driver_peak_sampled_bytes");
        if (peak_t && peak_b) {
            spec.lines.push_back({"sampled peak", {{*peak_t, 0}, {*peak_t, *peak_b}}, true, 3});
            note = fmt::format("sampled peak {} at {} ms (vertical line)", human_bytes(*peak_b),
                               fmt_num(*peak_t));
            for (const auto& [key, name] : {std::pair{"/driver_peak_bytes", "driver peak"},
                                            std::pair{"/reserved_peak_bytes", "reserved peak"}})
                if (const auto v = number_at(f, key))
                    note += fmt::format("; {} {}", name, human_bytes(*v));
        }
        if (const auto pads = number_at(f, "/facts/pad_calls_per_decode"))
            note += fmt::format("{}{} constant-pad calls per decode", note.empty() ? "" : "; ",
                                fmt_num(*pads));
        else if (const auto per_call = number_at(f, "/facts/pad_calls_per_call"))
            note += fmt::format("{}{} constant-pad calls per call", note.empty() ? "" : "; ",
                                fmt_num(*per_call));
        charts +=
            svg::figure({"memory-timeline", job_label(s.rec.job, true),
                         "GiB over ms (driver level, sampled at " +
                             fmt_num(number_at(f, "/sampler/achieved_hz").value_or(NAN)) + " Hz)",
                         base, note},
                        svg::line_chart(spec));
        ++drawn;
    }
    const svg::frame fr{"memory-timeline", "memory timeline: " + compare::run_text(run),
                        "GiB over ms", "the driver level before the pass", ""};
    if (drawn == 0) {
        out += svg::empty_figure(fr, "no memory timeline in this run (no memory records, or "
                                     "fewer than 2 samples each)");
        return;
    }
    out += fmt::format("<h4>memory timeline: {}</h4>\n<div class=\"grid\">\n{}</div>\n",
                       html_escape(compare::run_text(run)), charts);
}

// ---------------------------------------------------------------- pages

const char* k_style = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1200px;padding:0 16px 48px;color:#1b1b1b;background:#fff}
h1{font-size:24px;margin:20px 0 4px}h2{font-size:19px;margin:32px 0 8px;border-bottom:1px solid #ddd}h3{font-size:16px}h4{font-size:14px;margin:16px 0 6px}
.meta{color:#555}.refused{border:2px solid #cc3311;background:#fff3f0;padding:8px 12px}.why{color:#555;font-style:italic}
table{border-collapse:collapse;margin:8px 0 20px;font-size:12px}caption{text-align:left;font-weight:600;padding:4px 0}
th,td{border:1px solid #ddd;padding:2px 6px;vertical-align:top}th{background:#f4f4f4}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
figure.chart{margin:12px 0 24px}figcaption{margin-bottom:4px}.unit,.baseline,.note{color:#444;font-size:12px}.empty-why{color:#555;font-style:italic;border:1px dashed #bbb;padding:8px}
.grid{display:flex;flex-wrap:wrap;gap:8px}.grid figure.chart{margin:4px;flex:0 0 410px;font-size:12px}
svg.plot{font:11px system-ui,sans-serif;overflow:visible}svg .axis line{stroke:#888}svg line.grid{stroke:#e6e6e6}svg text{fill:#222}svg .axis-label{fill:#444}
svg .reference{stroke:#222;stroke-width:1.5}svg .band{fill:#e8e8e8}svg .whisker{stroke:#222;fill:none}svg .stripe{fill:#f7f7f7}svg .tick{stroke:#222;stroke-width:2}svg .na{fill:#999;font-style:italic}
.faster{fill:#228833}.slower{fill:#cc3311}.same{fill:#9e9e9e}.unclear{fill:#ee9944}
.s0{fill:#4477aa}.s1{fill:#ee6677}.s2{fill:#228833}.s3{fill:#ccbb44}.s4{fill:#66ccee}.s5{fill:#aa3377}.s6{fill:#bbbbbb}
svg path.line{fill:none;stroke-width:1.8}svg path.dashed{stroke-dasharray:5 4}
.c0{stroke:#4477aa;fill:#4477aa}.c1{stroke:#ee6677;fill:#ee6677}.c2{stroke:#228833;fill:#228833}.c3{stroke:#ccbb44;fill:#ccbb44}.c4{stroke:#66ccee;fill:#66ccee}.c5{stroke:#aa3377;fill:#aa3377}.c6{stroke:#888;fill:#888}
svg path.line.c0,svg path.line.c1,svg path.line.c2,svg path.line.c3,svg path.line.c4,svg path.line.c5,svg path.line.c6{fill:none}
)";

} // namespace

void write_html(const report_data& d, std::ostream& out) {
    std::vector<std::string> names;
    for (const auto& r : d.runs)
        names.push_back(compare::run_text(r));
    out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
           // nothing may be fetched or run when the file is viewed: styles inline, no script
           "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
           "style-src 'unsafe-inline'; img-src data:; script-src 'none'\">\n"
           "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        << "<title>" << html_escape("fourfold report: " + join(names, ", ")) << "</title>\n"
        << "<style>" << k_style << "</style>\n</head>\n<body>\n";
    out << "<header><h1>fourfold report</h1>\n<p class=\"meta\">"
        << html_escape(fmt::format("generated {} by fourfold {} (git {}); {}", utc_now_iso8601(),
                                   this_build().version, this_build().git_sha, chart_engine_text()))
        << "</p>\n";
    out << "<p class=\"meta\">"
        << html_escape(fmt::format(
               "four ledgers, each in its own unit: throughput (tokens/s), op_time (µs per call), "
               "correctness (against a float64 CPU reference), memory (bytes, shown as GiB). "
               "Every ratio names its baseline; ratios from different baselines are never "
               "multiplied or chained. {}.",
               compare::verdict_rule(d.threshold)))
        << "</p></header>\n";
    out << "<section id=\"runs\"><h2>Runs</h2>\n";
    runs_table(d, out, table_format::html);
    out << "</section>\n";

    std::string charts;
    out << "<section id=\"op_time\"><h2>op_time: speed-up per shape</h2>\n";
    bool any_speedup = false;
    for (std::size_t i = 0; i < d.runs.size(); ++i) {
        if (d.within[i]) {
            std::string c;
            speedup_charts(*d.within[i], c, d.threshold);
            any_speedup |= !c.empty();
            out << c;
        } else if (!d.within_why_not[i].empty()) {
            out << "<p class=\"why\">"
                << html_escape(compare::run_text(d.runs[i]) + ": " + d.within_why_not[i])
                << "</p>\n";
        }
    }
    for (std::size_t i = 0; i < d.across.size(); ++i) {
        if (d.across[i]) {
            std::string c;
            speedup_charts(*d.across[i], c, d.threshold);
            any_speedup |= !c.empty();
            out << c;
        } else {
            out << "<p class=\"refused\">" << html_escape(d.across_refused[i]) << "</p>\n";
        }
    }
    if (!any_speedup)
        out << svg::empty_figure(
            {"speedup", "op_time speed-up per shape", "speed-up (ratio of medians of µs per call)",
             "the baseline variant '" + d.baseline_variant + "' or the first run", ""},
            "no pair of op_time records to compare: give a run with several "
            "variants (baseline '" +
                d.baseline_variant + "', see --baseline-variant) or two comparable runs");
    out << "</section>\n";

    out << "<section id=\"throughput\"><h2>throughput: each workload's rate per context</h2>\n";
    charts.clear();
    throughput_charts(d, charts);
    out << charts << "</section>\n";

    out << "<section id=\"correctness\"><h2>correctness: metrics per variant</h2>\n";
    for (std::size_t i = 0; i < d.runs.size(); ++i) {
        charts.clear();
        correctness_chart(d.runs[i], d.records[i], charts);
        out << charts;
    }
    out << "</section>\n";

    out << "<section id=\"memory\"><h2>memory: levels per job and timelines</h2>\n";
    for (std::size_t i = 0; i < d.runs.size(); ++i) {
        charts.clear();
        memory_levels_chart(d.runs[i], d.records[i], charts);
        memory_timelines(d.runs[i], d.records[i], charts);
        out << charts;
    }
    out << "</section>\n";

    out << "<section id=\"tables\"><h2>Tables</h2>\n";
    for (std::size_t i = 0; i < d.runs.size(); ++i)
        if (d.within[i])
            print_comparison(*d.within[i], out, table_format::html);
    for (std::size_t i = 0; i < d.across.size(); ++i)
        if (d.across[i])
            print_comparison(*d.across[i], out, table_format::html);
    for (std::size_t i = 0; i < d.runs.size(); ++i) {
        out << "<h3>" << html_escape("ledgers of " + compare::run_text(d.runs[i])) << "</h3>\n";
        print_ledger_tables(plain_records(d.records[i]), out, table_format::html);
    }
    out << "</section>\n</body>\n</html>\n";
}

} // namespace fourfold::report::detail
