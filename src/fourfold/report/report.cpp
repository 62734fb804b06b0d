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

namespace fourfold::report {
namespace detail {

using compare::comparison;
using compare::timed_row;
using compare::verdict;
using store::stored_record;

std::string job_label(const job_id& j, bool with_variant) {
    std::string out = j.workload;
    if (with_variant)
        out += " " + j.variant;
    out += " " + j.dtype;
    if (const auto p = j.params_text(); !p.empty())
        out += " " + p;
    return out;
}

std::string lower(std::string_view v) {
    std::string out(v);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    return out;
}

std::vector<record> plain_records(const std::vector<stored_record>& v) {
    std::vector<record> out;
    out.reserve(v.size());
    for (const auto& s : v)
        out.push_back(s.rec);
    return out;
}

std::string device_name(const store::run_row& r) {
    return r.provenance.value("/device/name"_json_pointer, r.device);
}

// ---------------------------------------------------------------- charts

// One chart per workload and variant (pair) of a comparison: speed-up per shape.

void runs_table(const report_data& d, std::ostream& out, table_format format) {
    text_table t("runs in this report (the first is the baseline of every run-to-run comparison)",
                 {{"run", align::right},
                  {"label"},
                  {"status"},
                  {"device"},
                  {"device name"},
                  {"started"},
                  {"fourfold"},
                  {"libtorch"},
                  {"timing"}});
    std::vector<store::run_state> states; // each looks up the run's process once
    for (const auto& r : d.runs) {
        const auto& p = r.provenance;
        states.push_back(store::state_of(r));
        t.add_row(
            {std::to_string(r.id), r.label, states.back().word, r.device, device_name(r),
             r.started_at, p.value("/fourfold/git_sha"_json_pointer, std::string("?")),
             p.value("/libtorch/version"_json_pointer, std::string("?")),
             fmt::format("{}/{}", p.value("/settings/timing/mode"_json_pointer, std::string("?")),
                         p.value("/settings/timing/cache"_json_pointer, std::string("?")))});
    }
    if (format == table_format::html)
        t.print_html(out);
    else if (format == table_format::markdown)
        t.print_markdown(out);
    else
        t.print(out);
    for (std::size_t i = 0; i < d.runs.size(); ++i) {
        const auto& state = states[i];
        if (state.why.empty())
            continue;
        const auto text =
            fmt::format("{}: {}: {}", compare::run_text(d.runs[i]), state.word, state.why);
        if (format == table_format::html)
            out << "<p class=\"why\">" << html_escape(text) << "</p>\n";
        else
            out << text << "\n\n";
    }
}

} // namespace detail

std::string chart_engine_text() {
    return fmt::format("charts: inline SVG drawn by fourfold {} itself (no chart library, no "
                       "script; nothing is fetched when the file is viewed)",
                       this_build().version);
}

report_data load_report(const store::result_store& store, const report_request& request) {
    if (request.runs.empty())
        throw bad_input("report needs at least one run (id or label)");
    report_data d;
    d.baseline_variant = request.baseline_variant;
    d.threshold = request.options.threshold;
    for (const auto& r : request.runs) {
        d.runs.push_back(store.find_run(r));
        d.records.push_back(store.records(d.runs.back().id, true));
    }
    for (std::size_t i = 0; i < d.runs.size(); ++i) {
        std::set<std::string> variants;
        for (const auto& s : d.records[i])
            variants.insert(s.rec.job.variant);
        d.within.emplace_back();
        d.within_why_not.emplace_back();
        if (!variants.count(request.baseline_variant)) {
            d.within_why_not.back() = fmt::format("no variant '{}' in this run: no within-run "
                                                  "speed-up (--baseline-variant)",
                                                  request.baseline_variant);
            continue;
        }
        if (variants.size() < 2) {
            d.within_why_not.back() = fmt::format("only the variant '{}' in this run: nothing to "
                                                  "compare it with",
                                                  request.baseline_variant);
            continue;
        }
        auto opts = request.options;
        opts.baseline_variant = request.baseline_variant;
        try {
            d.within.back() = compare::compare_variants(d.runs[i], d.records[i], opts);
        } catch (const compare::refused& e) {
            d.within_why_not.back() = e.what();
        }
    }
    for (std::size_t i = 1; i < d.runs.size(); ++i) {
        d.across.emplace_back();
        d.across_refused.emplace_back();
        auto opts = request.options;
        opts.baseline_variant.clear();
        try {
            d.across.back() =
                compare::compare_runs(d.runs[0], d.records[0], d.runs[i], d.records[i], opts);
        } catch (const compare::refused& e) {
            d.across_refused.back() = e.what();
        }
    }
    return d;
}

void write_report(const report_data& data, report_format format, std::ostream& out) {
    switch (format) {
    case report_format::html:
        detail::write_html(data, out);
        break;
    case report_format::markdown:
        detail::write_markdown(data, out);
        break;
    case report_format::csv:
        detail::write_csv(data, out);
        break;
    }
}

} // namespace fourfold::report
