#include "fourfold/report/ledger_tables.hpp"

#include "fourfold/report/text_table.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace fourfold::report {
namespace {

std::string num_at(const json& f, const char* pointer, int digits = 3) {
    const json::json_pointer p{pointer};
    if (!f.contains(p) || !f.at(p).is_number()) return "-";
    return fmt_num(f.at(p).get<double>(), digits);
}

std::string int_at(const json& f, const char* pointer) {
    const json::json_pointer p{pointer};
    if (!f.contains(p) || !f.at(p).is_number()) return "-";
    return fmt::format("{:.0f}", f.at(p).get<double>());
}

// "process RSS (VmRSS sampled; ...)" -> "process RSS": the table shows the level's name only.
std::string short_level(const std::string& text) {
    const auto paren = text.find(" (");
    return paren == std::string::npos ? text : text.substr(0, paren);
}

std::string text_at(const json& f, const char* pointer) {
    const json::json_pointer p{pointer};
    if (!f.contains(p) || f.at(p).is_null()) return "-";
    const auto& v = f.at(p);
    return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string gib_at(const json& f, const char* key) {
    if (!f.contains(key) || !f.at(key).is_number()) return "n/a";
    return fmt_gib(f.at(key).get<double>());
}

std::vector<std::string> identity(const record& r) {
    return {r.job.workload, r.job.variant, r.job.dtype, r.job.params_text()};
}

std::vector<column> identity_columns() {
    return {{"workload"}, {"variant"}, {"dtype"}, {"params"}};
}

void emit(const text_table& t, std::ostream& out, table_format format) {
    if (t.empty()) return;
    if (format == table_format::markdown) t.print_markdown(out);
    else if (format == table_format::html) t.print_html(out);
    else {
        t.print(out);
        out << '\n';
    }
}

} // namespace

std::string fmt_num(double v, int digits) {
    if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
    if (v == 0) return "0";
    const double a = std::fabs(v);
    if (a >= 1e6 || a < 1e-3) return fmt::format("{:.{}e}", v, digits - 1);
    const int decimals = std::max(0, digits - 1 - static_cast<int>(std::floor(std::log10(a))));
    return fmt::format("{:.{}f}", v, std::min(decimals, 6));
}

std::string fmt_gib(double bytes) { return fmt_num(bytes / double(1ll << 30), 4); }

namespace {

std::string mib_at(const json& f, const char* pointer) {
    const json::json_pointer p{pointer};
    if (!f.contains(p) || !f.at(p).is_number()) return "-";
    return fmt_num(f.at(p).get<double>() / double(1 << 20), 4);
}

bool any_has(const std::vector<const record*>& records, ledger l, const char* pointer) {
    const json::json_pointer p{pointer};
    for (const auto* r : records)
        if (r->which == l && r->status == record_status::ok && r->figures.contains(p)) return true;
    return false;
}

bool any_host_sync(const std::vector<const record*>& records) {
    for (const auto* r : records)
        if (r->which == ledger::op_time && r->status == record_status::ok &&
            r->figures.value("host_sync", false))
            return true;
    return false;
}

// One table per ledger over `records`; `scope` (a workload name, or empty) heads each title.
void print_ok_tables(const std::vector<const record*>& records, const std::string& scope,
                     std::ostream& out, table_format format) {
    auto cols = [](std::vector<column> extra) {
        auto c = identity_columns();
        c.insert(c.end(), extra.begin(), extra.end());
        return c;
    };
    auto titled = [&](std::string title) { return scope.empty() ? title : scope + " - " + title; };
    const bool layer = any_has(records, ledger::op_time, "/facts/layer");
    const bool host_sync = any_host_sync(records);
    const bool weights = any_has(records, ledger::memory, "/facts/weight_storage_bytes");
    const bool intermediates = any_has(records, ledger::memory, "/facts/intermediate_bytes");

    std::vector<column> op_cols;
    if (layer) op_cols.push_back({"layer"});
    op_cols.insert(op_cols.end(), {{"mode"},
                                   {"cache"},
                                   {"median [µs]", align::right},
                                   {"95% CI [µs]", align::right},
                                   {"IQR [µs]", align::right},
                                   {"n", align::right},
                                   {"GB/s", align::right},
                                   {"% of bw", align::right},
                                   {"stop"}});
    if (host_sync) op_cols.push_back({"host sync"});
    text_table op(titled("op_time: microseconds per call (median, 95% bootstrap CI); achieved "
                         "GB/s and % of the run's measured copy bandwidth"),
                  cols(op_cols));
    text_table cor(titled("correctness: against a float64 CPU reference (relative L2, max abs, "
                          "ULPs in the output dtype, PSNR in dB)"),
                   cols({{"verdict"},
                         {"rel L2", align::right},
                         {"max abs", align::right},
                         {"max ULP", align::right},
                         {"p99 ULP", align::right},
                         {"PSNR [dB]", align::right},
                         {"cosine", align::right},
                         {"NaN/Inf", align::right},
                         {"tol rel L2", align::right}}));
    std::vector<column> mem_cols{{"driver [GiB]", align::right},
                                 {"reserved [GiB]", align::right},
                                 {"allocated [GiB]", align::right},
                                 {"outside [GiB]", align::right},
                                 {"Δdriver [GiB]", align::right},
                                 {"sampler [Hz]", align::right}};
    if (weights) mem_cols.push_back({"weights [MiB]", align::right});
    if (intermediates) mem_cols.push_back({"intermediates [MiB]", align::right});
    mem_cols.push_back({"driver level"});
    text_table mem(titled("memory: peaks in GiB (driver/process level, allocator reserved, "
                          "allocator allocated, outside allocator = driver - reserved)"),
                   cols(mem_cols));
    text_table thr(titled("throughput: decode tokens per second; ms per token; prefill in ms"),
                   cols({{"ctx", align::right},
                         {"mode"},
                         {"tokens/s", align::right},
                         {"ms/token (median)", align::right},
                         {"prefill [ms]", align::right},
                         {"bw limit [tokens/s]", align::right}}));
    for (const auto* rp : records) {
        const auto& r = *rp;
        if (r.status != record_status::ok) continue;
        auto row = identity(r);
        const auto& f = r.figures;
        switch (r.which) {
        case ledger::op_time: {
            const auto ci = fmt::format("{} - {}", num_at(f, "/stats/ci95_low"),
                                        num_at(f, "/stats/ci95_high"));
            if (layer) row.push_back(text_at(f, "/facts/layer"));
            row.insert(row.end(), {text_at(f, "/mode"), text_at(f, "/cache"),
                                   num_at(f, "/stats/median"), ci, num_at(f, "/stats/iqr"),
                                   text_at(f, "/stats/n"), num_at(f, "/gb_per_s"),
                                   num_at(f, "/pct_of_bandwidth"), text_at(f, "/stop")});
            if (host_sync) row.push_back(f.value("host_sync", false) ? "yes" : "no");
            op.add_row(row);
            break;
        }
        case ledger::correctness: {
            const auto nonfinite = fmt::format("{}/{}", text_at(f, "/metrics/nan"), text_at(f, "/metrics/inf"));
            const bool exact = f.value("/metrics/psnr_exact"_json_pointer, false);
            row.insert(row.end(), {text_at(f, "/verdict"), num_at(f, "/metrics/rel_l2"),
                                   num_at(f, "/metrics/max_abs"), int_at(f, "/metrics/max_ulp"), int_at(f, "/metrics/p99_ulp"),
                                   exact ? "exact" : num_at(f, "/metrics/psnr_db", 4),
                                   num_at(f, "/metrics/cosine", 7), nonfinite,
                                   num_at(f, "/tolerance/rel_l2")});
            cor.add_row(row);
            break;
        }
        case ledger::memory: {
            const json::json_pointer dd{"/delta_peak_bytes/driver"};
            row.insert(row.end(), {gib_at(f, "driver_peak_bytes"), gib_at(f, "reserved_peak_bytes"),
                                   gib_at(f, "allocated_peak_bytes"),
                                   gib_at(f, "outside_allocator_bytes"),
                                   f.contains(dd) && f.at(dd).is_number() ? fmt_gib(f.at(dd).get<double>()) : "n/a",
                                   num_at(f, "/sampler/achieved_hz", 4)});
            if (weights) row.push_back(mib_at(f, "/facts/weight_storage_bytes"));
            if (intermediates) row.push_back(mib_at(f, "/facts/intermediate_bytes"));
            row.push_back(short_level(text_at(f, "/driver_level")));
            mem.add_row(row);
            break;
        }
        case ledger::throughput: {
            row.insert(row.end(), {text_at(f, "/ctx"), text_at(f, "/mode"),
                                   num_at(f, "/tokens_per_s", 4), num_at(f, "/ms_per_token/median"),
                                   num_at(f, "/prefill_ms"), num_at(f, "/bandwidth_limit_tokens_per_s", 4)});
            thr.add_row(row);
            break;
        }
        }
    }
    emit(thr, out, format);
    emit(op, out, format);
    emit(cor, out, format);
    emit(mem, out, format);
}

} // namespace

void print_ledger_tables(const std::vector<record>& records, std::ostream& out, table_format format,
                         table_layout layout) {
    std::vector<std::string> workloads; // in order of first appearance
    for (const auto& r : records)
        if (std::find(workloads.begin(), workloads.end(), r.job.workload) == workloads.end())
            workloads.push_back(r.job.workload);
    if (layout == table_layout::automatic)
        layout = workloads.size() > 1 ? table_layout::per_workload : table_layout::per_ledger;
    if (layout == table_layout::per_workload) {
        for (const auto& w : workloads) {
            std::vector<const record*> subset;
            for (const auto& r : records)
                if (r.job.workload == w) subset.push_back(&r);
            print_ok_tables(subset, w, out, format);
        }
    } else {
        std::vector<const record*> all;
        for (const auto& r : records) all.push_back(&r);
        print_ok_tables(all, "", out, format);
    }
    auto cols = identity_columns();
    cols.insert(cols.end(), {{"ledger"}, {"status"}, {"reason"}});
    text_table other("not measured: skipped or failed records, with the reason", cols);
    for (const auto& r : records) {
        if (r.status == record_status::ok) continue;
        auto row = identity(r);
        row.insert(row.end(), {std::string(to_string(r.which)), std::string(to_string(r.status)),
                               r.reason});
        other.add_row(row);
    }
    emit(other, out, format);
}

} // namespace fourfold::report
