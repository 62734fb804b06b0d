#include "fourfold/report/ledger_tables.hpp"

#include "fourfold/core/figures.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/report/text_table.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <set>

namespace fourfold::report {
namespace {

std::string num_at(const json& f, const char* pointer, int digits = 3) {
    const json::json_pointer p{pointer};
    if (!f.contains(p) || !f.at(p).is_number())
        return "-";
    return fmt_num(f.at(p).get<double>(), digits);
}

std::string int_at(const json& f, const char* pointer) {
    const json::json_pointer p{pointer};
    if (!f.contains(p) || !f.at(p).is_number())
        return "-";
    return fmt::format("{:.0f}", f.at(p).get<double>());
}

// "process RSS (VmRSS sampled; ...)" -> "process RSS": the table shows the level's name only.
std::string short_level(const std::string& text) {
    const auto paren = text.find(" (");
    return paren == std::string::npos ? text : text.substr(0, paren);
}

std::string text_at(const json& f, const char* pointer) {
    const json::json_pointer p{pointer};
    if (!f.contains(p) || f.at(p).is_null())
        return "-";
    const auto& v = f.at(p);
    return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string gib_at(const json& f, const char* key) {
    if (!f.contains(key) || !f.at(key).is_number())
        return "n/a";
    return fmt_gib(f.at(key).get<double>());
}

// A parameter value as a table cell: a long one (a model's directory) keeps its end, where
// the name is; the full value stays in the store and the JSON.
constexpr std::size_t k_value_width = 28;

std::string cell_value(const json& v) {
    auto text = v.is_string() ? v.get<std::string>() : v.dump();
    if (display_width(text) <= k_value_width)
        return text;
    std::size_t cut = text.size();
    for (std::size_t seen = 0; cut > 0 && seen < k_value_width - 1;) {
        --cut;
        if ((static_cast<unsigned char>(text[cut]) & 0xc0) != 0x80)
            ++seen;
    }
    return "…" + text.substr(cut);
}

// What one table shows of its rows' parameters: the ones that vary between rows, in the params
// column; those every row shares are said once, in a note under the title.
struct params_view {
    std::set<std::string> varying;
    std::string common;
    bool column() const { return !varying.empty(); }
};

params_view view_of(const std::vector<const record*>& rows) {
    params_view v;
    std::map<std::string, std::set<std::string>> values;
    for (const auto* r : rows)
        for (auto it = r->job.params.begin(); it != r->job.params.end(); ++it)
            values[it.key()].insert(it.value().dump());
    std::vector<std::string> common;
    for (const auto& [key, seen] : values) {
        bool everywhere = seen.size() == 1;
        for (const auto* r : rows)
            everywhere = everywhere && r->job.params.contains(key);
        if (everywhere)
            common.push_back(fmt::format("{}={}", key, cell_value(rows.front()->job.params[key])));
        else
            v.varying.insert(key);
    }
    v.common = join(common, " ");
    return v;
}

std::vector<std::string> identity(const record& r, const params_view& view) {
    std::vector<std::string> cells{r.job.workload, r.job.variant, r.job.dtype};
    if (!view.column())
        return cells;
    std::vector<std::string> shown;
    for (auto it = r.job.params.begin(); it != r.job.params.end(); ++it)
        if (view.varying.count(it.key()))
            shown.push_back(fmt::format("{}={}", it.key(), cell_value(it.value())));
    cells.push_back(join(shown, " "));
    return cells;
}

std::vector<column> identity_columns(const params_view& view) {
    std::vector<column> c{{"workload"}, {"variant"}, {"dtype"}};
    if (view.column())
        c.push_back({"params"});
    return c;
}

// "random" or "checkpoint" for a record whose facts say where its weights came from (decode).
std::string weights_of(const record& r) {
    const auto w = r.figures.value("/facts/weights"_json_pointer, std::string());
    if (w.empty())
        return {};
    return starts_with(w, "random") ? "random" : "checkpoint";
}

void emit(const text_table& t, std::ostream& out, table_format format) {
    if (t.empty())
        return;
    if (format == table_format::markdown)
        t.print_markdown(out);
    else if (format == table_format::html)
        t.print_html(out);
    else {
        t.print(out);
        out << '\n';
    }
}

} // namespace

std::string fmt_num(double v, int digits) {
    if (!std::isfinite(v))
        return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
    if (v == 0)
        return "0";
    const double a = std::fabs(v);
    if (a >= 1e6 || a < 1e-3)
        return fmt::format("{:.{}e}", v, digits - 1);
    const int decimals = std::max(0, digits - 1 - static_cast<int>(std::floor(std::log10(a))));
    return fmt::format("{:.{}f}", v, std::min(decimals, 6));
}

std::string fmt_gib(double bytes) {
    // fixed decimals keep a column of GiB aligned and readable; what rounds to nothing says so
    const double gib = bytes / double(1ll << 30);
    if (!std::isfinite(gib))
        return fmt_num(gib);
    if (gib != 0 && std::fabs(gib) < 0.0005)
        return gib > 0 ? "<0.001" : ">-0.001";
    return fmt::format("{:.3f}", gib);
}

namespace {

std::string mib_at(const json& f, const char* pointer) {
    const json::json_pointer p{pointer};
    if (!f.contains(p) || !f.at(p).is_number())
        return "-";
    return fmt_num(f.at(p).get<double>() / double(1 << 20), 4);
}

bool any_has(const std::vector<const record*>& records, ledger l, const char* pointer) {
    const json::json_pointer p{pointer};
    for (const auto* r : records)
        if (r->which == l && r->status == record_status::ok && r->figures.contains(p))
            return true;
    return false;
}

bool any_host_sync(const std::vector<const record*>& records) {
    for (const auto* r : records)
        if (r->which == ledger::op_time && r->status == record_status::ok &&
            r->figures.value("host_sync", false))
            return true;
    return false;
}

const char* k_random_weights_note =
    "weights: random - seeded random weights of the model's shapes, no checkpoint: the times "
    "and the memory are those of the shapes, the outputs mean nothing";

// A table of one ledger's ok records: the identity columns, the weights column where a record
// says where its weights came from, then the ledger's own columns.
class ledger_table {
  public:
    ledger_table(std::string title, const std::vector<const record*>& rows, std::vector<column> own)
        : m_view(view_of(rows)) {
        for (const auto* r : rows) {
            const auto w = weights_of(*r);
            m_weights = m_weights || !w.empty();
            m_random = m_random || w == "random";
        }
        auto cols = identity_columns(m_view);
        if (m_weights)
            cols.push_back({"weights"});
        cols.insert(cols.end(), own.begin(), own.end());
        m_table = std::make_unique<text_table>(std::move(title), std::move(cols));
        if (!m_view.common.empty())
            m_table->add_note("every row: " + m_view.common);
        if (m_random)
            m_table->add_note(k_random_weights_note);
    }
    void add(const record& r, std::vector<std::string> own) {
        auto cells = identity(r, m_view);
        if (m_weights)
            cells.push_back(weights_of(r));
        cells.insert(cells.end(), own.begin(), own.end());
        m_table->add_row(std::move(cells));
    }
    const text_table& table() const { return *m_table; }

  private:
    params_view m_view;
    bool m_weights = false, m_random = false;
    std::unique_ptr<text_table> m_table;
};

std::vector<const record*> ok_of(const std::vector<const record*>& records, ledger l) {
    std::vector<const record*> out;
    for (const auto* r : records)
        if (r->which == l && r->status == record_status::ok)
            out.push_back(r);
    return out;
}

// One table per ledger over `records`; `scope` (a workload name, or empty) heads each title.
void print_ok_tables(const std::vector<const record*>& records, const std::string& scope,
                     std::ostream& out, table_format format) {
    auto titled = [&](const std::string& title) {
        return scope.empty() ? title : scope + " - " + title;
    };
    const bool layer = any_has(records, ledger::op_time, "/facts/layer");
    const bool host_sync = any_host_sync(records);
    const bool weights = any_has(records, ledger::memory, "/facts/weight_storage_bytes");
    const bool intermediates = any_has(records, ledger::memory, "/facts/intermediate_bytes");

    // Throughput in the unit its workload declares (tokens/s for a decoder, frames/s for a VAE),
    // against the axis that names its context: one table per unit.
    const auto thr_all = ok_of(records, ledger::throughput);
    std::map<std::pair<std::string, std::string>, std::vector<const record*>> thr_by_unit;
    for (const auto* r : thr_all) {
        const auto t = throughput_figures::from(r->figures);
        thr_by_unit[{t.unit, t.context_axis}].push_back(r);
    }
    std::vector<std::unique_ptr<ledger_table>> thr_tables;
    for (const auto& [unit_axis, rows] : thr_by_unit) {
        const auto& [unit, axis] = unit_axis;
        const auto step = throughput_figures::from(rows.front()->figures).step_unit;
        thr_tables.push_back(std::make_unique<ledger_table>(
            titled(fmt::format("throughput: {} (1000 / median {}); {} with its 95% bootstrap CI "
                               "and n; prefill in ms",
                               unit, step, step)),
            rows,
            std::vector<column>{{axis, align::right},
                                {"mode"},
                                {unit, align::right},
                                {step + " (median)", align::right},
                                {"95% CI [ms]", align::right},
                                {"n", align::right},
                                {"prefill [ms]", align::right},
                                {"bw limit [" + unit + "]", align::right},
                                {"stop"}}));
        for (const auto* r : rows) {
            const auto t = throughput_figures::from(r->figures);
            const auto& st = t.step_stats;
            thr_tables.back()->add(
                *r,
                {t.context.is_null() ? "-" : cell_value(t.context), t.mode.empty() ? "-" : t.mode,
                 fmt_num(t.rate, 4), st ? fmt_num(st->median, 3) : "-",
                 st ? fmt::format("{} - {}", fmt_num(st->ci95_low, 3), fmt_num(st->ci95_high, 3))
                    : "-",
                 st ? std::to_string(st->n) : "-", t.prefill_ms ? fmt_num(*t.prefill_ms, 3) : "-",
                 t.bandwidth_limit ? fmt_num(*t.bandwidth_limit, 4) : "-",
                 t.stop.empty() ? "-" : t.stop});
        }
    }

    std::vector<column> op_cols;
    if (layer)
        op_cols.push_back({"layer"});
    op_cols.insert(op_cols.end(), {{"mode"},
                                   {"cache"},
                                   {"median [µs]", align::right},
                                   {"95% CI [µs]", align::right},
                                   {"IQR [µs]", align::right},
                                   {"n", align::right},
                                   {"GB/s", align::right},
                                   {"% of bw", align::right},
                                   {"stop"}});
    if (host_sync)
        op_cols.push_back({"host sync"});
    const auto op_rows = ok_of(records, ledger::op_time);
    ledger_table op(titled("op_time: microseconds per call (median, 95% bootstrap CI); achieved "
                           "GB/s and % of the run's measured copy bandwidth"),
                    op_rows, op_cols);
    for (const auto* r : op_rows) {
        const auto o = op_time_figures::from(r->figures);
        std::vector<std::string> row;
        if (layer)
            row.push_back(text_at(r->figures, "/facts/layer"));
        const auto& st = o.stats;
        row.insert(
            row.end(),
            {o.mode.empty() ? "-" : o.mode, o.cache.empty() ? "-" : o.cache,
             st ? fmt_num(st->median, 3) : "-",
             st ? fmt::format("{} - {}", fmt_num(st->ci95_low, 3), fmt_num(st->ci95_high, 3)) : "-",
             st ? fmt_num(st->iqr, 3) : "-", st ? std::to_string(st->n) : "-",
             fmt_num(o.gb_per_s, 3), fmt_num(o.pct_of_bandwidth, 3),
             o.stop.empty() ? "-" : o.stop});
        if (host_sync)
            row.push_back(o.host_sync ? "yes" : "no");
        op.add(*r, row);
    }

    const auto cor_rows = ok_of(records, ledger::correctness);
    ledger_table cor(titled("correctness: against a float64 CPU reference (relative L2, max abs, "
                            "ULPs in the output dtype, PSNR in dB)"),
                     cor_rows,
                     {{"verdict"},
                      {"rel L2", align::right},
                      {"max abs", align::right},
                      {"max ULP", align::right},
                      {"p99 ULP", align::right},
                      {"PSNR [dB]", align::right},
                      {"cosine", align::right},
                      {"NaN/Inf", align::right},
                      {"tol rel L2", align::right}});
    for (const auto* r : cor_rows) {
        const auto& f = r->figures;
        const bool exact = f.value("/metrics/psnr_exact"_json_pointer, false);
        cor.add(*r,
                {text_at(f, "/verdict"), num_at(f, "/metrics/rel_l2"),
                 num_at(f, "/metrics/max_abs"), int_at(f, "/metrics/max_ulp"),
                 int_at(f, "/metrics/p99_ulp"), exact ? "exact" : num_at(f, "/metrics/psnr_db", 4),
                 num_at(f, "/metrics/cosine", 7),
                 fmt::format("{}/{}", text_at(f, "/metrics/nan"), text_at(f, "/metrics/inf")),
                 num_at(f, "/tolerance/rel_l2")});
    }

    std::vector<column> mem_cols{
        {"driver [GiB]", align::right},    {"reserved [GiB]", align::right},
        {"allocated [GiB]", align::right}, {"outside [GiB]", align::right},
        {"Δdriver [GiB]", align::right},   {"sampler [Hz]", align::right}};
    if (weights)
        mem_cols.push_back({"weights [MiB]", align::right});
    if (intermediates)
        mem_cols.push_back({"intermediates [MiB]", align::right});
    const auto mem_rows = ok_of(records, ledger::memory);
    // the variant's first call, watched apart (one-time work: cudnn.benchmark's search, lazy
    // loads), where the records have it
    const bool first_call = std::any_of(mem_rows.begin(), mem_rows.end(), [](const record* r) {
        return r->figures.contains("first_call") && r->figures["first_call"].is_object();
    });
    if (first_call) {
        mem_cols.push_back({"1st call driver [GiB]", align::right});
        mem_cols.push_back({"1st call allocated [GiB]", align::right});
    }
    mem_cols.push_back({"driver level"});
    ledger_table mem(titled(first_call
                                ? "memory: peaks in GiB (driver/process level, allocator reserved, "
                                  "allocator allocated, outside allocator = driver - reserved; "
                                  "1st call: the variant's first call, watched on its own)"
                                : "memory: peaks in GiB (driver/process level, allocator reserved, "
                                  "allocator allocated, outside allocator = driver - reserved)"),
                     mem_rows, mem_cols);
    for (const auto* r : mem_rows) {
        const auto& f = r->figures;
        const json::json_pointer dd{"/delta_peak_bytes/driver"};
        std::vector<std::string> row{
            gib_at(f, "driver_peak_bytes"),
            gib_at(f, "reserved_peak_bytes"),
            gib_at(f, "allocated_peak_bytes"),
            gib_at(f, "outside_allocator_bytes"),
            f.contains(dd) && f.at(dd).is_number() ? fmt_gib(f.at(dd).get<double>()) : "n/a",
            num_at(f, "/sampler/achieved_hz", 4)};
        if (weights)
            row.push_back(mib_at(f, "/facts/weight_storage_bytes"));
        if (intermediates)
            row.push_back(mib_at(f, "/facts/intermediate_bytes"));
        if (first_call) {
            const bool has = f.contains("first_call") && f["first_call"].is_object();
            row.push_back(has ? gib_at(f["first_call"], "driver_peak_bytes") : "n/a");
            row.push_back(has ? gib_at(f["first_call"], "allocated_peak_bytes") : "n/a");
        }
        row.push_back(short_level(text_at(f, "/driver_level")));
        mem.add(*r, row);
    }
    for (const auto& t : thr_tables)
        emit(t->table(), out, format);
    emit(op.table(), out, format);
    emit(cor.table(), out, format);
    emit(mem.table(), out, format);
}

// Rows in one order in every table of a run: by job group (workload, parameters, dtype, device)
// as the records first name it, then by variant in the order the records first name it.
std::vector<const record*> in_row_order(const std::vector<record>& records) {
    std::map<std::string, std::size_t> group_at, variant_at;
    auto group_of = [](const record& r) {
        return r.job.workload + '|' + r.job.case_key() + '|' + r.job.dtype + '|' + r.job.device;
    };
    for (const auto& r : records) {
        group_at.emplace(group_of(r), group_at.size());
        variant_at.emplace(r.job.variant, variant_at.size());
    }
    std::vector<const record*> out;
    out.reserve(records.size());
    for (const auto& r : records)
        out.push_back(&r);
    std::stable_sort(out.begin(), out.end(), [&](const record* a, const record* b) {
        return std::pair(group_at.at(group_of(*a)), variant_at.at(a->job.variant)) <
               std::pair(group_at.at(group_of(*b)), variant_at.at(b->job.variant));
    });
    return out;
}

} // namespace

void print_ledger_tables(const std::vector<record>& records, std::ostream& out, table_format format,
                         table_layout layout) {
    const auto ordered = in_row_order(records);
    std::vector<std::string> workloads; // in order of first appearance
    for (const auto* r : ordered)
        if (std::find(workloads.begin(), workloads.end(), r->job.workload) == workloads.end())
            workloads.push_back(r->job.workload);
    if (layout == table_layout::automatic)
        layout = workloads.size() > 1 ? table_layout::per_workload : table_layout::per_ledger;
    if (layout == table_layout::per_workload) {
        for (const auto& w : workloads) {
            std::vector<const record*> subset;
            for (const auto* r : ordered)
                if (r->job.workload == w)
                    subset.push_back(r);
            print_ok_tables(subset, w, out, format);
        }
    } else {
        print_ok_tables(ordered, "", out, format);
    }
    std::vector<const record*> other_rows;
    for (const auto* r : ordered)
        if (r->status != record_status::ok)
            other_rows.push_back(r);
    const auto view = view_of(other_rows);
    auto cols = identity_columns(view);
    cols.insert(cols.end(), {{"ledger"}, {"status"}, {"reason"}});
    text_table other("not measured: skipped or failed records, with the reason", cols);
    if (!view.common.empty())
        other.add_note("every row: " + view.common);
    for (const auto* r : other_rows) {
        auto row = identity(*r, view);
        row.insert(row.end(), {std::string(to_string(r->which)), std::string(to_string(r->status)),
                               r->reason});
        other.add_row(row);
    }
    emit(other, out, format);
}

} // namespace fourfold::report
