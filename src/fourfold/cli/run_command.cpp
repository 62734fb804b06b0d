#include "fourfold/backend/device.hpp"
#include "fourfold/backend/provenance.hpp"
#include "fourfold/cli/commands.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/core/files.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/measure/timing.hpp"
#include "fourfold/report/ledger_tables.hpp"
#include "fourfold/report/progress_line.hpp"
#include "fourfold/report/speedup_summary.hpp"
#include "fourfold/runner/isolation.hpp"
#include "fourfold/runner/plan.hpp"
#include "fourfold/runner/runner.hpp"
#include "fourfold/store/export.hpp"
#include "fourfold/store/result_store.hpp"
#include "fourfold/store/run_state.hpp"
#include "fourfold/suites/suite.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <fmt/format.h>
#include <iostream>
#include <set>
#include <sstream>
#include <sys/ioctl.h>
#include <unistd.h>

namespace fourfold::cli {
namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) {
    g_interrupted = true;
}

// Writes each record to the store as it arrives and keeps it for the tables printed at the end.
// A resumed run's sink drops a record the run already holds (`present`: ledger and job key), so
// a variant that had some of its ledgers stored gets only the others.
class store_sink final : public runner::record_sink {
  public:
    store_sink(store::result_store& store, std::int64_t run,
               std::set<std::pair<std::string, std::string>> present = {})
        : m_store(store), m_run(run), m_present(std::move(present)) {}
    void write(const record& rec) override {
        if (!m_present.insert({std::string(to_string(rec.which)), rec.job.key()}).second)
            return;
        m_store.add_record(m_run, rec);
        records.push_back(rec);
    }
    std::vector<record> records;

  private:
    store::result_store& m_store;
    std::int64_t m_run;
    std::set<std::pair<std::string, std::string>> m_present;
};

// The request of a run as its provenance keeps it ("request.options"): what --resume rebuilds the
// plan from. Output options (--quiet, --format) and the store are not part of it.
json options_to_json(const run_options& o) {
    auto opt = [](const std::optional<std::string>& v) { return v ? json(*v) : json(nullptr); };
    return json{{"suite", opt(o.suite)},
                {"workload", opt(o.workload)},
                {"shapes", o.shapes},
                {"params", o.params},
                {"dtypes", o.dtypes},
                {"variants", o.variants},
                {"device", o.device},
                {"ledgers", o.ledgers},
                {"label", o.label},
                {"timing", opt(o.timing)},
                {"cache", opt(o.cache)},
                {"min_time_s", opt(o.min_time_s)},
                {"timeout_s", opt(o.timeout_s)},
                {"max_rel_stdev", opt(o.max_rel_stdev)},
                {"warmup_s", opt(o.warmup_s)},
                {"min_samples", opt(o.min_samples)},
                {"seed", opt(o.seed)},
                {"threads", opt(o.threads)},
                {"isolate", o.isolate ? json(*o.isolate) : json(nullptr)},
                {"watchdog_margin_s", opt(o.watchdog_margin_s)}};
}

// The stored request back; throws bad_input naming the run when it does not read.
run_options options_from_json(const json& j, std::int64_t run) {
    auto bad = [run](const std::string& what) {
        return bad_input(fmt::format("run {}: its stored request ({}) does not read; the store is "
                                     "damaged there, so the run cannot be resumed",
                                     run, what));
    };
    if (!j.is_object())
        throw bad("not a JSON object");
    run_options o;
    auto opt = [&](const char* name) -> std::optional<std::string> {
        const auto it = j.find(name);
        if (it == j.end() || it->is_null())
            return std::nullopt;
        if (!it->is_string())
            throw bad(name);
        return it->get<std::string>();
    };
    auto list = [&](const char* name) {
        std::vector<std::string> out;
        const auto it = j.find(name);
        if (it == j.end())
            return out;
        if (!it->is_array())
            throw bad(name);
        for (const auto& v : *it) {
            if (!v.is_string())
                throw bad(name);
            out.push_back(v.get<std::string>());
        }
        return out;
    };
    o.suite = opt("suite");
    o.workload = opt("workload");
    o.shapes = list("shapes");
    o.params = list("params");
    o.dtypes = list("dtypes");
    o.variants = list("variants");
    o.device = opt("device").value_or("cpu");
    o.ledgers = opt("ledgers").value_or("all");
    o.label = opt("label").value_or("");
    o.timing = opt("timing");
    o.cache = opt("cache");
    o.min_time_s = opt("min_time_s");
    o.timeout_s = opt("timeout_s");
    o.max_rel_stdev = opt("max_rel_stdev");
    o.warmup_s = opt("warmup_s");
    o.min_samples = opt("min_samples");
    o.seed = opt("seed");
    o.threads = opt("threads");
    if (const auto it = j.find("isolate"); it != j.end() && it->is_boolean())
        o.isolate = it->get<bool>();
    o.watchdog_margin_s = opt("watchdog_margin_s");
    return o;
}

// What must be the same for a resumed run's new records to belong with its old ones: the build,
// the device model, libtorch and the settings. Each difference as "name: run has A, here B".
std::vector<std::string> provenance_differences(const json& stored, const json& here) {
    struct field {
        const char* name;
        const char* pointer;
    };
    static const field k_fields[] = {{"build (git sha)", "/fourfold/git_sha"},
                                     {"build (dirty)", "/fourfold/git_dirty"},
                                     {"build type", "/fourfold/build_type"},
                                     {"device model", "/device/name"},
                                     {"libtorch", "/libtorch/version_header"},
                                     {"libtorch CUDA", "/libtorch/cuda"},
                                     {"settings", "/settings"}};
    std::vector<std::string> out;
    for (const auto& f : k_fields) {
        const json::json_pointer ptr{std::string(f.pointer)};
        const auto a = stored.contains(ptr) ? stored.at(ptr) : json(nullptr);
        const auto b = here.contains(ptr) ? here.at(ptr) : json(nullptr);
        if (a != b)
            out.push_back(fmt::format("{}: run has {}, here {}", f.name, a.dump(), b.dump()));
    }
    return out;
}

// A resumed run's plan: only the job-variants and ledgers it has no record for.
void keep_missing(runner::plan& p, const std::set<std::pair<std::string, std::string>>& present,
                  const std::string& device) {
    auto has = [&](ledger l, const job_id& id) {
        return present.count({std::string(to_string(l)), id.key()}) > 0;
    };
    std::vector<runner::job_group> groups;
    for (auto& g : p.groups) {
        const auto asked = p.settings.ledgers.intersect(g.w->ledgers);
        std::vector<std::string> variants;
        ledger_set missing;
        for (const auto& v : g.variants) {
            bool any = false;
            for (const auto l : asked.list())
                if (!has(l, g.job(v, device))) {
                    missing.add(l);
                    any = true;
                }
            if (any)
                variants.push_back(v);
        }
        if (variants.empty())
            continue;
        g.variants = std::move(variants);
        g.only_ledgers = missing;
        groups.push_back(std::move(g));
    }
    p.groups = std::move(groups);
    std::vector<record> skipped;
    for (auto& r : p.skipped)
        if (!has(r.which, r.job))
            skipped.push_back(std::move(r));
    p.skipped = std::move(skipped);
}

double parse_margin(const std::string& text) {
    double v = 0;
    if (!parse_double(text, v) || !(v > 0) || v > 86400)
        throw bad_input(fmt::format(
            "--watchdog-margin '{}' is out of range; give seconds in (0, 86400], e.g. 300", text));
    return v;
}

// Seconds one job group takes at the least, from the settings: each variant's warm-up and
// minimum sampling time per timed ledger, and the memory pass's window. The progress line's
// estimate before a group has finished.
double group_budget_s(const runner::job_group& g, const runner::run_settings& s) {
    const auto ledgers = s.ledgers.intersect(g.w->ledgers);
    const auto& stop = s.timing.stop;
    double per_variant = 0;
    if (ledgers.has(ledger::op_time))
        per_variant += s.timing.warmup_s + stop.min_time_s;
    if (ledgers.has(ledger::throughput))
        per_variant += stop.min_time_s;
    if (ledgers.has(ledger::memory))
        per_variant += s.memory_min_window_s;
    return per_variant * static_cast<double>(g.variants.size());
}

// A live line on a terminal: job i of n, the pass, elapsed and an estimate. Silent otherwise.
class terminal_progress final : public runner::progress_listener {
  public:
    terminal_progress(bool enabled, const runner::plan& p)
        : m_enabled(enabled), m_plan(p), m_t0(std::chrono::steady_clock::now()) {}
    void group_started(std::size_t index, std::size_t total, const runner::job_group& g) override {
        m_index = index;
        m_total = total;
        m_title = g.title();
        m_group_start_s = seconds();
        draw("start");
    }
    void pass_started(std::string_view pass) override { draw(pass); }
    void finished() override {
        if (m_enabled)
            std::fprintf(stderr, "\r\033[K");
    }

  private:
    void draw(std::string_view pass) {
        if (!m_enabled)
            return;
        // before a group has finished there is no average to go by: the settings' budget of
        // the groups still to run stands in
        double budget_left = 0;
        for (std::size_t i = m_index; i < m_plan.groups.size(); ++i)
            budget_left += group_budget_s(m_plan.groups[i], m_plan.settings);
        const double elapsed = seconds();
        // a line longer than the terminal wraps, and '\r' would then redraw only its tail
        winsize ws{};
        const std::size_t width =
            ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col - 1 : 0;
        const auto line = report::progress_line(m_index, m_total, m_title, pass, elapsed,
                                                m_group_start_s, width, budget_left);
        std::fprintf(stderr, "\r\033[K%s", line.c_str());
        std::fflush(stderr);
    }
    double seconds() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_t0).count();
    }
    bool m_enabled;
    const runner::plan& m_plan;
    std::chrono::steady_clock::time_point m_t0;
    double m_group_start_s = 0;
    std::size_t m_index = 0, m_total = 0;
    std::string m_title;
};

runner::settings_request settings_request_of(const run_options& o, const backend::device& dev) {
    runner::settings_request r;
    r.ledgers = o.ledgers;
    r.timing = o.timing;
    r.cache = o.cache;
    r.min_time_s = o.min_time_s;
    r.timeout_s = o.timeout_s;
    r.max_rel_stdev = o.max_rel_stdev;
    r.warmup_s = o.warmup_s;
    r.min_samples = o.min_samples;
    r.seed = o.seed;
    r.threads = o.threads;
    if (o.suite)
        if (const auto* suite = suites::suite_registry::instance().find(*o.suite))
            r.suite_timeout_s = suite->timeout_for(dev);
    return r;
}

// Why a run that measured nothing measured nothing: its distinct skip reasons, the first few.
std::string nothing_measured(const std::vector<record>& records, std::int64_t run) {
    std::vector<std::string> reasons;
    for (const auto& r : records)
        if (std::find(reasons.begin(), reasons.end(), r.reason) == reasons.end())
            reasons.push_back(r.reason);
    const std::size_t shown = std::min<std::size_t>(reasons.size(), 2);
    std::vector<std::string> first(reasons.begin(), reasons.begin() + static_cast<long>(shown));
    return fmt::format("nothing was measured: all {} record(s) of run {} are skipped ({}{}); the "
                       "store holds them with their reasons",
                       records.size(), run, join(first, "; "),
                       reasons.size() > shown ? fmt::format("; {} more", reasons.size() - shown)
                                              : "");
}

// Installs the run's SIGINT handler and puts the previous one back however the scope ends.
class sigint_guard {
  public:
    sigint_guard() : m_previous(std::signal(SIGINT, on_sigint)) {}
    ~sigint_guard() { std::signal(SIGINT, m_previous); }
    sigint_guard(const sigint_guard&) = delete;
    sigint_guard& operator=(const sigint_guard&) = delete;

  private:
    void (*m_previous)(int);
};

} // namespace

std::string threads_help() {
    return fmt::format("CPU threads libtorch uses, 1..{} (default: libtorch's own choice, {} on "
                       "this machine); recorded in the provenance",
                       runner::k_max_threads, backend::cpu_threads());
}

int run_command(const run_options& given) {
    static const std::set<std::string> k_formats{"text", "md", "csv", "json"};
    if (!k_formats.count(given.format))
        throw bad_input(
            fmt::format("--format '{}' is unknown; valid: text, md, csv, json", given.format));
    run_options o = given;
    std::optional<store::run_row> resumed;
    if (given.resume) {
        // the run's own request, with this command's output options and isolation choice
        if (!path_exists(given.db))
            throw bad_input(fmt::format("--resume {}: store '{}' does not exist; give --db the "
                                        "store the run is in",
                                        *given.resume, given.db));
        // read-only until the checks pass: a refused resume leaves the store as it was
        resumed = store::result_store::open(given.db, store::open_mode::read_only)
                      .find_run(*given.resume);
        const auto state = store::state_of(*resumed);
        if (resumed->status == "complete")
            throw bad_input(fmt::format("--resume {}: run {} is complete (every job it planned "
                                        "has its records); nothing to resume",
                                        *given.resume, resumed->id));
        if (state.word == "running" || state.word == "not finished")
            throw bad_input(fmt::format("--resume {}: run {} may still be running ({}); resume "
                                        "a run whose process has ended",
                                        *given.resume, resumed->id, state.why));
        if (!resumed->provenance.contains("/request/options"_json_pointer))
            throw bad_input(fmt::format("--resume {}: run {} was made by a fourfold that did not "
                                        "record its request; it cannot be resumed (run it again)",
                                        *given.resume, resumed->id));
        o = options_from_json(resumed->provenance["request"]["options"], resumed->id);
        o.db = given.db;
        o.quiet = given.quiet;
        o.format = given.format;
        o.command_line = given.command_line;
        if (given.isolate)
            o.isolate = given.isolate;
        if (given.watchdog_margin_s)
            o.watchdog_margin_s = given.watchdog_margin_s;
        o.resume = given.resume;
    }
    // Everything that can be wrong with the request is found before the store is opened.
    if (!o.suite && !o.workload)
        throw bad_input("run needs --suite NAME or --workload NAME (or --resume RUN); see "
                        "'fourfold list'");
    if (o.suite && (!o.shapes.empty() || !o.params.empty()))
        throw bad_input("--shape and --param apply to --workload alone; a suite fixes its own "
                        "(--suite S --workload W keeps the suite's jobs of W)");
    if (o.suite && (!o.dtypes.empty() || !o.variants.empty()))
        throw bad_input("--dtype and --variants apply to --workload alone; a suite fixes its own "
                        "(--suite S --workload W keeps the suite's jobs of W)");
    store::check_label(o.label);
    const double margin = o.watchdog_margin_s ? parse_margin(*o.watchdog_margin_s)
                                              : runner::k_default_watchdog_margin_s;
    // before the device opens: it counts the threads it computes on
    if (o.threads)
        backend::set_cpu_threads(runner::parse_threads(*o.threads));
    auto dev = backend::open_device(backend::device_spec::parse(o.device));
    // On a GPU a job's fault (a sticky CUDA error) would end the run, and a process start is
    // small beside a job's time there; on the CPU it would cost more than it saves
    // (docs/architecture.md, "Isolation").
    const bool isolate = o.isolate.value_or(dev->spec().kind == backend::device_kind::cuda);
    std::string binary;
    if (isolate) {
#ifndef __linux__
        throw bad_input("--isolate needs Linux (the job's process is this binary, found through "
                        "/proc/self/exe, and ends with its parent); give --no-isolate");
#endif
        binary = runner::this_executable();
        if (binary.empty() || access(binary.c_str(), X_OK) != 0)
            throw bad_input("--isolate cannot find this fourfold's executable (/proc/self/exe); "
                            "give --no-isolate");
    }
    const auto settings_req = settings_request_of(o, *dev);
    const auto settings = runner::make_settings(settings_req, *dev);
    auto specs =
        o.suite ? suites::expand_suite(*o.suite, *dev)
                : runner::expand_request({*o.workload, o.shapes, o.params, o.dtypes, o.variants});
    if (o.suite && o.workload)
        specs = suites::jobs_of_workloads(specs, *o.suite, split(*o.workload, ','));
    auto plan = runner::make_plan(specs, settings, *dev);
    std::int64_t run_id = 0;
    std::set<std::pair<std::string, std::string>> present;
    std::optional<backend::bandwidth_figure> bandwidth_kept;
    if (resumed) {
        auto here = backend::collect_provenance(dev.get());
        here["settings"] = plan.settings.to_json();
        const auto differ = provenance_differences(resumed->provenance, here);
        if (!differ.empty())
            throw bad_input(fmt::format("--resume {}: run {} was made with other provenance, so "
                                        "new records would not belong with its old ones: {}; "
                                        "resume it with the build, device and settings it was "
                                        "made with",
                                        *o.resume, resumed->id, join(differ, "; ")));
        run_id = resumed->id;
    }
    auto store = store::result_store::open(o.db, store::open_mode::read_write);
    if (resumed) {
        present = store.record_keys(run_id);
        keep_missing(plan, present, dev->name());
        // the run's own ceiling, so that % of bandwidth means the same in old and new records
        const auto b = resumed->provenance.value("bandwidth", json::object());
        backend::bandwidth_figure kept;
        kept.bytes_per_s = b.value("bytes_per_s", 0.0);
        kept.bytes_moved = b.value("bytes_moved", std::int64_t{0});
        kept.method = b.value("method", std::string());
        if (kept.bytes_per_s > 0)
            bandwidth_kept = kept;
    }
    const auto bandwidth = bandwidth_kept ? *bandwidth_kept : dev->measure_copy_bandwidth();
    if (resumed) {
        auto provenance = resumed->provenance;
        provenance["pid"] = static_cast<std::int64_t>(getpid());
        auto resumes = provenance["request"].value("resumed", json::array());
        resumes.push_back(json{{"at", utc_now_iso8601()},
                               {"pid", static_cast<std::int64_t>(getpid())},
                               {"status_before", resumed->status},
                               {"records_missing", plan.record_count()},
                               {"isolate", isolate}});
        provenance["request"]["resumed"] = std::move(resumes);
        store.reopen_run(run_id, provenance);
    } else {
        auto provenance = backend::collect_provenance(dev.get());
        provenance["settings"] = plan.settings.to_json();
        provenance["bandwidth"] = bandwidth.to_json();
        provenance["request"] = json{{"suite", o.suite.value_or("")},
                                     {"workload", o.workload.value_or("")},
                                     {"groups", plan.groups.size()},
                                     {"jobs", plan.job_count()},
                                     {"records", plan.record_count()},
                                     // what --resume rebuilds the plan from; under "request",
                                     // which compare leaves out of its provenance diff
                                     {"options", options_to_json(o)},
                                     {"isolate", isolate}};
        // tells a run still being measured from one whose process died (store::state_of)
        provenance["pid"] = static_cast<std::int64_t>(getpid());
        run_id = store.begin_run(o.label, dev->name(), o.command_line, provenance);
    }

    store_sink sink(store, run_id, present);
    for (const auto& note : plan.notes)
        std::cerr << "fourfold: " << note << '\n';
    for (const auto& r : plan.skipped)
        sink.write(r);
    terminal_progress progress(!o.quiet && isatty(STDERR_FILENO), plan);
    runner::run_context ctx{*dev, bandwidth, sink, &progress, &g_interrupted};
    g_interrupted = false;
    runner::run_summary summary;
    {
        const sigint_guard guard; // Ctrl-C stops between passes while the run executes
        try {
            if (isolate) {
                runner::isolation_settings iso{binary, dev->name(), settings_req, margin};
                summary = runner::execute_isolated(plan, ctx, iso);
            } else {
                summary = runner::execute(plan, ctx);
            }
        } catch (...) {
            store.finish_run(run_id, "failed");
            throw;
        }
    }
    store.finish_run(run_id, summary.interrupted ? "interrupted" : "complete");
    summary.skipped += plan.skipped.size();

    // csv and json print the records alone on stdout, as export does; the lines about the run
    // go to stderr
    const bool records_only = o.format == "csv" || o.format == "json";
    std::ostringstream text;
    if (records_only) {
        store::export_request request;
        request.runs = {std::to_string(run_id)};
        request.format = o.format == "csv" ? store::export_format::csv : store::export_format::json;
        store::export_store(store, request, text);
    } else {
        report::print_ledger_tables(sink.records, text,
                                    o.format == "md" ? report::table_format::markdown
                                                     : report::table_format::text);
        report::print_speedup_summaries(report::summarize_speedups(sink.records), text);
        // fourfold's own kernels against the library's path, where a run has both
        report::print_speedup_summaries(report::summarize_speedups(sink.records, "native", "stock"),
                                        text);
    }
    std::ostringstream about;
    about << fmt::format("device {} ({}); copy bandwidth {:.1f} GB/s ({}); {} CPU thread(s)\n",
                         dev->name(), dev->fingerprint().value("name", std::string("?")),
                         bandwidth.bytes_per_s / 1e9, bandwidth.method, backend::cpu_threads());
    about << fmt::format("records: {} ok, {} skipped, {} failed; correctness FAIL: {}\n",
                         summary.ok, summary.skipped, summary.failed, summary.correctness_fail);
    for (const auto& r : sink.records)
        if (r.which == ledger::correctness && r.figures.value("verdict", "") == "FAIL")
            about << "  reproduce: " << r.figures.value("repro", "") << '\n';
    about << fmt::format("store: {} (run {}{}){}\n", store.path(), run_id,
                         o.label.empty() ? "" : ", label '" + o.label + "'",
                         summary.interrupted
                             ? fmt::format("; interrupted after {} of {} job groups",
                                           summary.groups_done, plan.groups.size())
                             : "");
    if (resumed)
        about << fmt::format("resumed run {}: {} record(s) added to the {} it had\n", run_id,
                             sink.records.size(), present.size() - sink.records.size());
    write_output("", records_only ? text.str() : text.str() + about.str());
    if (records_only)
        std::cerr << about.str();
    const int code = summary.exit_code();
    if (resumed && sink.records.empty())
        return code; // nothing was missing: the run is now marked complete
    if (code == 0 && summary.ok == 0) {
        std::cerr << "fourfold: " << nothing_measured(sink.records, run_id) << '\n';
        return static_cast<int>(exit_code::nothing_measured);
    }
    return code;
}

} // namespace fourfold::cli
