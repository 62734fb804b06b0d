#include "fourfold/compare/comparison.hpp"

#include "fourfold/core/figures.hpp"
#include "fourfold/core/memory_levels.hpp"
#include "fourfold/core/text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>

namespace fourfold::compare {
namespace {

using store::stored_record;

std::string one_line(std::string text) {
    for (auto& c : text)
        if (c == '\n' || c == '\r' || c == '\t')
            c = ' ';
    return text;
}

json job_json(const job_id& j) {
    return json{{"workload", j.workload}, {"variant", j.variant}, {"device", j.device},
                {"dtype", j.dtype},       {"params", j.params},   {"key", j.key()}};
}

json optional_json(const std::optional<double>& v) {
    return v ? json(*v) : json(nullptr);
}

json ratio_json(const ratio_estimate& r) {
    return json{{"value", r.ratio},
                {"ci95_low", r.has_ci ? json(r.ci95.low) : json(nullptr)},
                {"ci95_high", r.has_ci ? json(r.ci95.high) : json(nullptr)},
                {"resamples", r.resamples}};
}

// 512 and 512.0 both print as "512": a context length is a count.
std::string scalar_text(const json& v) {
    if (v.is_string())
        return v.get<std::string>();
    if (v.is_number_float() && std::isfinite(v.get<double>()) &&
        std::floor(v.get<double>()) == v.get<double>())
        return fmt::format("{:.0f}", v.get<double>());
    return v.dump();
}

std::string arrow(const std::string& a, const std::string& b) {
    return a == b ? a : a + " -> " + b;
}

pair_id id_of(const record_pair& p) {
    return {p.a.rec.which, p.a.rec.job, p.b.rec.job, p.by_case, p.job_diffs};
}

std::string timing_text(const stored_record& r) {
    return op_time_figures::from(r.rec.figures).timing_text();
}

// Raw samples in the unit the ledger's statistics use, or empty.
const std::vector<double>& samples_of(const stored_record& r) {
    return r.rec.samples;
}

void append_note(std::string& note, const std::string& more) {
    note += (note.empty() ? "" : "; ") + more;
}

// The relative noise of a record: from its samples, else from its stored statistics.
double noise_of(const stored_record& r) {
    if (r.rec.samples.size() >= 2)
        return relative_noise(r.rec.samples);
    const auto st = r.rec.which == ledger::throughput
                        ? throughput_figures::from(r.rec.figures).step_stats
                        : op_time_figures::from(r.rec.figures).stats;
    return st && st->median > 0 ? st->iqr / k_iqr_per_sigma / st->median : 0;
}

// What both timed ledgers carry about the host beside their figures.
struct host_facts {
    std::optional<fourfold::round_trip_figure> round_trip;
    bool host_sync = false, host_paced = false;
};

host_facts host_of(const stored_record& r) {
    if (r.rec.which == ledger::throughput) {
        const auto t = throughput_figures::from(r.rec.figures);
        return {t.host_round_trip, t.host_sync, t.host_paced};
    }
    const auto o = op_time_figures::from(r.rec.figures);
    return {o.host_round_trip, o.host_sync, false};
}

// The pair's scatter, which the verdict must clear when it exceeds the practical threshold (the
// row's note says so then).
double set_noise(timed_row& row, const record_pair& p, double threshold) {
    row.noise_a = noise_of(p.a);
    row.noise_b = noise_of(p.b);
    const double noise = std::max(row.noise_a, row.noise_b);
    if (noise > threshold)
        append_note(
            row.note,
            fmt::format("samples scatter {:.1f} % (IQR / 1.349 over the median, of {}): a verdict "
                        "needs the whole CI beyond that",
                        100 * noise, row.noise_a >= row.noise_b ? "A" : "B"));
    return noise;
}

struct round_trip {
    double before = 0, after = 0;
    double mean() const { return (before + after) / 2; }
    double drift() const { return before > 0 ? std::abs(after / before - 1) : 0; }
};

std::optional<round_trip> round_trip_of(const stored_record& r) {
    const auto rt = host_of(r).round_trip;
    if (!rt)
        return std::nullopt;
    return round_trip{rt->before_us, rt->after_us};
}

// A time that synchronises with the host, or steps whose every op the host launches (eager
// decode), moves with the host: the band its verdict must clear widens by how far the host round
// trip measured beside A and B moved (between the runs, or within either job), so a slower host
// is not called a slower variant, and a change larger than the host's own drift still is.
void apply_round_trip(timed_row& row, const record_pair& p, double threshold, bool rate) {
    const auto ra = round_trip_of(p.a);
    const auto rb = round_trip_of(p.b);
    if (!ra || !rb)
        return;
    row.round_trip_a = ra->mean();
    row.round_trip_b = rb->mean();
    const auto ha = host_of(p.a), hb = host_of(p.b);
    const bool syncs = ha.host_sync || hb.host_sync;
    if (!syncs && !ha.host_paced && !hb.host_paced)
        return;
    const double between = std::abs(rb->mean() / ra->mean() - 1);
    const double moved = std::max({between, ra->drift(), rb->drift()});
    const double noise = std::max(row.noise_a, row.noise_b);
    if (moved <= std::max(threshold, noise))
        return;
    const auto widened = rate ? rate_verdict(row.ratio, threshold, moved)
                              : time_verdict(row.ratio, threshold, moved);
    append_note(
        row.note,
        fmt::format(
            "host round trip A {:.1f} us, B {:.1f} us (moved {:.1f} %, within a job up "
            "to {:.1f} %): {}, so a verdict needs the whole CI beyond {:.1f} %{}",
            ra->mean(), rb->mean(), 100 * between, 100 * std::max(ra->drift(), rb->drift()),
            syncs ? "this time syncs with the host" : "the host launches every op of these steps",
            100 * moved,
            widened == row.decision ? ""
                                    : fmt::format(" ({} without it)", to_string(row.decision))));
    row.decision = widened;
}

timed_row op_time_row(const record_pair& p, double threshold) {
    timed_row row;
    row.id = id_of(p);
    row.unit = "µs";
    row.mode = arrow(timing_text(p.a), timing_text(p.b));
    const auto& sa = samples_of(p.a);
    const auto& sb = samples_of(p.b);
    if (!sa.empty() && !sb.empty()) {
        row.a_value = measure::median_of(sa);
        row.b_value = measure::median_of(sb);
        row.n_a = static_cast<std::int64_t>(sa.size());
        row.n_b = static_cast<std::int64_t>(sb.size());
        row.ratio = median_ratio(sa, sb);
        row.u = mann_whitney_u(sa, sb);
    } else {
        const auto sa_stats = op_time_figures::from(p.a.rec.figures).stats;
        const auto sb_stats = op_time_figures::from(p.b.rec.figures).stats;
        row.a_value = sa_stats ? sa_stats->median : NAN;
        row.b_value = sb_stats ? sb_stats->median : NAN;
        row.n_a = sa_stats ? sa_stats->n : 0;
        row.n_b = sb_stats ? sb_stats->n : 0;
        row.ratio.ratio = row.b_value / row.a_value;
        row.note = "no raw samples stored: no CI, no U test";
    }
    row.decision = time_verdict(row.ratio, threshold, set_noise(row, p, threshold));
    apply_round_trip(row, p, threshold, false);
    if (std::find(p.job_diffs.begin(), p.job_diffs.end(), "timing") != p.job_diffs.end())
        append_note(row.note, fmt::format("timing {} vs {}", timing_text(p.a), timing_text(p.b)));
    return row;
}

timed_row throughput_row(const record_pair& p, double threshold) {
    timed_row row;
    row.id = id_of(p);
    const auto ta = throughput_figures::from(p.a.rec.figures);
    const auto tb = throughput_figures::from(p.b.rec.figures);
    row.unit = ta.unit;
    row.context_axis = ta.context_axis;
    row.mode = arrow(ta.mode, tb.mode);
    if (!ta.context.is_null())
        row.ctx = scalar_text(ta.context);
    else if (p.a.rec.job.params.contains(ta.context_axis))
        row.ctx = scalar_text(p.a.rec.job.params[ta.context_axis]);
    const auto& sa = samples_of(p.a); // ms per step
    const auto& sb = samples_of(p.b);
    const bool have_samples = !sa.empty() && !sb.empty();
    row.a_value = ta.rate > 0 ? ta.rate : (have_samples ? 1000.0 / measure::median_of(sa) : NAN);
    row.b_value = tb.rate > 0 ? tb.rate : (have_samples ? 1000.0 / measure::median_of(sb) : NAN);
    if (ta.unit != tb.unit)
        append_note(row.note, fmt::format("units differ: {} vs {}", ta.unit, tb.unit));
    if (have_samples) {
        row.n_a = static_cast<std::int64_t>(sa.size());
        row.n_b = static_cast<std::int64_t>(sb.size());
        // rate B/A = median ms per step of A / median ms per step of B
        row.ratio = median_ratio(sb, sa);
        row.u = mann_whitney_u(sa, sb);
    } else {
        row.ratio.ratio = row.b_value / row.a_value;
        append_note(row.note, "no raw per-step samples stored: no CI, no U test");
    }
    row.decision = rate_verdict(row.ratio, threshold, set_noise(row, p, threshold));
    apply_round_trip(row, p, threshold, true);
    return row;
}

correctness_row correctness_of(const record_pair& p) {
    correctness_row row;
    row.id = id_of(p);
    const auto ca = correctness_figures::from(p.a.rec.figures);
    const auto cb = correctness_figures::from(p.b.rec.figures);
    row.verdict_a = ca.verdict;
    row.verdict_b = cb.verdict;
    row.transition =
        row.verdict_a == row.verdict_b ? row.verdict_a : row.verdict_a + "->" + row.verdict_b;
    row.metrics_a = ca.metrics;
    row.metrics_b = cb.metrics;
    return row;
}

memory_row memory_of(const record_pair& p) {
    memory_row row;
    row.id = id_of(p);
    auto why = [](const json& f, const char* key) {
        const auto u = f.value("unavailable", json::object());
        return u.contains(key) && u[key].is_string() ? u[key].get<std::string>()
                                                     : std::string("not recorded");
    };
    for (const auto& l : k_memory_levels) {
        memory_level m;
        m.level = l.name;
        m.a_bytes = number_at(p.a.rec.figures, l.pointer);
        m.b_bytes = number_at(p.b.rec.figures, l.pointer);
        if (!m.a_bytes)
            m.why_a = why(p.a.rec.figures, l.unavailable_key);
        if (!m.b_bytes)
            m.why_b = why(p.b.rec.figures, l.unavailable_key);
        row.levels.push_back(std::move(m));
    }
    return row;
}

void add_geomeans(comparison& c) {
    auto add = [&](ledger l, const std::vector<timed_row>& rows) {
        std::map<std::pair<std::string, std::string>, std::vector<double>> groups;
        for (const auto& r : rows)
            if (std::isfinite(r.ratio.ratio) && r.ratio.ratio > 0)
                groups[{r.id.a.workload, r.id.variant_text()}].push_back(std::log(r.ratio.ratio));
        for (const auto& [key, logs] : groups) {
            if (logs.size() < 2)
                continue; // one ratio is its own table row
            double sum = 0;
            for (const double x : logs)
                sum += x;
            c.geomeans.push_back({l, key.first, key.second, logs.size(),
                                  std::exp(sum / static_cast<double>(logs.size()))});
        }
    };
    add(ledger::op_time, c.op_time);
    add(ledger::throughput, c.throughput);
}

void fill(comparison& c, const pairing& p) {
    c.pairs_by_key = p.by_key();
    c.pairs_by_case = p.by_case();
    for (const auto& pr : p.pairs) {
        if (pr.a.rec.status != record_status::ok || pr.b.rec.status != record_status::ok) {
            c.not_compared.push_back(
                {id_of(pr), pr.a.rec.status, pr.b.rec.status, pr.a.rec.reason, pr.b.rec.reason});
            continue;
        }
        switch (pr.a.rec.which) {
        case ledger::op_time:
            c.op_time.push_back(op_time_row(pr, c.options.threshold));
            break;
        case ledger::throughput:
            c.throughput.push_back(throughput_row(pr, c.options.threshold));
            break;
        case ledger::correctness:
            c.correctness.push_back(correctness_of(pr));
            break;
        case ledger::memory:
            c.memory.push_back(memory_of(pr));
            break;
        }
    }
    for (const auto& u : p.unpaired)
        c.unpaired.push_back({u.side, u.rec.rec.which, u.rec.rec.job, u.rec.rec.status, u.why});
    add_geomeans(c);
}

treatment treatment_of(const pairing& p, provenance_diff prov,
                       const std::set<std::string>& allowed) {
    treatment t;
    t.provenance = std::move(prov);
    for (const auto& pr : p.pairs)
        for (const auto& d : pr.job_diffs) {
            ++t.job_diffs[d];
            std::string example;
            if (d == "device")
                example = arrow(pr.a.rec.job.device, pr.b.rec.job.device);
            else if (d == "dtype")
                example = arrow(pr.a.rec.job.dtype, pr.b.rec.job.dtype);
            else if (d == "timing")
                example = arrow(timing_text(pr.a), timing_text(pr.b));
            if (t.job_diff_examples[d].size() < 3)
                t.job_diff_examples[d].insert(example);
        }
    t.declared = allowed;
    const auto present = t.names();
    for (const auto& n : allowed)
        if (!present.count(n))
            t.declared_but_equal.insert(n);
    return t;
}

// Refuses unless every named difference was declared.
void check_declared(const comparison& c) {
    std::vector<std::string> missing, details;
    for (const auto& name : c.what.names()) {
        if (c.options.allowed.count(name) || c.what.with_variant.count(name))
            continue;
        missing.push_back(name);
        if (const auto it = c.what.job_diffs.find(name); it != c.what.job_diffs.end()) {
            const auto& ex = c.what.job_diff_examples.at(name);
            details.push_back(fmt::format("{} ({} pair(s): {})", name, it->second,
                                          join({ex.begin(), ex.end()}, ", ")));
            continue;
        }
        std::vector<std::string> fields;
        std::size_t more = 0;
        for (const auto& f : c.what.provenance.fields) {
            if (f.name != name)
                continue;
            if (fields.size() < 2)
                fields.push_back(
                    fmt::format("{} {} vs {}", f.path, short_value(f.a), short_value(f.b)));
            else
                ++more;
        }
        details.push_back(fmt::format("{} ({}{})", name, join(fields, "; "),
                                      more ? fmt::format("; +{} more field(s)", more) : ""));
    }
    if (missing.empty())
        return;
    throw refused(one_line(fmt::format(
                      "compare refused: A = {} and B = {} differ beyond the declared treatment in: "
                      "{}; if that is what you compare, add --allow-diff {} (names: {})",
                      run_text(c.a), run_text(c.b), join(details, "; "), join(missing, ","),
                      diff_names_text())),
                  missing);
}

} // namespace

double parse_threshold(const std::string& text) {
    auto t = trim(text);
    bool percent = false;
    if (!t.empty() && t.back() == '%') {
        percent = true;
        t = trim(t.substr(0, t.size() - 1));
    }
    char* end = nullptr;
    const double v = t.empty() ? NAN : std::strtod(t.c_str(), &end);
    const double fraction = percent ? v / 100 : v;
    if (t.empty() || end != t.c_str() + t.size() || !(fraction > 0) || fraction > 0.5)
        throw bad_input(fmt::format("--threshold '{}' is not valid; give a percentage like 2% or a "
                                    "fraction like 0.02, above 0 and at most 50%",
                                    text));
    return fraction;
}

std::set<std::string> parse_allowed(const std::vector<std::string>& values) {
    std::set<std::string> out;
    for (const auto& v : values)
        for (const auto& part : split(v, ',')) {
            const auto name = trim(part);
            if (name.empty())
                throw bad_input(fmt::format("--allow-diff '{}' has an empty item; give a comma "
                                            "list of names with none empty, valid: {}",
                                            v, diff_names_text()));
            if (!is_diff_name(name))
                throw bad_input(fmt::format("--allow-diff '{}' is not a difference fourfold knows; "
                                            "valid: {}",
                                            name, diff_names_text()));
            out.insert(name);
        }
    return out;
}

std::string pair_id::variant_text() const {
    return arrow(a.variant, b.variant);
}
std::string pair_id::dtype_text() const {
    return arrow(a.dtype, b.dtype);
}
std::string pair_id::device_text() const {
    return arrow(a.device, b.device);
}

json pair_id::to_json() const {
    return json{{"ledger", to_string(which)},
                {"a", job_json(a)},
                {"b", job_json(b)},
                {"paired_by", by_case ? "case_key+variant" : "key"},
                {"job_diffs", job_diffs}};
}

json timed_row::to_json() const {
    json out = id.to_json();
    out["unit"] = unit;
    out["value_a"] = a_value;
    out["value_b"] = b_value;
    out["n_a"] = n_a;
    out["n_b"] = n_b;
    out["ratio_b_over_a"] = ratio_json(ratio);
    out["mann_whitney"] =
        u ? json{{"u_a", u->u_a}, {"p_two_sided", u->p_two_sided}, {"method", u->method}}
          : json(nullptr);
    out["noise_a"] = noise_a;
    out["noise_b"] = noise_b;
    if (round_trip_a && round_trip_b)
        out["host_round_trip_us"] = json{{"a", *round_trip_a}, {"b", *round_trip_b}};
    out["verdict"] = to_string(decision);
    if (!mode.empty())
        out["mode"] = mode;
    if (!ctx.empty()) {
        out["ctx"] = ctx; // the context's value (its axis below; "ctx" for a decoder)
        out["context_axis"] = context_axis;
    }
    if (!note.empty())
        out["note"] = note;
    return out;
}

json correctness_row::to_json() const {
    json out = id.to_json();
    out["verdict_a"] = verdict_a;
    out["verdict_b"] = verdict_b;
    out["transition"] = transition;
    out["metrics_a"] = metrics_a;
    out["metrics_b"] = metrics_b;
    return out;
}

std::optional<double> memory_level::delta_bytes() const {
    if (a_bytes && b_bytes)
        return *b_bytes - *a_bytes;
    return std::nullopt;
}

json memory_row::to_json() const {
    json out = id.to_json();
    out["unit"] = "bytes";
    json levels_json = json::object();
    for (const auto& l : levels) {
        json v{{"a", optional_json(l.a_bytes)},
               {"b", optional_json(l.b_bytes)},
               {"delta", optional_json(l.delta_bytes())}};
        if (!l.why_a.empty())
            v["unavailable_a"] = l.why_a;
        if (!l.why_b.empty())
            v["unavailable_b"] = l.why_b;
        levels_json[l.level] = v;
    }
    out["levels"] = levels_json;
    return out;
}

json not_compared_row::to_json() const {
    json out = id.to_json();
    out["status_a"] = to_string(a);
    out["status_b"] = to_string(b);
    out["reason_a"] = reason_a;
    out["reason_b"] = reason_b;
    return out;
}

json unpaired_row::to_json() const {
    return json{{"side", std::string(1, side)},
                {"ledger", to_string(which)},
                {"job", job_json(job)},
                {"status", to_string(status)},
                {"why", why}};
}

json geomean_row::to_json() const {
    return json{{"ledger", to_string(which)},
                {"workload", workload},
                {"variant", variant},
                {"n", n},
                {"geomean_ratio_b_over_a", value}};
}

std::set<std::string> treatment::names() const {
    auto out = provenance.names();
    for (const auto& [name, n] : job_diffs)
        out.insert(name);
    return out;
}

std::string run_text(const store::run_row& r) {
    auto text =
        r.label.empty() ? fmt::format("run {}", r.id) : fmt::format("run {} '{}'", r.id, r.label);
    if (!r.same_label_runs.empty()) {
        std::string others;
        for (const auto id : r.same_label_runs)
            others += (others.empty() ? "" : ", ") + std::to_string(id);
        text += fmt::format(" (the latest of {} runs labelled so; the others: {}; give a run id to "
                            "pick one)",
                            r.same_label_runs.size() + 1, others);
    }
    return one_line(text);
}

std::string comparison::baseline_text() const {
    return one_run ? fmt::format("variant '{}' of {}", options.baseline_variant, run_text(a))
                   : run_text(a);
}

std::string comparison::treated_text() const {
    return one_run ? fmt::format("each other variant of {}", run_text(a)) : run_text(b);
}

bool comparison::has_regression() const {
    for (const auto* rows : {&op_time, &throughput})
        for (const auto& r : *rows)
            if (r.decision == verdict::slower)
                return true;
    for (const auto& r : correctness)
        if (r.regression())
            return true;
    return false;
}

std::size_t comparison::count(ledger l, verdict v) const {
    const auto& rows = l == ledger::throughput ? throughput : op_time;
    std::size_t n = 0;
    for (const auto& r : rows)
        n += r.decision == v ? 1 : 0;
    return n;
}

json comparison::to_json() const {
    auto run_json = [](const store::run_row& r) {
        return json{
            {"id", r.id},
            {"label", r.label},
            {"device", r.device},
            {"started_at", r.started_at},
            {"status", r.status},
            {"same_label_runs", r.same_label_runs},
            {"git_sha", r.provenance.value("/fourfold/git_sha"_json_pointer, std::string())}};
    };
    json fields = json::array();
    for (const auto& f : what.provenance.fields)
        fields.push_back(json{{"path", f.path}, {"name", f.name}, {"a", f.a}, {"b", f.b}});
    json derived = json::array();
    for (const auto& f : what.provenance.derived)
        derived.push_back(json{{"path", f.path}, {"a", f.a}, {"b", f.b}});
    json out{{"mode", one_run ? "variants" : "runs"},
             {"a", run_json(a)},
             {"b", run_json(b)},
             {"baseline", baseline_text()},
             {"baseline_variant", one_run ? json(options.baseline_variant) : json(nullptr)},
             {"threshold", options.threshold},
             {"verdict_rule", verdict_rule(options.threshold)},
             {"ratios", "every ratio is B/A against the one baseline above; ratios from different "
                        "baselines are never multiplied or chained"},
             {"treatment", json{{"provenance", fields},
                                {"derived", derived},
                                {"never_treatment", what.provenance.never_treatment},
                                {"job_diffs", what.job_diffs},
                                {"declared", what.declared},
                                {"declared_but_equal", what.declared_but_equal},
                                {"with_variant", what.with_variant}}},
             {"pairs", json{{"by_key", pairs_by_key}, {"by_case", pairs_by_case}}},
             {"regression", has_regression()}};
    auto rows = [](const auto& v) {
        json arr = json::array();
        for (const auto& r : v)
            arr.push_back(r.to_json());
        return arr;
    };
    out["throughput"] = rows(throughput);
    out["op_time"] = rows(op_time);
    out["correctness"] = rows(correctness);
    out["memory"] = rows(memory);
    out["not_compared"] = rows(not_compared);
    out["unpaired"] = rows(unpaired);
    out["geomeans"] = rows(geomeans);
    json env = json::array();
    for (const auto& e : environment)
        env.push_back(e.to_json(options.threshold));
    out["environment"] = env;
    return out;
}

std::optional<double> environment_row::change() const {
    if (a && b && *a > 0)
        return *b / *a - 1;
    return std::nullopt;
}

bool environment_row::moved(double threshold) const {
    const auto c = change();
    return c && std::abs(*c) > threshold;
}

json environment_row::to_json(double threshold) const {
    return json{{"what", what},
                {"unit", unit},
                {"how", how},
                {"a", optional_json(a)},
                {"b", optional_json(b)},
                {"change", optional_json(change())},
                {"moved_beyond_threshold", moved(threshold)}};
}

namespace {

std::optional<double> median_round_trip(const std::vector<stored_record>& records) {
    std::vector<double> trips;
    for (const auto& r : records)
        if ((r.rec.which == ledger::op_time || r.rec.which == ledger::throughput) &&
            r.rec.status == record_status::ok)
            if (const auto t = round_trip_of(r))
                trips.push_back(t->mean());
    if (trips.empty())
        return std::nullopt;
    return measure::median_of(std::move(trips));
}

std::vector<environment_row> environment_of(const store::run_row& a,
                                            const std::vector<stored_record>& ra,
                                            const store::run_row& b,
                                            const std::vector<stored_record>& rb) {
    environment_row copy{"copy bandwidth",
                         "GB/s",
                         "",
                         number_at(a.provenance, "/bandwidth/gb_per_s"),
                         number_at(b.provenance, "/bandwidth/gb_per_s"),
                         "a FASTER or SLOWER of a bandwidth-bound time may be the machine's"};
    copy.how = a.provenance.value("/bandwidth/method"_json_pointer, std::string());
    environment_row trip{"host round trip",
                         "us",
                         "one one-element op launched and read back (the median of repeated trips "
                         "before and after each job), the median over the run's timed records",
                         median_round_trip(ra),
                         median_round_trip(rb),
                         "a time that syncs with the host, or eager decode steps, must clear that "
                         "move before it is called"};
    std::vector<environment_row> out;
    for (auto* row : {&copy, &trip})
        if (row->a || row->b)
            out.push_back(std::move(*row));
    return out;
}

} // namespace

comparison compare_runs(const store::run_row& a, const std::vector<stored_record>& ra,
                        const store::run_row& b, const std::vector<stored_record>& rb,
                        const compare_options& options) {
    comparison c;
    c.a = a;
    c.b = b;
    c.options = options;
    const auto p = pair_runs(ra, rb);
    c.what = treatment_of(p, diff_provenance(a.provenance, b.provenance), options.allowed);
    check_declared(c);
    fill(c, p);
    c.environment = environment_of(a, ra, b, rb);
    return c;
}

comparison compare_variants(const store::run_row& run, const std::vector<stored_record>& records,
                            const compare_options& options) {
    comparison c;
    c.a = c.b = run;
    c.one_run = true;
    c.options = options;
    const auto p = pair_variants(records, options.baseline_variant);
    c.what = treatment_of(p, {}, options.allowed);
    // Within one run every job has the run's timing settings: a pair timed in two modes has a
    // variant that fell back from graph capture, which is what that variant does.
    if (c.what.job_diffs.count("timing"))
        c.what.with_variant.insert("timing");
    check_declared(c);
    fill(c, p);
    return c;
}

comparison compare_in_store(const store::result_store& store, const std::vector<std::string>& runs,
                            const compare_options& options) {
    if (runs.size() == 1) {
        if (options.baseline_variant.empty())
            throw bad_input(fmt::format("compare of one run ('{}') needs --baseline-variant NAME "
                                        "(e.g. stock); or give two runs A B",
                                        runs[0]));
        const auto r = store.find_run(runs[0]);
        return compare_variants(r, store.records(r.id, true), options);
    }
    if (runs.size() != 2)
        throw bad_input(fmt::format("compare takes one or two runs (A B), got {}", runs.size()));
    if (!options.baseline_variant.empty())
        throw bad_input(fmt::format("--baseline-variant '{}' compares the variants of one run; "
                                    "with two runs A is the baseline: give one run or drop it",
                                    options.baseline_variant));
    const auto a = store.find_run(runs[0]);
    const auto b = store.find_run(runs[1]);
    return compare_runs(a, store.records(a.id, true), b, store.records(b.id, true), options);
}

} // namespace fourfold::compare
