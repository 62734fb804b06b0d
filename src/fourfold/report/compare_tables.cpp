#include "fourfold/report/compare_tables.hpp"

#include "fourfold/core/figures.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/report/html.hpp"
#include "fourfold/report/text_table.hpp"
#include "fourfold/store/export.hpp"
#include "fourfold/store/run_state.hpp"

#include <cmath>
#include <fmt/format.h>
#include <map>

namespace fourfold::report {
namespace {

using namespace fourfold::compare;

std::string num(const json& m, const char* key, int digits = 3) {
    if (!m.is_object() || !m.contains(key) || !m.at(key).is_number())
        return "-";
    return fmt_num(m.at(key).get<double>(), digits);
}

// ULPs are counts: no decimals.
std::string count_num(const json& m, const char* key) {
    if (!m.is_object() || !m.contains(key) || !m.at(key).is_number())
        return "-";
    const double v = m.at(key).get<double>();
    return std::isfinite(v) && std::floor(v) == v && std::fabs(v) < 1e15 ? fmt::format("{:.0f}", v)
                                                                         : fmt_num(v);
}

std::string psnr(const json& m) {
    if (m.is_object() && m.value("psnr_exact", false))
        return "exact";
    return num(m, "psnr_db", 4);
}

std::string nonfinite(const json& m) {
    auto v = [&](const char* k) {
        return m.is_object() && m.contains(k)
                   ? (m[k].is_string() ? m[k].get<std::string>() : m[k].dump())
                   : std::string("-");
    };
    return v("nan") + "/" + v("inf");
}

std::string gib(const std::optional<double>& bytes) {
    return bytes ? fmt_gib(*bytes) : std::string("n/a");
}

// Identity columns of a pair: the device column only when some pair crosses devices.
struct identity_columns {
    bool device = false;
    std::vector<column> columns() const {
        std::vector<column> c{{"workload"}, {"variant"}, {"dtype"}};
        if (device)
            c.push_back({"device"});
        c.push_back({"params"});
        return c;
    }
    std::vector<std::string> cells(const pair_id& id) const {
        std::vector<std::string> c{id.a.workload, id.variant_text(), id.dtype_text()};
        if (device)
            c.push_back(id.device_text());
        c.push_back(id.b.params_text());
        return c;
    }
};

std::vector<column> with(std::vector<column> base, std::vector<column> extra) {
    base.insert(base.end(), extra.begin(), extra.end());
    return base;
}

std::vector<std::string> with(std::vector<std::string> base, std::vector<std::string> extra) {
    base.insert(base.end(), extra.begin(), extra.end());
    return base;
}

void emit(const text_table& t, std::ostream& out, table_format format) {
    if (format == table_format::markdown)
        t.print_markdown(out);
    else if (format == table_format::html)
        t.print_html(out);
    else {
        t.print(out);
        out << '\n';
    }
}

// A paragraph line: indented in text, a list item in Markdown.
void line(std::ostream& out, table_format format, const std::string& text) {
    if (format == table_format::html)
        out << "<p class=\"line\">" << html_escape(text) << "</p>\n";
    else if (format == table_format::markdown)
        out << "- " << markdown_escape(text) << '\n';
    else
        out << "  " << text << '\n';
}

void heading(std::ostream& out, table_format format, const std::string& text) {
    if (format == table_format::markdown)
        out << "### " << markdown_escape(text) << "\n\n";
    else if (format == table_format::html)
        out << "<h4>" << html_escape(text) << "</h4>\n";
    else
        out << text << '\n';
}

std::string percent_change(double ratio) {
    if (!std::isfinite(ratio) || ratio <= 0)
        return "";
    return fmt::format("{:+.1f} %", (ratio - 1) * 100);
}

// The unit a workload's throughput records declare (tokens/s where none is stored).
std::string rate_unit_of(const comparison& c, const std::string& workload) {
    for (const auto& r : c.throughput)
        if (r.id.a.workload == workload)
            return r.unit;
    return "tokens/s";
}

void print_geomeans(const comparison& c, ledger l, std::ostream& out, table_format format) {
    bool any = false;
    for (const auto& g : c.geomeans) {
        if (g.which != l)
            continue;
        if (!any)
            heading(out, format,
                    fmt::format("geometric mean speed-up of B (> 1: B faster; {}), per workload "
                                "and variant, over pairs that all share the one baseline {}:",
                                l == ledger::op_time ? "A/B of time" : "B/A of the rate",
                                c.baseline_text()));
        any = true;
        line(out, format,
             fmt::format("{} {}: {} ({} {}) over {} pairs", g.workload, g.variant,
                         speedup_cell(speedup_of(g.value, l)), percent_change(g.value),
                         l == ledger::op_time ? "time" : rate_unit_of(c, g.workload), g.n));
    }
    if (any) {
        line(out, format,
             "each geometric mean stands alone: do not multiply it with a ratio from another "
             "comparison (another baseline); fourfold never chains ratios");
        out << '\n';
    }
}

void print_environment(const comparison& c, std::ostream& out, table_format format) {
    if (c.environment.empty())
        return;
    heading(out, format,
            "environment: the machine as each run measured it beside its jobs (not a treatment)");
    for (const auto& e : c.environment) {
        const auto value = [&](const std::optional<double>& v) {
            return v ? fmt::format("{} {}", fmt_num(*v, 4), e.unit) : std::string("n/a");
        };
        std::string text = fmt::format("{:<16} A {}, B {}", e.what, value(e.a), value(e.b));
        if (const auto ch = e.change())
            text += fmt::format(" ({:+.1f} %)", 100 * *ch);
        if (e.moved(c.options.threshold))
            text += fmt::format(
                ": moved beyond the {:g} % threshold, the machine changed between the runs; {}",
                100 * c.options.threshold, e.if_moved);
        line(out, format, text);
    }
    out << '\n';
}

void print_treatment(const comparison& c, std::ostream& out, table_format format) {
    const auto& t = c.what;
    heading(out, format,
            c.one_run ? fmt::format("treatment: each variant against the baseline variant '{}', "
                                    "in one run (same provenance)",
                                    c.options.baseline_variant)
                      : "treatment: what differs between A and B");
    bool any = false;
    for (const auto& f : t.provenance.fields) {
        any = true;
        line(out, format,
             fmt::format("{:<15} {}: {} vs {}  (declared: --allow-diff {})", f.name, f.path,
                         short_value(f.a), short_value(f.b), f.name));
    }
    for (const auto& [name, n] : t.job_diffs) {
        any = true;
        const auto& ex = t.job_diff_examples.at(name);
        const auto why =
            t.with_variant.count(name)
                ? std::string("comes with the variant: one that cannot be captured in a graph "
                              "is timed per call with events; each row names both modes")
                : fmt::format("declared: --allow-diff {}", name);
        line(out, format,
             fmt::format("{:<15} in {} pair(s): {}  ({})", name, n,
                         join({ex.begin(), ex.end()}, ", "), why));
    }
    if (!any && !c.one_run)
        line(out, format,
             c.a.id == c.b.id ? "none: A and B are the same run"
                              : "none: A and B have the same provenance (an A vs A "
                                "comparison: expect SAME)");
    if (!t.provenance.derived.empty()) {
        std::vector<std::string> paths;
        for (const auto& f : t.provenance.derived)
            paths.push_back(f.path);
        line(out, format, "follows from the above, no declaration needed: " + join(paths, ", "));
    }
    if (!t.provenance.never_treatment.empty())
        line(out, format,
             "not treatment (differ between any two runs): " +
                 join(t.provenance.never_treatment, ", "));
    if (!t.declared_but_equal.empty())
        line(out, format,
             "declared with --allow-diff but equal in A and B: " +
                 join({t.declared_but_equal.begin(), t.declared_but_equal.end()}, ", "));
    std::size_t unpaired_a = 0, unpaired_b = 0;
    for (const auto& u : c.unpaired)
        (u.side == 'A' ? unpaired_a : unpaired_b)++;
    line(out, format,
         fmt::format("pairs: {} by workload key{}; unpaired: {} only in A, {} only in B{}",
                     c.pairs_by_key,
                     c.pairs_by_case
                         ? fmt::format(", {} by workload + params + variant across device/dtype",
                                       c.pairs_by_case)
                         : "",
                     unpaired_a, unpaired_b, c.unpaired.empty() ? "" : " (listed below)"));
    out << '\n';
}

// A ledger with no measured pair still gets its line where its table would stand: a reader must
// see that it was not measured, not wonder whether the table was left out.
void print_empty_ledger(const comparison& c, ledger l, std::ostream& out, table_format format) {
    std::size_t unpaired = 0, not_compared = 0;
    for (const auto& u : c.unpaired)
        unpaired += u.which == l ? 1 : 0;
    for (const auto& r : c.not_compared)
        not_compared += r.id.which == l ? 1 : 0;
    const std::string what =
        unpaired + not_compared == 0
            ? "no record of this ledger in A or B (none of their jobs measures it)"
            : fmt::format("no measured pair: {} record(s) unpaired, {} skipped or failed in A or "
                          "B (listed below)",
                          unpaired, not_compared);
    heading(out, format, fmt::format("{}: {}", to_string(l), what));
    if (format == table_format::text)
        out << '\n';
}

// Said beside a run that is not complete: a partial run pairs fewer records than it planned.
std::string run_state_note(const store::run_row& r) {
    const auto state = store::state_of(r);
    return state.why.empty() ? "" : fmt::format(" (run {}: {})", state.word, state.why);
}

} // namespace

ratio_estimate as_speedup(const ratio_estimate& r, ledger l) {
    if (l != ledger::op_time)
        return r;
    ratio_estimate s = r;
    s.ratio = speedup_of(r.ratio, l);
    s.ci95.low = speedup_of(r.ci95.high, l);
    s.ci95.high = speedup_of(r.ci95.low, l);
    return s;
}

double speedup_of(double ratio_b_over_a, ledger l) {
    if (l != ledger::op_time)
        return ratio_b_over_a;
    return ratio_b_over_a > 0 ? 1 / ratio_b_over_a : 0;
}

std::string speedup_cell(double speedup) {
    return fmt_num(speedup, 4) + "x";
}

std::string ratio_cell(const ratio_estimate& r) {
    return fmt_num(r.ratio, 4);
}

static std::string ci_cell(const ratio_estimate& r) {
    if (!r.has_ci)
        return "n/a";
    return fmt::format("{} - {}", fmt_num(r.ci95.low, 4), fmt_num(r.ci95.high, 4));
}

std::string p_cell(const std::optional<u_test>& u) {
    if (!u)
        return "n/a";
    // below double's resolution near 1 the normal tail underflows: say so rather than print 0
    const auto p = u->p_two_sided < 1e-15 ? std::string("<1e-15") : fmt_num(u->p_two_sided, 2);
    return u->method == "exact" ? p + " (exact)" : p;
}

void print_comparison(const comparison& c, std::ostream& out, table_format format) {
    if (format == table_format::markdown)
        out << "## fourfold compare\n\n";
    else if (format == table_format::html)
        out << "<h3>fourfold compare</h3>\n";
    else
        out << "fourfold compare\n";
    auto run_line = [&](const char* role, const store::run_row& r) {
        line(out, format,
             fmt::format("{} {} — device {}, started {}, fourfold {}", role, run_text(r), r.device,
                         r.started_at,
                         r.provenance.value("/fourfold/git_sha"_json_pointer, std::string("?"))) +
                 run_state_note(r));
    };
    if (c.one_run) {
        run_line("run:", c.a);
        line(out, format,
             fmt::format("A (baseline): variant '{}'; B: each other variant of the same job",
                         c.options.baseline_variant));
    } else {
        run_line("A (baseline):", c.a);
        run_line("B (treated): ", c.b);
    }
    out << '\n';
    print_treatment(c, out, format);
    print_environment(c, out, format);

    identity_columns ids;
    for (const auto* rows : {&c.op_time, &c.throughput})
        for (const auto& r : *rows)
            ids.device |= r.id.a.device != r.id.b.device;
    for (const auto& r : c.correctness)
        ids.device |= r.id.a.device != r.id.b.device;
    for (const auto& r : c.memory)
        ids.device |= r.id.a.device != r.id.b.device;

    if (!c.throughput.empty()) {
        // one table per unit the workloads declare (tokens/s, frames/s), against its context axis
        std::map<std::pair<std::string, std::string>, std::vector<const timed_row*>> by_unit;
        for (const auto& r : c.throughput)
            by_unit[{r.unit, r.context_axis}].push_back(&r);
        for (const auto& [unit_axis, rows] : by_unit) {
            const auto& [unit, axis] = unit_axis;
            text_table t(fmt::format("throughput: {} per {}; speed-up = B/A of {} (> 1: B faster), "
                                     "95 % bootstrap CI from the per-step samples",
                                     unit, axis.empty() ? "job" : axis, unit),
                         with(ids.columns(), {{axis.empty() ? "context" : axis, align::right},
                                              {"A [" + unit + "]", align::right},
                                              {"B [" + unit + "]", align::right},
                                              {"speed-up", align::right},
                                              {"95% CI", align::right},
                                              {"p (U test)", align::right},
                                              {"verdict"},
                                              {"note"}}));
            for (const auto* r : rows)
                t.add_row(with(ids.cells(r->id),
                               {r->ctx, fmt_num(r->a_value, 4), fmt_num(r->b_value, 4),
                                speedup_cell(r->ratio.ratio), ci_cell(r->ratio), p_cell(r->u),
                                std::string(to_string(r->decision)), r->note}));
            emit(t, out, format);
        }
        print_geomeans(c, ledger::throughput, out, format);
    } else {
        print_empty_ledger(c, ledger::throughput, out, format);
    }
    if (!c.op_time.empty()) {
        text_table t("op_time: microseconds per call (medians); speed-up = A/B of time (> 1: B "
                     "faster), 95 % bootstrap CI; time change of B; two-sided Mann-Whitney U "
                     "p-value",
                     with(ids.columns(), {{"mode"},
                                          {"A [µs]", align::right},
                                          {"B [µs]", align::right},
                                          {"speed-up", align::right},
                                          {"95% CI", align::right},
                                          {"time", align::right},
                                          {"p (U test)", align::right},
                                          {"n A/B", align::right},
                                          {"verdict"},
                                          {"note"}}));
        for (const auto& r : c.op_time)
            t.add_row(
                with(ids.cells(r.id),
                     {r.mode, fmt_num(r.a_value), fmt_num(r.b_value),
                      speedup_cell(speedup_of(r.ratio.ratio, ledger::op_time)),
                      ci_cell(as_speedup(r.ratio, ledger::op_time)), percent_change(r.ratio.ratio),
                      p_cell(r.u), fmt::format("{}/{}", r.n_a, r.n_b),
                      std::string(to_string(r.decision)), r.note}));
        emit(t, out, format);
        print_geomeans(c, ledger::op_time, out, format);
    } else {
        print_empty_ledger(c, ledger::op_time, out, format);
    }
    if (!c.correctness.empty()) {
        text_table t("correctness: against the float64 CPU reference; verdict A -> B (PASS->FAIL "
                     "is a regression); relative L2, max ULP in the output dtype, PSNR in dB",
                     with(ids.columns(), {{"verdict A->B"},
                                          {"rel L2 A", align::right},
                                          {"rel L2 B", align::right},
                                          {"max ULP A", align::right},
                                          {"max ULP B", align::right},
                                          {"PSNR A [dB]", align::right},
                                          {"PSNR B [dB]", align::right},
                                          {"NaN/Inf A", align::right},
                                          {"NaN/Inf B", align::right}}));
        for (const auto& r : c.correctness)
            t.add_row(with(ids.cells(r.id),
                           {r.transition, num(r.metrics_a, "rel_l2"), num(r.metrics_b, "rel_l2"),
                            count_num(r.metrics_a, "max_ulp"), count_num(r.metrics_b, "max_ulp"),
                            psnr(r.metrics_a), psnr(r.metrics_b), nonfinite(r.metrics_a),
                            nonfinite(r.metrics_b)}));
        emit(t, out, format);
    } else {
        print_empty_ledger(c, ledger::correctness, out, format);
    }
    if (!c.memory.empty()) {
        text_table t("memory: peaks in GiB per level (driver/process, allocator reserved, "
                     "allocator allocated, outside = driver - reserved); delta = B - A",
                     with(ids.columns(), {{"level"},
                                          {"A [GiB]", align::right},
                                          {"B [GiB]", align::right},
                                          {"Δ B-A [GiB]", align::right},
                                          {"B/A", align::right},
                                          {"note"}}));
        for (const auto& r : c.memory)
            for (const auto& l : r.levels) {
                const auto d = l.delta_bytes();
                std::string ratio = "-";
                if (l.a_bytes && l.b_bytes && *l.a_bytes > 0)
                    ratio = fmt_num(*l.b_bytes / *l.a_bytes, 4);
                std::string note;
                if (!l.why_a.empty())
                    note += "A unavailable: " + l.why_a;
                if (!l.why_b.empty())
                    note += (note.empty() ? "" : "; ") + std::string("B unavailable: ") + l.why_b;
                t.add_row(with(ids.cells(r.id), {l.level, gib(l.a_bytes), gib(l.b_bytes),
                                                 d ? fmt_gib(*d) : "n/a", ratio, note}));
            }
        emit(t, out, format);
    } else {
        print_empty_ledger(c, ledger::memory, out, format);
    }
    if (!c.not_compared.empty()) {
        text_table t("not compared: skipped or failed in A or B (never counted as 0)",
                     with(ids.columns(), {{"ledger"}, {"A"}, {"B"}, {"reason"}}));
        for (const auto& r : c.not_compared) {
            std::string reason;
            if (!r.reason_a.empty())
                reason += "A: " + r.reason_a;
            if (!r.reason_b.empty())
                reason += (reason.empty() ? "" : "; ") + std::string("B: ") + r.reason_b;
            t.add_row(with(ids.cells(r.id),
                           {std::string(to_string(r.id.which)), std::string(to_string(r.a)),
                            std::string(to_string(r.b)), reason}));
        }
        emit(t, out, format);
    }
    if (!c.unpaired.empty()) {
        text_table t("unpaired: records with no counterpart, not compared", {{"only in"},
                                                                             {"ledger"},
                                                                             {"workload"},
                                                                             {"variant"},
                                                                             {"device"},
                                                                             {"dtype"},
                                                                             {"params"},
                                                                             {"status"},
                                                                             {"why"}});
        for (const auto& u : c.unpaired)
            t.add_row({std::string(1, u.side), std::string(to_string(u.which)), u.job.workload,
                       u.job.variant, u.job.device, u.job.dtype, u.job.params_text(),
                       std::string(to_string(u.status)), u.why});
        emit(t, out, format);
    }
    if (c.op_time.empty() && c.throughput.empty() && c.correctness.empty() && c.memory.empty())
        line(out, format, "no pair of measured records: nothing to compare");

    heading(out, format, "summary and legend:");
    auto counts = [&](ledger l) {
        const auto n = l == ledger::op_time ? c.op_time.size() : c.throughput.size();
        return fmt::format("{} FASTER, {} SLOWER, {} SAME, {} UNCLEAR of {}",
                           c.count(l, verdict::faster), c.count(l, verdict::slower),
                           c.count(l, verdict::same), c.count(l, verdict::unclear), n);
    };
    std::size_t regressions = 0;
    for (const auto& r : c.correctness)
        regressions += r.regression() ? 1 : 0;
    line(out, format,
         "throughput: " + (c.throughput.empty() ? "no pair" : counts(ledger::throughput)));
    line(out, format, "op_time: " + (c.op_time.empty() ? "no pair" : counts(ledger::op_time)));
    line(out, format,
         c.correctness.empty()
             ? std::string("correctness: no pair")
             : fmt::format("correctness: {} PASS->FAIL of {}", regressions, c.correctness.size()));
    line(out, format,
         c.memory.empty()
             ? std::string("memory: no pair")
             : fmt::format("memory: {} pair(s), deltas per level above", c.memory.size()));
    line(out, format, verdict_rule(c.options.threshold));
    line(out, format,
         fmt::format("every speed-up is of B over the one baseline {}, > 1 when B is faster "
                     "(A/B of time, B/A of a throughput's rate; the CSV and JSON keep the ratio "
                     "B/A); ratios "
                     "from different baselines are never multiplied or chained",
                     c.baseline_text()));
    line(out, format,
         "p (U test): two-sided Mann-Whitney U, exact without ties when both samples "
         "have fewer than 50 values, else the normal approximation with tie and "
         "continuity corrections");
}

void write_comparison_csv(const comparison& c, std::ostream& out) {
    const std::vector<std::string> header{
        "ledger",    "workload", "variant_a", "variant_b", "device_a",       "device_b",
        "dtype_a",   "dtype_b",  "params",    "ctx",       "level",          "quantity",
        "unit",      "a",        "b",         "delta",     "ratio_b_over_a", "ci95_low",
        "ci95_high", "p_value",  "p_method",  "verdict",   "baseline",       "note"};
    auto write = [&](const std::vector<std::string>& row) {
        for (std::size_t i = 0; i < row.size(); ++i)
            out << (i ? "," : "") << store::csv_escape(row[i]);
        out << '\n';
    };
    write(header);
    const auto baseline = c.baseline_text();
    auto base = [&](const pair_id& id) {
        return std::vector<std::string>{std::string(to_string(id.which)),
                                        id.a.workload,
                                        id.a.variant,
                                        id.b.variant,
                                        id.a.device,
                                        id.b.device,
                                        id.a.dtype,
                                        id.b.dtype,
                                        id.b.params.dump()};
    };
    auto g = [](double v) { return std::isfinite(v) ? fmt::format("{:.9g}", v) : std::string(); };
    for (const auto* rows : {&c.throughput, &c.op_time})
        for (const auto& r : *rows)
            write(with(base(r.id), {r.ctx, "",
                                    r.id.which == ledger::op_time ? "median_us_per_call"
                                    : r.unit == "tokens/s"        ? "tokens_per_s"
                                                                  : "rate",
                                    r.unit == "µs" ? "us" : r.unit, g(r.a_value), g(r.b_value), "",
                                    g(r.ratio.ratio), r.ratio.has_ci ? g(r.ratio.ci95.low) : "",
                                    r.ratio.has_ci ? g(r.ratio.ci95.high) : "",
                                    r.u ? g(r.u->p_two_sided) : "", r.u ? r.u->method : "",
                                    std::string(to_string(r.decision)), baseline, r.note}));
    for (const auto& r : c.correctness) {
        write(with(base(r.id), {"", "", "verdict", "", r.verdict_a, r.verdict_b, "", "", "", "", "",
                                "", r.transition, baseline, ""}));
        for (const auto& metric : k_correctness_metrics) {
            const char* m = metric.key;
            auto v = [&](const json& j) {
                return j.is_object() && j.contains(m) && j[m].is_number() ? g(j[m].get<double>())
                                                                          : std::string();
            };
            write(with(base(r.id), {"", "", m, metric.unit, v(r.metrics_a), v(r.metrics_b), "", "",
                                    "", "", "", "", "", baseline, ""}));
        }
    }
    for (const auto& r : c.memory)
        for (const auto& l : r.levels) {
            auto o = [&](const std::optional<double>& v) { return v ? g(*v) : std::string(); };
            const auto d = l.delta_bytes();
            std::string ratio;
            if (l.a_bytes && l.b_bytes && *l.a_bytes > 0)
                ratio = g(*l.b_bytes / *l.a_bytes);
            std::string note;
            if (!l.why_a.empty())
                note += "A unavailable: " + l.why_a;
            if (!l.why_b.empty())
                note += (note.empty() ? "" : "; ") + std::string("B unavailable: ") + l.why_b;
            write(with(base(r.id), {"", l.level, "peak_bytes", "bytes", o(l.a_bytes), o(l.b_bytes),
                                    o(d), ratio, "", "", "", "", "", baseline, note}));
        }
    for (const auto& r : c.not_compared)
        write(with(base(r.id), {"", "", "status", "", std::string(to_string(r.a)),
                                std::string(to_string(r.b)), "", "", "", "", "", "", "not compared",
                                baseline, "A: " + r.reason_a + "; B: " + r.reason_b}));
    for (const auto& u : c.unpaired) {
        const bool a = u.side == 'A';
        write({std::string(to_string(u.which)),
               u.job.workload,
               a ? u.job.variant : "",
               a ? "" : u.job.variant,
               a ? u.job.device : "",
               a ? "" : u.job.device,
               a ? u.job.dtype : "",
               a ? "" : u.job.dtype,
               u.job.params.dump(),
               "",
               "",
               "unpaired",
               "",
               a ? std::string(to_string(u.status)) : "",
               a ? "" : std::string(to_string(u.status)),
               "",
               "",
               "",
               "",
               "",
               "",
               "unpaired",
               baseline,
               u.why});
    }
    for (const auto& gm : c.geomeans)
        write({std::string(to_string(gm.which)),
               gm.workload,
               "",
               gm.variant,
               "",
               "",
               "",
               "",
               "",
               "",
               "",
               fmt::format("geomean_ratio_over_{}_pairs", gm.n),
               "",
               "",
               "",
               "",
               g(gm.value),
               "",
               "",
               "",
               "",
               "",
               baseline,
               "geometric mean over pairs sharing this one baseline; never chain with another"});
}

} // namespace fourfold::report
