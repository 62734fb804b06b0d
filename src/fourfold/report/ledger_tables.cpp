#include "fourfold/report/ledger_tables.hpp"

#include "fourfold/report/text_table.hpp"

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

void print_ledger_tables(const std::vector<record>& records, std::ostream& out, table_format format) {
    auto cols = [](std::vector<column> extra) {
        auto c = identity_columns();
        c.insert(c.end(), extra.begin(), extra.end());
        return c;
    };
    text_table op("op_time: microseconds per call (median, 95% bootstrap CI); achieved GB/s and % "
                  "of the run's measured copy bandwidth",
                  cols({{"mode"},
                        {"cache"},
                        {"median [µs]", align::right},
                        {"95% CI [µs]", align::right},
                        {"IQR [µs]", align::right},
                        {"n", align::right},
                        {"GB/s", align::right},
                        {"% of bw", align::right},
                        {"stop"}}));
    text_table cor("correctness: against a float64 CPU reference (relative L2, max abs, ULPs in "
                   "the output dtype, PSNR in dB)",
                   cols({{"verdict"},
                         {"rel L2", align::right},
                         {"max abs", align::right},
                         {"max ULP", align::right},
                         {"p99 ULP", align::right},
                         {"PSNR [dB]", align::right},
                         {"cosine", align::right},
                         {"NaN/Inf", align::right},
                         {"tol rel L2", align::right}}));
    text_table mem("memory: peaks in GiB (driver/process level, allocator reserved, allocator "
                   "allocated, outside allocator = driver - reserved)",
                   cols({{"driver [GiB]", align::right},
                         {"reserved [GiB]", align::right},
                         {"allocated [GiB]", align::right},
                         {"outside [GiB]", align::right},
                         {"Δdriver [GiB]", align::right},
                         {"sampler [Hz]", align::right},
                         {"driver level"}}));
    text_table thr("throughput: decode tokens per second; ms per token; prefill in ms",
                   cols({{"ctx", align::right},
                         {"mode"},
                         {"tokens/s", align::right},
                         {"ms/token (median)", align::right},
                         {"prefill [ms]", align::right},
                         {"bw limit [tokens/s]", align::right}}));
    text_table other("not measured: skipped or failed records, with the reason",
                     cols({{"ledger"}, {"status"}, {"reason"}}));
    for (const auto& r : records) {
        auto row = identity(r);
        if (r.status != record_status::ok) {
            row.insert(row.end(), {std::string(to_string(r.which)),
                                   std::string(to_string(r.status)), r.reason});
            other.add_row(row);
            continue;
        }
        const auto& f = r.figures;
        switch (r.which) {
        case ledger::op_time: {
            const auto ci = fmt::format("{} - {}", num_at(f, "/stats/ci95_low"),
                                        num_at(f, "/stats/ci95_high"));
            row.insert(row.end(), {text_at(f, "/mode"), text_at(f, "/cache"),
                                   num_at(f, "/stats/median"), ci, num_at(f, "/stats/iqr"),
                                   text_at(f, "/stats/n"), num_at(f, "/gb_per_s"),
                                   num_at(f, "/pct_of_bandwidth"), text_at(f, "/stop")});
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
                                   num_at(f, "/sampler/achieved_hz", 4),
                                   short_level(text_at(f, "/driver_level"))});
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
    emit(other, out, format);
}

} // namespace fourfold::report
